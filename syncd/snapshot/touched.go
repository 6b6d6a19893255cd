package snapshot

import (
	"maps"
	"slices"
)

// Touched is what a diff needs to look at between prev and next: the
// users and groups that are not the same record in both, found by one
// walk of both lists in id order (issue 18). Validation returns users
// by uid and groups by gid, and Load reads them in that order, so on a
// one-change poll two lists of 100,000 users are merged with no map and
// no allocation but the few records that differ: the diffs that once
// put every name of both directories into maps (commit.Compute and the
// writer's rowDiff, about 0.45 s of CPU per change at 100,000 users)
// look only at these.
//
// A record that is the same in both (every field, SSH keys and members
// in order) cannot change any diff keyed by name, as long as names are
// unique within each list (validation refuses repeats; the snapshot's
// users.name and groups.name are UNIQUE): a name of a touched record
// cannot also be the name of an untouched one. Prev and Next are
// Contents holding only the touched records (and every association:
// they are keyed by user and account, and compared whole), so a diff
// made of them equals the diff of the whole directories.
//
// ok is false when a list is not strictly increasing by uid or gid (a
// caller's own Contents, a repeated id): then nothing is claimed and
// the caller diffs the whole directories.
type Touched struct {
	Prev, Next Contents
}

// TouchedOf walks prev and next (nil: empty) in id order.
func TouchedOf(prev, next *Contents) (Touched, bool) {
	var t Touched
	if prev == nil {
		prev = &Contents{}
	}
	if next == nil {
		next = &Contents{}
	}
	t.Prev.Source, t.Next.Source = prev.Source, next.Source
	t.Prev.Associations, t.Next.Associations = prev.Associations, next.Associations
	var ok bool
	t.Prev.Users, t.Next.Users, ok = mergeTouched(prev.Users, next.Users,
		func(u *User) uint32 { return u.UID }, SameUser)
	if !ok {
		return Touched{}, false
	}
	t.Prev.Groups, t.Next.Groups, ok = mergeTouched(prev.Groups, next.Groups,
		func(g *Group) uint32 { return g.GID }, SameGroup)
	if !ok {
		return Touched{}, false
	}
	return t, true
}

// mergeTouched merges a and b, both strictly increasing by id, and
// returns the records of each that the other does not hold the same.
func mergeTouched[T any](a, b []T, id func(*T) uint32, same func(x, y *T) bool) (ta, tb []T, ok bool) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i > 0 && i < len(a) && id(&a[i]) <= id(&a[i-1]) ||
			j > 0 && j < len(b) && id(&b[j]) <= id(&b[j-1]) {
			return nil, nil, false
		}
		switch {
		case j == len(b) || i < len(a) && id(&a[i]) < id(&b[j]):
			ta = append(ta, a[i])
			i++
		case i == len(a) || id(&b[j]) < id(&a[i]):
			tb = append(tb, b[j])
			j++
		default:
			if !same(&a[i], &b[j]) {
				ta, tb = append(ta, a[i]), append(tb, b[j])
			}
			i, j = i+1, j+1
		}
	}
	return ta, tb, true
}

// SameUser: every field of the two users is equal (SSH keys in order).
// TestSameCoversEveryField fails when User gains a field this misses.
func SameUser(a, b *User) bool {
	return a.Name == b.Name && a.UID == b.UID && a.GID == b.GID && a.GECOS == b.GECOS &&
		a.Home == b.Home && a.Shell == b.Shell && a.Active == b.Active && a.SCIMID == b.SCIMID &&
		a.Quota == b.Quota && slices.Equal(a.SSHKeys, b.SSHKeys)
}

// SameGroup: every field of the two groups is equal (members in order).
func SameGroup(a, b *Group) bool {
	return a.Name == b.Name && a.GID == b.GID && a.SCIMID == b.SCIMID && a.Quota == b.Quota &&
		slices.Equal(a.Members, b.Members)
}

// gidsOfPair is prev.gidsOf(names), next.gidsOf(names) in one pass over
// both group lists (in gid order, as validation and Load make them): a
// group whose member list is the very same slice in both (an unchanged
// group, most of them) is checked and searched once. At 100,000 users
// the three gidsOf calls of a one-change diff checked every member list
// of both directories for order, about 60 ms of CPU per change under
// load (pprof over BenchmarkChangeToManifest). Lists in another order,
// or many names, take the two calls.
func gidsOfPair(prev, next *Contents, names map[string]bool) (pm, nm map[string][]uint32) {
	if len(names) > fewNames || !gidOrdered(prev.Groups) || !gidOrdered(next.Groups) {
		return prev.gidsOf(names), next.gidsOf(names)
	}
	want := slices.Sorted(maps.Keys(names))
	pm, nm = make(map[string][]uint32, len(want)), make(map[string][]uint32, len(want))
	hits := func(g *Group, add func(string)) {
		if !slices.IsSorted(g.Members) {
			for _, m := range g.Members {
				if names[m] {
					add(m)
				}
			}
			return
		}
		for _, n := range want {
			if _, found := slices.BinarySearch(g.Members, n); found {
				add(n)
			}
		}
	}
	i, j := 0, 0
	for i < len(prev.Groups) || j < len(next.Groups) {
		var a, b *Group
		if i < len(prev.Groups) {
			a = &prev.Groups[i]
		}
		if j < len(next.Groups) {
			b = &next.Groups[j]
		}
		switch {
		case a != nil && b != nil && a.GID == b.GID && sameSlice(a.Members, b.Members):
			gid := a.GID
			hits(a, func(n string) { pm[n] = append(pm[n], gid); nm[n] = append(nm[n], gid) })
			i++
			j++
		case b == nil || a != nil && a.GID <= b.GID:
			gid := a.GID
			hits(a, func(n string) { pm[n] = append(pm[n], gid) })
			i++
		default:
			gid := b.GID
			hits(b, func(n string) { nm[n] = append(nm[n], gid) })
			j++
		}
	}
	for _, m := range []map[string][]uint32{pm, nm} {
		for n, gids := range m {
			slices.Sort(gids)
			m[n] = slices.Compact(gids)
		}
	}
	return pm, nm
}

func gidOrdered(gs []Group) bool {
	for i := 1; i < len(gs); i++ {
		if gs[i-1].GID >= gs[i].GID {
			return false
		}
	}
	return true
}

// sameSlice: a and b are the same memory (not merely equal).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
