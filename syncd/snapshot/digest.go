package snapshot

import "fmt"

// ContentsDigest is the digest every writer stores in a snapshot's meta
// (contents_sha256): what Load of that file digests to. A process that
// keeps the Contents it last wrote compares it with StoredDigest to know
// whether the file still holds them (pipeline.LiveKeep).
func ContentsDigest(c *Contents) string { return contentsHash(c) }

// StoredDigest is the contents digest the snapshot at path stores, read
// from its meta table alone (milliseconds at any size); "" when the file
// predates the digest. The error wraps fs.ErrNotExist when there is no
// snapshot.
func StoredDigest(path string) (string, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return "", fmt.Errorf("snapshot: read the digest of %s: %w", path, err)
	}
	defer db.Close()
	kv, err := loadMeta(db)
	if err != nil {
		return "", fmt.Errorf("snapshot: read the digest of %s: %w", path, err)
	}
	return kv[metaContentsHash], nil
}
