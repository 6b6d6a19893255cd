package publish

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve never follows a symlink in the directory and refuses a
// directory that is a symlink or group/world-writable.
func TestServeRefusesLinksAndOpenDirs(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("root:$6$hash"), 0o600)
	name := strings.Repeat("a", 64) + ".db"
	os.Symlink(secret, filepath.Join(dir, name))
	os.Symlink(secret, filepath.Join(dir, ManifestName))
	s := &Server{Dir: dir}
	h := s.Handler()
	for _, p := range []string{"/" + name, "/" + ManifestName} {
		if !isPublishedFile(strings.TrimPrefix(p, "/")) && p != "/"+ManifestName {
			t.Fatalf("%s is not a published file name", p)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 404 || strings.Contains(rec.Body.String(), "hash") {
			t.Errorf("GET %s through a symlink: %d %q", p, rec.Code, rec.Body.String())
		}
	}
	os.Chmod(dir, 0o777|os.ModeSticky)
	if err := (&Server{Dir: dir}).ListenAndServe(context.Background(), "127.0.0.1:0", "", "", nil); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("1777 directory: %v", err)
	}
	os.Chmod(dir, 0o755)
	link := filepath.Join(t.TempDir(), "pub")
	os.Symlink(dir, link)
	if err := CheckServeDir(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked directory: %v", err)
	}
	if err := CheckServeDir(dir); err != nil {
		t.Errorf("0755 root directory: %v", err)
	}
}
