// Package config reads syncd's TOML configuration file.
//
// The file and the credential files it names are root-only (see perms.go):
// they hold or point at the SCIM token. Load reports every problem it
// finds, not just the first, so that `syncd check-config` can explain a
// broken file in one pass.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where syncd looks for its configuration.
const DefaultPath = "/etc/scimbridge/syncd.toml"

// Defaults for paths that every install shares.
const (
	DefaultCachePath  = "/var/lib/scimbridge/cache.db"
	DefaultStatusPath = "/var/lib/scimbridge/status.json"
)

// Config is the whole syncd configuration.
type Config struct {
	// Where the SCIM service lives and how to authenticate to it. The
	// token and password are never in this file, only their paths.
	BaseURL      string `toml:"base_url"`
	TokenFile    string `toml:"token_file"`
	BasicUser    string `toml:"basic_user"`
	PasswordFile string `toml:"password_file"`
	CAFile       string `toml:"ca_file"`

	// RequestTimeout bounds one HTTP request; FetchTimeout bounds one
	// complete directory read including retries.
	RequestTimeout time.Duration `toml:"request_timeout"`
	FetchTimeout   time.Duration `toml:"fetch_timeout"`
	// ReadTimeout: the longest wait for the next byte of an answer
	// (headers or body). A hung source fails then, and retries after
	// timeouts stop within poll_interval, so it shows within one poll.
	ReadTimeout time.Duration `toml:"read_timeout"`
	// MaxRetries bounds retries of one request on 429/503/network errors.
	MaxRetries int `toml:"max_retries"`

	// PollInterval is the time between polls, each shifted by up to
	// ±PollJitter so that many clusters do not poll in step.
	// FullReconcileInterval forces a full read even when the cheap
	// change check says nothing changed: deletions are invisible to it.
	PollInterval          time.Duration `toml:"poll_interval"`
	PollJitter            time.Duration `toml:"poll_jitter"`
	FullReconcileInterval time.Duration `toml:"full_reconcile_interval"`
	// RemovalCheckInterval is how often a poll also compares the
	// server's record totals with the last read's (deletions leave no
	// lastModified). ChangeOverlap is how far the change check's window
	// reaches back before the start of the previous read.
	RemovalCheckInterval time.Duration `toml:"removal_check_interval"`
	ChangeOverlap        time.Duration `toml:"change_overlap"`

	UsersEndpoint  string            `toml:"users_endpoint"`
	GroupsEndpoint string            `toml:"groups_endpoint"`
	UsersQuery     map[string]string `toml:"users_query"`
	GroupsQuery    map[string]string `toml:"groups_query"`

	// Paging is auto (from ServiceProviderConfig), index or cursor.
	Paging   string `toml:"paging"`
	PageSize int    `toml:"page_size"`
	// PageCap is the most pages one listing may take; more is an error
	// (a server that pages forever must not hang syncd).
	PageCap int `toml:"page_cap"`
	// SortBy is sent as sortBy when the server says it supports sorting:
	// servers that page an unordered set repeat and skip records.
	SortBy string `toml:"sort_by"`
	// GroupMembers is how group members are read: auto (from the listing,
	// then per group when a listing has none, then from the users' groups
	// attribute when no group has any), listing, per-group, per-user
	// (members.value eq filter per user) or user-groups (the users'
	// read-only groups attribute, RFC 7643 section 4.1.2).
	GroupMembers string `toml:"group_members"`
	// SendAttributes sends attributes= naming every path (default true).
	// Turn it off only for servers that reject the parameter (AWS IAM
	// Identity Center); returned:request attributes then never arrive.
	SendAttributes bool `toml:"send_attributes"`

	// PosixGroups names the groups whose members become POSIX users.
	// Empty means every user.
	PosixGroups []string `toml:"posix_groups"`

	// UserNameDomains are stripped from email-style userNames
	// (alice@example.com becomes alice); other domains are rejected.
	// Merged into UserNames.Domains (user_names.domains).
	UserNameDomains []string `toml:"user_name_domains"`
	// UserNames maps IdP userNames to login names (names.go).
	UserNames UserNames `toml:"user_names"`

	// Preset fills in attribute paths for a known SCIM flavour; paths set
	// in [attributes] override it.
	Preset     string     `toml:"preset"`
	Attributes Attributes `toml:"attributes"`

	HomeTemplate  string   `toml:"home_template"`
	DefaultShell  string   `toml:"default_shell"`
	AllowedShells []string `toml:"allowed_shells"`
	UIDMin        int64    `toml:"uid_min"`
	UIDMax        int64    `toml:"uid_max"`
	GIDMin        int64    `toml:"gid_min"`
	GIDMax        int64    `toml:"gid_max"`
	// PrivateGroups synthesises a user-private group (name = user name,
	// gid = the user's gid) for a user whose primary gid matches no SCIM
	// group, so that `id` and `ls -l` show a name: by default ("uid")
	// when the gid equals the uid and nothing else owns it (names.go).
	PrivateGroups PrivateGroupMode `toml:"private_groups"`
	// GroupNames maps IdP group names to Linux names (names.go).
	GroupNames GroupNames `toml:"group_names"`

	// Hardening against hostile identity data (see harden.go): the id
	// floor, gids users may share as primary group, reserved names and
	// where homes may live.
	MinID               int64    `toml:"min_id"`
	AllowMinIDBelow1000 bool     `toml:"allow_min_id_below_1000"`
	SharedPrimaryGIDs   []int64  `toml:"shared_primary_gids"`
	ReservedNames       []string `toml:"reserved_names"`
	HomeRoots           []string `toml:"home_roots"`

	// LocalPasswd and LocalGroup are the local account files SCIM
	// entries must not clash with.
	LocalPasswd string `toml:"local_passwd"`
	LocalGroup  string `toml:"local_group"`

	CachePath  string `toml:"cache_path"`
	StatusPath string `toml:"status_path"`
	// MaxRemovalShare is the largest share of the live snapshot's users
	// one commit may remove without --force.
	MaxRemovalShare float64 `toml:"max_removal_share"`
	// HistoryKeep is how many snapshots are kept for syncd history, diff
	// and rollback (default 10).
	HistoryKeep int `toml:"history_keep"`
	// HistoryMaxMB bounds the history's disk beyond the live file, in MB
	// (default 256; 0: only history_keep bounds it).
	HistoryMaxMB int `toml:"history_max_mb"`

	LogLevel      string `toml:"log_level"`
	MetricsListen string `toml:"metrics_listen"`

	// HTTPLimits: redirects followed and caps per fetch (http.go).
	HTTPLimits

	// Slurm is the raw [slurm] table, decoded by the Slurm reconciler
	// with DecodeSlurm.
	Slurm toml.Primitive `toml:"slurm"`
	// Receiver is the raw [receiver] table (receiver.go, DecodeReceiver).
	Receiver toml.Primitive `toml:"receiver"`
	// Kubernetes is the raw [kubernetes] table, decoded by the Kubernetes
	// pass (syncd/kube) with DecodeKubernetes.
	Kubernetes toml.Primitive `toml:"kubernetes"`
	// Homes is the raw [homes] table (syncd/homes decodes it: DecodeHomes).
	Homes toml.Primitive `toml:"homes"`

	// Cluster holds the [publish] (head) and [mirror] (node) tables:
	// see cluster.go.
	Cluster

	// Path is the file this was loaded from.
	Path string `toml:"-"`
	md   toml.MetaData
}

// Attributes are SCIM attribute paths. A path in an extension starts
// with the extension's URN: "urn:...:2.0:User:uidNumber". Core attributes
// may be written bare ("userName") or fully qualified.
type Attributes struct {
	UserName string `toml:"user_name"`
	UID      string `toml:"uid"`
	GID      string `toml:"gid"`
	GECOS    string `toml:"gecos"`
	Home     string `toml:"home"`
	Shell    string `toml:"shell"`
	SSHKeys  string `toml:"ssh_keys"`
	// SSHKeysAlt is read for users without SSHKeys (a second spelling:
	// the posix preset reads sshPublicKey, then sshPublicKeys).
	SSHKeysAlt string `toml:"ssh_keys_alt"`
	Active     string `toml:"active"`
	// HomeQuota is an optional per-user storage limit for the home (a
	// string such as "50G", or a number of GiB), e.g. a custom schema's
	// "urn:example:params:scim:schemas:extension:hpc:2.0:User:homeQuota".
	// The homes pass applies it, capped by [homes.quota] user_max.
	HomeQuota string `toml:"home_quota"`
	// ProjectQuota is the same for a team's project directory, in the
	// Group resource (capped by [homes.quota] team_max).
	ProjectQuota string `toml:"project_quota"`
	// GroupName and GroupGID are paths in the Group resource.
	GroupName string `toml:"group_name"`
	GroupGID  string `toml:"group_gid"`
}

// HasSlurm reports whether the file has a [slurm] table.
func (c *Config) HasSlurm() bool { return c.md.IsDefined("slurm") }

// DecodeSlurm decodes the [slurm] table into v.
func (c *Config) DecodeSlurm(v any) error {
	if !c.HasSlurm() {
		return nil
	}
	if err := c.md.PrimitiveDecode(c.Slurm, v); err != nil {
		return fmt.Errorf("%s: [slurm]: %w", c.Path, err)
	}
	return c.unknownIn("slurm")
}

// HasKubernetes reports whether the file has a [kubernetes] table.
func (c *Config) HasKubernetes() bool { return c.md.IsDefined("kubernetes") }

// DecodeKubernetes decodes the [kubernetes] table into v.
func (c *Config) DecodeKubernetes(v any) error {
	if !c.HasKubernetes() {
		return nil
	}
	if err := c.md.PrimitiveDecode(c.Kubernetes, v); err != nil {
		return fmt.Errorf("%s: [kubernetes]: %w", c.Path, err)
	}
	return c.unknownIn("kubernetes")
}

// HasHomes reports whether the file has a [homes] table.
func (c *Config) HasHomes() bool { return c.md.IsDefined("homes") }

// DecodeHomes decodes the [homes] table into v.
func (c *Config) DecodeHomes(v any) error {
	if !c.HasHomes() {
		return nil
	}
	if err := c.md.PrimitiveDecode(c.Homes, v); err != nil {
		return fmt.Errorf("%s: [homes]: %w", c.Path, err)
	}
	return c.unknownIn("homes")
}

// unknownIn names the keys under table that no decode took: a table
// decoded on its own (a toml.Primitive) is skipped by Parse's check, and a
// misspelt or misplaced key in it must not be silently ignored.
func (c *Config) unknownIn(table string) error {
	var errs Errors
	for _, k := range c.md.Undecoded() {
		if len(k) > 0 && k[0] == table {
			errs = append(errs, fmt.Errorf("config %s: unknown key %q", c.Path, k.String()))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Errors is every problem found in a configuration.
type Errors []error

func (e Errors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "\n")
}

func (e Errors) Unwrap() []error { return e }

// Load reads, defaults and checks the configuration at path, including
// the ownership and modes of it and of the credential files. The error,
// if any, is an Errors listing every problem.
func Load(path string) (*Config, error) {
	var errs Errors
	if err := CheckSecretFile(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, Errors{err}
		}
		errs = append(errs, err)
	}
	c, err := Parse(path)
	if c == nil {
		return nil, append(errs, err)
	}
	var perrs Errors
	if errors.As(err, &perrs) {
		errs = append(errs, perrs...)
	}
	errs = append(errs, c.Check()...)
	errs = append(errs, c.checkFiles()...)
	if len(errs) > 0 {
		return c, errs
	}
	return c, nil
}

// Parse reads and defaults the configuration without checking it.
func Parse(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c := &Config{Path: path}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.md = md
	var errs Errors
	for _, k := range md.Undecoded() {
		if len(k) > 0 && (k[0] == "slurm" || k[0] == "receiver" || k[0] == "kubernetes" || k[0] == "homes") {
			continue // the Slurm reconciler, the receiver, the Kubernetes and homes passes check their own tables
		}
		errs = append(errs, fmt.Errorf("config %s: unknown key %q", path, k.String()))
	}
	c.receiverPreset()
	if err := c.applyPreset(); err != nil {
		errs = append(errs, err)
	}
	c.applyDefaults()
	if len(errs) > 0 {
		return c, errs
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	setDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	setStr := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	// Numbers default only when absent: an explicit 0 is checked, not
	// silently replaced.
	setInt := func(key string, i *int, v int) {
		if !c.md.IsDefined(key) {
			*i = v
		}
	}
	setID := func(key string, i *int64, v int64) {
		if !c.md.IsDefined(key) {
			*i = v
		}
	}
	setDur(&c.RequestTimeout, 30*time.Second)
	setDur(&c.FetchTimeout, 10*time.Minute)
	setDur(&c.ReadTimeout, 20*time.Second)
	// A change reaches the snapshot within about a poll (+ a read), a
	// deletion within removal_check_interval + a poll (issue 12: other
	// changes <= 90 s, deletions <= 5 min). Each cheap poll costs the
	// server one small request per endpoint.
	setDur(&c.PollInterval, time.Minute)
	setDur(&c.FullReconcileInterval, time.Hour)
	setDur(&c.RemovalCheckInterval, 2*time.Minute)
	setDur(&c.ChangeOverlap, 2*time.Minute)
	setInt("history_keep", &c.HistoryKeep, 10)
	setInt("history_max_mb", &c.HistoryMaxMB, 256)
	if !c.md.IsDefined("poll_jitter") {
		c.PollJitter = c.PollInterval / 10
	}
	setInt("max_retries", &c.MaxRetries, 6)
	setStr(&c.UsersEndpoint, "Users")
	setStr(&c.GroupsEndpoint, "Groups")
	setStr(&c.Paging, "auto")
	setInt("page_size", &c.PageSize, 500)
	// No sortBy by default: a server that sorts its whole table for each
	// page times out on large directories (50,000 users: minutes per
	// page). Cursor paging needs none, and an index walk over a listing
	// that shifts is detected (repeats, missing records confirmed by id)
	// and refused with a pointer to sort_by; check-config --online
	// measures what sorting costs on the server.
	if !c.md.IsDefined("sort_by") {
		c.SortBy = ""
	}
	setStr(&c.GroupMembers, "auto")
	if !c.md.IsDefined("send_attributes") {
		c.SendAttributes = true
	}
	setStr(&c.DefaultShell, "/bin/bash")
	if c.AllowedShells == nil {
		c.AllowedShells = DefaultAllowedShells()
		if c.DefaultShell != "" && !contains(c.AllowedShells, c.DefaultShell) {
			c.AllowedShells = append(c.AllowedShells, c.DefaultShell)
		}
	}
	setID("uid_min", &c.UIDMin, 10000)
	setID("uid_max", &c.UIDMax, 2000000000)
	setID("gid_min", &c.GIDMin, c.UIDMin)
	setID("gid_max", &c.GIDMax, c.UIDMax)
	c.applyHardeningDefaults()
	setStr(&c.LocalPasswd, "/etc/passwd")
	setStr(&c.LocalGroup, "/etc/group")
	setStr(&c.CachePath, DefaultCachePath)
	// Beside the cache: a cache_path moved elsewhere (a test, a second
	// instance) must not share or clobber the default status file.
	setStr(&c.StatusPath, filepath.Join(filepath.Dir(c.CachePath), filepath.Base(DefaultStatusPath)))
	if !c.md.IsDefined("max_removal_share") {
		c.MaxRemovalShare = 0.10
	}
	setStr(&c.LogLevel, "info")
	a := &c.Attributes
	setStr(&a.UserName, "userName")
	setStr(&a.Active, "active")
	setStr(&a.GroupName, "displayName")
	c.groupNamesDefaults()
	c.clusterDefaults()
	c.httpDefaults()
}
