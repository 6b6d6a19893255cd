package slurm

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/names"
)

// Defaults.
const (
	DefaultMarker   = "scimbridge"
	DefaultParent   = "root"
	DefaultLockFile = "/run/scimbridge/slurm.lock"
	DefaultSacctmgr = "sacctmgr"
	DefaultSqueue   = "squeue"
	DefaultScontrol = "scontrol"
	DefaultScancel  = "scancel"
	// DefaultStateFileName is the ledger's name beside the snapshot.
	DefaultStateFileName = "slurm-state.json"
	// MaxAccountLen bounds generated account names; Slurm stores them in a
	// tinytext column, but long names are unreadable in squeue.
	MaxAccountLen = 64
)

// Config is the [slurm] table of syncd.toml.
//
//	[slurm]
//	cluster         = "hpc1"
//	default_account = "scim-default"           # landing account of every provisioned user
//	qos             = ["normal"]               # QOS list of associations (empty: inherit)
//	default_qos     = "normal"
//	group_pattern   = "^hpc-(.+)$"             # groups matching become accounts (submatch 1, or all)
//	[slurm.groups.physics]                     # explicit mapping, keyed by SCIM group name
//	account     = "phys"
//	qos         = ["normal", "gpu"]
//	default_qos = "normal"
//	limits      = ["GrpTRES=gres/gpu=16"]
type Config struct {
	// Enabled turns the reconcile step of `syncd run` on. `syncd slurm
	// plan|apply` work regardless.
	Enabled bool `toml:"enabled"`
	// Interval is how often `syncd run` runs the Slurm pass on its own,
	// whatever the source does (Go duration, default poll_interval).
	Interval string `toml:"interval"`
	// Cluster is the Slurm cluster name (slurm.conf ClusterName).
	Cluster string `toml:"cluster"`

	// Groups maps SCIM group names to accounts explicitly.
	Groups map[string]GroupConfig `toml:"groups"`
	// GroupPattern is a regular expression over SCIM group names; every
	// matching group becomes an account named after submatch 1 (or the
	// whole name when the pattern has no group), normalised.
	GroupPattern string `toml:"group_pattern"`
	// AccountPrefix is prepended to every account name derived from a
	// group name (not to explicit `account =` names).
	AccountPrefix string `toml:"account_prefix"`

	// Parent is the parent account of created accounts.
	Parent string `toml:"parent"`
	// QOS, DefaultQOS and Limits apply to pattern-mapped groups, to the
	// landing account, and to explicit groups that set none themselves.
	QOS        []string `toml:"qos"`
	DefaultQOS string   `toml:"default_qos"`
	Limits     []string `toml:"limits"`

	// DefaultAccount is the landing account: every provisioned user has an
	// association there and it is their DefaultAccount, so a job without
	// -A lands there. DefaultAccountLimits caps it (default: no GPUs).
	// Empty: no landing account; a user's default is their first mapped
	// account by name.
	DefaultAccount       string   `toml:"default_account"`
	DefaultAccountLimits []string `toml:"default_account_limits"`

	// Marker is the Organization value of accounts scimbridge owns.
	Marker string `toml:"marker"`
	// OwnByPrefix makes AccountPrefix (non-empty) mark ownership too:
	// accounts named with it are managed whatever their Organization.
	OwnByPrefix bool `toml:"own_by_prefix"`
	// CreateQOS creates QOS named in this table that do not exist yet
	// (Description "managed by scimbridge"). Existing QOS are never
	// changed or removed. Default true.
	CreateQOS *bool `toml:"create_qos"`

	// Tiers as code (tiers.go). QOSSettings defines QOS by name:
	// attributes in sacctmgr(1) spelling; the QOS is created if missing and
	// kept at these settings while its Description is "managed by MARKER".
	QOSSettings map[string][]string `toml:"qos_settings"`
	// ProjectQOS are the settings of each team's project QOS, named
	// ACCOUNT-project and made for groups with guaranteed_gpus (which adds
	// GrpTRES=gres/gpu=N to it and to the account).
	ProjectQOS []string `toml:"project_qos"`
	// Tiers (the QOS a group opts into) apply to pattern-mapped groups and
	// to explicit groups that set none; GuaranteedGPUs to pattern-mapped
	// groups only (each gets its own project QOS).
	Tiers          []string `toml:"tiers"`
	GuaranteedGPUs *int     `toml:"guaranteed_gpus"`

	// HandsOffUsers are users whose associations, default account and
	// jobs syncd never touches (an admin manages them by hand).
	HandsOffUsers []string `toml:"hands_off_users"`
	// DisabledPendingJobs: what a pass does with the pending jobs of a user
	// disabled at the source: "hold" (default; released when re-enabled),
	// "cancel" or "none". DisabledRunningJobs: "finish" (default) or
	// "cancel".
	DisabledPendingJobs string `toml:"disabled_pending_jobs"`
	DisabledRunningJobs string `toml:"disabled_running_jobs"`

	Sacctmgr string `toml:"sacctmgr"`
	Squeue   string `toml:"squeue"`
	Scontrol string `toml:"scontrol"`
	Scancel  string `toml:"scancel"`
	// LoadMinAccounts: from this many accounts getting associations in
	// one pass, they go in one `sacctmgr load` (load.go); 0 means 10, -1
	// never (one `add user` per account, as before).
	LoadMinAccounts int `toml:"load_min_accounts"`
	// Sacct is the sacct `syncd report usage` runs (default: sacct from
	// PATH). Its own key: a wrapper around sacctmgr says nothing about
	// where sacct is.
	Sacct    string `toml:"sacct"`
	LockFile string `toml:"lock_file"`
	// StateFile is the ledger of what scimbridge set in slurmdbd (see
	// ledger.go). Default: slurm-state.json beside cache_path.
	StateFile string `toml:"state_file"`
	// SkipNSSCheck disables the getpwnam check of step 1 (tests of the
	// planner only; never in production).
	SkipNSSCheck bool `toml:"-"`
}

// GroupConfig maps one SCIM group.
type GroupConfig struct {
	Account    string   `toml:"account"`
	QOS        []string `toml:"qos"`
	DefaultQOS string   `toml:"default_qos"`
	Limits     []string `toml:"limits"`
	// GuaranteedGPUs makes the team's project QOS (ACCOUNT-project, capped
	// at this many GPUs, the default QOS of its members) and caps the
	// account at it for QOS without their own GPU limit.
	GuaranteedGPUs *int `toml:"guaranteed_gpus"`
	// Tiers are the shared QOS (general, spot...) the group opts into.
	Tiers []string `toml:"tiers"`
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Marker == "" {
		c.Marker = DefaultMarker
	}
	if c.Parent == "" {
		c.Parent = DefaultParent
	}
	if c.Sacctmgr == "" {
		c.Sacctmgr = DefaultSacctmgr
	}
	if c.Squeue == "" {
		c.Squeue = DefaultSqueue
	}
	if c.LockFile == "" {
		c.LockFile = DefaultLockFile
	}
	if c.DisabledPendingJobs == "" {
		c.DisabledPendingJobs = "hold"
	}
	if c.DisabledRunningJobs == "" {
		c.DisabledRunningJobs = "finish"
	}
	if c.Scontrol == "" {
		c.Scontrol = DefaultScontrol
	}
	if c.Scancel == "" {
		c.Scancel = DefaultScancel
	}
	if c.CreateQOS == nil {
		t := true
		c.CreateQOS = &t
	}
	if c.DefaultAccount != "" && c.DefaultAccountLimits == nil {
		c.DefaultAccountLimits = []string{"GrpTRES=gres/gpu=0"}
	}
	return c
}

// Check reports every problem in c (after WithDefaults).
func (c Config) Check() error {
	var errs []error
	if c.Cluster == "" {
		errs = append(errs, errors.New("slurm: cluster is required"))
	} else if !validName(strings.ToLower(c.Cluster)) {
		errs = append(errs, fmt.Errorf("slurm: cluster %q: only a-z, 0-9, _ and - are allowed", c.Cluster))
	}
	if len(c.Groups) == 0 && c.GroupPattern == "" {
		errs = append(errs, errors.New("slurm: no groups mapped: set [slurm.groups.NAME] or group_pattern"))
	}
	if c.GroupPattern != "" {
		if _, err := regexp.Compile(c.GroupPattern); err != nil {
			errs = append(errs, fmt.Errorf("slurm: group_pattern %q: %w", c.GroupPattern, err))
		}
	}
	if c.Marker != "" && !validMarker(c.Marker) {
		errs = append(errs, fmt.Errorf("slurm: marker %q: only letters, digits, _ and - are allowed", c.Marker))
	}
	if c.OwnByPrefix && c.AccountPrefix == "" {
		errs = append(errs, errors.New("slurm: own_by_prefix needs account_prefix"))
	}
	if c.AccountPrefix != "" && Normalize(c.AccountPrefix) != strings.ToLower(c.AccountPrefix) {
		errs = append(errs, fmt.Errorf("slurm: account_prefix %q: only a-z, 0-9, _ and - are allowed", c.AccountPrefix))
	}
	for _, name := range []string{c.Parent, c.DefaultAccount} {
		if name != "" && Normalize(name) != strings.ToLower(name) {
			errs = append(errs, fmt.Errorf("slurm: account %q: only a-z, 0-9, _ and - are allowed", name))
		}
	}
	errs = append(errs, checkQOS("slurm", c.QOS, c.DefaultQOS)...)
	errs = append(errs, checkLimits("slurm: limits", c.Limits)...)
	errs = append(errs, checkLimits("slurm: default_account_limits", c.DefaultAccountLimits)...)
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		gc := c.Groups[g]
		if gc.Account != "" && Normalize(gc.Account) != strings.ToLower(gc.Account) {
			errs = append(errs, fmt.Errorf("slurm: groups.%s: account %q: only a-z, 0-9, _ and - are allowed", g, gc.Account))
		}
		errs = append(errs, checkQOS("slurm: groups."+g, gc.QOS, gc.DefaultQOS)...)
		errs = append(errs, checkLimits("slurm: groups."+g+": limits", gc.Limits)...)
	}
	errs = append(errs, c.checkTiers()...)
	if c.Interval != "" {
		if d, err := time.ParseDuration(c.Interval); err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("slurm: interval %q: want a Go duration of at least 1s, e.g. \"2m\"", c.Interval))
		}
	}
	switch c.DisabledPendingJobs {
	case "hold", "cancel", "none":
	default:
		errs = append(errs, fmt.Errorf("slurm: disabled_pending_jobs %q: want hold, cancel or none", c.DisabledPendingJobs))
	}
	switch c.DisabledRunningJobs {
	case "finish", "cancel":
	default:
		errs = append(errs, fmt.Errorf("slurm: disabled_running_jobs %q: want finish or cancel", c.DisabledRunningJobs))
	}
	// Explicit groups sharing an account must agree on its settings: which
	// would win is not something to leave to the sort order.
	explicit := c.explicitAccounts()
	for _, acct := range slices.Sorted(maps.Keys(explicit)) {
		gs := explicit[acct]
		var first *groupMapping
		for _, g := range gs {
			m, _, ok := c.mapGroup(g, nil)
			if !ok {
				continue
			}
			if first == nil {
				first = &m
			} else if !sameAssoc(first.assoc, m.assoc) || !sameMap(first.limits, m.limits) {
				errs = append(errs, fmt.Errorf("slurm: groups %s all map to account %q with different qos, default_qos or limits; give them the same settings or different accounts",
					quoteList(gs), acct))
				break
			}
		}
	}
	if c.DefaultAccount != "" {
		if gs, ok := explicit[strings.ToLower(c.DefaultAccount)]; ok {
			errs = append(errs, fmt.Errorf("slurm: groups %s map to the landing account %q (default_account); map them to another account", quoteList(gs), c.DefaultAccount))
		}
	}
	return errors.Join(errs...)
}

func checkQOS(where string, qos []string, def string) []error {
	var errs []error
	for _, q := range qos {
		if !validName(strings.ToLower(q)) {
			errs = append(errs, fmt.Errorf("%s: qos %q: only a-z, 0-9, _ and - are allowed", where, q))
		}
	}
	if def != "" && len(qos) > 0 && !containsFold(qos, def) {
		errs = append(errs, fmt.Errorf("%s: default_qos %q is not in qos %v", where, def, qos))
	}
	return errs
}

var nonName = regexp.MustCompile(`[^a-z0-9_-]+`)

// Normalize turns a SCIM group name into a Slurm account name: lowercase
// (slurmdbd lowercases account names anyway), runs of anything but
// a-z, 0-9, _ and - become one "_", no leading or trailing _/-, at most
// MaxAccountLen characters. "" when nothing usable is left.
func Normalize(name string) string { return names.Slug(name, nonName, "_", "_-", MaxAccountLen) }

func validName(s string) bool {
	return s != "" && Normalize(s) == s
}

var markerRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func validMarker(s string) bool { return markerRE.MatchString(s) }

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
