package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
)

func writeKeys(t *testing.T, dir string) (string, string) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	pk, _ := x509.MarshalPKCS8PrivateKey(priv)
	pp, _ := x509.MarshalPKIXPublicKey(pub)
	k, p := filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
	os.WriteFile(k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600)
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pp}), 0o644)
	return k, p
}

func loadString(t *testing.T, body string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "syncd.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func TestMirrorNodeConfig(t *testing.T) {
	dir := t.TempDir()
	_, pub := writeKeys(t, dir)
	c, err := loadString(t, "[mirror]\npath = \"/shared/pub\"\npublic_key_file = \""+pub+"\"\n")
	if err != nil {
		t.Fatalf("a minimal node config: %v", err)
	}
	if !c.IsMirror() || c.Mirror.Interval.Seconds() != 5 || c.Mirror.Jitter.Seconds() != 1 {
		t.Fatalf("defaults: %+v", c.Mirror)
	}
	_, err = loadString(t, "base_url = \"https://idp/scim\"\ntoken_file = \"/etc/t\"\n[slurm]\nenabled = true\n[mirror]\nurl = \"ftp://x\"\npath = \"rel\"\npublic_key_file = \""+pub+".missing\"\ninterval = \"1ms\"\n")
	if err == nil {
		t.Fatal("a broken node config loads")
	}
	for _, want := range []string{"base_url: set on a mirror node", "token_file: set on a mirror node", "slurm: a mirror node",
		"mirror: set exactly one", "mirror.url: scheme", "mirror.path: \"rel\"", "mirror.public_key_file", "mirror.interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
}

func TestPublishConfig(t *testing.T) {
	dir := t.TempDir()
	key, _ := writeKeys(t, dir)
	base := "base_url = \"https://idp.example/scim/v2\"\ntoken_file = \"" + filepath.Join(dir, "tok") + "\"\npreset = \"posix\"\n"
	os.WriteFile(filepath.Join(dir, "tok"), []byte("x"), 0o600)
	if _, err := loadString(t, base+"[publish]\ndir = \"/srv/pub\"\nkey_file = \""+key+"\"\n"); err != nil {
		t.Fatalf("a good [publish]: %v", err)
	}
	if c, err := loadString(t, base+"[publish]\nkey_file = \""+key+"\"\n"); err != nil || c.Publish.Dir != "/var/lib/scimbridge/publish" || c.Publish.Deltas != 4 {
		t.Fatalf("[publish] defaults: %+v, %v", c.Publish, err)
	}
	os.Chmod(key, 0o644)
	_, err := loadString(t, base+"[publish]\ndir = \"/var/lib/scimbridge\"\nkey_file = \""+key+"\"\ncompress = \"lz4\"\nkeep = 0\ns3_bucket = \"b\"\n")
	for _, want := range []string{"publish.dir: \"/var/lib/scimbridge\" is the live snapshot's directory", "publish.key_file:", "mode 0644",
		"publish.compress", "publish.keep", "publish.s3_endpoint: missing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
}
