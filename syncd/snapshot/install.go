package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scimbridge/scimbridge/syncd/cache"
	"sync"
	"syscall"
)

// Install is the one way a finished snapshot file becomes the live one,
// for a mirror node's download as for the head's own commit (Write ends
// in the same install step): it checks candidate through the C reader
// every node runs (VerifyFile), makes it world-readable, fsyncs it, keeps
// the live file as path.prev, renames candidate over live and fsyncs the
// directory. candidate must be in live's directory (rename is atomic only
// within one file system). On any error the live snapshot is unchanged
// and candidate is left for the caller to remove.
//
// With o.Proven the candidate's every byte is proven to be a file the
// head verified in full (a page delta applied to a copy of the live file
// and checked against the signed manifest's page hashes, syncd/mirror):
// the C reader opens it and reads its meta (schema version, serial,
// counts: VerifyMeta) but does not enumerate the directory again, so
// installing a one-change delta costs what the change costs (at 100,000
// users the enumeration was most of the 0.59 s of CPU and mapped most of
// the 112 MB of RSS). o.Accept, if not nil, sees the candidate's meta
// after verification and may still refuse it. With o.Reverse the live
// snapshot's history entry (its own link) becomes a reverse delta
// against the candidate, written and fsynced before the rename, its link
// removed once the candidate's own entry is linked (a node's delta
// install: the previous live file then has no name in the history).
func Install(candidate, live string, o InstallOptions) (Meta, error) {
	if filepath.Dir(filepath.Clean(candidate)) != filepath.Dir(filepath.Clean(live)) {
		return Meta{}, fmt.Errorf("snapshot: install %s: candidate %s is not in the same directory", live, candidate)
	}
	if err := os.Chmod(candidate, 0o644); err != nil {
		return Meta{}, fmt.Errorf("snapshot: chmod %s: %w", candidate, err)
	}
	if err := syncFile(candidate); err != nil {
		return Meta{}, err
	}
	verify := VerifyFile
	if o.Proven {
		verify = VerifyMeta
	}
	m, err := verify(candidate)
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot: refusing to install %s: %w", live, err)
	}
	if o.Accept != nil {
		if err := o.Accept(m); err != nil {
			return Meta{}, fmt.Errorf("snapshot: refusing to install %s: %w", live, err)
		}
	}
	reversed := int64(0)
	if rev := o.Reverse; rev != nil {
		fi, err := os.Stat(candidate)
		if err != nil {
			return Meta{}, err
		}
		// The history's concern, not the install's: on failure the
		// entry stays the whole file.
		if ok, err := writeReverse(live, rev, m.Serial, fi.Size()); err != nil {
			fmt.Fprintf(os.Stderr, "snapshot: history of %s: keeping serial %d whole: %v\n", live, rev.Serial, err)
		} else if ok {
			reversed = rev.Serial
		}
	}
	return m, install(candidate, live, reversed)
}

// InstallOptions are Install's.
type InstallOptions struct {
	Proven  bool             // check the meta only (VerifyMeta), not the whole file
	Accept  func(Meta) error // may refuse the verified candidate by its meta
	Reverse *Reverse         // keep the live snapshot's history entry as a reverse delta against the candidate (reverse.go)
}

// install renames a verified, synced candidate over live, keeping the
// previous live file for rollback. Write and Install both end here.
// reversed is the serial whose history entry writeReverse made a reverse
// delta (0: none).
func install(candidate, live string, reversed int64) error {
	if err := keepPrevious(live); err != nil {
		return err
	}
	fi, statErr := os.Stat(candidate)
	if err := os.Rename(candidate, live); err != nil {
		return fmt.Errorf("snapshot: install %s: %w", live, err)
	}
	if statErr == nil {
		rememberVerified(fi)
	}
	if err := syncDir(filepath.Dir(live)); err != nil {
		return err
	}
	// The last HistoryKeep snapshots (history.go); the snapshot is live
	// whether or not this works.
	if err := keepHistory(live, reversed); err != nil {
		fmt.Fprintf(os.Stderr, "snapshot: history of %s: %v\n", live, err)
	}
	return nil
}

// verifiedFiles: the files this process verified and renamed into place
// (device, inode, size), the last few. A published file is never changed
// in place, so the same inode holds the same verified bytes: the head's
// publisher, copying the live file right after the writer verified it,
// checks the copy's meta instead of enumerating 100,000 users again
// (VerifiedHere). Any other file (another process's, a rollback's) is
// verified whole as before.
var verifiedFiles struct {
	sync.Mutex
	ids [8]fileID
	n   int
}

// fileID is the package's name for a file's identity (FileIdentity).
type fileID = FileIdentity

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino), fi.Size()}, true
}

func rememberVerified(fi os.FileInfo) {
	id, ok := idOf(fi)
	if !ok {
		return
	}
	verifiedFiles.Lock()
	defer verifiedFiles.Unlock()
	verifiedFiles.ids[verifiedFiles.n%len(verifiedFiles.ids)] = id
	verifiedFiles.n++
}

// VerifiedHere reports whether the open file f is one this process's
// writer verified through the C reader and installed (Write, Update,
// Install): the same device, inode and size.
func VerifiedHere(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	id, ok := idOf(fi)
	if !ok {
		return false
	}
	verifiedFiles.Lock()
	defer verifiedFiles.Unlock()
	for i := 0; i < min(verifiedFiles.n, len(verifiedFiles.ids)); i++ {
		if verifiedFiles.ids[i] == id {
			return true
		}
	}
	return false
}

// VerifyFile checks a snapshot file that arrived whole from elsewhere (a
// mirror node's download) through the C reader: the reader opens it (so
// its schema is one this node's modules understand), its meta names a
// serial, and enumerating users and groups yields exactly the counts its
// meta records. It returns the meta the reader read.
func VerifyFile(path string) (Meta, error) {
	r, err := cache.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("verify: C reader cannot open it: %w", err)
	}
	defer r.Close()
	m, err := verifyMeta(r)
	if err != nil {
		return m, err
	}
	// Counted as the reader walks: no copy of every record is held.
	nu, ng := 0, 0
	if err := r.EachUser(func(cache.User) error { nu++; return nil }); err != nil {
		return m, fmt.Errorf("verify: enumerate users: %w", err)
	}
	if nu != m.Users {
		return m, fmt.Errorf("verify: reader enumerates %d users, meta says %d", nu, m.Users)
	}
	if err := r.EachGroup(func(cache.Group) error { ng++; return nil }); err != nil {
		return m, fmt.Errorf("verify: enumerate groups: %w", err)
	}
	if ng != m.Groups {
		return m, fmt.Errorf("verify: reader enumerates %d groups, meta says %d", ng, m.Groups)
	}
	return m, nil
}

// VerifyMeta is VerifyFile without the enumeration: the C reader opens
// the file (its schema is one this node's modules understand) and its
// meta names a serial and counts.
func VerifyMeta(path string) (Meta, error) {
	r, err := cache.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("verify: C reader cannot open it: %w", err)
	}
	defer r.Close()
	return verifyMeta(r)
}

func verifyMeta(r *cache.Cache) (Meta, error) {
	get := func(key string) (string, error) {
		v, err := r.Meta(key)
		if err != nil {
			return "", fmt.Errorf("verify: meta %s: %w", key, err)
		}
		return v, nil
	}
	var m Meta
	var err error
	num := func(key string) (int64, error) {
		v, err := get(key)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("verify: meta %s is %q, not a count", key, v)
		}
		return n, nil
	}
	if v, err := get("schema_version"); err != nil {
		return m, err
	} else if n, err := strconv.Atoi(v); err != nil || n < MinReadVersion || n > SchemaVersion {
		return m, fmt.Errorf("verify: schema version %q, this node reads %d to %d (upgrade this node's scimbridge)", v, MinReadVersion, SchemaVersion)
	}
	if m.Serial, err = num("serial"); err != nil {
		return m, err
	}
	if m.Serial < 1 {
		return m, errors.New("verify: meta serial is 0")
	}
	users, err := num("users")
	if err != nil {
		return m, err
	}
	groups, err := num("groups")
	if err != nil {
		return m, err
	}
	m.Users, m.Groups = int(users), int(groups)
	if v, err := get("created_at"); err == nil {
		m.CreatedAt, _ = time.Parse(time.RFC3339, v)
	}
	if v, err := get("source"); err == nil {
		m.Source = v
	}
	if v, err := get("slurm_synced_at"); err == nil {
		m.SlurmSyncedAt, _ = time.Parse(time.RFC3339, v)
	}
	if n, err := num("associations"); err == nil {
		m.Associations = int(n)
	}
	return m, nil
}
