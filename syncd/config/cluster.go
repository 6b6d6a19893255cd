package config

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A cluster is one head and many nodes. The head is the syncd that talks
// to the identity source (and to Slurm); with a [publish] table it also
// publishes every snapshot it commits, signed, to a directory (served by
// any web server, `syncd serve`, an S3 bucket or a shared file system).
// A node's syncd has a [mirror] table instead of a source: it fetches the
// head's signed manifest and snapshot, checks them and installs them. A
// node holds no identity-provider token and never runs sacctmgr.

// Cluster is embedded in Config.
type Cluster struct {
	Publish Publish `toml:"publish"`
	Mirror  Mirror  `toml:"mirror"`
}

// S3 names a bucket on an S3-compatible store (MinIO, Ceph RGW,
// SeaweedFS, AWS, CoreWeave). Credentials live in root-only files, never
// in the config; without them requests are anonymous (a public-read
// bucket works, since nodes check the signature, but the snapshot lists
// every user: a private bucket with read-only keys for nodes is better).
type S3 struct {
	Endpoint      string `toml:"s3_endpoint"` // host:port
	Bucket        string `toml:"s3_bucket"`
	Prefix        string `toml:"s3_prefix"`
	Region        string `toml:"s3_region"`
	AccessKeyFile string `toml:"s3_access_key_file"`
	SecretKeyFile string `toml:"s3_secret_key_file"`
	// Insecure talks plain http to the endpoint (a loopback test store,
	// or a store on a trusted cluster network); the default is https.
	Insecure bool `toml:"s3_insecure"`
}

// Publish is the head's [publish] table.
type Publish struct {
	// Dir receives the published files: manifest.json and one
	// content-addressed snapshot file per published snapshot (default:
	// publish/ beside cache_path).
	Dir string `toml:"dir"`
	// KeyFile is the ed25519 private key (PKCS#8 PEM, root-only) that
	// signs the manifest: `syncd keygen` or `openssl genpkey -algorithm ed25519`.
	KeyFile string `toml:"key_file"`
	// Compress is auto (zstd when it saves at least 10%), zstd or none.
	Compress string `toml:"compress"`
	// Keep is how many snapshot files besides the current one stay in Dir
	// (a node mid-download still finds its file).
	Keep int `toml:"keep"`
	// Deltas publishes page deltas from the last Deltas snapshots to the
	// current one (default 4; 0: full files only).
	Deltas int `toml:"deltas"`
	// Listen serves Dir over HTTP from `syncd run` itself (also the default
	// address of `syncd serve`); empty: not served by syncd.
	Listen         string `toml:"listen"`
	MaxConnections int    `toml:"max_connections"`
	TLSCertFile    string `toml:"tls_cert_file"`
	TLSKeyFile     string `toml:"tls_key_file"`
	// S3: when s3_bucket is set, every published file is also uploaded
	// there (the snapshot file before the manifest that names it).
	S3
}

// Mirror is a node's [mirror] table.
type Mirror struct {
	// Exactly one of URL (a web server serving the head's publish
	// directory), Path (that directory on a shared file system) and
	// s3_bucket.
	URL  string `toml:"url"`
	Path string `toml:"path"`
	S3
	// FallbackURLs and FallbackPaths are more heads (or copies of the
	// same head's publish directory), read after the one above, all
	// signed with the same key: the node follows the highest valid serial
	// it sees and fails over when a head is down (syncd/mirror/sources.go).
	FallbackURLs  []string `toml:"fallback_urls"`
	FallbackPaths []string `toml:"fallback_paths"`
	// FailoverAfter: with more than one source, a head whose
	// source_contact is this much older than another valid head's loses
	// its precedence (it is up but has lost its identity source).
	FailoverAfter time.Duration `toml:"failover_after"`
	// PublicKeyFile is the head's ed25519 public key (PEM); only
	// manifests it signed are accepted.
	PublicKeyFile string `toml:"public_key_file"`
	CAFile        string `toml:"ca_file"`
	// Interval between manifest polls, each shifted by up to ±Jitter.
	Interval time.Duration `toml:"interval"`
	Jitter   time.Duration `toml:"jitter"`
	// Timeout bounds one poll, downloads included.
	Timeout time.Duration `toml:"timeout"`
	// MaxSize is the largest snapshot a node accepts, in bytes.
	MaxSize int64 `toml:"max_size"`
	// StaleAfter: the node is "stale" (error in the log, `syncd status`
	// exit 1, scimbridge_mirror_stale 1) when the newest valid signature
	// from its head is older than this. 0 (the default): derived from the
	// head's poll interval, which the signed manifest carries
	// (syncd/mirror, staleAfter).
	StaleAfter time.Duration `toml:"stale_after"`
}

// IsMirror reports whether this is a node's config (a [mirror] table).
func (c *Config) IsMirror() bool { return c.md.IsDefined("mirror") }

// HasPublish reports whether this head publishes (a [publish] table).
func (c *Config) HasPublish() bool { return c.md.IsDefined("publish") }

func (c *Config) clusterDefaults() {
	p := &c.Publish
	if p.Dir == "" && c.CachePath != "" && filepath.IsAbs(c.CachePath) {
		// Beside the snapshot, so the systemd unit's ReadWritePaths covers it.
		p.Dir = filepath.Join(filepath.Dir(c.CachePath), "publish")
	}
	if p.Compress == "" {
		p.Compress = "auto"
	}
	if !c.md.IsDefined("publish", "keep") {
		p.Keep = 3
	}
	if !c.md.IsDefined("publish", "deltas") {
		p.Deltas = 4
	}
	if !c.md.IsDefined("publish", "max_connections") {
		p.MaxConnections = 64
	}
	m := &c.Mirror
	if m.Interval == 0 {
		m.Interval = 5 * time.Second
	}
	if !c.md.IsDefined("mirror", "jitter") {
		m.Jitter = m.Interval / 5
	}
	if m.Timeout == 0 {
		m.Timeout = 2 * time.Minute
	}
	if !c.md.IsDefined("mirror", "failover_after") {
		m.FailoverAfter = 5 * time.Minute
	}
	if m.MaxSize == 0 {
		m.MaxSize = 8 << 30
	}
}

// checkPublish checks the [publish] table.
func (c *Config) checkPublish() Errors {
	if !c.HasPublish() {
		return nil
	}
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: publish.%s: %s", c.Path, key, fmt.Sprintf(format, a...)))
	}
	p := c.Publish
	if p.Dir == "" {
		bad("dir", "missing: the directory the head publishes into (served by a web server, syncd serve, or shared)")
	} else if !filepath.IsAbs(p.Dir) {
		bad("dir", "%q is not an absolute path", p.Dir)
	} else if c.CachePath != "" && filepath.Clean(filepath.Dir(c.CachePath)) == filepath.Clean(p.Dir) {
		bad("dir", "%q is the live snapshot's directory: publish into a directory of its own", p.Dir)
	}
	if p.KeyFile == "" {
		bad("key_file", "missing: the ed25519 signing key (make one with `syncd keygen --out FILE`)")
	} else if !filepath.IsAbs(p.KeyFile) {
		bad("key_file", "%q is not an absolute path", p.KeyFile)
	} else if err := CheckSecretFile(p.KeyFile); err != nil {
		bad("key_file", "%v", err)
	} else if _, err := LoadPrivateKey(p.KeyFile); err != nil {
		bad("key_file", "%v", err)
	}
	switch p.Compress {
	case "auto", "zstd", "none":
	default:
		bad("compress", "%q is not auto, zstd or none", p.Compress)
	}
	if p.Keep < 1 || p.Keep > 1000 {
		bad("keep", "%d: must be 1 to 1000", p.Keep)
	}
	if p.Deltas < 0 || p.Deltas > 100 {
		bad("deltas", "%d: must be 0 to 100", p.Deltas)
	}
	if p.MaxConnections < 1 || p.MaxConnections > 100000 {
		bad("max_connections", "%d: must be 1 to 100000", p.MaxConnections)
	}
	if p.Listen != "" {
		if _, _, err := net.SplitHostPort(p.Listen); err != nil {
			bad("listen", "%v", err)
		}
	}
	if (p.TLSCertFile == "") != (p.TLSKeyFile == "") {
		bad("tls_cert_file", "tls_cert_file and tls_key_file go together")
	} else if p.TLSKeyFile != "" {
		if err := CheckSecretFile(p.TLSKeyFile); err != nil {
			bad("tls_key_file", "%v", err)
		}
	}
	errs = append(errs, c.checkS3("publish", p.S3)...)
	return errs
}

// checkMirrorNode checks a node's config: the [mirror] table and the
// keys a node uses. Source and Slurm keys are refused: a node holds no
// identity-provider token and never runs sacctmgr.
func (c *Config) checkMirrorNode() Errors {
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s: %s", c.Path, key, fmt.Sprintf(format, a...)))
	}
	for _, k := range []struct{ key, v string }{
		{"base_url", c.BaseURL}, {"token_file", c.TokenFile}, {"basic_user", c.BasicUser}, {"password_file", c.PasswordFile},
	} {
		if k.v != "" {
			bad(k.key, "set on a mirror node: nodes hold no identity-provider credentials (remove it, or remove [mirror] on the head)")
		}
	}
	if c.HasSlurm() {
		bad("slurm", "a mirror node does not reconcile Slurm: keep [slurm] on the head, whose published snapshot carries the associations")
	}
	if c.HasKubernetes() {
		bad("kubernetes", "a mirror node does not reconcile Kubernetes: keep [kubernetes] on the head, which holds its credentials")
	}
	if c.HasPublish() {
		bad("publish", "a mirror node does not publish (remove [publish] or [mirror])")
	}
	for _, f := range []struct{ key, v string }{{"cache_path", c.CachePath}, {"status_path", c.StatusPath}} {
		if f.v != "" && !filepath.IsAbs(f.v) {
			bad(f.key, "%q is not an absolute path", f.v)
		}
	}
	if c.CachePath != "" && c.CachePath == c.StatusPath {
		bad("status_path", "is the same file as cache_path")
	}
	if !logLevels[strings.ToLower(c.LogLevel)] {
		bad("log_level", "%q is not one of error, warn, info, debug, trace", c.LogLevel)
	}
	if c.MetricsListen != "" {
		if host, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("metrics_listen", "%v", err)
		} else if !isLoopbackHost(host) {
			bad("metrics_listen", "%q is not a loopback address (127.0.0.1, ::1 or localhost)", host)
		}
	}

	m := c.Mirror
	n := 0
	for _, v := range []string{m.URL, m.Path, m.Bucket} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		bad("mirror", "set exactly one of url (a web server), path (a shared directory) or s3_bucket (an S3 store); %d set", n)
	}
	checkURL := func(key, raw string) {
		if u, err := url.Parse(raw); err != nil {
			bad(key, "%v", err)
		} else if u.Scheme != "https" && u.Scheme != "http" {
			bad(key, "scheme %q: must be https or http", u.Scheme)
		} else if u.Host == "" {
			bad(key, "%q has no host", raw)
		} else if u.User != nil || u.RawQuery != "" {
			bad(key, "%q: no credentials or query in the URL", raw)
		}
	}
	checkPath := func(key, p string) {
		if !filepath.IsAbs(p) {
			bad(key, "%q is not an absolute path", p)
		} else if c.CachePath != "" && filepath.Clean(p) == filepath.Dir(c.CachePath) {
			bad(key, "%q is the live snapshot's own directory: point it at the head's publish directory", p)
		}
	}
	if m.URL != "" {
		checkURL("mirror.url", m.URL)
	}
	if m.Path != "" {
		checkPath("mirror.path", m.Path)
	}
	for _, u := range m.FallbackURLs {
		checkURL("mirror.fallback_urls", u)
	}
	for _, p := range m.FallbackPaths {
		checkPath("mirror.fallback_paths", p)
	}
	if m.FailoverAfter < 0 {
		bad("mirror.failover_after", "%s: must be at least 0 (0: the highest serial always leads)", m.FailoverAfter)
	}
	if n := 1 + len(m.FallbackURLs) + len(m.FallbackPaths); n > 8 {
		bad("mirror.fallback_urls", "%d sources: at most 8 (every poll reads each one's manifest)", n)
	}
	if m.PublicKeyFile == "" {
		bad("mirror.public_key_file", "missing: the head's ed25519 public key (`syncd keygen` wrote it next to the private key, as .pub)")
	} else if !filepath.IsAbs(m.PublicKeyFile) {
		bad("mirror.public_key_file", "%q is not an absolute path", m.PublicKeyFile)
	} else if _, err := LoadPublicKeys(m.PublicKeyFile); err != nil {
		bad("mirror.public_key_file", "%v", err)
	}
	if m.CAFile != "" {
		if _, err := os.ReadFile(m.CAFile); err != nil {
			bad("mirror.ca_file", "%v", err)
		}
	}
	if m.Interval < 100*time.Millisecond {
		bad("mirror.interval", "%s: must be at least 100ms", m.Interval)
	}
	if m.Jitter < 0 || m.Jitter >= m.Interval {
		bad("mirror.jitter", "%s must be at least 0 and less than interval (%s)", m.Jitter, m.Interval)
	}
	if m.Timeout <= 0 {
		bad("mirror.timeout", "must be positive")
	}
	if m.StaleAfter != 0 && m.StaleAfter < time.Minute {
		bad("mirror.stale_after", "%s: must be at least 1m (or leave it out: derived from the head's poll interval)", m.StaleAfter)
	}
	if m.MaxSize < 1<<20 {
		bad("mirror.max_size", "%d bytes: must be at least 1 MiB", m.MaxSize)
	}
	errs = append(errs, c.checkS3("mirror", m.S3)...)
	return errs
}

func (c *Config) checkS3(table string, s S3) Errors {
	var errs Errors
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config %s: %s.%s: %s", c.Path, table, key, fmt.Sprintf(format, a...)))
	}
	if s.Bucket == "" {
		if s.Endpoint != "" || s.AccessKeyFile != "" || s.SecretKeyFile != "" || s.Prefix != "" {
			bad("s3_bucket", "missing, but other s3_ keys are set")
		}
		return errs
	}
	if s.Endpoint == "" {
		bad("s3_endpoint", "missing: host:port of the S3 store")
	} else if strings.Contains(s.Endpoint, "/") {
		bad("s3_endpoint", "%q: host:port only (s3_insecure = true for plain http)", s.Endpoint)
	}
	if (s.AccessKeyFile == "") != (s.SecretKeyFile == "") {
		bad("s3_access_key_file", "s3_access_key_file and s3_secret_key_file go together")
	}
	for _, f := range []struct{ key, v string }{{"s3_access_key_file", s.AccessKeyFile}, {"s3_secret_key_file", s.SecretKeyFile}} {
		if f.v == "" {
			continue
		}
		if err := CheckSecretFile(f.v); err != nil {
			bad(f.key, "%v", err)
		}
	}
	if strings.HasPrefix(s.Prefix, "/") {
		bad("s3_prefix", "%q must not start with /", s.Prefix)
	}
	return errs
}

// LoadPrivateKey reads an ed25519 private key in PKCS#8 PEM ("PRIVATE
// KEY"), as `syncd keygen` and `openssl genpkey -algorithm ed25519` write.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PEM \"PRIVATE KEY\" (make one with `syncd keygen --out FILE`)", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not an ed25519 key", path, k)
	}
	return ek, nil
}

// LoadPublicKey reads an ed25519 public key in PKIX PEM ("PUBLIC KEY"),
// as `syncd keygen` and `openssl pkey -pubout` write.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	keys, err := LoadPublicKeys(path)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// LoadPublicKeys reads every PEM "PUBLIC KEY" block of path, in order: a
// node trusts each, so the head's key is rotated by appending the new
// head's publish.key.pub to every node's file, switching the head, then
// removing the old block (README, "Rotating the head's key").
func LoadPublicKeys(path string) ([]ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []ed25519.PublicKey
	for n := 1; ; n++ {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%s: PEM block %d is a %q, not a \"PUBLIC KEY\" (the .pub file `syncd keygen` wrote)", path, n, blk.Type)
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: PEM block %d: %w", path, n, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%s: PEM block %d is a %T, not an ed25519 key", path, n, k)
		}
		keys = append(keys, ek)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: not a PEM \"PUBLIC KEY\" (the .pub file `syncd keygen` wrote)", path)
	}
	return keys, nil
}
