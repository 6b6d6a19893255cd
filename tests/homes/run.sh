#!/usr/bin/env bash
# tests/homes/run.sh: homes, project directories and quotas (issue 23)
# with a real GlusterFS, end to end through syncd.
#
# Everything runs in private mount, network and UTS namespaces: glusterd
# gets its working directory, logs, run directory and /etc/glusterfs from
# bind mounts of a temp dir, listens in the private network namespace
# (GlusterFS refuses bricks on 127.0.0.1, so the namespace's loopback also
# carries 10.254.0.1 and a private /etc/hosts names it), and the volumes
# are FUSE-mounted on /home (in the namespace only: the host's /home is
# untouched) and on a project root in the temp dir. The SCIM test server
# serves tests/scimserver/testdata/sample.json on loopback.
#
#   homes      sync --once makes the active users' homes (owner, mode,
#              skel) and nothing for disabled or rejected users
#   hostile    a symlink planted at a home is refused, its target untouched,
#              logged once with path and reason
#   projects   project directories root:TEAMGID 2770
#   quota      limits set per user and team (per-group override); a write
#              past the hard limit fails, reads and deletes work; a second
#              pass changes nothing; a limit lowered below use is applied
#              and reported, the data stays
#   explain    syncd explain / status / mylimits show home and quota state,
#              homes plan shows the exact gluster command line
#   daemon     syncd run makes a new user's home, metrics on loopback
#   storage    role = "storage": a node mirroring the head (a shared publish
#              directory) makes the homes; the head with enabled = false not
#   down       the storage stopped: a commit still happens, homes wait
#
# Kernel quotas (setquota, xfs_quota, lfs) cannot run on this machine (no
# quota support in its kernel): their command lines are tested in
# syncd/homes (quota_test.go) with recording stand-ins.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { bad "homes tests need root (namespaces, FUSE, chown)"; summary; exit 1; }
for c in glusterd gluster glusterfs jq curl setpriv ip; do
  command -v "$c" > /dev/null || { bad "$c not installed (tests/install-deps.sh installs glusterfs-server)"; summary; exit 1; }
done
for b in syncd scim-testserver mylimits; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done

if [ "${1:-}" != inner ]; then
  T=$(mktemp -d /tmp/scim-homes.XXXXXX)
  chmod 0755 "$T"
  export T
  unshare --mount --net --uts --propagation private -- "$0" inner
  rc=$?
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
  exit $rc
fi

# ---- inside the namespaces ----
SYNCD=$BUILD/syncd
P=/mnt/project
P=/mnt/project
G() { timeout 60 gluster --mode=script "$@"; }
PIDS=()
cleanup() {
  local p f
  kill_tree "${PIDS[@]}"
  for m in /home "$P"; do mountpoint -q "$m" && umount -l "$m"; done
  G volume stop homes > /dev/null 2>&1
  G volume stop projects > /dev/null 2>&1
  # glusterd and its bricks/quotad daemonize: stop them by their pid files,
  # all of which live in this suite's temp dir.
  for f in $(find "$T/glusterd" "$T/run" -name '*.pid' 2> /dev/null); do
    p=$(cat "$f" 2> /dev/null)
    [[ "$p" =~ ^[0-9]+$ ]] && kill -TERM "$p" 2> /dev/null
  done
  sleep 1
  for f in $(find "$T/glusterd" "$T/run" -name '*.pid' 2> /dev/null); do
    p=$(cat "$f" 2> /dev/null)
    [[ "$p" =~ ^[0-9]+$ ]] && kill -KILL "$p" 2> /dev/null
  done
  return 0
}
on_exit cleanup

ip link set lo up
ip addr add 10.254.0.1/32 dev lo
hostname glnode
mkdir -p "$T"/{state,glusterd,glog,run,gletc,bricks/homes,bricks/projects,skel/.config}
printf "127.0.0.1 localhost\n10.254.0.1 glnode\n" > "$T/hosts"  # the gluster CLI mounts volumes from localhost
mount --bind "$T/hosts" /etc/hosts
cp -a /var/lib/glusterd/. "$T/glusterd/" 2> /dev/null
cp -a /etc/glusterfs/. "$T/gletc/"
mount --bind "$T/glusterd" /var/lib/glusterd
mkdir -p /var/log/glusterfs /run/gluster
mount --bind "$T/glog" /var/log/glusterfs
mount --bind "$T/run" /run/gluster
mount --bind "$T/gletc" /etc/glusterfs
# The project root: /tmp is a system path no root may be in, so it lives
# on a tmpfs over /mnt (in this namespace only).
mount -t tmpfs -o mode=0755 homes-test /mnt
mkdir -p /mnt/project


t0=$SECONDS
glusterd -p "$T/run/glusterd.pid" --log-file="$T/glog/glusterd.log"
waitfor 30 G volume list || { bad "glusterd did not answer within 30 s (log: $T/glog/glusterd.log)"; summary; exit 1; }
for v in homes projects; do
  G volume create "$v" "glnode:$T/bricks/$v" force > /dev/null &&
    G volume start "$v" > /dev/null &&
    G volume set "$v" performance.write-behind off > /dev/null ||
    { bad "gluster volume $v: $(tail -3 "$T/glog/glusterd.log")"; summary; exit 1; }
done
# Quota on homes, enforced at once (hard-timeout 0) for the write tests;
# projects is left without quota: syncd's driver enables it.
G volume quota homes enable > /dev/null &&
  G volume quota homes hard-timeout 0 > /dev/null &&
  G volume quota homes soft-timeout 0 > /dev/null ||
  { bad "gluster volume quota homes: $(tail -3 "$T/glog/glusterd.log")"; summary; exit 1; }
timeout 60 glusterfs --volfile-server=glnode --volfile-id=homes --pid-file="$T/run/fuse-homes.pid" /home &&
  timeout 60 glusterfs --volfile-server=glnode --volfile-id=projects --pid-file="$T/run/fuse-projects.pid" "$P" ||
  { bad "FUSE mount of the volumes failed"; summary; exit 1; }
waitfor 20 mountpoint -q /home || { bad "/home is not a mount point"; summary; exit 1; }
ok "GlusterFS $(gluster --version | head -1 | awk '{print $2}'): 2 volumes FUSE-mounted in a private namespace ($((SECONDS - t0)) s)"
chmod 0755 /home "$P"

# skel, the SCIM server, syncd's config.
echo "# from skel" > "$T/skel/.bashrc"
echo "x" > "$T/skel/.config/app"
"$BUILD/scim-testserver" -fixture "$ROOT/tests/scimserver/testdata/sample.json" > "$T/server.url" 2> "$T/server.log" &
PIDS+=($!)
waitfor 10 test -s "$T/server.url"
URL=$(head -n1 "$T/server.url")
ADMIN=${URL%/scim/v2}
(umask 077; echo token > "$T/token")
CFG=$T/syncd.toml
write_cfg() { # write_cfg USER_SOFT USER_HARD
  (umask 077; cat > "$CFG" << TOML
base_url = "$URL"
token_file = "$T/token"
preset = "posix"
cache_path = "$T/state/cache.db"
local_passwd = "/dev/null"
local_group = "/dev/null"
metrics_listen = "127.0.0.1:19464"
poll_interval = "2s"

[attributes]
home_quota = "urn:example:params:scim:schemas:extension:hpc:2.0:User:homeQuota"
project_quota = "urn:example:params:scim:schemas:extension:hpc:2.0:Group:projectQuota"

[homes]
enabled = true
role = "head"
skel = "$T/skel"
interval = "1h"
[homes.projects]
root = "$P"
groups = ["ml-team", "physics"]
[homes.quota]
driver = "gluster"
user_soft = "$1"
user_hard = "$2"
team_soft = "30M"
team_hard = "40M"
user_max = "16M"
[homes.quota.groups.ml-team]
user_hard = "20M"
[homes.quota.gluster]
volumes = { "/home" = "homes", "$P" = "projects" }
TOML
)
}
write_cfg 5M 10M

# A user plants a symlink where heidi's home will be (as if the root had
# been writable once); the pass must refuse it and leave the target alone.
mkdir -p "$T/victim"
ln -s "$T/victim" /home/heidi

"$SYNCD" --config "$CFG" sync --once > "$T/sync1.out" 2> "$T/sync1.err"
check "sync --once commits (exit 0) with the homes pass after it" test $? = 0

# ---- homes ----
st() { stat -c '%u:%g %a' "$1" 2> /dev/null; }
expect_eq "alice's home: her uid, her gid, mode 700" "20001:20000 700" "$(st /home/alice)"
expect_eq "skel copied, owned by alice" "20001:20000" "$(stat -c '%u:%g' /home/alice/.bashrc /home/alice/.config/app | sort -u)"
check "carol (disabled at the IdP) gets no home" test ! -e /home/carol
check "mallory (uid 0, rejected by validation) gets no home" test ! -e /home/mallory
check "bob, erin, ivan, judy got homes" test -d /home/bob -a -d /home/erin -a -d /home/ivan -a -d /home/judy
# ---- hostile ----
check "heidi's planted symlink is left as it was" test -L /home/heidi
check "nothing was made through the symlink" test -z "$(ls -A "$T/victim")"
check "the refusal names path and reason" grep -q 'path=/home/heidi.*reason=".*symlink' "$T/sync1.err"
# ---- projects ----
gid_ml=$(jq -r '.groups[] | select(.displayName=="ml-team") | .gidNumber' "$ROOT"/tests/scimserver/testdata/sample.json 2>/dev/null)
expect_eq "project ml-team: root, the team's gid, setgid 2770" "0:$gid_ml 2770" "$(st "$P/ml-team")"
check "physics (no POSIX group in the snapshot) gets no project directory" test ! -e "$P/physics"

# ---- quota ----
ql() { G --xml volume quota "$1" list | tr -d ' \n'; }
hard_of() { ql "$1" | grep -o "<path>$2</path><hard_limit>[0-9]*" | sed 's/.*<hard_limit>//'; }
ml_members=$(jq -r '.groups[] | select(.displayName=="ml-team") | .members[]' "$ROOT/tests/scimserver/testdata/sample.json" | tr '\n' ' ')
case " $ml_members " in *" alice "*) alice_hard=20971520 ;; *) alice_hard=10485760 ;; esac
expect_eq "alice's hard limit on the volume (ml-team override if a member)" "$alice_hard" "$(hard_of homes /alice)"
expect_eq "bob's hard limit: the default 10M" "10485760" "$(hard_of homes /bob)"
expect_eq "project ml-team hard limit 40M (quota enabled on the volume by syncd)" "41943040" "$(hard_of projects /ml-team)"
as() { local u=$1; shift; setpriv --reuid "$u" --regid 20000 --clear-groups "$@"; }
as 20002 dd if=/dev/zero of=/home/bob/big bs=1M count=30 2> "$T/dd.err"
check "bob's write past his hard limit fails (Disk quota exceeded)" grep -q "quota exceeded" "$T/dd.err"
size=$(stat -c %s /home/bob/big)
# GlusterFS checks the limit per write as its accounting stands: a write
# in flight may pass it or stop short of it by a little (128 KiB here).
check "what was written before the limit stays ($size bytes: about the 10M limit, give or take 1M in flight)" test "$size" -le 11534336 -a "$size" -ge 9437184
check "bob can still read his file" as 20002 sh -c 'cat /home/bob/big > /dev/null'
check "bob can still delete it" as 20002 rm /home/bob/big
as 20002 dd if=/dev/zero of=/home/bob/data bs=1M count=8 2> /dev/null
"$SYNCD" --config "$CFG" homes apply > "$T/apply2.out" 2>&1
check "a second pass changes nothing (no set-quota, no create)" sh -c "! grep -qE 'set-quota|create-' '$T/apply2.out'"
write_cfg 2M 4M
"$SYNCD" --config "$CFG" homes plan > "$T/plan.out" 2>&1
check "homes plan shows the lowered limit with its gluster command line" grep -q "would set-quota bob /home/bob: soft 2M, hard 4M (was soft 5M, hard 10M); runs: gluster --mode=script volume quota homes limit-usage /bob 4194304 50%" "$T/plan.out"
expect_eq "plan changed nothing" "10485760" "$(hard_of homes /bob)"
"$SYNCD" --config "$CFG" homes apply > "$T/apply3.out" 2>&1
expect_eq "the lowered limit is applied" "4194304" "$(hard_of homes /bob)"
check "and reported: bob is over it, nothing deleted" grep -q "over-limit bob /home/bob: uses 8.0M, above the hard limit 4M" "$T/apply3.out"
expect_eq "bob's data is still there" 8388608 "$(stat -c %s /home/bob/data)"
check "bob cannot write more" sh -c "! setpriv --reuid 20002 --regid 20000 --clear-groups sh -c 'echo x >> /home/bob/data' 2>/dev/null"

# ---- usage report: hourly samples of team storage ----
setpriv --reuid 20001 --regid 20000 --groups "$gid_ml" dd if=/dev/zero of="$P/ml-team/shared" bs=1M count=3 2> /dev/null
expect_eq "a file alice writes in the project gets the team's gid (setgid)" "$gid_ml" "$(stat -c %g "$P/ml-team/shared")"
"$SYNCD" --config "$CFG" homes apply --sample > /dev/null 2>&1
expect_eq "report storage: ml-team's sampled use (3M) and hard limit (40M)" "ml-team 3145728 41943040" \
  "$("$SYNCD" --config "$CFG" report storage --json | jq -r '.[] | "\(.team) \(.last_used_bytes) \(.hard_bytes)"')"

# ---- explain, status ----
"$SYNCD" --config "$CFG" explain bob > "$T/explain.out" 2>&1
check "explain shows bob's home on disk" grep -q "^home: *home/bob\|^home:      /home/bob: directory owned by 20002:20000" "$T/explain.out"
check "explain shows bob's quota use against his limits" grep -q "quota:     user /home/bob: 8.0M used of soft 2M, hard 4M; OVER the hard limit" "$T/explain.out"
as 20002 "$BUILD/mylimits" --cache "$T/state/cache.db" --json > "$T/mylimits.json" 2> "$T/mylimits.err"
expect_eq "mylimits (as bob) shows his home's use against soft/hard, over the hard limit" \
  "home /home/bob 2097152 4194304 true" \
  "$(jq -r '.storage[] | select(.kind=="home") | "\(.kind) \(.path) \(.soft_bytes) \(.hard_bytes) \(.over_hard)"' "$T/mylimits.json")"
used=$(jq -r '.storage[] | select(.kind=="home") | .used_bytes' "$T/mylimits.json")
check "mylimits: bob's use as the storage counts it ($used bytes, his 8M file)" test "${used:-0}" -ge 8388608 -a "${used:-0}" -le 9437184
as 20002 "$BUILD/mylimits" --cache "$T/state/cache.db" > "$T/mylimits.txt" 2>&1
check "mylimits table: a Storage section saying writes fail" grep -q "over hard: writes fail" "$T/mylimits.txt"
"$SYNCD" --config "$CFG" status > "$T/status.out" 2>&1
check "status shows the homes pass and the refusal" grep -q "homes: .*refused" "$T/status.out"

# ---- daemon ----
write_cfg 5M 10M
"$SYNCD" --config "$CFG" run > "$T/run.log" 2>&1 &
DPID=$!
PIDS+=($DPID)
curl -fsS -X POST "$ADMIN/_admin/users" -d '{"userName":"zoe","active":true,"posix":{"uidNumber":20050,"gidNumber":20000,"homeDirectory":"/home/zoe","loginShell":"/bin/bash"}}' > /dev/null
curl -fsS -X POST "$ADMIN/_admin/groups/slurm-users/members" -d '{"add":["zoe"]}' > /dev/null
check "syncd run makes a new user's home within 60 s" waitfor 60 test -d /home/zoe
check "and sets her quota" waitfor 90 sh -c "gluster --mode=script volume quota homes list /zoe | grep -q 10.0MB"
check "metrics: scimbridge_homes on loopback" sh -c "curl -fsS http://127.0.0.1:19464/metrics | grep -q 'scimbridge_homes{what=\"homes\"}'"

# ---- storage role: a node mirroring the head makes the homes ----
kill_tree "$DPID"
"$SYNCD" keygen --out "$T/head.key" > /dev/null 2>&1
mkdir -p "$T/pub" "$T/node"
# The head: no homes pass of its own (enabled = false), publishes.
sed 's/^enabled = true$/enabled = false/' "$CFG" > "$T/head.toml"
printf '\n[publish]\ndir = "%s"\nkey_file = "%s"\n' "$T/pub" "$T/head.key" >> "$T/head.toml"
chmod 0600 "$T/head.toml"
# The storage node: [mirror] and the same [homes] with role = "storage".
{ printf 'cache_path = "%s"\nlocal_passwd = "/dev/null"\nlocal_group = "/dev/null"\n\n[mirror]\npath = "%s"\npublic_key_file = "%s"\ninterval = "1s"\n\n' \
    "$T/node/cache.db" "$T/pub" "$T/head.key.pub"
  sed -n '/^\[homes\]$/,$p' "$CFG" | sed 's/^role = "head"$/role = "storage"/'; } > "$T/node.toml"
chmod 0600 "$T/node.toml"
# yara's identity provider sends her a 12M home quota in a custom
# extension, quinn 500 (a bare number: 500 GiB, above user_max 16M),
# xavier something unreadable.
HPC=urn:example:params:scim:schemas:extension:hpc:2.0:User
curl -fsS -X POST "$ADMIN/_admin/users" -d '{"userName":"yara","active":true,"posix":{"uidNumber":20051,"gidNumber":20000,"homeDirectory":"/home/yara","loginShell":"/bin/bash"},"extra":{"'$HPC'":{"homeQuota":"12M"}}}' > /dev/null
curl -fsS -X POST "$ADMIN/_admin/users" -d '{"userName":"quinn","active":true,"posix":{"uidNumber":20052,"gidNumber":20000,"homeDirectory":"/home/quinn","loginShell":"/bin/bash"},"extra":{"'$HPC'":{"homeQuota":500}}}' > /dev/null
curl -fsS -X POST "$ADMIN/_admin/users" -d '{"userName":"xavier","active":true,"posix":{"uidNumber":20053,"gidNumber":20000,"homeDirectory":"/home/xavier","loginShell":"/bin/bash"},"extra":{"'$HPC'":{"homeQuota":"lots"}}}' > /dev/null
curl -fsS -X POST "$ADMIN/_admin/groups/slurm-users/members" -d '{"add":["yara","quinn","xavier"]}' > /dev/null
# ml-team's identity provider gives its project 30M (configured: 40M).
curl -fsS "$ADMIN/_admin/groups/ml-team" |
  jq '.extra = {"urn:example:params:scim:schemas:extension:hpc:2.0:Group": {"projectQuota": "30M"}}' |
  curl -fsS -X POST "$ADMIN/_admin/groups" -d @- > /dev/null
"$SYNCD" --config "$T/head.toml" sync --once > "$T/head-sync.out" 2>&1 &&
  "$SYNCD" --config "$T/head.toml" publish --once > "$T/head-publish.out" 2>&1
check "the head commits and publishes yara without making her home (enabled = false)" test $? = 0 -a ! -e /home/yara
"$SYNCD" --config "$T/node.toml" check-config > "$T/node-check.out" 2>&1
check "the storage node's config (role = \"storage\" with [mirror]) passes check-config" test $? = 0
"$SYNCD" --config "$T/node.toml" run > "$T/node.log" 2>&1 &
NPID=$!
PIDS+=($NPID)
check "the storage node (syncd run with [mirror]) makes yara's home after installing the head's snapshot" waitfor 60 test -d /home/yara
# The home appears root's 0700 (mkdirat), is filled, then handed over:
# wait for the hand-over, not just the directory.
waitfor 30 sh -c "test \"\$(stat -c '%u:%g %a' /home/yara)\" = '20051:20000 700'" > /dev/null 2>&1 || true
expect_eq "her home: her uid, mode 700" "20051:20000 700" "$(st /home/yara)"
check "and her quota from her identity provider's attribute (12M, through the signed snapshot), from the node" \
  waitfor 90 sh -c "gluster --mode=script volume quota homes list /yara | grep -q 12.0MB"
check "quinn's 500 (GiB) is capped at user_max, 16M, never granted" \
  waitfor 90 sh -c "gluster --mode=script volume quota homes list /quinn | grep -q 16.0MB"
check "xavier's unreadable 'lots' is dropped at validation, naming the value" grep -q "rejected quota \"xavier\".*bad-quota.*\"lots\" is not a size" "$T/head-sync.out"
check "and his account kept with the configured 10M" waitfor 90 sh -c "gluster --mode=script volume quota homes list /xavier | grep -q 10.0MB"
check "ml-team's project limit from its Group resource (30M, lower than the configured 40M), from the node" \
  waitfor 90 sh -c "gluster --mode=script volume quota projects list /ml-team | grep -q 30.0MB"
check "the cap is logged once by the storage node" test "$(grep -c 'home quota 500G is above the cap 16M' "$T/node.log")" = 1
# A compute node: the head's snapshot, no homes pass, /home mounted.
mkdir -p "$T/other" && chmod 0755 "$T/other" && cp "$T/node/cache.db" "$T/other/cache.db" && chmod 0644 "$T/other/cache.db"
check "the storage node leaves the figures at the top of /home for the nodes (root's, 0644)" \
  waitfor 30 sh -c "test \"\$(stat -c %U:%a /home/.scimbridge-usage.json)\" = root:644"
# The file is there once the storage node's first pass read any use; yara's
# figures are in it once a pass has read her home under her 12M quota (a
# pass whose storage did not report them yet runs again a minute later).
waitfor 150 sh -c "jq -e '.targets[] | select(.path == \"/home/yara\") | select(.usage.hard == 12582912)' /home/.scimbridge-usage.json" > /dev/null 2>&1 || true
as 20051 "$BUILD/mylimits" --cache "$T/other/cache.db" --json > "$T/node-mylimits.json" 2> "$T/node-mylimits.err"
jq -r '.notes[]' "$T/node-mylimits.json" 2>/dev/null | sed 's/^/  mylimits note: /'
expect_eq "mylimits on a node without the pass (as yara): her home against 6M/12M, from the storage's copy" \
  "home /home/yara 6291456 12582912" \
  "$(jq -r '.storage[] | select(.kind=="home") | "\(.kind) \(.path) \(.soft_bytes) \(.hard_bytes)"' "$T/node-mylimits.json")"
check "and says how old the figures are and where they come from" \
  sh -c "jq -r '.notes[]' '$T/node-mylimits.json' | grep -q 'recorded it .* ago .*/home/.scimbridge-usage.json'"
kill_tree "$NPID"
"$SYNCD" --config "$CFG" run >> "$T/run.log" 2>&1 &
DPID=$!
PIDS+=($DPID)

# ---- down ----
G volume stop homes > /dev/null 2>&1
curl -fsS -X POST "$ADMIN/_admin/users/erin/active" -d '{"active":false}' > /dev/null
check "storage down: the disable is still committed within 60 s" waitfor 60 sh -c "sqlite3 '$T/state/cache.db' \"select active from users where name='erin'\" | grep -qx 0"
kill_tree "$DPID"
summary
