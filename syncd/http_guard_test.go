package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/redact"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// hostileToken is long and random-looking, with characters URL and JSON
// encodings change.
const hostileToken = "hT0k3n/0a1b2c3d4e5f+6789=ZYXWVUTSRQPONMLKJI"

// tokenIn returns where in text a FragmentLen run of the token (raw,
// URL-escaped, hex, or base64 at any alignment; also with white space
// left out) is, or "".
func tokenIn(text []byte) string {
	forms := []string{hostileToken, url.QueryEscape(hostileToken), hex.EncodeToString([]byte(hostileToken))}
	for k := 0; k < 3; k++ {
		b64 := base64.StdEncoding.EncodeToString(append(make([]byte, k), hostileToken...))
		forms = append(forms, b64[(8*k+5)/6:(8*k+8*len(hostileToken))/6])
	}
	squeezed := bytes.Join(bytes.Fields(text), nil)
	for _, form := range forms {
		for i := 0; i+redact.FragmentLen <= len(form); i++ {
			if bytes.Contains(text, []byte(form[i:i+redact.FragmentLen])) || bytes.Contains(squeezed, []byte(form[i:i+redact.FragmentLen])) {
				return form[i : i+redact.FragmentLen]
			}
		}
	}
	return ""
}

// syncOnceCaptured runs `syncd sync --once` as the command line would,
// with os.Stderr (where the log goes) and os.Stdout captured.
func syncOnceCaptured(t *testing.T, cfgPath string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	savedErr, savedOut := os.Stderr, os.Stdout
	os.Stderr, os.Stdout = f, f
	var out bytes.Buffer
	rc := runMain([]string{"--config", cfgPath, "sync", "--once"}, &out, f)
	os.Stderr, os.Stdout = savedErr, savedOut
	b, _ := os.ReadFile(f.Name())
	return rc, out.String() + string(b)
}

// A server that echoes the token (in 401/403/500 bodies, in headers, in a
// redirect's Location, in a record) or pages without end: the sync fails
// (or drops the record) naming its reason, the live snapshot stays, and
// the token is in no file syncd wrote, nor in what it printed.
func TestHostileServerLeavesNoToken(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := scimserver.New(scimserver.Options{Token: hostileToken})
	d := scimserver.Generate(200, 10, 4)
	if err := srv.Load(d); err != nil {
		t.Fatal(err)
	}
	base, stop := srv.Start()
	defer stop()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok := write("token", hostileToken+"\n")
	pw := write("passwd", "root:x:0:0:root:/root:/bin/bash\n")
	gr := write("group", "root:x:0:\n")
	cache := filepath.Join(state, "cache.db")
	statusPath := filepath.Join(state, "status.json")
	cfg := write("syncd.toml", fmt.Sprintf(`
base_url = %q
token_file = %q
preset = "posix"
cache_path = %q
status_path = %q
local_passwd = %q
local_group = %q
uid_min = 1000
max_retries = 0
max_users = 1000
log_level = "debug"
allowed_shells = ["/bin/bash", "/bin/zsh", "/bin/sh"]
`, base, tok, cache, statusPath, pw, gr))

	scan := func(step, printed string) {
		t.Helper()
		if frag := tokenIn([]byte(printed)); frag != "" {
			t.Fatalf("%s: the output holds %q:\n%s", step, frag, printed)
		}
		filepath.WalkDir(state, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, _ := os.ReadFile(p)
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil { // the explain record
				if u, err := io.ReadAll(zr); err == nil {
					b = append(b, u...)
				}
			}
			if frag := tokenIn(b); frag != "" {
				t.Fatalf("%s: %s holds %q", step, p, frag)
			}
			return nil
		})
	}
	if rc, out := syncOnceCaptured(t, cfg); rc != 0 {
		t.Fatalf("first sync: rc %d\n%s", rc, out)
	}
	live, _ := os.ReadFile(cache)
	for _, c := range []struct {
		name string
		h    scimserver.Hostile
		want string
	}{
		{"401 echoing Authorization", scimserver.Hostile{EchoAuthStatus: 401}, "HTTP 401"},
		{"403 dumping headers", scimserver.Hostile{EchoAuthStatus: 403, EchoAuthPlain: true}, "HTTP 403"},
		{"401 echoing base64", scimserver.Hostile{EchoAuthStatus: 401, EchoAuthEncoding: "base64"}, "HTTP 401"},
		{"403 dumping base64", scimserver.Hostile{EchoAuthStatus: 403, EchoAuthPlain: true, EchoAuthEncoding: "base64"}, "HTTP 403"},
		{"401 echoing hex", scimserver.Hostile{EchoAuthStatus: 401, EchoAuthEncoding: "hex"}, "HTTP 401"},
		{"403 dumping it wrapped over lines", scimserver.Hostile{EchoAuthStatus: 403, EchoAuthPlain: true, EchoAuthEncoding: "wrap"}, "HTTP 403"},
		{"500 echoing it wrapped over lines", scimserver.Hostile{EchoAuthStatus: 500, EchoAuthEncoding: "wrap"}, "HTTP 500"},
		{"500 echoing Authorization", scimserver.Hostile{EchoAuthStatus: 500}, "HTTP 500"},
		{"redirect with the token in its query", scimserver.Hostile{RedirectTo: "http://localhost:9", RedirectEchoToken: true}, "allowed_redirect_origins"},
		{"endless cursor", scimserver.Hostile{EndlessCursor: true}, "max_users = 1000"},
	} {
		srv.SetFaults(scimserver.Faults{Hostile: c.h})
		rc, out := syncOnceCaptured(t, cfg)
		if rc != 1 || !strings.Contains(out, c.want) {
			t.Fatalf("%s: rc %d, output does not say %q:\n%s", c.name, rc, c.want, out)
		}
		scan(c.name, out)
		st, err := commit.ReadStatus(statusPath)
		if err != nil || st.LastResult != commit.Failed || !strings.Contains(st.LastError, c.want) {
			t.Fatalf("%s: status %+v %v", c.name, st, err)
		}
		if now, _ := os.ReadFile(cache); !bytes.Equal(now, live) {
			t.Fatalf("%s: the live snapshot changed", c.name)
		}
	}

	// The token inside a record: that user's gecos is scrubbed, every
	// record still lands.
	srv.SetFaults(scimserver.Faults{})
	if _, err := srv.UpdateUser(d.Users[3].ID, func(u *scimserver.User) { u.POSIX.GECOS = "Echo " + hostileToken }); err != nil {
		t.Fatal(err)
	}
	// Encoded or wrapped over lines, in other attributes.
	wrapped := hostileToken[:10] + "\n" + hostileToken[10:25] + "\r\n" + hostileToken[25:]
	b64 := base64.StdEncoding.EncodeToString([]byte("Bearer " + hostileToken))
	if _, err := srv.UpdateUser(d.Users[4].ID, func(u *scimserver.User) { u.POSIX.GECOS = wrapped }); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.UpdateUser(d.Users[5].ID, func(u *scimserver.User) { u.POSIX.HomeDirectory = "/home/" + b64 }); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.UpdateUser(d.Users[6].ID, func(u *scimserver.User) { u.POSIX.GECOS = hex.EncodeToString([]byte(hostileToken)) }); err != nil {
		t.Fatal(err)
	}
	rc, out := syncOnceCaptured(t, cfg)
	if rc != 0 {
		t.Fatalf("sync with the token in a gecos: rc %d\n%s", rc, out)
	}
	scan("token in a record", out)
	if now, _ := os.ReadFile(cache); bytes.Equal(now, live) {
		t.Fatal("nothing committed")
	}
}
