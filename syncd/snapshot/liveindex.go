package snapshot

// The live NSS index kept in memory between in-place updates (issue 18).
// Update needs the live blob (31 MB at 100,000 users) to patch it and to
// find the pages that differ; reading it from the file's 7,500 overflow
// pages cost about 60 ms of CPU and 62 MB of allocation per change
// (pprof over BenchmarkChangeToManifest). The blob Update just wrote is
// the next live one: it is kept, and used when the live file is still
// the one Update installed.
//
// Decisions:
//   - Used only for the very file: the same device, inode and size as
//     the file Update renamed into place (a snapshot file is never
//     changed in place: readers map it immutable), checked before and
//     after its meta is read, and the same serial and contents digest in
//     its meta. Another writer's file (a rollback, `syncd sync --once`,
//     a whole write without KeepIndex) is read from its pages as before.
//   - A whole write made by Update for a caller that updates the file
//     again (UpdateOptions.KeepIndex: the daemon, the receiver) keeps
//     the blob it wrote too: fillIndex lays the bytes it writes into
//     pages into one blob as well, kept once the file is installed
//     (issue 18, push10). The receiver's load writes whole when the
//     directory outgrows the index, and the in-place update after it
//     read the blob back (2n bytes allocated, 1.5-2.0 s wall in push9's
//     runs; 0.85 and 1.89 s in push10's, load 4-8); with the kept blob
//     0.002 s. Write and sync --once (no KeepIndex) keep none: the blob
//     would only add to their write's peak.
//   - Checked against the file anyway: a spread of the chain's pages
//     (indexSamples of them, the first and last included) is read and
//     compared with the kept bytes; a difference drops the kept blob and
//     reads the file.
//   - One blob, the last; a failure drops it, and a file it was not
//     kept for never uses it (the identity check above).

import (
	"bytes"
	"os"
	"sync"
)

const indexSamples = 16

var liveIndex struct {
	sync.Mutex
	id     fileID
	serial int64
	hash   string
	blob   []byte
	used   int // times the kept blob stood for the file (tests)
}

// statFile is the identity of the file at path.
func statFile(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	return idOf(fi)
}

// keepLiveIndex remembers blob as the index of the file Update just
// installed at path (serial and contents digest from its meta).
func keepLiveIndex(path string, serial int64, hash string, blob []byte) {
	id, ok := statFile(path)
	liveIndex.Lock()
	defer liveIndex.Unlock()
	liveIndex.blob = nil
	if ok {
		liveIndex.id, liveIndex.serial, liveIndex.hash, liveIndex.blob = id, serial, hash, blob
	}
}

// dropLiveIndex forgets the kept blob.
func dropLiveIndex() {
	liveIndex.Lock()
	liveIndex.blob = nil
	liveIndex.Unlock()
}

// keptLiveIndex is the kept blob when the file at path (whose identity
// before its meta was read is id) is the one it was kept for and its
// sampled pages agree; nil otherwise.
func keptLiveIndex(path string, id fileID, serial int64, hash string, ps, n int) []byte {
	liveIndex.Lock()
	blob, ok := liveIndex.blob, liveIndex.id == id && liveIndex.serial == serial && liveIndex.hash == hash
	liveIndex.Unlock()
	if blob == nil || !ok || len(blob) != n {
		return nil
	}
	if now, ok := statFile(path); !ok || now != id {
		return nil
	}
	if !sampleAgrees(path, ps, blob) {
		dropLiveIndex()
		return nil
	}
	liveIndex.Lock()
	liveIndex.used++
	liveIndex.Unlock()
	return blob
}

// sampleAgrees reads a spread of the index's overflow pages of the file
// at path and compares their payload with blob.
func sampleAgrees(path string, ps int, blob []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	n := len(blob)
	first, local, at, page2, err := indexChainOf(f, ps, n)
	if err != nil {
		return false
	}
	hdr, C := recordHeader(n), ps-4
	if !bytes.Equal(page2[at+hdr:at+local], blob[:local-hdr]) {
		return false
	}
	npages := (hdr + n - local + C - 1) / C
	pg := make([]byte, ps)
	for k := 0; k < indexSamples && npages > 0; k++ {
		i := k * (npages - 1) / max(1, indexSamples-1)
		if _, err := f.ReadAt(pg, int64(first+i-1)*int64(ps)); err != nil {
			return false
		}
		lo, hi := local+i*C-hdr, min(local+(i+1)*C-hdr, n)
		if !bytes.Equal(pg[4:4+hi-lo], blob[lo:hi]) {
			return false
		}
	}
	return true
}

// FileIdentity is a file's device, inode and size.
type FileIdentity struct {
	Dev, Ino uint64
	Size     int64
}

// PageChange says that the file To, installed by this process's
// in-place writer, differs from the file it was copied from (From, the
// live file before) in Pages only: 1-based page numbers of PageSize
// bytes, every page the writer's comparison found different (pages past
// the shorter file's end included). A snapshot file is never changed
// once renamed into place, so the publisher, which hashed From, hashes
// again only these pages of To (syncd/publish).
type PageChange struct {
	From, To FileIdentity
	PageSize int
	Pages    []int
}

var lastChange struct {
	sync.Mutex
	c  PageChange
	ok bool
}

// rememberChange records the change from the file from to the file now
// at path.
func rememberChange(from fileID, path string, ps int, pages []int) {
	to, ok := statFile(path)
	lastChange.Lock()
	defer lastChange.Unlock()
	lastChange.ok = ok
	if ok {
		lastChange.c = PageChange{From: from, To: to, PageSize: ps, Pages: pages}
	}
}

// ChangedPagesOf is the PageChange whose To is the open file f, if this
// process's in-place writer installed f last.
func ChangedPagesOf(f *os.File) (PageChange, bool) {
	fi, err := f.Stat()
	if err != nil {
		return PageChange{}, false
	}
	id, ok := idOf(fi)
	if !ok {
		return PageChange{}, false
	}
	lastChange.Lock()
	defer lastChange.Unlock()
	if !lastChange.ok || lastChange.c.To != id {
		return PageChange{}, false
	}
	return lastChange.c, true
}
