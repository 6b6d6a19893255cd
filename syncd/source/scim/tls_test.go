package scim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

// selfSigned makes a certificate for 127.0.0.1 and writes its PEM.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scim test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, p
}

func TestTLSVerification(t *testing.T) {
	cert, caFile := selfSigned(t)
	srv := scimserver.New(scimserver.Options{BasicUser: "sync", BasicPassword: "pw"})
	srv.Load(scimserver.Generate(20, 2, 1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url, stop := srv.Serve(ln, &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	defer stop()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("url %s", url)
	}

	// Verification is on by default: an unknown CA fails.
	c := newTestClient(t, url, func(o *Options) { o.BasicUser, o.BasicPassword = "sync", "pw" })
	if _, err := c.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: err = %v", err)
	}
	if c.Stats().Retries != 0 {
		t.Errorf("a certificate failure was retried %d times", c.Stats().Retries)
	}
	// With the CA file it works, over HTTP basic auth.
	c = newTestClient(t, url, func(o *Options) { o.BasicUser, o.BasicPassword = "sync", "pw"; o.CAFile = caFile })
	dir, err := c.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dir.Users) != 20 {
		t.Errorf("%d users", len(dir.Users))
	}
	for _, r := range srv.RequestLog() {
		if r.Status == 200 && r.Authorization != "Basic" {
			t.Errorf("request %s used %q auth", r.Path, r.Authorization)
		}
	}
	// A wrong password is a 401, not retried.
	c = newTestClient(t, url, func(o *Options) { o.BasicUser, o.BasicPassword = "sync", "nope"; o.CAFile = caFile })
	if _, err := c.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "nope") {
		t.Fatalf("wrong password: err = %v", err)
	}
}
