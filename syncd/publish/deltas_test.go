package publish

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// A delta turns its base into the target page for page: runs of
// consecutive changed pages longer than one read, single pages, the
// file's short last page, a target longer than its base; and a delta
// whose compressed bytes pass the bound is refused and leaves no file.
func TestWriteDeltaAppliesAndStopsAtItsBound(t *testing.T) {
	d := t.TempDir()
	p := &Publisher{Dir: d}
	r := rand.New(rand.NewPCG(1, 2))
	page := func() []byte {
		b := make([]byte, PageSize)
		for i := range b {
			b[i] = byte(r.IntN(16)) // compressible, not trivially
		}
		return b
	}
	var base, target []byte
	for i := 0; i < 300; i++ {
		base = append(base, page()...)
	}
	target = bytes.Clone(base)
	var changed []int
	mark := func(i int) {
		copy(target[i*PageSize:], page())
		changed = append(changed, i)
	}
	for i := 3; i < 3+150; i++ { // a run longer than one read
		mark(i)
	}
	mark(200)
	mark(202)
	for i := 300; i < 310; i++ { // the target grows
		target = append(target, page()...)
		changed = append(changed, i)
	}
	target = append(target, []byte("short last page")...)
	changed = append(changed, 310)

	tp := filepath.Join(d, "target.db")
	if err := os.WriteFile(tp, target, 0o644); err != nil {
		t.Fatal(err)
	}
	delta, err := p.writeDelta(tp, "t", "b", changed, int64(len(target)), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if delta.Pages != len(changed) {
		t.Fatalf("delta says %d pages, want %d", delta.Pages, len(changed))
	}
	z, err := os.ReadFile(filepath.Join(d, delta.Object))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(z)) != delta.Size {
		t.Fatalf("delta file is %d bytes, the manifest entry says %d", len(z), delta.Size)
	}
	bp := filepath.Join(d, "copy.db")
	if err := os.WriteFile(bp, base, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bp, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyDelta(f, z, int64(len(target))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := os.ReadFile(bp)
	if !bytes.Equal(got, target) {
		t.Fatalf("base with the delta applied (%d bytes) is not the target (%d bytes)", len(got), len(target))
	}
	// The node's decoder takes it whole too (what mirror does).
	dec, _ := zstd.NewReader(nil)
	if _, err := dec.DecodeAll(z, nil); err != nil {
		t.Fatal(err)
	}
	dec.Close()

	os.Remove(filepath.Join(d, delta.Object))
	_, err = p.writeDelta(tp, "t", "b", changed, int64(len(target)), delta.Size/2, nil)
	if !errors.Is(err, errDeltaTooBig) {
		t.Fatalf("a delta twice its bound: err %v, want %v", err, errDeltaTooBig)
	}
	if _, err := os.Stat(filepath.Join(d, delta.Object)); !os.IsNotExist(err) {
		t.Fatalf("a refused delta left its file (%v)", err)
	}
	// Once the compressed object's size is known, a delta larger than
	// half of it (which the manifest would drop) stops there too; one
	// within it is written.
	var object atomic.Int64
	object.Store(delta.Size)
	_, err = p.writeDelta(tp, "t", "b", changed, int64(len(target)), 0, &object)
	if !errors.Is(err, errDeltaOverObject) {
		t.Fatalf("a delta twice half the object: err %v, want %v", err, errDeltaOverObject)
	}
	if _, err := os.Stat(filepath.Join(d, delta.Object)); !os.IsNotExist(err) {
		t.Fatalf("a refused delta left its file (%v)", err)
	}
	object.Store(delta.Size * 2)
	if again, err := p.writeDelta(tp, "t", "b", changed, int64(len(target)), 0, &object); err != nil || again.SHA256 != delta.SHA256 {
		t.Fatalf("a delta of half the object: %v (sha %.12s, want %.12s)", err, again.SHA256, delta.SHA256)
	}
}

// BenchmarkWriteDelta: a delta holding every page of a 40 MB file (a
// delta from an early snapshot of a bulk load): CPU, bytes and page
// faults per delta (the machine is shared: its wall time says little).
func BenchmarkWriteDelta(b *testing.B) {
	benchDelta(b, func(p *Publisher, path string, changed []int, size int64) error {
		_, err := p.writeDelta(path, "t", "b", changed, size, 0, nil)
		return err
	})
}

func benchDelta(b *testing.B, write func(p *Publisher, path string, changed []int, size int64) error) {
	d := b.TempDir()
	p := &Publisher{Dir: d}
	r := rand.New(rand.NewPCG(1, 2))
	const pages = 10000
	// Pages like a snapshot's: compressible about six times.
	file := make([]byte, pages*PageSize)
	for i := range file {
		if i%PageSize < PageSize/4 {
			file[i] = byte(r.IntN(16))
		} else {
			file[i] = "user00042:x:100042:100042:User Number 42:/home/user00042:/bin/bash\n"[i%67]
		}
	}
	tp := filepath.Join(d, "target.db")
	if err := os.WriteFile(tp, file, 0o644); err != nil {
		b.Fatal(err)
	}
	changed := make([]int, pages)
	for i := range changed {
		changed[i] = i
	}
	b.ReportAllocs()
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for b.Loop() {
		if err := write(p, tp, changed, int64(len(file))); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	b.ReportMetric(float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(r1.Minflt-r0.Minflt)/float64(b.N), "faults/op")
}
