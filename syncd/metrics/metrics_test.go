package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeLoopbackOnly(t *testing.T) {
	m := New()
	if err := m.Serve(context.Background(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Fatalf("Serve on 0.0.0.0: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, addr) }()
	m.Syncs.WithLabelValues("committed").Inc()
	m.SetRejections(map[string]int{"bad-name": 3})
	var body string
	for i := 0; i < 50; i++ {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`scimbridge_syncs_total{result="committed"} 1`, `scimbridge_rejections{reason="bad-name"} 3`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}
