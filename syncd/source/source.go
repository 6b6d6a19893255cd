// Package source defines what an identity source hands to syncd: a whole
// directory of users and groups, as the source published it, before any
// validation. Every value in it is untrusted.
//
// A source is one package behind the Source interface (syncd/source/scim
// for SCIM 2.0 servers); a mirror or a push receiver is one more.
package source

import "context"

// Source fetches the complete directory. Fetch returns an error unless
// every page of every listing arrived intact: syncd never publishes a
// partial directory.
type Source interface {
	// Name identifies the source in logs and in the snapshot's meta
	// (for example the SCIM base URL). It never contains a credential.
	Name() string
	Fetch(ctx context.Context) (*Directory, error)
}

// Forgetter is a Source that keeps state from one read for the next
// (the SCIM client's change check). Forget drops it, for a process that
// will not read again (sync --once), so that it is not held while the
// snapshot is written.
type Forgetter interface{ Forget() }

// Directory is one complete read of the source.
type Directory struct {
	Users  []User
	Groups []Group
}

// User is a user as the source published it. Pointer fields are nil when
// the source did not send the attribute, which validation must tell apart
// from a zero value.
type User struct {
	ID         string // the source's stable id (SCIM "id")
	ExternalID string
	UserName   string
	UID        *int64
	GID        *int64
	GECOS      string
	Home       string
	Shell      string
	Active     *bool
	SSHKeys    []string
	// Quota is the storage limit the source sent for the user's home, as
	// text (a JSON number's digits, or a string such as "50G"); "" when
	// not sent or not configured ([attributes] home_quota). Validation
	// reads it (syncd/validate/quota.go).
	Quota string
	// Malformed holds attributes the source sent but that could not be
	// read as their type, keyed by field name as in Field* below, with a
	// short reason. Validation rejects the record (or drops the value).
	Malformed map[string]string
}

// Field names used as Malformed keys.
const (
	FieldUserName = "userName"
	FieldUID      = "uid"
	FieldGID      = "gid"
	FieldGECOS    = "gecos"
	FieldHome     = "home"
	FieldShell    = "shell"
	FieldSSHKeys  = "sshKeys"
	FieldQuota    = "homeQuota"
	FieldActive   = "active"
	FieldName     = "displayName"
	FieldMembers  = "members"
)

// Group is a group as the source published it.
type Group struct {
	ID          string
	DisplayName string
	GID         *int64
	// MemberIDs are the source ids of the group's user members.
	MemberIDs []string
	// Quota is the storage limit the source sent for the team's project
	// directory, as text ([attributes] project_quota); "" when none.
	Quota     string
	Malformed map[string]string
}
