// Package cache reads a scimbridge snapshot through the C reader (c/,
// behind include/scimcache.h; reader.c includes its parts) that the NSS,
// PAM and SPANK modules compile in. syncd uses it to verify a new snapshot before renaming it into place: a file
// this package cannot read is a file the nodes could not read either.
package cache

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -D_GNU_SOURCE
#cgo LDFLAGS: -lsqlite3 -lpthread
#include <stdlib.h>
#include "scimcache.h"
#ifdef __GLIBC__
#include <malloc.h>
static void trim_malloc(void) { malloc_trim(0); }
static void keep_arena_tops(int bytes) { mallopt(M_TRIM_THRESHOLD, bytes); }
#else
static void trim_malloc(void) {}
static void keep_arena_tops(int bytes) { (void)bytes; }
#endif
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// The C heap (SQLite's memory, the reader's) is glibc's malloc in this
// process: its two tunings live here, next to the cgo that needs them.

// TrimMalloc gives the C heap's free memory back to the kernel
// (glibc's malloc_trim; nothing elsewhere).
func TrimMalloc() { C.trim_malloc() }

// KeepArenaTops lets glibc keep up to bytes of free memory at the top of
// each malloc arena instead of returning it to the kernel after every
// free (M_TRIM_THRESHOLD; the default is 128 KiB, raised only by freed
// mmap'd chunks). The setting is the process's. Nothing elsewhere.
func KeepArenaTops(bytes int) { C.keep_arena_tops(C.int(bytes)) }

// ErrNotFound: the snapshot is good and has no such entry.
var ErrNotFound = errors.New("not found")

// ErrUnavailable: no usable snapshot (missing, corrupt, other schema);
// returned errors wrap it with the reader's message.
var ErrUnavailable = errors.New("cache unavailable")

// User is one passwd entry; Active is false for users disabled at the
// source (they still resolve, so that their files keep an owner).
type User struct {
	Name     string
	UID, GID uint32
	GECOS    string
	Home     string
	Shell    string
	Active   bool
}

// Group is one group entry with its members' names.
type Group struct {
	Name    string
	GID     uint32
	Members []string
}

// Association is one Slurm association of a user.
type Association struct {
	Account    string
	QOS        []string
	DefaultQOS string
	IsDefault  bool
	Blocked    bool
}

// maxBuf bounds the result buffer: past it a result is treated as broken
// rather than growing without end.
const maxBuf = 256 << 20

// Cache is a handle on one snapshot path. It is safe for concurrent use;
// calls are serialised (the C handle is not re-entrant and the result
// buffer is shared).
type Cache struct {
	mu   sync.Mutex
	h    *C.struct_scim_cache
	buf  *C.char
	blen C.size_t
	pw   *C.struct_passwd
	gr   *C.struct_group
	as   *C.struct_scim_assoc
}

// Open opens path and checks it is a snapshot this reader understands.
// The handle follows the path: when the file is replaced, calls read the
// new one within a second (the reader looks at the path at most once a
// second), or at once after Check.
func Open(path string) (*Cache, error) {
	return openHandle(path, true)
}

// OpenLookups is Open without the whole-file check of scim_cache_check
// (every statement prepared, every NSS index link read): the file is
// opened and its header read, as the NSS module's first lookup does, and
// each lookup checks what it reads (the index links it crosses, the
// schema on its first SQL use), so a damaged file answers
// ErrUnavailable, never a wrong entry. For a few lookups in a file
// verified when it was installed (a node's check of its own accounts,
// syncd/mirror): at 100,000 users the whole check reads 31 MB of index.
func OpenLookups(path string) (*Cache, error) {
	return openHandle(path, false)
}

func openHandle(path string, whole bool) (*Cache, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.scim_cache_new(cpath)
	if h == nil {
		return nil, fmt.Errorf("%w: out of memory", ErrUnavailable)
	}
	c := &Cache{h: h, blen: 1024}
	c.buf = (*C.char)(C.malloc(c.blen))
	c.pw = (*C.struct_passwd)(C.calloc(1, C.sizeof_struct_passwd))
	c.gr = (*C.struct_group)(C.calloc(1, C.sizeof_struct_group))
	c.as = (*C.struct_scim_assoc)(C.calloc(1, C.sizeof_struct_scim_assoc))
	if c.buf == nil || c.pw == nil || c.gr == nil || c.as == nil {
		c.Close()
		return nil, fmt.Errorf("%w: out of memory", ErrUnavailable)
	}
	check := c.Check
	if !whole {
		// The header's checks only (ModTime reopens and reads the header).
		check = func() error { _, err := c.ModTime(); return err }
	}
	if err := check(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the handle. The Cache must not be used afterwards.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h != nil {
		C.scim_cache_free(c.h)
		c.h = nil
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(c.buf), unsafe.Pointer(c.pw),
		unsafe.Pointer(c.gr), unsafe.Pointer(c.as)} {
		C.free(p)
	}
	c.buf, c.pw, c.gr, c.as = nil, nil, nil, nil
}

// Check reopens the snapshot if it was replaced and reports whether it is
// usable.
func (c *Cache) Check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status(C.scim_cache_check(c.h))
}

// Indexed reports whether the open snapshot has a usable NSS index
// (passwd, group and initgroups answered without SQL).
func (c *Cache) Indexed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h != nil && C.scim_cache_indexed(c.h) == 1
}

// status turns a reader status into an error; called with c.mu held.
func (c *Cache) status(st C.int) error {
	switch st {
	case C.SCIM_OK:
		return nil
	case C.SCIM_NOTFOUND:
		return ErrNotFound
	case C.SCIM_ERANGE:
		return fmt.Errorf("%w: result larger than %d bytes", ErrUnavailable, maxBuf)
	default:
		return fmt.Errorf("%w: %s", ErrUnavailable, C.GoString(C.scim_cache_error(c.h)))
	}
}

// call runs f with the shared buffer, doubling it while the reader says
// ERANGE; called with c.mu held.
func (c *Cache) call(f func() C.int) error {
	if c.h == nil {
		return fmt.Errorf("%w: cache closed", ErrUnavailable)
	}
	for {
		st := f()
		if st != C.SCIM_ERANGE || c.blen >= maxBuf {
			return c.status(st)
		}
		nb := (*C.char)(C.realloc(unsafe.Pointer(c.buf), c.blen*2))
		if nb == nil {
			return fmt.Errorf("%w: out of memory", ErrUnavailable)
		}
		c.buf, c.blen = nb, c.blen*2
	}
}

func (c *Cache) user() User {
	return User{
		Name:  C.GoString(c.pw.pw_name),
		UID:   uint32(c.pw.pw_uid),
		GID:   uint32(c.pw.pw_gid),
		GECOS: C.GoString(c.pw.pw_gecos),
		Home:  C.GoString(c.pw.pw_dir),
		Shell: C.GoString(c.pw.pw_shell),
	}
}

// active fills u.Active; called with c.mu held.
func (c *Cache) active(u *User) error {
	name := C.CString(u.Name)
	defer C.free(unsafe.Pointer(name))
	var a C.int
	if err := c.status(C.scim_user_active(c.h, name, &a)); err != nil {
		return err
	}
	u.Active = a != 0
	return nil
}

func (c *Cache) group() Group {
	next := func(p **C.char) **C.char { return (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) }
	// Counted first: a whole write's verification reads every group
	// three times, and grown by append the members' lists were 52 MB of
	// garbage at 100,000 users (Dec 2).
	n := 0
	for p := c.gr.gr_mem; *p != nil; p = next(p) {
		n++
	}
	g := Group{Name: C.GoString(c.gr.gr_name), GID: uint32(c.gr.gr_gid), Members: make([]string, 0, n)}
	for p := c.gr.gr_mem; *p != nil; p = next(p) {
		g.Members = append(g.Members, C.GoString(*p))
	}
	return g
}

// User looks a user up by name.
func (c *Cache) User(name string) (User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, err := c.entry(name)
	if err != nil {
		return User{}, err
	}
	return u, c.active(&u)
}

// UserByUID looks a user up by uid.
func (c *Cache) UserByUID(uid uint32) (User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, err := c.entryByUID(uid)
	if err != nil {
		return User{}, err
	}
	return u, c.active(&u)
}

// UserEntry is User without Active: the passwd entry alone, one call
// into the reader where User makes two (its scim_user_active). A whole
// write's verification asks every user's activity once (EachUser) and
// every entry by name and by uid again (snapshot.verifyIndex), Dec 2.
func (c *Cache) UserEntry(name string) (User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entry(name)
}

// UserEntryByUID is UserByUID without Active (UserEntry).
func (c *Cache) UserEntryByUID(uid uint32) (User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entryByUID(uid)
}

// entry and entryByUID are the passwd entry by name and by uid; called
// with c.mu held.
func (c *Cache) entry(name string) (User, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if err := c.call(func() C.int { return C.scim_getpwnam(c.h, cn, c.pw, c.buf, c.blen) }); err != nil {
		return User{}, err
	}
	return c.user(), nil
}

func (c *Cache) entryByUID(uid uint32) (User, error) {
	if err := c.call(func() C.int { return C.scim_getpwuid(c.h, C.uid_t(uid), c.pw, c.buf, c.blen) }); err != nil {
		return User{}, err
	}
	return c.user(), nil
}

// Group looks a group up by name.
func (c *Cache) Group(name string) (Group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if err := c.call(func() C.int { return C.scim_getgrnam(c.h, cn, c.gr, c.buf, c.blen) }); err != nil {
		return Group{}, err
	}
	return c.group(), nil
}

// GroupByGID looks a group up by gid.
func (c *Cache) GroupByGID(gid uint32) (Group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(func() C.int { return C.scim_getgrgid(c.h, C.gid_t(gid), c.gr, c.buf, c.blen) }); err != nil {
		return Group{}, err
	}
	return c.group(), nil
}

// Users lists every user in uid order. The walk is by keyset, so a
// snapshot replaced midway neither repeats nor skips users in both.
func (c *Cache) Users() ([]User, error) { return collect(c.EachUser) }

// collect is every value a walk (EachUser, EachGroup) yields, in order.
func collect[T any](each func(func(T) error) error) ([]T, error) {
	var out []T
	if err := each(func(v T) error { out = append(out, v); return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

// EachUser calls f for every user in uid order, as Users lists them,
// without holding them all (the writer's verification of 100,000 users);
// an error from f stops the walk and is returned. f runs with the handle
// locked: it must not call c.
func (c *Cache) EachUser(f func(User) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pos := C.int64_t(-1)
	for {
		err := c.call(func() C.int { return C.scim_nextpw(c.h, &pos, c.pw, c.buf, c.blen) })
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		u := c.user()
		err = c.active(&u)
		if errors.Is(err, ErrNotFound) {
			continue // gone in a snapshot that replaced this one midway
		}
		if err != nil {
			return err
		}
		if err := f(u); err != nil {
			return err
		}
	}
}

// Groups lists every group, with members, in gid order.
func (c *Cache) Groups() ([]Group, error) { return collect(c.EachGroup) }

// EachGroup calls f for every group, with members, in gid order, as
// Groups lists them; an error from f stops the walk and is returned. f
// runs with the handle locked: it must not call c.
func (c *Cache) EachGroup(f func(Group) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pos := C.int64_t(-1)
	for {
		err := c.call(func() C.int { return C.scim_nextgr(c.h, &pos, c.gr, c.buf, c.blen) })
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(c.group()); err != nil {
			return err
		}
	}
}

// UserGroups returns the gids of the groups that list user as a member,
// ascending (the primary gid only if a group lists the user).
func (c *Cache) UserGroups(name string) ([]uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil, fmt.Errorf("%w: cache closed", ErrUnavailable)
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	gids := make([]C.gid_t, 64)
	for {
		var n C.size_t
		st := C.scim_user_groups(c.h, cn, &gids[0], C.size_t(len(gids)), &n)
		if st == C.SCIM_ERANGE && int(n) > len(gids) {
			gids = make([]C.gid_t, n)
			continue
		}
		if err := c.status(st); err != nil {
			return nil, err
		}
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(gids[i])
		}
		return out, nil
	}
}

// InGroup reports whether group lists user as a member.
func (c *Cache) InGroup(user, group string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return false, fmt.Errorf("%w: cache closed", ErrUnavailable)
	}
	cu, cg := C.CString(user), C.CString(group)
	defer C.free(unsafe.Pointer(cu))
	defer C.free(unsafe.Pointer(cg))
	var m C.int
	if err := c.status(C.scim_user_in_group(c.h, cu, cg, &m)); err != nil {
		return false, err
	}
	return m != 0, nil
}

// Keys returns user's SSH public keys in source order (empty, not an
// error, for a user without keys).
func (c *Cache) Keys(user string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cu := C.CString(user)
	defer C.free(unsafe.Pointer(cu))
	if err := c.call(func() C.int { return C.scim_user_keys(c.h, cu, c.buf, c.blen) }); err != nil {
		return nil, err
	}
	s := C.GoString(c.buf)
	keys := []string{}
	for _, k := range strings.Split(s, "\n") {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Associations returns user's Slurm associations by account name,
// blocked ones included (Blocked set).
func (c *Cache) Associations(user string) ([]Association, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cu := C.CString(user)
	defer C.free(unsafe.Pointer(cu))
	var out []Association
	after := ""
	for {
		ca := C.CString(after)
		err := c.call(func() C.int { return C.scim_next_assoc(c.h, cu, ca, c.as, c.buf, c.blen) })
		C.free(unsafe.Pointer(ca))
		if errors.Is(err, ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		a := Association{
			Account:    C.GoString(c.as.account),
			DefaultQOS: C.GoString(c.as.default_qos),
			IsDefault:  c.as.is_default != 0,
			Blocked:    c.as.blocked != 0,
		}
		if q := C.GoString(c.as.qos); q != "" {
			a.QOS = strings.Split(q, ",")
		}
		out = append(out, a)
		after = a.Account
	}
}

// Meta returns the snapshot's meta value for key (schema_version, serial,
// created_at, source, counts).
func (c *Cache) Meta(key string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	if err := c.call(func() C.int { return C.scim_meta(c.h, ck, c.buf, c.blen) }); err != nil {
		return "", err
	}
	return C.GoString(c.buf), nil
}

// ModTime is the mtime of the live file at the path, read now: the time of
// syncd's last successful contact with the identity source (it touches the
// live snapshot after every successful poll; a mirror sets it from its
// manifest). The gates measure staleness from it (scim_cache_mtime). A
// touch is not a new file: the reader keeps its open snapshot.
func (c *Cache) ModTime() (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts C.struct_timespec
	if err := c.status(C.scim_cache_mtime(c.h, &ts)); err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(ts.tv_sec), int64(ts.tv_nsec)), nil
}
