package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret reached through a symlink planted in a world-writable
// directory, or sitting in a group/world-writable one, is refused; one in
// a root-only directory under a sticky /tmp is fine.
func TestTrustedPath(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, []byte("tok\n"), 0o600)
	if err := CheckSecretFile(good); err != nil {
		t.Fatalf("root-only file: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "token")
	os.WriteFile(inOpen, []byte("tok\n"), 0o600)
	if err := CheckSecretFile(inOpen); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("file in a 0777 directory: %v", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(inOpen, link)
	if err := CheckSecretFile(link); err == nil {
		t.Error("symlink to a file in a 0777 directory accepted")
	}
	if os.Geteuid() == 0 {
		// A symlink owned by another user (planted in a sticky dir).
		sticky := filepath.Join(dir, "sticky")
		os.Mkdir(sticky, 0o777)
		os.Chmod(sticky, 0o777|os.ModeSticky)
		planted := filepath.Join(sticky, "syncd.toml")
		os.Symlink(good, planted)
		os.Lchown(planted, 65534, 65534)
		if err := CheckSecretFile(planted); err == nil || !strings.Contains(err.Error(), "symlink owned by uid 65534") {
			t.Errorf("planted symlink: %v", err)
		}
		mine := filepath.Join(sticky, "mine")
		os.Symlink(good, mine)
		if err := CheckSecretFile(mine); err != nil {
			t.Errorf("root's symlink in a sticky directory to a root-only file: %v", err)
		}
	}
}

// A world-readable TLS key for the receiver is refused by check-config.
func TestReceiverTLSKeyMode(t *testing.T) {
	base := "[receiver]\nlisten = \"0.0.0.0:8443\"\ntls_cert = \"@DIR@/cert\"\ntls_key = \"@DIR@/key\"\n[[receiver.clients]]\nname = \"okta\"\ntoken_sha256 = \"" + strings.Repeat("ab", 32) + "\"\n"
	path := setup(t, base)
	dir := filepath.Dir(path)
	os.WriteFile(filepath.Join(dir, "cert"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "key"), []byte("x"), 0o644)
	c, err := Load(path)
	if err == nil {
		_, err = c.DecodeReceiver()
	}
	if err == nil || !strings.Contains(err.Error(), "tls_key") || !strings.Contains(err.Error(), "chmod 0600") {
		t.Errorf("0644 tls_key: %v", err)
	}
}
