package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Defaults.
const (
	DefaultMarker   = "scimbridge"
	DefaultParent   = "root"
	DefaultLockFile = "/run/scimbridge/slurm.lock"
	DefaultSacctmgr = "sacctmgr"
	DefaultSqueue   = "squeue"
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

	Sacctmgr string `toml:"sacctmgr"`
	Squeue   string `toml:"squeue"`
	LockFile string `toml:"lock_file"`
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
	for _, g := range sortedKeys(c.Groups) {
		gc := c.Groups[g]
		if gc.Account != "" && Normalize(gc.Account) != strings.ToLower(gc.Account) {
			errs = append(errs, fmt.Errorf("slurm: groups.%s: account %q: only a-z, 0-9, _ and - are allowed", g, gc.Account))
		}
		errs = append(errs, checkQOS("slurm: groups."+g, gc.QOS, gc.DefaultQOS)...)
		errs = append(errs, checkLimits("slurm: groups."+g+": limits", gc.Limits)...)
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

// limitFields are the association limits a group may set, in the
// spelling `sacctmgr add|modify` takes, and the `show assoc format=` field
// that reads each back.
var limitFields = []struct{ Name, Field string }{
	{"GrpTRES", "GrpTRES"},
	{"GrpJobs", "GrpJobs"},
	{"GrpSubmitJobs", "GrpSubmit"},
	{"GrpWall", "GrpWall"},
	{"MaxTRES", "MaxTRES"},
	{"MaxJobs", "MaxJobs"},
	{"MaxSubmitJobs", "MaxSubmit"},
	{"MaxWall", "MaxWall"},
	{"Fairshare", "Fairshare"},
}

func limitName(key string) (string, bool) {
	for _, l := range limitFields {
		if strings.EqualFold(l.Name, key) {
			return l.Name, true
		}
	}
	return "", false
}

var limitValue = regexp.MustCompile(`^[A-Za-z0-9/:=,._-]+$`)

func checkLimits(where string, limits []string) []error {
	var errs []error
	if _, err := parseLimits(limits); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	return errs
}

// parseLimits turns ["GrpTRES=gres/gpu=16"] into {"GrpTRES": "gres/gpu=16"}
// with canonical key spelling and values as sacctmgr prints them.
func parseLimits(limits []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range limits {
		k, v, ok := strings.Cut(l, "=")
		name, known := limitName(strings.TrimSpace(k))
		switch {
		case !ok || v == "":
			return nil, fmt.Errorf("limit %q: want KEY=VALUE", l)
		case !known:
			return nil, fmt.Errorf("limit %q: unknown key %q (known: %s)", l, k, knownLimits())
		case !limitValue.MatchString(v):
			return nil, fmt.Errorf("limit %q: value has characters sacctmgr would misread", l)
		}
		out[name] = normLimit(name, v)
	}
	return out, nil
}

// normLimit writes v the way `sacctmgr show assoc` prints it, so that a
// configured limit compares equal to the live one.
func normLimit(name, v string) string {
	switch name {
	case "GrpTRES", "MaxTRES":
		parts := strings.Split(strings.ToLower(v), ",")
		sort.Slice(parts, func(i, j int) bool { return tresOrder(parts[i]) < tresOrder(parts[j]) })
		return strings.Join(parts, ",")
	case "GrpWall", "MaxWall":
		var m int
		if _, err := fmt.Sscanf(v, "%d", &m); err == nil && fmt.Sprint(m) == v {
			d, h, mm := m/1440, (m%1440)/60, m%60
			if d > 0 {
				return fmt.Sprintf("%d-%02d:%02d:00", d, h, mm)
			}
			return fmt.Sprintf("%02d:%02d:00", h, mm)
		}
	}
	return v
}

// tresOrder sorts TRES the way slurmdbd prints them: by TRES id, where the
// built-in types come first.
func tresOrder(s string) string {
	k, _, _ := strings.Cut(s, "=")
	builtin := []string{"cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages"}
	for i, b := range builtin {
		if k == b {
			return fmt.Sprintf("0%d", i)
		}
	}
	return "1" + k
}

var nonName = regexp.MustCompile(`[^a-z0-9_-]+`)

// Normalize turns a SCIM group name into a Slurm account name: lowercase
// (slurmdbd lowercases account names anyway), runs of anything but
// a-z, 0-9, _ and - become one "_", no leading or trailing _/-, at most
// MaxAccountLen characters. "" when nothing usable is left.
func Normalize(name string) string {
	s := nonName.ReplaceAllString(strings.ToLower(name), "_")
	s = strings.Trim(s, "_-")
	if len(s) > MaxAccountLen {
		s = strings.TrimRight(s[:MaxAccountLen], "_-")
	}
	return s
}

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

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func knownLimits() string {
	var names []string
	for _, l := range limitFields {
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}
