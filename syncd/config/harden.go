package config

import (
	"path"
	"strings"
)

// Hardening options: what the identity source may never hand out,
// whatever it sends (issue 9). Decisions:
//
//   - min_id (default 1000) is a floor under uid_min, gid_min and
//     shared_primary_gids: ids below it are the local system range of
//     every distribution (SYS_UID_MAX 999). A site may raise it; lowering
//     it below 1000 needs allow_min_id_below_1000 = true, spelled out.
//     The C reader has the same floor in reader.conf (min_id).
//   - shared_primary_gids (default empty) are the only gids a user's
//     primary group may be without a SCIM group publishing that gid; a
//     local group gid is never accepted as a primary group otherwise.
//   - reserved_names (default DefaultReservedNames) are names no SCIM
//     user or group may have, compared case-insensitively; "prefix*"
//     reserves every name starting with prefix. Setting the option
//     replaces the default list; "root" stays reserved whatever it says.
//   - home_roots (default ["/home"]) are the directories homes from the
//     source must be strictly inside. No root may be, contain or lie
//     inside a system path (SystemPaths, plus the directories of
//     cache_path and status_path).

// DefaultMinID is the floor when min_id is not set.
const DefaultMinID = 1000

// DefaultReservedNames are names that grant privilege by convention on
// common distributions (group membership is the privilege: docker, lxd,
// libvirt and kvm give root-equivalent access, adm and systemd-journal
// read logs, disk and shadow read raw disks and password hashes) or that
// daemons on an HPC node run as. A SCIM record with one of these names is
// refused even when the syncd host lacks the local account: the compute
// nodes or a later package install may have it.
var DefaultReservedNames = []string{
	"root", "toor", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
	"proxy", "www-data", "backup", "list", "irc", "gnats", "nobody", "nogroup", "operator",
	"adm", "admin", "administrator", "admins", "wheel", "sudo", "sudoers", "staff", "shadow",
	"disk", "kmem", "tty", "dialout", "cdrom", "floppy", "audio", "video", "plugdev", "netdev",
	"input", "render", "kvm", "libvirt", "libvirt-qemu", "libvirtd", "qemu", "lxd", "lxc",
	"docker", "podman", "containerd", "incus", "incus-admin", "utmp", "crontab", "messagebus",
	"polkitd", "sshd", "ssh", "ntp", "chrony", "_chrony", "postfix", "postdrop", "dnsmasq",
	"tss", "uuidd", "syslog", "systemd-*", "_*", "slurm", "slurmdbd", "slurmrestd", "munge",
	"scimbridge", "mysql", "mariadb", "postgres", "sssd", "nslcd", "nscd", "ldap", "openldap",
	"sasl", "ssl-cert", "rdma", "nvidia", "users", "lpadmin", "sambashare", "bluetooth",
	"fuse", "ceph", "rpc", "rpcuser", "nfsnobody", "apt", "dbus", "avahi", "colord",
	"geoclue", "pulse", "rtkit", "saned", "usbmux",
	// Cloud images' default accounts: cloud-init gives them sudo.
	"ubuntu", "debian", "centos", "rocky", "almalinux", "fedora", "ec2-user", "cloud-user",
	"opc", "azureuser", "vagrant", "ansible",
}

// SystemPaths are trees no home may be inside, equal to, or contain:
// a home there lets pam_mkhomedir create it owned by the user, who then
// drops a systemd unit, a cron file or a library into it.
var SystemPaths = []string{
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found",
	"/media", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv/scimbridge", "/sys",
	"/tmp", "/usr", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/opt", "/var/run",
	"/var/spool", "/var/tmp", "/var/lib/scimbridge",
}

// DefaultHomeRoots is where homes from the source may be when home_roots
// is not set.
var DefaultHomeRoots = []string{"/home"}

func (c *Config) applyHardeningDefaults() {
	if !c.md.IsDefined("min_id") {
		c.MinID = DefaultMinID
	}
	if c.ReservedNames == nil {
		c.ReservedNames = append([]string(nil), DefaultReservedNames...)
	}
	if c.HomeRoots == nil {
		c.HomeRoots = append([]string(nil), DefaultHomeRoots...)
	}
}

// ProtectedPaths is SystemPaths plus the directories syncd writes to.
func (c *Config) ProtectedPaths() []string {
	ps := append([]string(nil), SystemPaths...)
	for _, p := range []string{c.CachePath, c.StatusPath} {
		if strings.HasPrefix(p, "/") {
			if d := path.Dir(path.Clean(p)); d != "/" {
				ps = append(ps, d)
			}
		}
	}
	return ps
}

// SystemPathClash returns the protected path p is, is inside, or
// contains ("" when none): a home there is a way to root.
func SystemPathClash(p string, protected []string) string {
	p = path.Clean(p)
	if p == "/" {
		return "/"
	}
	for _, s := range protected {
		if Within(p, s) || Within(s, p) {
			return s
		}
	}
	return ""
}

// Within reports whether p is dir or inside it (both clean, absolute).
func Within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return len(p) >= len(dir) && p[:len(dir)] == dir && (len(p) == len(dir) || p[len(dir)] == '/')
}

// Reserved is a compiled reserved_names list.
type Reserved struct {
	exact    map[string]string
	prefixes []string
}

// CompileReserved lower-cases the list once: names are checked by the
// million.
func CompileReserved(list []string) *Reserved {
	r := &Reserved{exact: map[string]string{"root": "root"}}
	for _, e := range list {
		e = strings.ToLower(strings.TrimSpace(e))
		if p, ok := strings.CutSuffix(e, "*"); ok {
			r.prefixes = append(r.prefixes, p)
		} else {
			r.exact[e] = e
		}
	}
	return r
}

// Match returns the entry reserving name (compared case-insensitively),
// or "".
func (r *Reserved) Match(name string) string {
	n := strings.ToLower(name)
	if e, ok := r.exact[n]; ok {
		return e
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(n, p) {
			return p + "*"
		}
	}
	return ""
}

// ReservedMatch returns the entry of list that reserves name (compared
// case-insensitively; "x*" matches every name starting with x; root is
// always reserved), or "".
func ReservedMatch(name string, list []string) string {
	return CompileReserved(list).Match(name)
}

func (c *Config) checkHardening(bad func(key, format string, a ...any)) {
	switch {
	case c.MinID < 1:
		bad("min_id", "%d: 0 is root; must be at least 1 (and 1000 unless allow_min_id_below_1000 = true)", c.MinID)
	case c.MinID < DefaultMinID && !c.AllowMinIDBelow1000:
		bad("min_id", "%d is inside the local system range (below 1000): set allow_min_id_below_1000 = true if that is really intended", c.MinID)
	case c.MinID > MaxID:
		bad("min_id", "%d: must be at most %d", c.MinID, int64(MaxID))
	}
	if c.MinID >= 1 {
		if c.UIDMin < c.MinID {
			bad("uid_min", "%d is below min_id %d: raise uid_min (ids below min_id are the local system range)", c.UIDMin, c.MinID)
		}
		if c.GIDMin < c.MinID {
			bad("gid_min", "%d is below min_id %d: raise gid_min (ids below min_id are the local system range)", c.GIDMin, c.MinID)
		}
	}
	for _, g := range c.SharedPrimaryGIDs {
		switch {
		case g < c.MinID:
			bad("shared_primary_gids", "%d is below min_id %d: a local system group is never a SCIM user's primary group", g, c.MinID)
		case g > MaxID || g == 65534 || g == 65535:
			bad("shared_primary_gids", "%d is not a usable gid", g)
		}
	}
	for _, r := range c.ReservedNames {
		t := strings.TrimSuffix(strings.TrimSpace(r), "*")
		if t == "" || strings.ContainsAny(t, "*:/ \t\n") {
			bad("reserved_names", "%q: want a name, or a prefix followed by '*' (\"systemd-*\")", r)
		}
	}
	if len(c.HomeRoots) == 0 && c.HomeTemplate == "" {
		bad("home_roots", "empty: no home from the source could be accepted; list the directories homes live in (default [\"/home\"]) or set home_template")
	}
	prot := c.ProtectedPaths()
	for _, r := range c.HomeRoots {
		switch {
		case !strings.HasPrefix(r, "/") || path.Clean(r) != r || strings.ContainsAny(r, ":,\n\x00"):
			bad("home_roots", "%q is not a clean absolute path", r)
		case r == "/":
			bad("home_roots", "\"/\" would accept any path as a home, /etc and /root included")
		default:
			if s := SystemPathClash(r, prot); s != "" {
				bad("home_roots", "%q overlaps the system path %s: a home there can take over the machine", r, s)
			}
		}
	}
	if c.HomeTemplate != "" && CheckHomeTemplate(c.HomeTemplate) == nil {
		// The part before the first directive must be a directory that is
		// not a system path: "/%u" makes a user named "etc" own /etc.
		static := c.HomeTemplate
		if i := strings.IndexByte(static, '%'); i >= 0 {
			static = path.Dir(static[:i+1])
		}
		if static == "/" {
			bad("home_template", "%q puts homes directly under /: a user named etc or root would get /etc or /root", c.HomeTemplate)
		} else if s := SystemPathClash(static, prot); s != "" {
			bad("home_template", "%q puts homes in the system path %s", c.HomeTemplate, s)
		}
	}
}
