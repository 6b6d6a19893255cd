#!/usr/bin/env bash
# tests/pkg/run.sh: what an admin installing scimbridge would check.
#
#   install    make install DESTDIR=...: every artefact where the system
#              looks for it, with the right modes; PREFIX moves the
#              programs (and the unit's ExecStart) but never the modules.
#   uninstall  removes exactly what install placed, keeps config and cache.
#   example    the example config names exactly the keys syncd knows
#              (syncd/config and syncd/slurm), and `syncd check-config`
#              accepts it once a token exists.
#   deb        make deb: the package holds exactly what make install puts
#              in a DESTDIR (paths, types, modes), Depends, no conffiles.
#   root       the package in a throwaway root: an overlay over the host's
#              / with a tmpfs upper layer, in a private mount namespace
#              (the host's files and dpkg database are never changed).
#              dpkg -i (real dependency check, postinst prints the lines
#              and changes no /etc file), syncd --version, getent and id
#              through the installed libnss_scim, scim-keys, mylimits as a
#              SCIM user, pam-auth-update + pamtester on the installed
#              pam_scim, the unit under systemd-analyze, prerm refusing
#              while PAM or plugstack.conf still load a module, remove,
#              purge.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { bad "pkg tests need root (namespaces, chroot)"; summary; exit 1; }
for t in dpkg-deb sqlite3 jq systemd-analyze pamtester unshare; do
  command -v "$t" >/dev/null || { bad "$t not installed (make deps)"; summary; exit 1; }
done

W=$(mktemp -d /tmp/scimbridge-pkg.XXXXXX)
chmod 0755 "$W"
spid=
cleanup() { kill_tree "$spid"; left_running "$W"; [ -n "${KEEP_TMP:-}" ] || rm -rf "$W"; }
on_exit cleanup
MA=$MULTIARCH

# --- install ------------------------------------------------------------
I=$W/inst
make -s -C "$ROOT" install DESTDIR="$I" >"$W/install.log" 2>&1 ||
  { bad "make install DESTDIR"; sed 's/^/  /' "$W/install.log" | tail -20; summary; exit 1; }
ok "make install DESTDIR"

# mode_of PATH: octal mode and owner, as an admin would check with stat.
mode_of() { stat -c '%a %U:%G' "$1" 2>/dev/null || echo missing; }
for spec in \
  "lib/$MA/libnss_scim.so.2 644" \
  "lib/$MA/scimbridge/libscimbridge-sqlite.so 644" \
  "lib/$MA/security/pam_scim.so 644" \
  "usr/lib/$MA/slurm-wlm/spank_scim.so 644" \
  "usr/sbin/syncd 755" \
  "usr/sbin/scim-keys 755" \
  "usr/bin/mylimits 755" \
  "usr/bin/scim-lookup 755" \
  "lib/systemd/system/scimbridge-syncd.service 644" \
  "usr/share/doc/scimbridge/examples/syncd.toml.example 644" \
  "usr/share/pam-configs/scimbridge 644" \
  "usr/share/man/man8/syncd.8.gz 644" \
  "usr/share/man/man5/syncd.toml.5.gz 644" \
  "usr/share/man/man8/libnss_scim.8.gz 644" \
  "usr/share/man/man8/pam_scim.8.gz 644" \
  "usr/share/man/man8/spank_scim.8.gz 644" \
  "usr/share/man/man8/scim-keys.8.gz 644" \
  "usr/share/man/man1/mylimits.1.gz 644" \
  "usr/share/man/man1/scim-lookup.1.gz 644" \
  "var/lib/scimbridge 755" \
  "etc/scimbridge 755"; do
  set -- $spec
  expect_eq "install: /$1 mode $2, root-owned" "$2 root:root" "$(mode_of "$I/$1")"
done
# sshd refuses an AuthorizedKeysCommand in a directory others may write.
check "install: scim-keys and its directories are not group/world-writable" \
  test -z "$(find "$I/usr/sbin/scim-keys" "$I/usr/sbin" "$I/usr" -maxdepth 0 -perm /022)"
check "install: the installed syncd runs (--version)" \
  bash -c "'$I/usr/sbin/syncd' --version | grep -q '^syncd '"
expect_eq "install: bash completion of scim-lookup (query names, long options)" "passwd|--file" \
  "$(bash -c 'source "$1"; COMP_WORDS=(scim-lookup pa); COMP_CWORD=1; _scimbridge_lookup; a=${COMPREPLY[*]}
    COMP_WORDS=(scim-lookup passwd --f); COMP_CWORD=2; _scimbridge_lookup; echo "$a|${COMPREPLY[*]}"' \
    _ "$I/usr/share/bash-completion/completions/scim-lookup" 2>&1)"
check "install: scim-lookup --help to stdout, exit 0; --version" \
  bash -c "'$I/usr/bin/scim-lookup' --help 2>/dev/null | grep -q '^usage: scim-lookup' &&
    '$I/usr/bin/scim-lookup' --version | grep -q '^scim-lookup '"
check "install: no file in /etc (the example is documentation, config is the admin's)" \
  test -z "$(find "$I/etc" -type f)"
expect_eq "install: unit runs the installed syncd" "ExecStart=/usr/sbin/syncd run" \
  "$(grep '^ExecStart=' "$I/lib/systemd/system/scimbridge-syncd.service")"
check "install: every man page renders without warnings" bash -c '
  for m in "$1"/usr/share/man/man*/*.gz; do
    w=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) || exit 1
    [ -z "$w" ] || { echo "$m: $w"; exit 1; }
  done' _ "$I"

P=$W/prefix
make -s -C "$ROOT" install DESTDIR="$P" PREFIX=/usr/local >"$W/install-prefix.log" 2>&1
check "install PREFIX=/usr/local: programs under /usr/local" \
  test -x "$P/usr/local/sbin/syncd" -a -x "$P/usr/local/sbin/scim-keys" -a -x "$P/usr/local/bin/mylimits" \
  -a -f "$P/usr/local/share/man/man8/syncd.8.gz"
check "install PREFIX=/usr/local: modules still where glibc, PAM and Slurm load them" \
  test -f "$P/lib/$MA/libnss_scim.so.2" -a -f "$P/lib/$MA/security/pam_scim.so" \
  -a -f "$P/usr/lib/$MA/slurm-wlm/spank_scim.so"
expect_eq "install PREFIX=/usr/local: unit's ExecStart follows" "ExecStart=/usr/local/sbin/syncd run" \
  "$(grep '^ExecStart=' "$P/lib/systemd/system/scimbridge-syncd.service" 2>/dev/null)"

# --- uninstall ------------------------------------------------------------
U=$W/uninst
make -s -C "$ROOT" install DESTDIR="$U" >/dev/null 2>&1
printf 'base_url = "x"\n' > "$U/etc/scimbridge/syncd.toml"
echo cache > "$U/var/lib/scimbridge/cache.db"
make -s -C "$ROOT" uninstall DESTDIR="$U" >"$W/uninstall.log" 2>&1
expect_eq "uninstall: only the admin's config and the cache are left" \
  "$(printf '%s\n' etc/scimbridge/syncd.toml var/lib/scimbridge/cache.db)" \
  "$(cd "$U" && find . -type f -printf '%P\n' | LC_ALL=C sort)"
check "uninstall: of a tree without the files succeeds" \
  bash -c 'make -s -C "$1" uninstall DESTDIR="$2" >/dev/null 2>&1' _ "$ROOT" "$W/empty"

# --- the example config -----------------------------------------------------
EX=$I/usr/share/doc/scimbridge/examples/syncd.toml.example
# Keys syncd knows: the toml tags of syncd/config (every file) and
# syncd/slurm/config.go. Names the example uses only as table headers
# ([slurm], [receiver], [[receiver.clients]], ...) are tables, checked below.
tables=$(sed -nE 's/^#? ?\[\[?([a-z_.]+)\]\]?.*/\1/p' "$EX" | LC_ALL=C sort -u)
keysin=$(sed -nE 's/^#? ?([a-z_]+) = .*/\1/p' "$EX" | LC_ALL=C sort -u)
tablenames=$(tr '.' '\n' <<<"$tables" | LC_ALL=C sort -u | LC_ALL=C comm -23 - <(echo "$keysin"))
known=$(grep -ho 'toml:"[a-z_]*"' $(find "$ROOT"/syncd/config -name '*.go' ! -name '*_test.go') \
    "$ROOT"/syncd/slurm/config.go "$ROOT"/syncd/homes/config.go "$ROOT"/syncd/homes/command.go "$ROOT"/syncd/homes/gluster.go "$ROOT"/syncd/kube/config.go |
  sed 's/toml:"\(.*\)"/\1/' | LC_ALL=C sort -u | LC_ALL=C comm -23 - <(echo "$tablenames"))
expect_eq "example: names exactly the keys syncd/config, syncd/slurm, syncd/homes and syncd/kube define" "$known" "$keysin"
expect_eq "example: has the [attributes], [group_names], [user_names], [publish], [mirror], [receiver], [slurm], [homes] and [kubernetes] tables" \
  "attributes group_names group_names.rename homes homes.projects homes.quota homes.quota.command homes.quota.gluster homes.quota.groups.physics kubernetes kubernetes.groups.vision kubernetes.quota mirror publish receiver receiver.clients slurm slurm.groups.physics user_names user_names.rename " "$(tr '\n' ' ' <<<"$tables")"
install -d -m 0700 "$W/cfg"
printf 'token\n' > "$W/cfg/token"; chmod 0600 "$W/cfg/token"
sed "s|^token_file = .*|token_file = \"$W/cfg/token\"|" "$EX" > "$W/cfg/syncd.toml"
chmod 0600 "$W/cfg/syncd.toml"
# check_config DESCRIPTION FILE: PASS if syncd check-config says ok.
check_config() {
  local out
  out=$("$I/usr/sbin/syncd" --config "$2" check-config 2>&1)
  if grep -q ": ok$" <<<"$out"; then ok "$1"; else bad "$1"; sed 's/^/  /' <<<"$out"; fi
}
check_config "example: syncd check-config accepts it as shipped (with a token file)" "$W/cfg/syncd.toml"
# Every commented default, uncommented, is a key syncd accepts. The
# credentials alternative and the CA file are left commented: they
# conflict with token_file or name files that do not exist here. So do
# the other roles' tables ([publish]/[mirror] up to the next blank line,
# [receiver] to the end): their keys are checked by name above and by
# the cluster and receiver suites.
sed -E -e '/^# \[publish\]/,/^$/b' -e '/^# \[receiver\]/,$b' \
  -e '/^# (basic_user|password_file|ca_file) = /b' -e 's/^# ([a-z_]+ = )/\1/' -e 's/^# (\[slurm)/\1/' -e 's/^# (\[group_names\])/\1/' -e 's/^# (\[user_names\])/\1/' \
  -e "s|^token_file = .*|token_file = \"$W/cfg/token\"|" "$EX" > "$W/cfg/all.toml"
chmod 0600 "$W/cfg/all.toml"
check_config "example: with every default uncommented, check-config finds no problem" "$W/cfg/all.toml"

# --- deb ----------------------------------------------------------------------
rm -f "$BUILD"/scimbridge_*.deb
make -s -C "$ROOT" deb >"$W/deb.log" 2>&1 || { bad "make deb"; sed 's/^/  /' "$W/deb.log" | tail -20; summary; exit 1; }
DEB=$(ls "$BUILD"/scimbridge_*_amd64.deb 2>/dev/null | head -1)
check "deb: build/scimbridge_<version>_amd64.deb exists" test -f "$DEB"
ver=$(dpkg-deb -f "$DEB" Version)
expect_eq "deb: file name carries the package version" "scimbridge_${ver}_amd64.deb" "$(basename "$DEB")"
# Paths, types and modes: dpkg-deb -c against the DESTDIR install.
debls=$(dpkg-deb -c "$DEB" | awk '{ p = $6; sub(/^\.\//, "/", p); sub(/\/$/, "", p); if (p == "") p = "/"; print substr($1, 1, 1), p }' | LC_ALL=C sort)
instls=$(cd "$I" && find . -printf '%y %p\n' | sed -E 's/^f /- /; s| \./?| /|' | LC_ALL=C sort)
expect_eq "deb: the package holds exactly what make install DESTDIR puts there" "$instls" "$debls"
debmodes=$(dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { p = $6; sub(/^\./, "", p); print $1, $2, p }' | LC_ALL=C sort -k3)
instmodes=$(cd "$I" && find . -type f -printf '%M %u/%g %P\n' | sed -E 's| | |; s|^([^ ]+ [^ ]+ )|\1/|' | LC_ALL=C sort -k3)
expect_eq "deb: same modes and root ownership as make install" "$instmodes" "$debmodes"
deps=$(dpkg-deb -f "$DEB" Depends)
for d in libc6 libsqlite3-0 libpam0g; do
  check "deb: Depends on $d ($deps)" grep -q "\b$d\b" <<<"$deps"
done
check "deb: no conffiles (nothing in /etc but the empty config directory)" \
  bash -c "! dpkg-deb --ctrl-tarfile '$DEB' | tar -t | grep -q conffiles"
# Versions sort in Debian's order (packaging/version.sh): no git < builds
# before the first tag < the first tag v0.1.0 < builds after it < the next tag.
VR=$W/vrepo
mkdir -p "$VR/packaging" && cp "$ROOT/packaging/version.sh" "$VR/packaging/"
ver() { "$VR/packaging/version.sh"; }
vgit() { git -C "$VR" -c user.name=t -c user.email=t@t "$@" > /dev/null 2>&1; }
v_nogit=$(ver)
vgit init -q && vgit add -A && GIT_COMMITTER_DATE=2026-01-01T00:00:00Z vgit commit -qm one
v_pre1=$(ver)
echo x >> "$VR/f" && vgit add -A && GIT_COMMITTER_DATE=2026-01-02T00:00:00Z vgit commit -qm two
v_pre2=$(ver)
vgit tag v0.1.0
v_tag=$(ver)
echo y >> "$VR/f" && vgit add -A && GIT_COMMITTER_DATE=2026-01-03T00:00:00Z vgit commit -qm three
v_post=$(ver)
vorder=ok
for pair in "$v_nogit $v_pre1" "$v_pre1 $v_pre2" "$v_pre2 $v_tag" "$v_tag $v_post" "$v_post 0.1.1"; do
  # shellcheck disable=SC2086
  set -- $pair
  dpkg --compare-versions "$1" lt "$2" || vorder="$1 is not below $2"
done
expect_eq "version.sh: $v_nogit < $v_pre1 < $v_pre2 < $v_tag < $v_post < 0.1.1 (dpkg order)" ok "$vorder"
expect_eq "version.sh: a tagged tree is the tag" 0.1.0 "$v_tag"

# The SPANK plugin works only in the Slurm release whose headers built it.
snum=$(printf '#include <slurm/slurm_version.h>\nSLURM_VERSION_NUMBER\n' | cc -E -P -x c - | grep -Eo '0x[0-9a-fA-F]+' | tail -1)
srel=$(printf '%02d.%02d' $(( (snum >> 16) & 0xff )) $(( (snum >> 8) & 0xff )))
snext=$(printf '%02d.%02d' $(( (snum >> 16) & 0xff )) $(( ((snum >> 8) & 0xff) + 1 )))
expect_eq "deb: Breaks every Slurm release but the one built against ($srel)" \
  "slurm-wlm-basic-plugins (<< $srel~), slurm-wlm-basic-plugins (>= $snext~)" "$(dpkg-deb -f "$DEB" Breaks)"
check "deb: the installed Slurm ($(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins 2>/dev/null)) satisfies it" \
  bash -c 'v=$(dpkg-query -W -f="\${Version}" slurm-wlm-basic-plugins) || exit 0
    dpkg --compare-versions "$v" ge "$1~" && dpkg --compare-versions "$v" lt "$2~"' _ "$srel" "$snext"

# lintian (tests/install-deps.sh; about 13 s): no errors, no warnings.
# The infos left are listed and justified in packaging/deb/README.
if command -v lintian >/dev/null; then
  lint=$(lintian --tag-display-limit 0 "$DEB" 2>/dev/null)
  expect_eq "deb: lintian reports no errors or warnings" "" "$(grep -E '^(E|W):' <<<"$lint")"
else
  echo "SKIP: deb: lintian not installed"
fi

# --- the package in a throwaway root -----------------------------------------
# A small snapshot: ada active (physics, default; keys), bob disabled.
SNAP=$W/cache.db
KEY="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDsK7ZHd6W8lXw6q6cFqBpDnVQb9x7bV2xUZ0eJ3lSxu ada@lab"
{
  cat "$ROOT/syncd/snapshot/schema.sql"
  cat <<SQL
INSERT INTO groups VALUES (30001, 'hpc-physics', 'g1', 'ada,bob');
INSERT INTO users VALUES (30001, 'ada', 30001, 'Ada L', '/home/ada', '/bin/bash', 1, 'u1');
INSERT INTO users VALUES (30002, 'bob', 30001, 'Bob B', '/home/bob', '/bin/bash', 0, 'u2');
INSERT INTO memberships VALUES (30001, 'ada');
INSERT INTO memberships VALUES (30001, 'bob');
INSERT INTO ssh_keys VALUES ('ada', 1, '$KEY');
INSERT INTO slurm_associations VALUES ('ada', 'physics', 'normal,gpu', 'normal', 1, 0);
INSERT INTO slurm_associations VALUES ('ada', 'scim-default', 'normal', 'normal', 0, 0);
INSERT INTO meta VALUES ('schema_version', '2'), ('serial', '1'), ('created_at', '2025-01-01T00:00:00Z'),
  ('source', 'tests/pkg'), ('users', '2'), ('groups', '1'), ('memberships', '2'), ('ssh_keys', '1'),
  ('associations', '2'), ('slurm_synced_at', '2025-01-01T00:00:01Z');
SQL
  cat "$ROOT/syncd/snapshot/derive.sql"
} | sqlite3 -bail "$SNAP" || bad "build the test snapshot"
chmod 0644 "$SNAP"

cat > "$W/inroot.sh" <<'INROOT'
# Runs in a private mount namespace. $R is an overlay of the host's / with
# a tmpfs upper layer: everything written under $R vanishes with it.
set -uo pipefail
. "$ROOT/tests/lib.sh"
mount -t tmpfs scimbridge-pkg "$W/ovl" || { bad "tmpfs for the overlay"; exit 1; }
mkdir -p "$W/ovl/up" "$W/ovl/work" "$W/ovl/root"
R=$W/ovl/root
mount -t overlay scimbridge-root -o "lowerdir=/,upperdir=$W/ovl/up,workdir=$W/ovl/work" "$R" ||
  { bad "overlay root"; exit 1; }
mount --bind /dev "$R/dev"
mount -t proc proc "$R/proc"
inr() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
sums() { (cd "$R/etc" && find nsswitch.conf pam.d ssh slurm -type f -exec sha256sum {} + 2>/dev/null | sort); }

if inr dpkg -s scimbridge >/dev/null 2>&1 || [ -e "$R/lib/$MULTIARCH/libnss_scim.so.2" ]; then
  bad "root: scimbridge must not be installed on the host for this test"; exit 1
fi
cp "$DEB" "$R/tmp/scimbridge.deb"
before=$(sums)
out=$(inr dpkg -i /tmp/scimbridge.deb 2>&1); rc=$?
expect_eq "root: dpkg -i succeeds (dependencies met, no --force)" 0 "$rc"
[ "$rc" = 0 ] || { printf '%s\n' "$out" | sed 's/^/  /'; exit 1; }
for line in "passwd: files scim" "group:  files scim" "pam-auth-update --enable scimbridge" \
  "account required pam_scim.so" "AuthorizedKeysCommand /usr/sbin/scim-keys %u" \
  "required /usr/lib/$MULTIARCH/slurm-wlm/spank_scim.so" "HEAD checklist" "NODE checklist" \
  "public_key_file = \"/etc/scimbridge/publish.key.pub\"" "syncd keygen --out /etc/scimbridge/publish.key" \
  "the head needs it too"; do
  check "root: postinst tells the admin: $line" grep -qF -- "$line" <<<"$out"
done
expect_eq "root: postinst changed no file in /etc (nsswitch, pam.d, ssh, slurm)" "$before" "$(sums)"
expect_eq "root: dpkg -L lists what make install puts in a DESTDIR" "$INSTALLED" \
  "$(inr dpkg -L scimbridge | grep -vx '/\.' | LC_ALL=C sort)"
check "root: ldconfig knows libnss_scim.so.2" bash -c "chroot '$R' /sbin/ldconfig -p | grep -q 'libnss_scim.so.2 '"
expect_eq "root: syncd --version" "syncd $VERSION" "$(inr syncd --version 2>&1)"
out=$(inr dpkg -i /tmp/scimbridge.deb 2>&1); rc=$?
check "root: reinstalling (upgrade path) succeeds and prints no instructions again" \
  test "$rc" = 0 -a -z "$(grep -F 'passwd: files scim' <<<"$out")"

# Lookups through the installed module, with the default cache path.
install -m 0644 "$SNAP" "$R/var/lib/scimbridge/cache.db"
sed -i -E 's/^(passwd|group):.*/\1: files scim/' "$R/etc/nsswitch.conf"
expect_eq "root: getent passwd ada through the installed libnss_scim" \
  "ada:*:30001:30001:Ada L:/home/ada:/bin/bash" "$(inr getent passwd ada)"
expect_eq "root: id ada (groups from the snapshot)" "uid=30001(ada) gid=30001(hpc-physics) groups=30001(hpc-physics)" \
  "$(inr id ada)"
expect_eq "root: scim-keys ada prints the key" "${KEY% *}" "$(inr scim-keys ada | cut -d' ' -f1,2)"
expect_eq "root: scim-keys bob (disabled) prints nothing" "" "$(inr scim-keys bob)"
expect_eq "root: scim-lookup passwd ada (the shipped query tool)" \
  "ada:*:30001:30001:Ada L:/home/ada:/bin/bash" "$(inr scim-lookup passwd ada)"
expect_eq "root: scim-lookup active bob says disabled" "0" "$(inr scim-lookup active bob)"

# mylimits as ada herself (uid from the snapshot through NSS). No Slurm is
# configured in this root: the snapshot's facts and a note.
js=$(chroot --userspec=30001:30001 "$R" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/mylimits --json 2>&1)
expect_eq "root: mylimits --json as ada: user, default account, QOS" "ada physics true normal,gpu" \
  "$(jq -r '[.user, .accounts[0].name, (.accounts[0].default|tostring), (.accounts[0].qos|join(","))] | join(" ")' <<<"$js" 2>&1)"
check "root: mylimits says what it could not read (Slurm not configured here)" \
  test "$(jq '[.notes[] | select(test("Slurm|sacctmgr|scontrol"))] | length' <<<"$js" 2>/dev/null)" -ge 1
tbl=$(chroot --userspec=30001:30001 "$R" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/mylimits 2>&1)
check "root: mylimits table names the accounts and has a Notes section" \
  bash -c 'grep -q "^  physics  *yes" <<<"$1" && grep -q "^Notes" <<<"$1"' _ "$tbl"
out=$(chroot --userspec=30001:30001 "$R" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/mylimits --user bob 2>&1); rc=$?
check "root: mylimits --user is refused for a non-root caller" test "$rc" = 2

# PAM through the package's pam-auth-update profile.
inr pam-auth-update --enable scimbridge >/dev/null 2>&1
check "root: pam-auth-update --enable scimbridge puts pam_scim in common-account" \
  grep -q 'pam_scim\.so' "$R/etc/pam.d/common-account"
# Debian's stack as shipped, through sshd's PAM service: an active SCIM
# user must get through (pam_unix's account check included).
check "root: stock Debian common-account lets an active SCIM user through (sshd service)" \
  inr pamtester sshd ada acct_mgmt
# The profile's own effect. SCIM entries say "*", so pam_unix accepts them
# without a shadow entry; the local shadow entries added here must not
# change that (a site that still has old entries for these names).
cp -a "$R/etc/shadow" "$R/etc/shadow.scimtest"
printf 'ada:*:19000:0:99999:7:::\nbob:*:19000:0:99999:7:::\n' >> "$R/etc/shadow"
check "root: pamtester: ada (active) passes the account stack with pam_scim" inr pamtester login ada acct_mgmt
out=$(inr pamtester login bob acct_mgmt 2>&1); rc=$?
check "root: pamtester: bob (disabled at the source) is refused by pam_scim" \
  test "$rc" != 0 -a -n "$(grep -i 'expired' <<<"$out")"
mv -f "$R/etc/shadow.scimtest" "$R/etc/shadow"

# The unit as installed.
out=$(inr systemd-analyze verify /lib/systemd/system/scimbridge-syncd.service 2>&1); rc=$?
check "root: systemd-analyze verify accepts the unit (binaries and man pages found)" test "$rc" = 0 -a -z "$out"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/  /'
exposure=$(inr systemd-analyze security --offline=true /lib/systemd/system/scimbridge-syncd.service 2>/dev/null |
  sed -nE 's/.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p')
check "root: systemd-analyze security exposure $exposure is at most 2.0" \
  awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'
check "root: man syncd finds the installed page" bash -c "chroot '$R' man -w syncd | grep -q /usr/share/man/man8/syncd.8.gz"

# syncd inside the unit's filesystem sandbox. There is no systemd here,
# so the sandbox is built by hand the way the unit asks for it: / read-only
# (ProtectSystem=strict), /var/lib/scimbridge writable (ReadWritePaths),
# /run/scimbridge a fresh tmpfs (RuntimeDirectory), private /tmp
# (PrivateTmp), empty /home and /root (ProtectHome). A sync that succeeds
# in it writes nothing anywhere else.
head -c 24 /dev/urandom | base64 > "$R/etc/scimbridge/token"
chmod 0600 "$R/etc/scimbridge/token"
"$BUILD/scim-testserver" -fixture "$ROOT/tests/slurm/fixture.json" -token-file "$R/etc/scimbridge/token" \
  -listen 127.0.0.1:0 > "$W/scim.url" 2> "$W/scim.log" &
spid=$!
for _ in $(seq 100); do [ -s "$W/scim.url" ] && break; sleep 0.1; done
printf 'base_url = "%s"\ntoken_file = "/etc/scimbridge/token"\npreset = "posix"\nmax_retries = 0\n' \
  "$(head -n1 "$W/scim.url")" > "$R/etc/scimbridge/syncd.toml"
chmod 0600 "$R/etc/scimbridge/syncd.toml"
rm -f "$R/var/lib/scimbridge/cache.db"
SB=$W/sandbox
mkdir -p "$R/run/scimbridge" "$SB"
if mount --bind "$R" "$SB" && mount -o remount,bind,ro "$SB" &&
   mount --bind "$R/var/lib/scimbridge" "$SB/var/lib/scimbridge" &&
   mount -t tmpfs sandbox "$SB/run/scimbridge" && mount -t tmpfs sandbox "$SB/tmp" &&
   mount -t tmpfs sandbox "$SB/home" && mount -t tmpfs sandbox "$SB/root" &&
   mount --bind /dev "$SB/dev" && mount -t proc proc "$SB/proc"; then
  sbx() { chroot "$SB" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
  check "sandbox: / is read-only in it" bash -c "! touch '$SB/etc/scimbridge/x' 2>/dev/null"
  out=$(sbx syncd check-config 2>&1)
  check "sandbox: ExecStartPre (syncd check-config) passes" grep -q ': ok$' <<<"$out"
  out=$(sbx syncd sync --once 2>&1); rc=$?
  expect_eq "sandbox: syncd sync --once succeeds with only the unit's writable paths" 0 "$rc"
  [ "$rc" = 0 ] || sed 's/^/  /' <<<"$out" | tail -5
  expect_eq "sandbox: the snapshot it wrote is world-readable" "644 root:root" \
    "$(stat -c '%a %U:%G' "$R/var/lib/scimbridge/cache.db" 2>&1)"
  expect_eq "sandbox: getent passwd alice from syncd's snapshot" \
    "alice:*:31001:31000:Alice Slurmtest:/home/alice:/bin/bash" "$(sbx getent passwd alice)"
  out=$(chroot --userspec=65534:65534 "$SB" /usr/sbin/syncd status 2>&1); rc=$?
  expect_eq "sandbox: syncd status as nobody exits 0 after the sync" 0 "$rc"
  [ "$rc" = 0 ] || sed 's/^/  /' <<<"$out" | tail -5
  umount -R "$SB"
else
  bad "root: build the unit's sandbox"
fi
kill_tree "$spid"; spid=

# Removal while a PAM stack or plugstack.conf still loads a module.
printf 'account required pam_scim.so\n' >> "$R/etc/pam.d/sshd"
printf '# account required pam_scim.so (a comment does not count)\n' >> "$R/etc/pam.d/su"
printf 'account required pam_scim.so allow_groups=x\n' >> "$R/etc/pam.d/login"
out=$(inr dpkg -r scimbridge 2>&1); rc=$?
check "root: dpkg -r refused while /etc/pam.d/sshd and login load pam_scim.so" \
  test "$rc" != 0 -a -f "$R/lib/$MULTIARCH/security/pam_scim.so"
expect_eq "root: the refusal names exactly those files" "  /etc/pam.d/login
  /etc/pam.d/sshd" "$(grep '^  /etc/' <<<"$out")"
sed -i '/pam_scim\.so/d' "$R/etc/pam.d/sshd" "$R/etc/pam.d/login"
mkdir -p "$R/etc/slurm"
printf 'required /usr/lib/%s/slurm-wlm/spank_scim.so\n' "$MULTIARCH" >> "$R/etc/slurm/plugstack.conf"
out=$(inr dpkg -r scimbridge 2>&1); rc=$?
check "root: dpkg -r refused while plugstack.conf loads spank_scim.so" \
  test "$rc" != 0 -a -f "$R/usr/lib/$MULTIARCH/slurm-wlm/spank_scim.so"
expect_eq "root: still installed after the refusals" installed \
  "$(inr dpkg-query -W -f='${db:Status-Status}' scimbridge 2>&1)"
sed -i '/spank_scim\.so/d' "$R/etc/slurm/plugstack.conf"

printf 'base_url = "https://x"\n' > "$R/etc/scimbridge/syncd.toml"
out=$(inr dpkg -r scimbridge 2>&1); rc=$?
expect_eq "root: dpkg -r succeeds once no stack loads a module" 0 "$rc"
check "root: prerm took pam_scim out of common-account (pam-auth-update)" \
  bash -c "! grep -q pam_scim '$R/etc/pam.d/common-account'"
left=""
while read -r p; do
  case $p in */) continue ;; esac
  [ -e "$R$p" ] && left="$left $p"
done <<<"$FILES"
expect_eq "root: remove deletes every installed file" "" "$left"
check "root: remove keeps the cache and the admin's config" \
  test -f "$R/var/lib/scimbridge/cache.db" -a -f "$R/etc/scimbridge/syncd.toml"
check "root: postrm warns that nsswitch.conf still lists scim" grep -q 'nsswitch.conf still lists scim' <<<"$out"
expect_eq "root: getent passwd ada after removal (module gone, glibc skips it)" "" "$(inr getent passwd ada)"

# Reinstall after dpkg -r: the PAM profile the admin had enabled comes back.
out=$(inr dpkg -i /tmp/scimbridge.deb 2>&1); rc=$?
expect_eq "root: reinstall after dpkg -r succeeds" 0 "$rc"
check "root: reinstall after dpkg -r puts pam_scim back in common-account (enabled before)" \
  grep -q 'pam_scim\.so' "$R/etc/pam.d/common-account"
check "root: reinstall says it re-enabled the PAM profile" grep -q 're-enabled the PAM profile' <<<"$out"
check "root: an active SCIM user (alice, from the sandbox sync) passes the restored stack" inr pamtester sshd alice acct_mgmt
# ... and one the admin had disabled stays disabled.
inr pam-auth-update --disable scimbridge >/dev/null 2>&1
inr dpkg -r scimbridge >/dev/null 2>&1
out=$(inr dpkg -i /tmp/scimbridge.deb 2>&1); rc=$?
check "root: reinstall after dpkg -r keeps a disabled PAM profile disabled" \
  test "$rc" = 0 -a -z "$(grep pam_scim "$R/etc/pam.d/common-account")" -a -z "$(grep re-enabled <<<"$out")"
check "root: ... and says the PAM profile is not enabled, with the command to enable it" \
  bash -c 'grep -q "PAM profile is not enabled" <<<"$1" && grep -q "pam-auth-update --enable scimbridge" <<<"$1"' _ "$out"
out=$(inr dpkg -i /tmp/scimbridge.deb 2>&1)
check "root: a plain upgrade (reinstall) prints no PAM note" test -z "$(grep -i 'PAM profile' <<<"$out")"
out=$(inr dpkg -r scimbridge 2>&1); rc=$?
expect_eq "root: dpkg -r again" 0 "$rc"

# Purge: the secrets and syncd's state go, the admin's settings stay.
E=$R/etc/scimbridge
for f in token publish.key publish.key.pub receiver.key idp.token signing.pem signing.pem.pub recv.key reader.conf ca.pem; do
  echo "$f" > "$E/$f"
done
echo outside > "$R/root/outside.token"
# Every TOML string form names a secret: literal, multi-line basic,
# multi-line literal; a commented line and a key inside a string do not.
cat > "$E/syncd.toml" << 'TOML'
base_url = "https://x/?tls_key_file='/etc/scimbridge/reader.conf'"
token_file = '/etc/scimbridge/idp.token'
# s3_secret_key_file = "/etc/scimbridge/ca.pem"
[publish]
key_file = """/etc/scimbridge/signing.pem"""
[receiver]
tls_key = '''
/etc/scimbridge/recv.key'''
[mirror]
password_file = "/root/outside.token"
TOML
mkdir -p "$R/var/lib/scimbridge/cache.db.history" "$R/var/lib/scimbridge/publish"
touch "$R/var/lib/scimbridge/receiver.db" "$R/var/lib/scimbridge/cache.db.history/1.db" "$R/var/lib/scimbridge/status.json"
out=$(inr dpkg --purge scimbridge 2>&1); rc=$?
expect_eq "root: purge succeeds" 0 "$rc"
check "root: purge removes /var/lib/scimbridge (cache, history, status, receiver store, publish)" \
  test ! -e "$R/var/lib/scimbridge"
expect_eq "root: purge keeps exactly the admin's settings in /etc/scimbridge (no secret)" \
  "ca.pem reader.conf syncd.toml " "$(ls "$E" | tr '\n' ' ')"
check "root: purge leaves a secret outside /etc/scimbridge alone" test -f "$R/root/outside.token"
check "root: purge names each secret it removed" \
  test "$(grep -c '^scimbridge: purge removed the secret /etc/scimbridge/' <<<"$out")" = 8
check "root: nothing of scimbridge is left in the dpkg database" bash -c "! chroot '$R' dpkg -s scimbridge >/dev/null 2>&1"
echo "$_pass $_fail" > "$W/inroot.counts"
INROOT

mkdir -p "$W/ovl"
FILES=$(packaging_list() { "$ROOT/packaging/install.sh" list / "$BUILD" NSSDIR=/lib/$MA PAMDIR=/lib/$MA/security \
  SLURM_PLUGINDIR=/usr/lib/$MA/slurm-wlm UNITDIR=/lib/systemd/system PAMCONFDIR=/usr/share/pam-configs \
  SYSCONFDIR=/etc STATEDIR=/var/lib/scimbridge SBINDIR=/usr/sbin BINDIR=/usr/bin MANDIR=/usr/share/man \
  DOCDIR=/usr/share/doc/scimbridge; }; packaging_list)
# dpkg -L prints every file and directory of the package.
INSTALLED=$(cd "$I" && find . -mindepth 1 -printf '/%P\n' | LC_ALL=C sort)
VERSION=$("$BUILD/syncd" --version | cut -d' ' -f2)
export ROOT BUILD W DEB SNAP KEY INSTALLED FILES VERSION
unshare --mount --propagation private -- bash "$W/inroot.sh"
rc=$?
if read -r p f < "$W/inroot.counts" 2>/dev/null; then
  _pass=$((_pass + p)); _fail=$((_fail + f))
else
  bad "root: the throwaway-root script stopped early (rc=$rc)"
fi
summary
