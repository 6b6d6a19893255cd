package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultListen is where `syncd serve` listens when nothing says
// otherwise: loopback, so serving to the cluster is a decision (set
// [publish] listen or --listen to the head's cluster address).
const DefaultListen = "127.0.0.1:8787"

// Server serves a publish directory over HTTP(S): the manifest with an
// ETag from its content (a quiet head answers polls with 304), snapshot
// files with their content address as ETag and an immutable cache life.
// Nothing else in the directory is served, and there is no listing.
type Server struct {
	Dir            string
	MaxConnections int // requests served at once; more wait briefly, then get 503
	// Wait is how long a request waits for a free slot.
	Wait time.Duration

	sem chan struct{}
}

// Handler is the HTTP handler for s.Dir.
func (s *Server) Handler() http.Handler {
	n := s.MaxConnections
	if n < 1 {
		n = 64
	}
	s.sem = make(chan struct{}, n)
	if s.Wait == 0 {
		s.Wait = 5 * time.Second
	}
	return http.HandlerFunc(s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name != ManifestName && !isPublishedFile(name) {
		http.NotFound(w, r)
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		t := time.NewTimer(s.Wait)
		select {
		case s.sem <- struct{}{}:
			t.Stop()
		case <-t.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	defer func() { <-s.sem }()

	// Never through a symlink: a link planted in the directory must not
	// serve /etc/shadow or the signing key.
	f, err := os.OpenFile(filepath.Join(s.Dir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	var content io.ReadSeeker = f
	if name == ManifestName {
		b, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
		if err != nil {
			http.Error(w, "read error", http.StatusInternalServerError)
			return
		}
		h := sha256.Sum256(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(h[:16])+`"`)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Type", "application/json")
		content = bytes.NewReader(b)
	} else {
		w.Header().Set("ETag", `"`+name+`"`)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	http.ServeContent(w, r, "", fi.ModTime(), content)
}

// CheckServeDir refuses to serve a directory that is a symlink, is not
// owned by root (or the running user), or is writable by group or others
// (a 1777 directory lets anyone plant files or links there).
func CheckServeDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("serve: %s is a symlink: name the directory itself ([publish] dir)", dir)
	case !fi.IsDir():
		return fmt.Errorf("serve: %s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("serve: %s (mode %04o) is writable by group or others: anyone could plant files there; chmod go-w %s", dir, fi.Mode().Perm(), dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("serve: %s is owned by uid %d, not root", dir, st.Uid)
	}
	return nil
}

// ListenAndServe serves s on addr until ctx ends; TLS when certFile and
// keyFile are set.
func (s *Server) ListenAndServe(ctx context.Context, addr, certFile, keyFile string, ready func(net.Addr)) error {
	if err := CheckServeDir(s.Dir); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if certFile != "" {
		err = srv.ServeTLS(ln, certFile, keyFile)
	} else {
		err = srv.Serve(ln)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
