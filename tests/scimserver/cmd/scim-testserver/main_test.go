package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinary builds the command, starts it on the sample fixture and checks
// what a shell script relies on: the first stdout line is a working base
// URL, the token is required, faults apply, SIGTERM ends it.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "scim-testserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("tok123\n"), 0o600)

	cmd := exec.Command(bin, "-fixture", "../../testdata/sample.json", "-flavor", "coreweave",
		"-token-file", tok, "-cursor", "-returned-request", "-print-addr",
		"-faults-json", `{"failListRequest":2,"failStatus":503}`)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first stdout line: %v", err)
	}
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/scim/v2") {
		t.Fatalf("base URL %q", base)
	}

	getJSON := func(path string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer tok123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	urn := "urn:coreweave:params:scim:schemas:extension:coreweave:2.0:CoreWeaveUser"
	status, m := getJSON("/Users?cursor=&count=2&attributes=userName," + urn)
	if status != 200 || m["nextCursor"] == nil {
		t.Fatalf("first page: %d %v", status, m)
	}
	u := m["Resources"].([]any)[0].(map[string]any)
	if u[urn].(map[string]any)["uid"] != 20001.0 {
		t.Fatalf("alice: %v", u)
	}
	if status, _ := getJSON("/Users?cursor=" + m["nextCursor"].(string) + "&count=2"); status != 503 {
		t.Fatalf("second list request: %d, want the injected 503", status)
	}
	if resp, err := http.Get(base + "/Users"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("without token: %v %v", resp.StatusCode, err)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10s after SIGTERM")
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", ":8080", "192.0.2.1:80", "example.org:80"} {
		if checkLoopback(a) == nil {
			t.Errorf("%s accepted", a)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "[::1]:0", "localhost:9000", "127.0.0.2:80"} {
		if err := checkLoopback(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
}
