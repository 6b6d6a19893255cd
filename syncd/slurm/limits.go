package slurm

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Limits are compared in one canonical form, whichever way the config or
// sacctmgr spells them (measured on Slurm 22.05):
//
//   - times (GrpWall, MaxWall) are whole minutes, seconds rounded up as
//     slurmdbd does ("120:30" is stored as 02:01:00), printed
//     "HH:MM:SS" or "D-HH:MM:SS"; -1, UNLIMITED and INFINITE mean unset;
//   - TRES lists are maps: order and case do not matter, mem is in MB
//     ("mem=1536M"; sacctmgr prints 1.50G), an entry =-1 means unset, and
//     `modify ... set GrpTRES=x=N` only touches x, so an entry the config
//     dropped is cleared explicitly (x=-1);
//   - counts are integers, -1 unset; Fairshare is an integer or "parent",
//     and unset (or -1) reads back as 1, its default, so 1 is "unset".
//
// A limit the config does not set is unset: on an account scimbridge
// owns, syncd clears it (-1).
type limitKind int

const (
	kindCount limitKind = iota
	kindTime
	kindTRES
	kindFairshare
	// QOS attributes (measured on 22.05):
	kindCountZero   // Priority: unset reads back as 0
	kindSeconds     // GraceTime: set in seconds, printed HH:MM:SS, unset 0
	kindTimeSeconds // PreemptExemptTime: a time kept to the second
	kindFloat       // UsageThreshold: %.6f, unset ""
	kindFloatOne    // UsageFactor: %.6f, unset 1
	kindQOSList     // Preempt: QOS names; cleared by "Preempt="
	kindPreemptMode // PreemptMode: off/unset read back as "cluster"
	kindFlags       // Flags: a set of words; cleared by -1
)

// fieldSpec is one attribute: its `sacctmgr add|modify` spelling, the
// `show ... format=` field that reads it back, and its kind.
type fieldSpec struct {
	Name, Field string
	Kind        limitKind
}

// limitFields are the association limits a group may set.
var limitFields = []fieldSpec{
	{"Fairshare", "Fairshare", kindFairshare},
	{"GrpTRES", "GrpTRES", kindTRES},
	{"GrpTRESMins", "GrpTRESMins", kindTRES},
	{"GrpTRESRunMins", "GrpTRESRunMins", kindTRES},
	{"GrpJobs", "GrpJobs", kindCount},
	{"GrpJobsAccrue", "GrpJobsAccrue", kindCount},
	{"GrpSubmitJobs", "GrpSubmit", kindCount},
	{"GrpWall", "GrpWall", kindTime},
	{"MaxTRES", "MaxTRES", kindTRES},
	{"MaxTRESMins", "MaxTRESMins", kindTRES},
	{"MaxTRESPerNode", "MaxTRESPerNode", kindTRES},
	{"MaxJobs", "MaxJobs", kindCount},
	{"MaxJobsAccrue", "MaxJobsAccrue", kindCount},
	{"MaxSubmitJobs", "MaxSubmit", kindCount},
	{"MaxWall", "MaxWall", kindTime},
	{"Priority", "Priority", kindCount},
}

// limitAliases are other spellings sacctmgr accepts for the same limit.
var limitAliases = map[string]string{
	"maxsubmit":             "MaxSubmitJobs",
	"grpsubmit":             "GrpSubmitJobs",
	"maxwallduration":       "MaxWall",
	"maxwalldurationperjob": "MaxWall",
	"maxtresperjob":         "MaxTRES",
	"maxtresminsperjob":     "MaxTRESMins",
	"fairshare":             "Fairshare",
	"shares":                "Fairshare",
}

// qosFields are the QOS attributes [slurm.qos.NAME] settings may set.
var qosFields = []fieldSpec{
	{"Priority", "Priority", kindCountZero},
	{"GraceTime", "GraceTime", kindSeconds},
	{"Preempt", "Preempt", kindQOSList},
	{"PreemptMode", "PreemptMode", kindPreemptMode},
	{"PreemptExemptTime", "PreemptExemptTime", kindTimeSeconds},
	{"Flags", "Flags", kindFlags},
	{"UsageFactor", "UsageFactor", kindFloatOne},
	{"UsageThreshold", "UsageThres", kindFloat},
	{"GrpTRES", "GrpTRES", kindTRES},
	{"GrpTRESMins", "GrpTRESMins", kindTRES},
	{"GrpTRESRunMins", "GrpTRESRunMins", kindTRES},
	{"GrpJobs", "GrpJobs", kindCount},
	{"GrpJobsAccrue", "GrpJobsAccrue", kindCount},
	{"GrpSubmitJobs", "GrpSubmit", kindCount},
	{"GrpWall", "GrpWall", kindTime},
	{"MaxTRESPerJob", "MaxTRES", kindTRES},
	{"MaxTRESPerNode", "MaxTRESPerNode", kindTRES},
	{"MaxTRESMins", "MaxTRESMins", kindTRES},
	{"MaxWall", "MaxWall", kindTime},
	{"MaxTRESPerUser", "MaxTRESPU", kindTRES},
	{"MaxJobsPerUser", "MaxJobsPU", kindCount},
	{"MaxSubmitJobsPerUser", "MaxSubmitPU", kindCount},
	{"MaxTRESPerAccount", "MaxTRESPA", kindTRES},
	{"MaxJobsPerAccount", "MaxJobsPA", kindCount},
	{"MaxSubmitJobsPerAccount", "MaxSubmitPA", kindCount},
	{"MinTRESPerJob", "MinTRES", kindTRES},
}

// qosAliases are the short spellings sacctmgr(1) also takes.
var qosAliases = map[string]string{
	"maxtrespu": "MaxTRESPerUser", "maxjobspu": "MaxJobsPerUser", "maxsubmitpu": "MaxSubmitJobsPerUser",
	"maxsubmitjobspu": "MaxSubmitJobsPerUser", "maxtrespa": "MaxTRESPerAccount", "maxjobspa": "MaxJobsPerAccount",
	"maxsubmitpa": "MaxSubmitJobsPerAccount", "maxsubmitjobspa": "MaxSubmitJobsPerAccount", "maxtres": "MaxTRESPerJob",
	"mintres": "MinTRESPerJob", "maxwalldurationperjob": "MaxWall", "usagethres": "UsageThreshold",
	"grpsubmit": "GrpSubmitJobs",
}

func specKind(table []fieldSpec, name string) limitKind {
	for _, l := range table {
		if l.Name == name {
			return l.Kind
		}
	}
	return kindCount
}

func limitKindOf(name string) limitKind { return specKind(limitFields, name) }

// fieldName finds key (any case, or an alias) in table.
func fieldName(table []fieldSpec, aliases map[string]string, key string) (string, bool) {
	for _, l := range table {
		if strings.EqualFold(l.Name, key) {
			return l.Name, true
		}
	}
	n, ok := aliases[strings.ToLower(key)]
	return n, ok
}

// fieldNames lists table's names for an error message.
func fieldNames(table []fieldSpec) string {
	var names []string
	for _, l := range table {
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}

var limitValue = regexp.MustCompile(`^[A-Za-z0-9/:=,._-]+$`)

func checkLimits(where string, limits []string) []error {
	if _, err := parseLimits(limits); err != nil {
		return []error{fmt.Errorf("%s: %w", where, err)}
	}
	return nil
}

// parseLimits turns ["GrpTRES=gres/gpu=16"] into {"GrpTRES":
// "gres/gpu=16"}: canonical names and values; limits the config sets to
// -1 (unset) are absent, as are those it does not name.
func parseLimits(limits []string) (map[string]string, error) {
	return parseFields(limitFields, limitAliases, limits)
}

// parseQOSSettings is parseLimits for [slurm.qos_settings].
func parseQOSSettings(settings []string) (map[string]string, error) {
	return parseFields(qosFields, qosAliases, settings)
}

func parseFields(table []fieldSpec, aliases map[string]string, limits []string) (map[string]string, error) {
	out := map[string]string{}
	seen := map[string]string{}
	for _, l := range limits {
		k, v, ok := strings.Cut(l, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		name, isKnown := fieldName(table, aliases, k)
		if ok && v == "" && isKnown && specKind(table, name) == kindQOSList {
			v = "-1" // "Preempt=": none
		}
		switch {
		case !ok || v == "":
			return nil, fmt.Errorf("limit %q: want KEY=VALUE", l)
		case !isKnown:
			return nil, fmt.Errorf("limit %q: unknown key %q (known: %s)", l, k, fieldNames(table))
		case !limitValue.MatchString(v):
			return nil, fmt.Errorf("limit %q: value has characters sacctmgr would misread", l)
		case seen[name] != "":
			return nil, fmt.Errorf("limit %q: %s is already set by %q", l, name, seen[name])
		}
		seen[name] = l
		c, err := canonValue(specKind(table, name), name, v, false)
		if err != nil {
			return nil, fmt.Errorf("limit %q: %w", l, err)
		}
		if c != "" {
			out[name] = c
		}
	}
	return out, nil
}

// canonLimit returns v in canonical form ("" = unset). have: v is what
// sacctmgr printed (mem may carry decimals, "1.50G").
func canonLimit(name, v string, have bool) (string, error) {
	return canonValue(limitKindOf(name), name, v, have)
}

func canonValue(kind limitKind, name, v string, have bool) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	switch kind {
	case kindCountZero:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return "", fmt.Errorf("%s %q: want a whole number (-1: unset)", name, v)
		}
		if n <= 0 {
			return "", nil
		}
		return strconv.FormatInt(n, 10), nil
	case kindSeconds, kindTimeSeconds:
		var secs int64
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && kind == kindSeconds {
			secs = n
		} else if v == "-1" {
			secs = 0
		} else {
			m, err := parseSeconds(v, kind == kindTimeSeconds)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			secs = m
		}
		if secs <= 0 {
			return "", nil
		}
		return formatSeconds(secs), nil
	case kindFloat, kindFloatOne:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || (f < 0 && f != -1) {
			return "", fmt.Errorf("%s %q: want a number (-1: unset)", name, v)
		}
		c := fmt.Sprintf("%.6f", f)
		if f == -1 || (kind == kindFloatOne && c == "1.000000") {
			return "", nil
		}
		return c, nil
	case kindQOSList:
		if v == "-1" || v == "''" {
			return "", nil
		}
		l := splitList(v)
		for _, q := range l {
			if !validName(q) {
				return "", fmt.Errorf("%s %q: QOS %q: only a-z, 0-9, _ and - are allowed", name, v, q)
			}
		}
		return strings.Join(l, ","), nil
	case kindPreemptMode:
		l := splitList(v)
		for _, m := range l {
			switch m {
			case "off", "cluster", "cancel", "requeue", "suspend", "gang", "within":
			default:
				return "", fmt.Errorf("%s %q: %q is not one of off, cancel, requeue, suspend, gang, within", name, v, m)
			}
		}
		if j := strings.Join(l, ","); j != "off" && j != "cluster" {
			return j, nil
		}
		return "", nil
	case kindFlags:
		if v == "-1" {
			return "", nil
		}
		var l []string
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if !flagRE.MatchString(f) {
					return "", fmt.Errorf("%s %q: flag %q", name, v, f)
				}
				l = append(l, f)
			}
		}
		sort.Slice(l, func(i, j int) bool { return strings.ToLower(l[i]) < strings.ToLower(l[j]) })
		return strings.Join(l, ","), nil
	case kindTime:
		switch strings.ToUpper(v) {
		case "-1", "UNLIMITED", "INFINITE":
			return "", nil
		}
		m, err := parseMinutes(v)
		if err != nil {
			return "", err
		}
		return formatMinutes(m), nil
	case kindTRES:
		t, err := parseTRES(v, have)
		if err != nil {
			return "", err
		}
		return formatTRES(t), nil
	case kindFairshare:
		if strings.EqualFold(v, "parent") {
			return "parent", nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return "", fmt.Errorf("%s %q: want a number or parent", name, v)
		}
		if n == -1 || n == 1 { // 1 is the default; -1 resets to it
			return "", nil
		}
		return strconv.FormatInt(n, 10), nil
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return "", fmt.Errorf("%s %q: want a whole number (-1: unset)", name, v)
		}
		if n == -1 {
			return "", nil
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// parseMinutes reads Slurm's time forms (sacctmgr(1)): "minutes",
// "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds"; seconds round up to
// a whole minute as slurmdbd stores it.
func parseMinutes(v string) (int64, error) {
	bad := fmt.Errorf("time %q: want minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS", v)
	var days int64
	rest := v
	hasDays := false
	if d, r, ok := strings.Cut(v, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, rest, hasDays = n, r, true
	}
	parts := strings.Split(rest, ":")
	nums := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 || p == "" {
			return 0, bad
		}
		nums[i] = n
	}
	var secs int64
	switch {
	case hasDays && len(nums) == 1:
		secs = nums[0] * 3600
	case hasDays && len(nums) == 2:
		secs = nums[0]*3600 + nums[1]*60
	case hasDays && len(nums) == 3, !hasDays && len(nums) == 3:
		secs = nums[0]*3600 + nums[1]*60 + nums[2]
	case !hasDays && len(nums) == 1:
		secs = nums[0] * 60
	case !hasDays && len(nums) == 2:
		secs = nums[0]*60 + nums[1]
	default:
		return 0, bad
	}
	secs += days * 86400
	if secs > math.MaxInt32*60 {
		return 0, bad
	}
	return (secs + 59) / 60, nil
}

// formatMinutes prints m as sacctmgr does.
func formatMinutes(m int64) string {
	d, h, mm := m/1440, (m%1440)/60, m%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:00", d, h, mm)
	}
	return fmt.Sprintf("%02d:%02d:00", h, mm)
}

var flagRE = regexp.MustCompile(`^[A-Za-z]+$`)

// parseSeconds reads the same time forms as parseMinutes, to the second.
// minutes: a bare number is minutes (PreemptExemptTime), else seconds.
func parseSeconds(v string, minutes bool) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		if minutes {
			return n * 60, nil
		}
		return n, nil
	}
	bad := fmt.Errorf("time %q: want seconds, HH:MM:SS or D-HH:MM:SS", v)
	var days int64
	rest := v
	if d, r, ok := strings.Cut(v, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, rest = n, r
	}
	parts := strings.Split(rest, ":")
	var secs int64
	for _, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		secs = secs*60 + n
	}
	switch len(parts) {
	case 2: // MM:SS
	case 3:
	case 1:
		secs *= 3600 // D-HH
	default:
		return 0, bad
	}
	return days*86400 + secs, nil
}

func formatSeconds(s int64) string {
	d, h, m, sec := s/86400, (s%86400)/3600, (s%3600)/60, s%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, sec)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
}

var memUnits = map[byte]float64{'M': 1, 'G': 1024, 'T': 1024 * 1024, 'P': 1024 * 1024 * 1024}

// parseTRES reads "cpu=4,gres/gpu=2,mem=1G" into a map of counts (mem in
// MB). Entries set to -1 (unset) are dropped. From the config only whole
// numbers are taken, with an M/G/T/P unit for mem: sacctmgr reads
// "mem=1.5G" as 1M and "cpu=1K" as 1024, which no one means.
func parseTRES(v string, have bool) (map[string]int64, error) {
	out := map[string]int64{}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		k, val, ok := strings.Cut(e, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" || val == "" {
			return nil, fmt.Errorf("TRES %q: want TYPE=COUNT[,TYPE=COUNT...]", e)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("TRES %q: %s given twice", v, k)
		}
		if val == "-1" {
			continue
		}
		mult := 1.0
		if k == "mem" {
			if u, ok := memUnits[strings.ToUpper(val[len(val)-1:])[0]]; ok {
				mult, val = u, val[:len(val)-1]
			}
		}
		var n int64
		if have {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 {
				return nil, fmt.Errorf("TRES %q: count %q", e, val)
			}
			n = int64(math.Round(f * mult))
		} else {
			i, err := strconv.ParseInt(val, 10, 64)
			if err != nil || i < 0 {
				if k == "mem" {
					return nil, fmt.Errorf("TRES %q: want a whole number of MB, or with a unit M, G, T or P (mem=1536M, not mem=1.5G)", e)
				}
				return nil, fmt.Errorf("TRES %q: want a whole number (-1: unset)", e)
			}
			n = i * int64(mult)
		}
		out[k] = n
	}
	return out, nil
}

func formatTRES(t map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if k == "mem" {
			parts = append(parts, fmt.Sprintf("mem=%dM", t[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d", k, t[k]))
		}
	}
	return strings.Join(parts, ",")
}

// limitDiff compares have and want (canonical, "" unset) of one limit.
// It returns the `set` argument that makes have into want, or "" when
// they are equal. TRES lists are merged per TRES by slurmdbd, so TRES
// the config does not name any more are cleared one by one (x=-1).
func limitDiff(name, have, want string) string {
	return fieldDiff(limitKindOf(name), name, have, want)
}

func fieldDiff(kind limitKind, name, have, want string) string {
	if have == want {
		return ""
	}
	switch kind {
	case kindQOSList:
		return name + "=" + want // "Preempt=" clears
	case kindPreemptMode:
		if want == "" {
			return name + "=cluster"
		}
		return name + "=" + want
	case kindSeconds:
		if want == "" {
			return name + "=-1"
		}
		s, _ := parseSeconds(want, false)
		return name + "=" + strconv.FormatInt(s, 10)
	case kindTRES:
		h, err1 := parseTRES(have, true)
		w, _ := parseTRES(want, true)
		if err1 != nil {
			h = map[string]int64{}
		}
		var parts []string
		keys := map[string]bool{}
		for k := range h {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			hv, hok := h[k]
			wv, wok := w[k]
			switch {
			case wok && (!hok || hv != wv):
				if k == "mem" {
					parts = append(parts, fmt.Sprintf("mem=%dM", wv))
				} else {
					parts = append(parts, fmt.Sprintf("%s=%d", k, wv))
				}
			case hok && !wok:
				parts = append(parts, k+"=-1")
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return name + "=" + strings.Join(parts, ",")
	}
	if want == "" {
		return name + "=-1"
	}
	return name + "=" + want
}

// limitsDiff compares whole limit sets: the `set` arguments, in
// limitFields order, and the names that differ.
func limitsDiff(have, want map[string]string) (args, names []string) {
	return fieldsDiff(limitFields, have, want)
}

func fieldsDiff(table []fieldSpec, have, want map[string]string) (args, names []string) {
	for _, l := range table {
		if a := fieldDiff(l.Kind, l.Name, have[l.Name], want[l.Name]); a != "" {
			args = append(args, a)
			names = append(names, l.Name)
		}
	}
	return args, names
}

// showLimit prints a canonical value for a human ("unset" for "").
func showLimit(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}

// canonLimits canonicalises what sacctmgr printed for an association's
// limits. A value that does not parse is kept as printed: it then differs
// from any config and is reset.
func canonLimits(raw map[string]string) map[string]string {
	return canonFields(limitFields, raw)
}

func canonFields(table []fieldSpec, raw map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range raw {
		c, err := canonValue(specKind(table, k), k, v, true)
		if err != nil {
			c = v
		}
		if c != "" {
			out[k] = c
		}
	}
	return out
}
