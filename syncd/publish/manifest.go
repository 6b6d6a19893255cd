package publish

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ManifestName is the one mutable file in a publish directory.
const ManifestName = "manifest.json"

// Format names this manifest layout; a node refuses any other.
const Format = "scimbridge-manifest/1"

// MaxManifestSize bounds what a node reads as a manifest.
const MaxManifestSize = 64 << 10

// sigContext is prepended to the payload before signing, so a signature
// over a manifest cannot be replayed as a signature over anything else
// made with the same key.
const sigContext = "scimbridge manifest v1\n"

// Manifest describes the published snapshot. It is signed by the head; a
// node trusts nothing in it before the signature checks out.
type Manifest struct {
	Format string `json:"format"`
	// Serial is the snapshot's meta serial. A node refuses a manifest
	// with a lower serial than its live snapshot (a replay).
	Serial int64 `json:"serial"`
	// SHA256 and Size are those of the snapshot file itself (after
	// decompression).
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Created is when the head wrote the snapshot.
	Created time.Time `json:"created"`
	// SourceContact is the head's last successful contact with the
	// identity source. The head re-signs the manifest with a new value
	// on every successful poll, changed or not; a node sets its live
	// file's mtime to it, so gates can tell quiet from stale.
	SourceContact time.Time `json:"source_contact"`
	// Signed is when this manifest was signed. The head signs again at
	// every poll that reached the source, so a node that sees no newer
	// signature for long knows its head (or its copy of the publish
	// directory) is frozen, whatever the manifest says.
	Signed time.Time `json:"signed"`
	// PollSeconds is the head's poll_interval: how often a healthy head
	// signs. Nodes derive their default stale_after from it. 0 from
	// older heads.
	PollSeconds int64 `json:"poll_seconds,omitempty"`
	// Object is the published file holding the snapshot, in the same
	// directory: "<sha256>.db" or "<sha256>.db.zst".
	Object       string `json:"object"`
	ObjectSize   int64  `json:"object_size"`
	ObjectSHA256 string `json:"object_sha256"`
	Compression  string `json:"compression"` // none or zstd

	Users        int `json:"users"`
	Groups       int `json:"groups"`
	Associations int `json:"associations"`

	// Deltas from recent snapshots to this one (deltas.go).
	Deltas []Delta `json:"deltas,omitempty"`
	// PageRoot is PageRoot of the snapshot's page hashes (deltas.go): a
	// node that applied a delta checks the result against it by hashing
	// only the pages the delta wrote. Absent from older heads' manifests.
	PageRoot string `json:"page_root,omitempty"`
}

// envelope is manifest.json: the payload exactly as signed, the
// signature, and which key made it (a hint for people; the node checks
// against its own configured key).
type envelope struct {
	Payload   string `json:"payload"` // base64 of the manifest JSON
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"` // base64 ed25519 over sigContext+payload
}

// KeyID is a short fingerprint of a public key: the first 8 bytes of its
// SHA-256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return hex.EncodeToString(h[:8])
}

// Sign encodes and signs m as the bytes of manifest.json.
func Sign(m *Manifest, key ed25519.PrivateKey) ([]byte, error) {
	if m.Format == "" {
		m.Format = Format
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, append([]byte(sigContext), payload...))
	e := envelope{
		Payload:   base64.StdEncoding.EncodeToString(payload),
		KeyID:     KeyID(key.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(sig),
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ErrSignature: the manifest is not signed by the configured key.
var ErrSignature = errors.New("manifest signature does not verify with the configured public key")

var (
	hexSHA256  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	objectName = regexp.MustCompile(`^[0-9a-f]{64}\.db(\.zst)?$`)
)

// Open checks the signature on manifest.json's bytes and returns the
// manifest, checked for shape. Nothing is parsed from the payload before
// the signature verifies.
func Open(b []byte, pub ed25519.PublicKey) (*Manifest, error) {
	return OpenAny(b, []ed25519.PublicKey{pub})
}

// OpenAny is Open trusting any of keys: a node's public_key_file may hold
// the old and the new head key while the head's key is rotated.
func OpenAny(b []byte, keys []ed25519.PublicKey) (*Manifest, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no public key configured", ErrSignature)
	}
	if len(b) > MaxManifestSize {
		return nil, fmt.Errorf("manifest is %d bytes, more than %d", len(b), MaxManifestSize)
	}
	var e envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("manifest is not a signed manifest (truncated?): %w", err)
	}
	payload, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("manifest payload: %w", err)
	}
	sig, err := base64.StdEncoding.DecodeString(e.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w (malformed signature)", ErrSignature)
	}
	verified := false
	var ids []string
	for _, pub := range keys {
		ids = append(ids, KeyID(pub))
		if ed25519.Verify(pub, append([]byte(sigContext), payload...), sig) {
			verified = true
			break
		}
	}
	if !verified {
		if !slices.Contains(ids, e.KeyID) {
			return nil, fmt.Errorf("%w: signed by key %q, this node trusts key(s) %s", ErrSignature, e.KeyID, strings.Join(ids, ", "))
		}
		return nil, ErrSignature
	}
	var m Manifest
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("manifest payload: %w", err)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Manifest) check() error {
	switch {
	case m.Format != Format:
		return fmt.Errorf("manifest format %q, this node reads %q (upgrade syncd on the node)", m.Format, Format)
	case m.Serial < 1:
		return fmt.Errorf("manifest serial %d", m.Serial)
	case !hexSHA256.MatchString(m.SHA256) || !hexSHA256.MatchString(m.ObjectSHA256):
		return errors.New("manifest hashes are not hex SHA-256")
	case m.Size < 1 || m.ObjectSize < 1:
		return errors.New("manifest sizes must be positive")
	case !objectName.MatchString(m.Object) || m.Object[:64] != m.SHA256:
		return fmt.Errorf("manifest object %q is not <sha256>.db[.zst]", m.Object)
	case m.PageRoot != "" && !hexSHA256.MatchString(m.PageRoot):
		return errors.New("manifest page_root is not hex SHA-256")
	case m.Compression != "none" && m.Compression != "zstd":
		return fmt.Errorf("manifest compression %q", m.Compression)
	case (m.Compression == "zstd") != (len(m.Object) > 67):
		return fmt.Errorf("manifest object %q does not match compression %q", m.Object, m.Compression)
	}
	for i := range m.Deltas {
		if err := m.Deltas[i].check(m.SHA256); err != nil {
			return err
		}
	}
	return nil
}
