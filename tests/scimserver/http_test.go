package scimserver

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestETagNotModified(t *testing.T) {
	s, base := start(t, Options{})
	r := get(t, base+"/Users"+q("count", "5")).wantStatus(t, 200)
	tag := r.header.Get("ETag")
	if tag == "" {
		t.Fatal("list response has no ETag")
	}
	get(t, base+"/Users"+q("count", "5"), "If-None-Match", tag).wantStatus(t, 304)
	s.SetActive("bob", false)
	r = get(t, base+"/Users"+q("count", "5"), "If-None-Match", tag).wantStatus(t, 200)
	if r.header.Get("ETag") == tag {
		t.Fatal("ETag unchanged after a change")
	}
	if c := s.Requests(); c.NotModified != 1 {
		t.Errorf("NotModified counter %d", c.NotModified)
	}

	bob, _ := s.User("bob")
	r = get(t, base+"/Users/"+bob.ID).wantStatus(t, 200)
	if r.header.Get("ETag") != r.body["meta"].(map[string]any)["version"] {
		t.Errorf("ETag %q differs from meta.version %v", r.header.Get("ETag"), r.body["meta"])
	}
	get(t, base+"/Users/"+bob.ID, "If-None-Match", r.header.Get("ETag")).wantStatus(t, 304)
}

func TestGzip(t *testing.T) {
	s, base := start(t, Options{})
	r := get(t, base+"/Users", "Accept-Encoding", "gzip")
	if r.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", r.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.raw))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	var v map[string]any
	if err := json.Unmarshal(plain, &v); err != nil || v["totalResults"] != 11.0 {
		t.Fatalf("gunzipped body: %v %.100s", err, plain)
	}
	if r := get(t, base+"/Users", "Accept-Encoding", "gzip;q=0"); r.header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent though refused")
	}
	if !s.RequestLog()[0].Gzip {
		t.Error("request log does not record gzip")
	}
}

func TestAuth(t *testing.T) {
	_, base := start(t, Options{Token: "s3cret", BasicUser: "scim", BasicPassword: "pw"})
	get(t, base+"/Users").wantError(t, 401, "")
	get(t, base+"/ServiceProviderConfig", "Authorization", "Bearer wrong").wantError(t, 401, "")
	get(t, base+"/Users", "Authorization", "Bearer s3cret").wantStatus(t, 200)
	req, _ := http.NewRequest("GET", base+"/Users", nil)
	req.SetBasicAuth("scim", "pw")
	do(t, req).wantStatus(t, 200)
	req.SetBasicAuth("scim", "nope")
	do(t, req).wantStatus(t, 401)
}

func TestDiscovery(t *testing.T) {
	_, base := start(t, Options{Flavor: FlavorCoreWeave, Cursor: true, Token: "t"})
	auth := []string{"Authorization", "Bearer t"}
	cfg := get(t, base+"/ServiceProviderConfig", auth...).wantStatus(t, 200)
	for _, k := range []string{"filter", "sort", "etag", "patch", "bulk", "changePassword", "authenticationSchemes", "pagination"} {
		if cfg.body[k] == nil {
			t.Errorf("ServiceProviderConfig lacks %s", k)
		}
	}
	p := cfg.body["pagination"].(map[string]any)
	for _, k := range []string{"cursor", "index", "defaultPaginationMethod", "defaultPageSize", "maxPageSize", "cursorTimeout"} {
		if p[k] == nil {
			t.Errorf("pagination lacks %s", k)
		}
	}
	sch := get(t, base+"/Schemas", auth...).wantStatus(t, 200)
	var ids []string
	for _, r := range sch.resources() {
		ids = append(ids, r["id"].(string))
	}
	want := []string{URNUser, URNGroup, FlavorCoreWeave.UserURN, FlavorCoreWeave.GroupURN}
	if len(ids) != 4 || ids[2] != want[2] || ids[3] != want[3] {
		t.Errorf("schemas %v, want %v", ids, want)
	}
	ext := get(t, base+"/Schemas/"+FlavorCoreWeave.UserURN, auth...).wantStatus(t, 200)
	found := map[string]string{}
	for _, a := range ext.body["attributes"].([]any) {
		m := a.(map[string]any)
		found[m["name"].(string)] = m["type"].(string) + "/" + m["returned"].(string)
	}
	if found["uid"] != "integer/default" || found["sshKeys"] != "string/default" || found["shell"] == "" {
		t.Errorf("coreweave extension attributes %v", found)
	}
	rt := get(t, base+"/ResourceTypes", auth...).wantStatus(t, 200)
	if len(rt.resources()) != 2 || rt.resources()[0]["endpoint"] != "/Users" {
		t.Errorf("resource types %s", rt.raw)
	}
	get(t, base+"/ResourceTypes/Group", auth...).wantStatus(t, 200)
	get(t, base+"/Nope", auth...).wantStatus(t, 404)
	req := newReq(t, "POST", base+"/Users", `{}`)
	req.Header.Set("Authorization", "Bearer t")
	do(t, req).wantStatus(t, 501)
}

func TestTLS(t *testing.T) {
	s := New(Options{})
	base, stop, err := s.StartTLS("testdata/tls/server.pem", "testdata/tls/server.key")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("base %s", base)
	}
	// Untrusted by default...
	if _, err := http.Get(base + "/ServiceProviderConfig"); err == nil {
		t.Fatal("test CA trusted without being configured")
	}
	// ...trusted with the test CA.
	pem, err := os.ReadFile("testdata/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(base + "/ServiceProviderConfig")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, _, err := s.StartTLS("nope.pem", "nope.key"); err == nil {
		t.Fatal("StartTLS with missing files succeeded")
	}
}
