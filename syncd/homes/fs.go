package homes

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Every path below a root is walked one component at a time with
// openat(O_NOFOLLOW|O_DIRECTORY) from a descriptor of its parent, so a
// symlink anywhere (planted by a user, or racing a check) fails the walk
// instead of being followed, and nothing outside the root is reached.

// refusal is a path the pass will not touch, and why.
type refusal struct {
	Path   string
	Reason string
}

func (r *refusal) Error() string { return r.Path + ": " + r.Reason }

func refuse(p, format string, a ...any) error {
	return &refusal{Path: p, Reason: fmt.Sprintf(format, a...)}
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openRoot opens an admin-named root (absolute, clean) without following
// any symlink on the way, and checks that every directory on the way can
// only be changed by root: owned by root, not group/world-writable, or a
// root-owned sticky directory (/tmp) above the root itself. A missing
// root is an error, never created: an unmounted file system must not get
// homes in the directory under its mount point.
func openRoot(p string) (int, error) {
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, c := range comps {
		next, err := unix.Openat(fd, c, dirFlags, 0)
		unix.Close(fd)
		cur = path.Join(cur, c)
		if err != nil {
			switch {
			case errors.Is(err, unix.ENOENT):
				return -1, refuse(cur, "does not exist (root not mounted?); syncd never creates a root")
			case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
				return -1, refuse(cur, "is a symlink or not a directory: name the real path in roots")
			}
			return -1, fmt.Errorf("%s: %w", cur, err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", cur, err)
		}
		last := i == len(comps)-1
		if st.Uid != 0 || (st.Mode&0o022 != 0 && (last || st.Mode&unix.S_ISVTX == 0)) {
			unix.Close(fd)
			return -1, refuse(cur, "is owned by uid %d with mode %04o: a root and the directories above it must be root's and not writable by others", st.Uid, st.Mode&0o7777)
		}
	}
	return fd, nil
}

// relComponents splits home (inside root) into components, refusing
// anything but a clean path strictly inside root.
func relComponents(root, home string) ([]string, error) {
	if !path.IsAbs(home) || path.Clean(home) != home || strings.Contains(home, "/../") || strings.HasSuffix(home, "/..") {
		return nil, refuse(home, "is not a clean absolute path")
	}
	if home == root || !within(home, root) {
		return nil, refuse(home, "is not strictly inside the root %s", root)
	}
	comps := strings.Split(strings.TrimPrefix(home, root+"/"), "/")
	for _, c := range comps {
		if c == "" || c == "." || c == ".." {
			return nil, refuse(home, "has an empty, . or .. component")
		}
	}
	return comps, nil
}

// walkParents opens the directories between the root and the last
// component, creating missing ones (root:root 0755) unless dry. Every
// one must be root's and not writable by others: a directory a user can
// write to lets them swap the next component. It returns the parent's
// descriptor (-1 when dry and it does not exist yet).
func walkParents(rootFD int, root string, comps []string, dry bool) (int, error) {
	fd, err := unix.Dup(rootFD)
	if err != nil {
		return -1, err
	}
	cur := root
	for _, c := range comps[:len(comps)-1] {
		cur = path.Join(cur, c)
		next, err := unix.Openat(fd, c, dirFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			if dry {
				unix.Close(fd)
				return -1, nil
			}
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: mkdir: %w", cur, err)
			}
			next, err = unix.Openat(fd, c, dirFlags, 0)
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, refuse(cur, "is a symlink or not a directory")
			}
			return -1, fmt.Errorf("%s: %w", cur, err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if st.Uid != 0 || st.Mode&0o022 != 0 {
			unix.Close(fd)
			return -1, refuse(cur, "is owned by uid %d with mode %04o: a directory above a home must be root's and not writable by others (is it another user's home?)", st.Uid, st.Mode&0o7777)
		}
	}
	return fd, nil
}

// entry describes what is at name in the directory dirFD, without
// following a symlink. exists is false for ENOENT.
func entry(dirFD int, name string) (st unix.Stat_t, exists bool, err error) {
	err = unix.Fstatat(dirFD, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	return st, err == nil, err
}

func kind(st unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFREG:
		return "a file"
	case unix.S_IFDIR:
		return "a directory"
	}
	return "not a directory"
}

func isDir(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// makeDir creates name in dirFD root-owned 0700 (no one else can enter
// while it is filled) and opens it; an existing root-owned directory
// left by an interrupted pass is opened as it is.
func makeDir(dirFD int, name string) (int, error) {
	if err := unix.Mkdirat(dirFD, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dirFD, name, dirFlags, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("%s changed owner while being made", name)
	}
	return fd, nil
}

// Limits of one skeleton copy: /etc/skel is a handful of dot files.
const (
	maxSkelDepth   = 16
	maxSkelEntries = 10000
)

// copySkel copies the tree under srcFD into dstFD, every entry owned by
// uid:gid, never following a symlink on either side (symlinks are copied
// as symlinks) and never replacing an entry that exists (a half-made
// home from an interrupted pass is completed, not overwritten).
func copySkel(srcFD, dstFD int, uid, gid int, depth int, count *int) error {
	if depth > maxSkelDepth {
		return fmt.Errorf("skel is deeper than %d directories", maxSkelDepth)
	}
	dup, err := unix.Dup(srcFD)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "skel")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		if *count++; *count > maxSkelEntries {
			return fmt.Errorf("skel has more than %d entries", maxSkelEntries)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(srcFD, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		perm := st.Mode & 0o777
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if err := copyFile(srcFD, dstFD, name, perm, uid, gid); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case unix.S_IFDIR:
			if err := unix.Mkdirat(dstFD, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return err
			}
			s, err := unix.Openat(srcFD, name, dirFlags, 0)
			if err != nil {
				return err
			}
			d, err := unix.Openat(dstFD, name, dirFlags, 0)
			if err != nil {
				unix.Close(s)
				return err
			}
			err = copySkel(s, d, uid, gid, depth+1, count)
			if err == nil {
				err = fixOwner(d, uid, gid, perm)
			}
			unix.Close(s)
			unix.Close(d)
			if err != nil {
				return err
			}
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(srcFD, name, buf)
			if err != nil {
				return err
			}
			if err := unix.Symlinkat(string(buf[:n]), dstFD, name); err != nil && !errors.Is(err, unix.EEXIST) {
				return err
			}
			if err := unix.Fchownat(dstFD, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(srcFD, dstFD int, name string, perm uint32, uid, gid int) error {
	s, err := unix.Openat(srcFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	src := os.NewFile(uintptr(s), name)
	defer src.Close()
	d, err := unix.Openat(dstFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return err
	}
	dst := os.NewFile(uintptr(d), name)
	defer dst.Close()
	if _, err := io.Copy(dst, io.LimitReader(src, 64<<20)); err != nil {
		return err
	}
	return fixOwner(d, uid, gid, perm)
}

func fixOwner(fd, uid, gid int, perm uint32) error {
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	return unix.Fchmod(fd, perm)
}
