package source

import "slices"

// SameUser reports whether a and b are the same record in every field,
// with nil and empty lists and maps told apart (JSON null and [] or {}):
// what the explain record encodes, and more than validation reads.
// TestSameCoversEveryField keeps it in step with User.
func SameUser(a, b *User) bool {
	return a.ID == b.ID && a.ExternalID == b.ExternalID && a.UserName == b.UserName &&
		samePtr(a.UID, b.UID) && samePtr(a.GID, b.GID) && a.GECOS == b.GECOS && a.Home == b.Home &&
		a.Shell == b.Shell && samePtr(a.Active, b.Active) && sameList(a.SSHKeys, b.SSHKeys) &&
		a.Quota == b.Quota && sameMap(a.Malformed, b.Malformed)
}

// SameGroup is SameUser for groups.
func SameGroup(a, b *Group) bool {
	return a.ID == b.ID && a.DisplayName == b.DisplayName && samePtr(a.GID, b.GID) &&
		sameList(a.MemberIDs, b.MemberIDs) && a.Quota == b.Quota && sameMap(a.Malformed, b.Malformed)
}

// samePtr: both nil, or both pointing at equal values.
func samePtr[T comparable](a, b *T) bool {
	return a == b || a != nil && b != nil && *a == *b
}

func sameList(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

func sameMap(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
