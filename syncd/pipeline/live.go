package pipeline

import (
	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
	"github.com/scimbridge/scimbridge/syncd/source"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// LiveKeep is the live snapshot's contents as this process last wrote or
// read them, kept between polls so that a poll which sees one change does
// not load 100,000 users back from disk (about 15 s wall, 1-2 s of CPU,
// and a second copy of the directory on the heap every poll).
//
// It is used only while the file still holds exactly these contents: the
// attempt reads the digest the file stores (contents_sha256, its meta
// table alone) and compares it with Digest. Any other writer (sync
// --once, the Slurm step adding associations, a rollback, an admin's
// copy) stores another digest, and the attempt loads the file as before.
// snapshot.Update checks the same digest again under the lock, so a
// write that lands between the check and the commit is refused there.
//
// The contents are shared, never changed: validation, the diff and the
// policy only read the live contents (the guard and CarryAssociations
// change the next ones).
type LiveKeep struct {
	Contents *snapshot.Contents
	Meta     snapshot.Meta
	Digest   string
	// Valid validates each attempt from what the last one found
	// (validate.Incremental): it depends on its own last directory, not
	// on the live file, so forget keeps it.
	Valid validate.Incremental
	// said: the reasons for a whole validation already logged.
	said map[string]bool
}

// load is the live snapshot at path: the kept contents when the file's
// stored digest is theirs, else the file read back (and kept).
func (k *LiveKeep) load(path string) (*snapshot.Contents, snapshot.Meta, bool, error) {
	if k != nil && k.Contents != nil && k.Digest != "" {
		if d, err := snapshot.StoredDigest(path); err == nil && d == k.Digest {
			return k.Contents, k.Meta, true, nil
		}
	}
	c, m, err := snapshot.Load(path)
	if k != nil {
		k.forget()
		if err == nil {
			k.Contents, k.Meta, k.Digest = c, m, snapshot.ContentsDigest(c)
		}
	}
	return c, m, false, err
}

// wrote keeps what was just committed at path, with the digest the
// writer stored (read back under the writers' lock, so it is this
// commit's: no second digest of 100,000 users).
func (k *LiveKeep) wrote(path string, c *snapshot.Contents, m snapshot.Meta) {
	if k == nil {
		return
	}
	d, err := snapshot.StoredDigest(path)
	if err != nil || d == "" {
		k.forget()
		return
	}
	k.Contents, k.Meta, k.Digest = c, m, d
}

// digest is the kept contents' digest ("" when none is kept).
func (k *LiveKeep) digest() string {
	if k == nil || k.Contents == nil {
		return ""
	}
	return k.Digest
}

func (k *LiveKeep) forget() {
	if k != nil {
		k.Contents, k.Meta, k.Digest = nil, snapshot.Meta{}, ""
	}
}

// validate is Directory's result for dir. With a LiveKeep (the daemon,
// the receiver) the incremental validator makes it; on a full read
// (whole) that it validated incrementally, Directory makes it and checks
// the incremental one, which any difference resets (logged at error
// level): the hourly reconcile proves the validator too.
func (k *LiveKeep) validate(dir *source.Directory, o validate.Options, whole bool, log logrus.FieldLogger) *validate.Result {
	if k == nil {
		return validate.Directory(dir, o)
	}
	res, m := k.Valid.Validate(dir, o)
	if whole && !m.Whole {
		full := validate.Directory(dir, o)
		if d := res.Difference(full); d != "" {
			log.WithField("difference", d).Error("syncd: the incremental validation differs from a whole validation of the same directory (a bug: please report it); the whole one is used and the incremental state made again")
			k.Valid = validate.Incremental{}
			k.Valid.Validate(dir, o)
		}
		return full
	}
	if m.Why != "" && !k.said[m.Why] {
		if k.said == nil || len(k.said) > 100 {
			k.said = map[string]bool{}
		}
		k.said[m.Why] = true
		log.WithField("reason", m.Why).Info("syncd: validating every record again")
	}
	return res
}
