package publish

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// TestHeadServesBeforeFirstPublish: a head started before anything was
// published (a fresh install: no publish directory yet) serves the
// directory once the publisher fills it. The web server used to stop
// for good on the missing directory ("serve: lstat ...: no such file"),
// and the nodes could never fetch.
func TestHeadServesBeforeFirstPublish(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	pub := filepath.Join(dir, "pub")
	p := filepath.Join(dir, "syncd.toml")
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("unused\n"), 0o600)
	if _, _, err := WriteKeyPair(filepath.Join(dir, "head.key")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(fmt.Sprintf(`
base_url = "http://127.0.0.1:1/scim/v2"
token_file = %q
preset = "posix"
cache_path = %q
status_path = %q
[publish]
dir = %q
key_file = %q
listen = %q
`, tok, filepath.Join(dir, "cache.db"), filepath.Join(dir, "status.json"), pub, filepath.Join(dir, "head.key"), addr)), 0o600)
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	StartHead(ctx, cfg, log)
	// What the first publish writes, after the server started.
	time.Sleep(200 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(pub, "manifest.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var last error
	for i := 0; i < 100; i++ {
		resp, err := http.Get("http://" + addr + "/manifest.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the head never served manifest.json: %v", last)
}
