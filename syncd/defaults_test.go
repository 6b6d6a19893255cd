package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// quirkEnv is a server with opts and a config with only what an admin
// must write (base_url, token, preset, paths), plus extra.
func quirkEnv(t *testing.T, opts scimserver.Options, users, groups int, extra string) *env {
	t.Helper()
	e := &env{dir: t.TempDir()}
	opts.Token = "tok-123"
	e.srv = scimserver.New(opts)
	if err := e.srv.Load(scimserver.Generate(users, groups, 3)); err != nil {
		t.Fatal(err)
	}
	url, stop := e.srv.Start()
	t.Cleanup(stop)
	write := func(name, body string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok := write("token", "tok-123\n")
	pw := write("passwd", "root:x:0:0:root:/root:/bin/bash\n")
	gr := write("group", "root:x:0:\n")
	e.cache = filepath.Join(e.dir, "cache.db")
	e.status = filepath.Join(e.dir, "status.json")
	e.cfgPath = write("syncd.toml", fmt.Sprintf(`
base_url = %q
token_file = %q
preset = "posix"
cache_path = %q
status_path = %q
local_passwd = %q
local_group = %q
uid_min = 1000
max_retries = 0
%s
`, url, tok, e.cache, e.status, pw, gr, extra))
	return e
}

// captureStdout runs f with os.Stdout going to a pipe (check-config
// prints there).
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	os.Stdout = old
	return <-done
}

// Issue 12 acceptance: against a server with singular sshPublicKey and
// users with fish and nologin shells, the default configuration (preset
// posix, no allowed_shells) publishes every POSIX user, nologin users
// with their shell, and reads their keys.
func TestDefaultsPublishEveryPosixUser(t *testing.T) {
	shells := filepath.Join(t.TempDir(), "shells")
	os.WriteFile(shells, []byte("# /etc/shells: valid login shells\n/bin/sh\n/bin/bash\n/usr/bin/bash\n/usr/bin/fish\n"), 0o644)
	old := config.ShellsFile
	config.ShellsFile = shells
	defer func() { config.ShellsFile = old }()

	e := quirkEnv(t, scimserver.Options{Flavor: scimserver.FlavorPOSIXSingularKey}, 60, 4, "")
	users := e.srv.Snapshot().Users
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhRKPk7Yq0bCq1Ug0w3nYVtmB8hGrKQqDnJw1u7Oq3c alice@example"
	set := map[string]string{}
	posix := 0
	for i, u := range users {
		if u.POSIX == nil {
			continue // not a POSIX user: rejected for its missing uid
		}
		posix++
		sh := []string{"/usr/bin/fish", "/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/bin/bash"}[i%5]
		e.srv.UpdateUser(u.ID, func(x *scimserver.User) { x.POSIX.LoginShell = sh })
		set[u.ID] = sh
	}
	e.srv.SetSSHKeys(users[1].ID, []string{key})

	out, err := e.syncer(t).Once(context.Background(), pipeline.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Valid.Rejections); n != len(users)-posix {
		t.Errorf("%d users rejected with the default config, %d without POSIX attributes: %v", n, len(users)-posix, out.Valid.Rejections)
	}
	c, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Users) != posix || posix < 50 {
		t.Fatalf("snapshot has %d users, the server %d POSIX users", len(c.Users), posix)
	}
	for _, u := range c.Users {
		if u.Shell != set[u.SCIMID] {
			t.Errorf("%s: shell %q, the server says %q", u.Name, u.Shell, set[u.SCIMID])
		}
		if u.SCIMID == users[1].ID && (len(u.SSHKeys) != 1 || u.SSHKeys[0] != key) {
			t.Errorf("%s: keys %q; the server publishes sshPublicKey %q", u.Name, u.SSHKeys, key)
		}
	}
}

// check-config --online names the option for each quirk.
func TestCheckConfigOnlineNamesTheFix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults scimserver.Faults
		extra  string
		want   string
	}{
		{"slow sort", scimserver.Faults{SortDelayMS: 1500}, "sort_by = \"id\"\nrequest_timeout = \"1s\"", "error: sort_by: one page with sortBy=id took longer than request_timeout (1s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := quirkEnv(t, scimserver.Options{Faults: tc.faults}, 30, 2, tc.extra)
			var errb bytes.Buffer
			rc := 0
			out := captureStdout(t, func() {
				rc = runMain([]string{"--config", e.cfgPath, "check-config", "--online"}, io.Discard, &errb)
			})
			if rc != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("check-config --online: rc %d\nstdout:\n%s\nstderr:\n%s\nwant %q", rc, out, errb.String(), tc.want)
			}
		})
	}
	// A clean server and the default config: ok.
	e := quirkEnv(t, scimserver.Options{}, 30, 2, "")
	for _, u := range e.srv.Snapshot().Users[:2] {
		e.srv.SetSSHKeys(u.ID, []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhRKPk7Yq0bCq1Ug0w3nYVtmB8hGrKQqDnJw1u7Oq3c a@b"})
	}
	rc := 0
	out := captureStdout(t, func() {
		rc = runMain([]string{"--config", e.cfgPath, "check-config", "--online"}, io.Discard, io.Discard)
	})
	if rc != 0 || strings.Contains(out, "error") || strings.Contains(out, "warning") || !strings.Contains(out, ": ok") {
		t.Errorf("check-config --online on a clean server: rc %d\n%s", rc, out)
	}
}
