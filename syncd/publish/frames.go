package publish

// The full object's compression, proportional to the change (issue 18).
//
// Decisions:
//   - The .db.zst is a series of zstd frames, one per frameSize range of
//     the snapshot (RFC 8878 section 3.1: frames are independent, and a
//     decoder reads concatenated frames as one stream: klauspost's
//     Decoder, which nodes use, and the zstd tool). An in-place commit
//     changes a few pages and keeps every other page's bytes and offset
//     (snapshot/update.go), so the frames of the ranges it did not touch
//     are the last object's, byte for byte: they are copied from the
//     last published .db.zst, found by the SHA-256 of the range they
//     hold. At 100,000 users the whole object took about 1 s of CPU per
//     commit at zstd's fastest level, on the path to the signed manifest.
//   - A frame is copied only from the file this publisher itself wrote
//     and renamed to its content address (never from a file it found
//     there), and what a node installs is still checked against the
//     snapshot's SHA-256 after unpacking: a wrong frame is refused by
//     every node, never installed.
//   - Ranges of 256 KiB: a multiple of every SQLite page size. A commit
//     in place changes pages in several places of the file (a users
//     leaf, user_groups, a few NSS index chunks, page 1), each costing
//     its range's compression: with 1 MiB ranges that was about 75 ms
//     of CPU per change at 100,000 users, on the path to the manifest
//     (issue 18, fifth session). Measured on the generated 100,000-user
//     snapshot (86 MB) at zstd's fastest level: 1 MiB ranges 24.07 MB,
//     256 KiB 24.42 MB (+1.5%), 128 KiB 24.77 MB (+2.9%).

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
)

const frameSize = 256 << 10

// frames are the frames of the last .db.zst this publisher wrote.
type frames struct {
	path string // its published path ("" : none)
	id   fileID // that file as renamed: another file there is not read
	at   map[[32]byte]frameAt
	// src is the snapshot file the frames were made from, seq its frames
	// in order (range k: bytes k*frameSize on): with the writer's changed
	// pages (pages.go), a range it left alone is frame k again.
	src fileID
	seq []frameRef
}

// frameRef is one frame of the object: the SHA-256 of the range it
// holds, and where it lies.
type frameRef struct {
	key [32]byte
	at  frameAt
}

type frameAt struct{ off, n int64 }

// compressFile writes path.zst, reusing the frames of last for ranges
// whose bytes it already compressed, and returns what it wrote, its
// frames (to keep once it is published) and how many were reused.
// same, when not nil, says which ranges [lo, hi) hold the bytes of
// last.src at the same place: their frame is last's at the same index,
// copied without reading or hashing the range (pages.go).
func compressFile(path string, last frames, same func(lo, hi int64) bool) (zipped, frames, int, error) {
	var z zipped
	in, err := os.Open(path)
	if err != nil {
		return z, frames{}, 0, err
	}
	defer in.Close()
	var old *os.File
	if last.path != "" {
		old, _ = os.Open(last.path) // gone (pruned): nothing reused
		if old != nil {
			defer old.Close()
			if id, err := statID(last.path); err != nil || id != last.id {
				old = nil // not the file this publisher wrote
			}
		}
	}
	out, err := os.Create(path + ".zst")
	if err != nil {
		return z, frames{}, 0, fmt.Errorf("publish: %w", err)
	}
	fail := func(err error) (zipped, frames, int, error) {
		out.Close()
		os.Remove(path + ".zst")
		return z, frames{}, 0, fmt.Errorf("publish: compress: %w", err)
	}
	// The fastest level: on an 83 MB snapshot of 100,000 users it takes
	// 0.81 s of CPU for 24.1 MB, the default level 1.36 s for 23.1 MB.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return fail(err)
	}
	defer enc.Close()
	h := sha256.New()
	next := frames{at: map[[32]byte]frameAt{}}
	buf := make([]byte, frameSize)
	var frame []byte
	var off int64
	reused := 0
	fi, err := in.Stat()
	if err != nil {
		return fail(err)
	}
	size := fi.Size()
	for k := 0; ; k++ {
		lo := int64(k) * frameSize
		hi := min(lo+frameSize, size)
		if lo >= size {
			break
		}
		frame = frame[:0]
		if same != nil && old != nil && k < len(last.seq) && hi > lo && (hi-lo == frameSize || hi == size) && same(lo, hi) {
			// The range is the last object's range k, byte for byte.
			ref := last.seq[k]
			frame = append(frame, make([]byte, ref.at.n)...)
			if _, err := old.ReadAt(frame, ref.at.off); err == nil {
				reused++
				if _, err := out.Write(frame); err != nil {
					return fail(err)
				}
				h.Write(frame)
				at := frameAt{off, int64(len(frame))}
				next.at[ref.key] = at
				next.seq = append(next.seq, frameRef{ref.key, at})
				off += int64(len(frame))
				if hi == size {
					break
				}
				continue
			}
			frame = frame[:0]
		}
		n, err := in.ReadAt(buf[:hi-lo], lo)
		if err != nil && err != io.EOF {
			return fail(err)
		}
		if n == 0 {
			break
		}
		key := sha256.Sum256(buf[:n])
		if at, ok := last.at[key]; ok && old != nil {
			frame = append(frame, make([]byte, at.n)...)
			if _, err := old.ReadAt(frame, at.off); err == nil {
				reused++
			} else {
				frame = frame[:0]
			}
		}
		if len(frame) == 0 {
			frame = enc.EncodeAll(buf[:n], frame)
		}
		if _, err := out.Write(frame); err != nil {
			return fail(err)
		}
		h.Write(frame)
		at := frameAt{off, int64(len(frame))}
		next.at[key] = at
		next.seq = append(next.seq, frameRef{key, at})
		off += int64(len(frame))
		if n < frameSize {
			break
		}
	}
	if err := out.Sync(); err != nil {
		return fail(err)
	}
	if err := out.Close(); err != nil {
		os.Remove(path + ".zst")
		return z, frames{}, 0, fmt.Errorf("publish: compress: %w", err)
	}
	z.path, z.size, z.sum = path+".zst", off, fmt.Sprintf("%x", h.Sum(nil))
	return z, next, reused, nil
}
