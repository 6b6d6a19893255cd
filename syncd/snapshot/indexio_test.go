package snapshot

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// The live index is read from its pages only while its overflow pages
// follow one another: a link that points elsewhere (a file not written
// by Write) sends the update to a whole write, which says why, and the
// result answers as a whole write does.
func TestIndexChainNotContiguousIsWrittenWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	prev := generated(400, 40)
	if _, err := Write(path, prev); err != nil {
		t.Fatal(err)
	}
	l, err := readLive(path)
	if err != nil {
		t.Fatalf("a file Write made: %v", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _, _, err := indexChainOf(f, l.pageSize, len(l.index))
	if err != nil {
		t.Fatal(err)
	}
	var link [4]byte
	binary.BigEndian.PutUint32(link[:], uint32(first+7)) // page first+1 skips ahead
	if _, err := f.WriteAt(link[:], int64(first)*int64(l.pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	next := clone(prev)
	next.Users[3].Active = !next.Users[3].Active
	_, info, err := UpdateWith(path, prev, next, UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Incremental || !strings.Contains(info.Fallback, "not contiguous") {
		t.Fatalf("in place %v, fallback %q; want a whole write because the chain is not contiguous", info.Incremental, info.Fallback)
	}
	r, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if u, err := r.User(next.Users[3].Name); err != nil || u.Active != next.Users[3].Active || !r.Indexed() {
		t.Fatalf("after the whole write: %+v, %v (indexed %v)", u, err, r.Indexed())
	}
}
