package mirror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

// Transport reads files of the head's publish directory. Fetch writes the
// file called name to w and fails if it is longer than max bytes; it does
// not judge the content (the node checks sizes, hashes and signatures).
type Transport interface {
	Fetch(ctx context.Context, name string, max int64, w io.Writer) (int64, error)
	Name() string
}

// errTooLarge: the file is longer than the caller allowed.
var errTooLarge = errors.New("larger than allowed")

// copyMax copies at most max bytes and fails past them.
func copyMax(w io.Writer, r io.Reader, max int64) (int64, error) {
	n, err := io.Copy(w, io.LimitReader(r, max+1))
	if err != nil {
		return n, err
	}
	if n > max {
		return n, fmt.Errorf("%w (%d bytes)", errTooLarge, max)
	}
	return n, nil
}

// New builds the transport a [mirror] table names.
func New(m config.Mirror) (Transport, error) {
	switch {
	case m.Path != "":
		return &dirTransport{dir: m.Path}, nil
	case m.URL != "":
		return newHTTP(m.URL, m.CAFile)
	case m.Bucket != "":
		c, err := publish.NewS3Client(m.S3)
		if err != nil {
			return nil, err
		}
		return &s3Transport{c: c, bucket: m.Bucket, prefix: publish.S3Prefix(m.Prefix), endpoint: m.Endpoint}, nil
	}
	return nil, errors.New("mirror: no url, path or s3_bucket")
}

// dirTransport copies from a shared directory (NFS, Lustre, GPFS): the
// node copies the file into its own /var/lib/scimbridge and never reads
// a live snapshot over the network file system.
type dirTransport struct{ dir string }

func (d *dirTransport) Name() string { return d.dir }

func (d *dirTransport) Fetch(ctx context.Context, name string, max int64, w io.Writer) (int64, error) {
	if name != filepath.Base(name) {
		return 0, fmt.Errorf("bad name %q", name)
	}
	f, err := os.Open(filepath.Join(d.dir, name))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return copyMax(w, &ctxReader{ctx, f}, max)
}

// ctxReader stops a long copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// httpTransport GETs from any web server serving the publish directory.
// The manifest is asked for with If-None-Match: a quiet head costs a
// 304 per poll.
type httpTransport struct {
	base   *url.URL
	client *http.Client

	mu   sync.Mutex
	etag string
	body []byte // the manifest that etag names
}

func newHTTP(raw, caFile string) (*httpTransport, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2
	tr.ResponseHeaderTimeout = 30 * time.Second
	tr.Proxy = nil // a node talks to its own head, never through a proxy from the environment
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &httpTransport{base: u, client: &http.Client{
		Transport: tr,
		// Redirects stay on the same host: a served directory has no reason
		// to send a node elsewhere.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 || req.URL.Host != u.Host {
				return fmt.Errorf("redirect to %s refused", req.URL.Redacted())
			}
			return nil
		},
	}}, nil
}

func (h *httpTransport) Name() string { return h.base.String() }

func (h *httpTransport) Fetch(ctx context.Context, name string, max int64, w io.Writer) (int64, error) {
	u := *h.base
	u.Path = path.Join(h.base.Path, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	manifest := name == publish.ManifestName
	if manifest {
		h.mu.Lock()
		if h.etag != "" {
			req.Header.Set("If-None-Match", h.etag)
		}
		h.mu.Unlock()
		req.Header.Set("Cache-Control", "no-cache")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && manifest:
		h.mu.Lock()
		body := h.body
		h.mu.Unlock()
		if body == nil {
			return 0, fmt.Errorf("GET %s: 304 Not Modified without a cached copy", u.Redacted())
		}
		n, err := w.Write(body)
		return int64(n), err
	case resp.StatusCode != http.StatusOK:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	case resp.ContentLength > max:
		return 0, fmt.Errorf("GET %s: %w (Content-Length %d)", u.Redacted(), errTooLarge, resp.ContentLength)
	}
	if !manifest {
		return copyMax(w, resp.Body, max)
	}
	var buf strings.Builder
	n, err := copyMax(&buf, resp.Body, max)
	if err != nil {
		return n, err
	}
	body := []byte(buf.String())
	h.mu.Lock()
	h.etag, h.body = resp.Header.Get("ETag"), body
	if h.etag == "" {
		h.body = nil
	}
	h.mu.Unlock()
	_, err = w.Write(body)
	return n, err
}

// s3Transport reads objects from a bucket.
type s3Transport struct {
	c                        *minio.Client
	bucket, prefix, endpoint string
}

func (s *s3Transport) Name() string {
	return "s3://" + s.endpoint + "/" + s.bucket + "/" + s.prefix
}

func (s *s3Transport) Fetch(ctx context.Context, name string, max int64, w io.Writer) (int64, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, s.prefix+name, minio.GetObjectOptions{})
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	return copyMax(w, obj, max)
}
