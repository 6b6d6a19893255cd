#!/usr/bin/env bash
# tests/cluster/run.sh: one head, many nodes, with real parts only.
#
# The head is build/syncd run against build/scim-testserver, with a
# [publish] table: after every poll it publishes the snapshot into a
# directory, serves it with its built-in web server and uploads it to an
# S3 server (github.com/johannesboyne/gofakes3, in-memory, run as a
# process by tests/s3server). Debian's nginx serves the same directory.
#
# Each mirror node is a private mount namespace with its own tmpfs over
# /etc/scimbridge and /var/lib/scimbridge and its own nsswitch.conf (scim
# after files, through build/libnss_scim.so.2), running its own
# `syncd run` with a [mirror] table. Two nodes per transport:
#
#   converge  built-in HTTP, nginx, S3 and a shared directory: every node
#             holds the head's snapshot byte for byte; getent on a node
#             shows the users; a change at the source reaches every node
#   fresh     a quiet head re-signs its manifest; each node's live file
#             mtime follows the manifest's source_contact
#   etag      the built-in server and nginx answer If-None-Match with 304
#   status    `syncd status` on a node: serial, result; no token on nodes
#   tamper    a node pointed at a copy of the publish directory refuses a
#             modified snapshot, a truncated one, a manifest signed by
#             another key and a replayed older manifest: exit 3, live
#             snapshot unchanged, the reason in `syncd status`
#   rebuild   a head wiped (cache, history, publish directory) and started
#             again: nodes take its next snapshot by themselves; the
#             manifest from before the wipe is still refused
#             (tests/cluster/heads.sh)
#   frozen    the same genuine manifest served for an hour (simulated):
#             the node is stale (mirror --once and status exit 1, status
#             --json .mirror.stale), its live mtime stays at the frozen
#             source_contact; the head's next manifest makes it fresh
#   twoheads  two heads with one key; a node with url + fallback_urls
#             follows the second when the first goes down
#   slurm     the real Slurm lab: a head with [slurm] publishes the
#             associations; on a login node that only mirrors, sbatch
#             through spank_scim runs alice's job and refuses a disabled
#             user (tests/cluster/slurm.sh)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { bad "cluster tests need root (namespaces)"; summary; exit 1; }
for b in syncd scim-testserver libnss_scim.so.2; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
for c in jq curl nsenter nginx go; do
  command -v "$c" > /dev/null || [ -x "/usr/sbin/$c" ] || { bad "$c not installed (make deps)"; summary; exit 1; }
done

T=$(mktemp -d /tmp/scim-cluster.XXXXXX)
[ -d "$T" ] || { bad "mktemp"; summary; exit 1; }
chmod 0755 "$T"
PIDS=()
declare -A NODE_PID=()
cleanup() {
  local p
  [ -z "${LAB_UP:-}" ] || scim_ns "$SST" "$ROOT/tests/slurm/down.sh" > "$T/down.log" 2>&1 || { echo "down.sh:"; cat "$T/down.log"; }
  kill_tree "${PIDS[@]}" "${NODE_PID[@]}"
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] && echo "kept $T" || rm -rf "$T"
}
on_exit cleanup

SYNCD=$BUILD/syncd
# free_port: a loopback port nothing listens on now (for servers that
# cannot take port 0).
free_port() {
  local p i
  for i in $(seq 50); do
    p=$((20000 + RANDOM % 12000)) # below Linux's ephemeral range (32768-60999)
    (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null || { echo "$p"; return 0; }
  done
  return 1
}
# start_bg NAME URLFILE CMD...: starts CMD writing its first line (an
# address) to URLFILE; waits for it.
start_bg() {
  local name=$1 out=$2
  shift 2
  "$@" > "$out" 2> "$T/$name.log" &
  PIDS+=($!)
  waitfor 20 test -s "$out" || { bad "$name did not start: $(tail -3 "$T/$name.log")"; summary; exit 1; }
}

# --- the identity source, the S3 server, the keys ----------------------------
(umask 077; printf 'cluster-token-%s\n' "$RANDOM$RANDOM" > "$T/token")
start_bg scim "$T/scim.url" "$BUILD/scim-testserver" -token-file "$T/token" -generate 400,40 -seed 5
URL=$(head -n1 "$T/scim.url")
ADMIN=${URL%/scim/v2}
go build -o "$T/s3server" "$ROOT/tests/s3server" || { bad "build tests/s3server"; summary; exit 1; }
start_bg s3 "$T/s3.addr" "$T/s3server" -bucket scim
S3=$(head -n1 "$T/s3.addr")

"$SYNCD" keygen --out "$T/head.key" > "$T/keygen.out" 2>&1
expect_eq "syncd keygen writes a root-only private key and a public key" "600 644" \
  "$(stat -c %a "$T/head.key") $(stat -c %a "$T/head.key.pub")"
"$SYNCD" keygen --out "$T/head.key" > /dev/null 2>&1
expect_eq "keygen never overwrites a key" 1 "$?"
"$SYNCD" keygen --out "$T/other.key" > /dev/null 2>&1

# --- the head -------------------------------------------------------------------
mkdir -p "$T/head" "$T/pub"
chmod 0755 "$T/head" "$T/pub"
head_config() { # head_config KEYFILE PUBDIR
  printf '%s\n' \
    "base_url = \"$URL\"" \
    "token_file = \"$T/token\"" \
    'preset = "posix"' \
    "cache_path = \"$T/head/cache.db\"" \
    "status_path = \"$T/head/status.json\"" \
    'page_size = 200' \
    'max_retries = 1' \
    'request_timeout = "5s"' \
    'poll_interval = "1s"' \
    'poll_jitter = "100ms"' \
    'full_reconcile_interval = "1h"' \
    'max_removal_share = 1.0' \
    '' \
    '[publish]' \
    "dir = \"$2\"" \
    "key_file = \"$1\"" \
    'listen = "127.0.0.1:0"' \
    "s3_endpoint = \"$S3\"" \
    's3_bucket = "scim"' \
    's3_prefix = "cluster1"' \
    's3_insecure = true'
}
head_config "$T/head.key" "$T/pub" > "$T/head.toml"
chmod 0600 "$T/head.toml"
"$SYNCD" --config "$T/head.toml" check-config > "$T/head-check.out" 2>&1
expect_eq "the head's config with [publish] passes check-config" 0 "$?"
"$SYNCD" --config "$T/head.toml" run > "$T/head.log" 2>&1 &
HEAD_PID=$!
PIDS+=("$HEAD_PID")
check "the head publishes a manifest" waitfor 30 test -s "$T/pub/manifest.json"
waitfor 10 grep -q 'serving the publish directory' "$T/head.log"
HEAD_PORT=$(sed -n 's/.*serving the publish directory.*listen="\{0,1\}127.0.0.1:\([0-9]*\).*/\1/p' "$T/head.log" | head -1)
manifest() { jq -r .payload "$T/pub/manifest.json" | base64 -d; }
mf() { manifest | jq -r ".$1"; }
check "the head serves its publish directory" waitfor 10 curl -fsS -o /dev/null "http://127.0.0.1:$HEAD_PORT/manifest.json"
OBJ=$(mf object)
expect_eq "the published file is named by its content" "$(mf sha256)" \
  "$(if [ "$(mf compression)" = zstd ]; then echo "${OBJ%.db.zst}"; else sha256sum < "$T/head/cache.db" | cut -c1-64; fi)"
expect_eq "the manifest names the head's snapshot (sha256 of the live file)" \
  "$(sha256sum < "$T/head/cache.db" | cut -c1-64)" "$(mf sha256)"
echo "  published: $(mf object) ($(mf object_size) of $(mf size) bytes, $(mf compression)), serial $(mf serial)"

# nginx serves the same directory (a static server not written here).
mkdir -p "$T/nginx"
for try in 1 2 3; do
NGX_PORT=$(free_port)
cat > "$T/nginx/nginx.conf" << EOF
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 128; }
http {
  access_log off;
  client_body_temp_path $T/nginx/body;
  proxy_temp_path $T/nginx/proxy;
  fastcgi_temp_path $T/nginx/fastcgi;
  uwsgi_temp_path $T/nginx/uwsgi;
  scgi_temp_path $T/nginx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$NGX_PORT;
    root $T/pub;
    location = /manifest.json { add_header Cache-Control no-cache; }
  }
}
EOF
nginx -c "$T/nginx/nginx.conf" -g 'daemon off;' > "$T/nginx.log" 2>&1 &
PIDS+=($!)
waitfor 10 curl -fsS -o /dev/null "http://127.0.0.1:$NGX_PORT/manifest.json" && break
done
check "nginx serves the publish directory" curl -fsS -o /dev/null "http://127.0.0.1:$NGX_PORT/manifest.json"

# --- nodes ------------------------------------------------------------------
NST=$T/nodestage
stage_new "$NST" /var/lib/scimbridge/cache.db
mkdir -p "$NST/varlib/scimbridge"
chmod 0755 "$NST/varlib" "$NST/varlib/scimbridge"

# start_node NAME CMD [MIRROR LINES...]: a node namespace whose
# /etc/scimbridge (syncd.toml, head.key.pub, reader.conf) and
# /var/lib/scimbridge are its own tmpfs; CMD is "run" (syncd run) or
# "idle" (nothing runs; tests call syncd mirror --once).
start_node() {
  local name=$1 cmd=$2 d=$T/nodes/$1
  shift 2
  mkdir -p "$d"
  { printf '%s\n' 'log_level = "info"' ${NODE_TOP:+"$NODE_TOP"} '' '[mirror]' "public_key_file = \"/etc/scimbridge/head.key.pub\"" \
      'interval = "500ms"' 'jitter = "100ms"' 'timeout = "20s"'
    printf '%s\n' "$@"; } > "$d/syncd.toml"
  unshare --mount --propagation private -- /bin/bash -c '
    set -e
    st=$1; lib=$2; d=$3; syncd=$4; pub=$5; cmd=$6
    mount -t overlay scim-etc -o "lowerdir=$st/etc:/etc" /etc
    mount -t overlay scim-lib -o "lowerdir=$st/lib:$lib" "$lib"
    mount -t overlay scim-var -o "lowerdir=$st/varlib:/var/lib" /var/lib
    mount -t tmpfs -o mode=0755,size=64m node-etc /etc/scimbridge
    mount -t tmpfs -o mode=0755,size=256m node-var /var/lib/scimbridge
    install -m 0644 "$st/etc/scimbridge/reader.conf" /etc/scimbridge/reader.conf
    install -m 0600 "$d/syncd.toml" /etc/scimbridge/syncd.toml
    install -m 0644 "$pub" /etc/scimbridge/head.key.pub
    if [ "$cmd" = run ]; then exec "$syncd" run; fi
    exec sleep 3600' node "$NST" "$LIBDIR" "$d" "$SYNCD" "$T/head.key.pub" "$cmd" > "$d/log" 2>&1 &
  NODE_PID[$name]=$!
}
# on NODE CMD...: runs CMD in NODE's mount namespace.
on() { local n=$1; shift; nsenter --mount --target "${NODE_PID[$n]}" -- "$@"; }
node_sum() { on "$1" sha256sum /var/lib/scimbridge/cache.db 2> /dev/null | cut -c1-64; }
holds() { [ "$(node_sum "$1")" = "$2" ]; }

NODES=(http-a http-b nginx-a nginx-b s3-a s3-b dir-a dir-b)
MPORT=$(free_port)
NODE_TOP="metrics_listen = \"127.0.0.1:$MPORT\"" start_node http-a run "url = \"http://127.0.0.1:$HEAD_PORT/\""
start_node http-b run "url = \"http://127.0.0.1:$HEAD_PORT\""
start_node nginx-a run "url = \"http://127.0.0.1:$NGX_PORT/\""
start_node nginx-b run "url = \"http://127.0.0.1:$NGX_PORT/\""
for n in s3-a s3-b; do
  start_node "$n" run "s3_endpoint = \"$S3\"" 's3_bucket = "scim"' 's3_prefix = "cluster1/"' 's3_insecure = true'
done
start_node dir-a run "path = \"$T/pub\""
start_node dir-b run "path = \"$T/pub\""

# --- converge -----------------------------------------------------------------
SUM=$(mf sha256)
for n in "${NODES[@]}"; do
  check "node $n holds the head's snapshot byte for byte" waitfor 30 holds "$n" "$SUM"
done
U1=$(sqlite3 "file:$T/head/cache.db?mode=ro&immutable=1" 'select name from users order by uid limit 1' 2> /dev/null)
for n in http-a nginx-b s3-a dir-b; do
  got=$(on "$n" getent passwd "$U1")
  check "getent passwd $U1 on node $n (through its own nsswitch and snapshot)" [ -n "$got" ]
done
expect_eq "the same passwd line on every transport" 1 \
  "$(for n in "${NODES[@]}"; do on "$n" getent passwd "$U1"; done | sort -u | wc -l)"
expect_eq "getent -s scim passwd on a node lists every user of the head" \
  "$(sqlite3 "file:$T/head/cache.db?mode=ro&immutable=1" 'select count(*) from users' 2> /dev/null)" \
  "$(on s3-b getent -s scim passwd | wc -l)"

# A change at the source reaches every node.
curl -fsS -X POST "$ADMIN/_admin/users" \
  -d '{"userName":"zz.cluster","posix":{"uidNumber":4100001,"gidNumber":200000,"homeDirectory":"/home/zz.cluster"}}' > /dev/null
t0=$EPOCHREALTIME
check "the head publishes the change" waitfor 30 bash -c "jq -r .payload '$T/pub/manifest.json' | base64 -d | jq -e '.users == $(($(mf users) + 1))'"
for n in "${NODES[@]}"; do
  check "node $n: getent passwd zz.cluster after the change" waitfor 30 on "$n" getent passwd zz.cluster
done
echo "  change at the source -> on all ${#NODES[@]} nodes: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s"
SUM=$(mf sha256)
for n in "${NODES[@]}"; do
  check "node $n holds the new snapshot byte for byte" waitfor 10 holds "$n" "$SUM"
done

# --- fresh ----------------------------------------------------------------------
c1=$(date -d "$(mf source_contact)" +%s)
check "a quiet head re-signs its manifest with a newer source_contact" \
  waitfor 10 bash -c "[ \$(date -d \"\$(jq -r .payload '$T/pub/manifest.json' | base64 -d | jq -r .source_contact)\" +%s) -gt $c1 ]"
for n in http-b nginx-a s3-b dir-a; do
  check "node $n: live file mtime follows source_contact (within 3 s of now)" \
    waitfor 10 bash -c "[ \$((\$(date +%s) - \$(nsenter --mount --target ${NODE_PID[$n]} stat -c %Y /var/lib/scimbridge/cache.db))) -le 3 ]"
done

# --- etag -------------------------------------------------------------------------
for port in "$HEAD_PORT" "$NGX_PORT"; do
  etag=$(curl -fsS -D - -o /dev/null "http://127.0.0.1:$port/$(mf object)" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
  expect_eq "If-None-Match on port $port: 304" 304 \
    "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "http://127.0.0.1:$port/$(mf object)")"
done
expect_eq "the built-in server serves nothing but published files" "404 404 404" \
  "$(for p in / head.toml ..%2fhead%2fcache.db; do curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$HEAD_PORT/$p"; done | sed 's/ $//')"

check "node metrics: installs counted" waitfor 5 bash -c "curl -fsS http://127.0.0.1:$MPORT/metrics | grep -q '^scimbridge_syncs_total{result=\"committed\"} [1-9]'"
check "node metrics: the manifest's source_contact" bash -c "curl -fsS http://127.0.0.1:$MPORT/metrics | grep -q '^scimbridge_mirror_source_contact_timestamp_seconds [0-9]'"
check "node metrics: the age of the head's newest signature, its bound, not stale" bash -c "m=\$(curl -fsS http://127.0.0.1:$MPORT/metrics) &&
  grep -qE '^scimbridge_mirror_signature_age_seconds [0-9]' <<< \"\$m\" && grep -qx 'scimbridge_mirror_stale_after_seconds 300' <<< \"\$m\" &&
  grep -qx 'scimbridge_mirror_stale 0' <<< \"\$m\" && grep -qx 'scimbridge_mirror_local_conflicts 0' <<< \"\$m\""

# --- status -----------------------------------------------------------------------
"$SYNCD" --config "$T/head.toml" status > "$T/status-head.out" 2>&1
check "syncd status on the head shows what it published" grep -q "^published: *serial $(mf serial) in $T/pub" "$T/status-head.out"
expect_eq "syncd status --json on the head: the published sha256" "$(mf sha256)" \
  "$("$SYNCD" --config "$T/head.toml" status --json | jq -r .published.sha256)"
on dir-b "$SYNCD" status > "$T/status-node.out" 2>&1
expect_eq "syncd status on a node exits 0" 0 "$?"
check "syncd status on a node names the serial" grep -q "serial $(mf serial)" "$T/status-node.out"
expect_eq "syncd status --json on a node names the head's directory" "mirror $T/pub" \
  "$(on dir-b "$SYNCD" status --json | jq -r .status.source)"
check "no node holds the identity-provider token" bash -c "! grep -rqF '$(cat "$T/token")' $T/nodes"
printf 'base_url = "%s"\ntoken_file = "%s"\n[mirror]\npath = "%s"\npublic_key_file = "%s"\n' "$URL" "$T/token" "$T/pub" "$T/head.key.pub" > "$T/badnode.toml"
chmod 0600 "$T/badnode.toml"
on s3-a "$SYNCD" check-config --online > "$T/online.out" 2>&1
expect_eq "check-config --online on a node: the head's manifest, signed by its key" \
  "0 serial $(mf serial)" "$? $(grep -o 'serial [0-9]*' "$T/online.out" | head -1)"
"$SYNCD" --config "$T/badnode.toml" check-config > "$T/badnode.out" 2>&1
check "check-config refuses identity-provider credentials on a mirror node" grep -q 'token_file: set on a mirror node' "$T/badnode.out"
if grep -l 'level=error' "$T"/nodes/*/log > /dev/null 2>&1; then
  bad "nodes logged errors: $(grep -h 'level=error' "$T"/nodes/*/log | head -3)"
else
  ok "no node logged an error"
fi

# --- tamper -----------------------------------------------------------------------
# A node follows $T/evil, a copy of the publish directory an attacker (or a
# broken disk or proxy) controls.
mkdir -p "$T/evil"
cp -p "$T/pub"/* "$T/evil/"
start_node tamper idle "path = \"$T/evil\""
waitfor 10 on tamper test -f /etc/scimbridge/syncd.toml
mirror_once() { on tamper "$SYNCD" mirror --once > "$T/tamper.out" 2>&1; }
check "tamper node: first mirror --once installs the snapshot" mirror_once
cp -p "$T/evil/manifest.json" "$T/old-manifest.json"
LIVE=$(node_sum tamper)
curl -fsS -X POST "$ADMIN/_admin/users" \
  -d '{"userName":"zz.tamper","posix":{"uidNumber":4100002,"gidNumber":200000,"homeDirectory":"/home/zz.tamper"}}' > /dev/null
old_serial=$(mf serial)
check "the head publishes the next change" waitfor 30 bash -c "[ \$(jq -r .payload '$T/pub/manifest.json' | base64 -d | jq -r .serial) -gt $old_serial ]"
cp -p "$T/pub"/* "$T/evil/"
GOOD=$T/good-manifest.json
cp -p "$T/evil/manifest.json" "$GOOD"
# The files a node may fetch: the full snapshot and the page deltas.
mapfile -t EFILES < <(jq -r .payload "$GOOD" | base64 -d | jq -r '.object, .deltas[]?.object')
mkdir -p "$T/good-files"
for f in "${EFILES[@]}"; do cp -p "$T/evil/$f" "$T/good-files/"; done
restore() { for f in "${EFILES[@]}"; do cp -p "$T/good-files/$f" "$T/evil/$f"; done; }
check "the head publishes a page delta besides the full file" [ "${#EFILES[@]}" -ge 2 ]

# refused NAME REASON: mirror --once exits 3, the live snapshot is the
# same file, zz.tamper unknown on the node, the reason in syncd status.
refused() {
  mirror_once
  expect_eq "$1: mirror --once exits 3 (refused)" 3 "$?"
  expect_eq "$1: live snapshot unchanged" "$LIVE" "$(node_sum tamper)"
  check "$1: the node does not know the new user" bash -c "! nsenter --mount --target ${NODE_PID[tamper]} getent passwd zz.tamper"
  on tamper "$SYNCD" status > "$T/tamper-status.out" 2>&1
  if grep -q "^last error: .*refused: .*$2" "$T/tamper-status.out"; then
    ok "$1: syncd status shows the reason ($2)"
  else
    bad "$1: syncd status lacks \"$2\""; cat "$T/tamper-status.out"
  fi
}
for f in "${EFILES[@]}"; do
  printf 'X' | dd of="$T/evil/$f" bs=1 seek=$(($(stat -c %s "$T/evil/$f") / 2)) conv=notrunc status=none
done
refused "modified snapshot (full file and deltas)" "SHA-256"
restore
for f in "${EFILES[@]}"; do truncate -s $(($(stat -c %s "$T/evil/$f") / 3)) "$T/evil/$f"; done
refused "truncated snapshot (full file and deltas)" "truncated transfer"
restore
head_config "$T/other.key" "$T/evil" > "$T/evil.toml"
chmod 0600 "$T/evil.toml"
"$SYNCD" --config "$T/evil.toml" publish --once > "$T/evil-publish.out" 2>&1
check "a manifest signed by another key is published (syncd publish --once)" \
  [ "$(jq -r .key_id "$T/evil/manifest.json")" != "$(jq -r .key_id "$GOOD")" ]
refused "manifest signed by another key" "signature does not verify"
cp -p "$GOOD" "$T/evil/manifest.json"
printf 'X' | dd of="$T/evil/${EFILES[1]}" bs=1 seek=10 conv=notrunc status=none
check "the genuine manifest is accepted (a damaged delta: the full file instead)" mirror_once
check "the node said it fell back to the full file" grep -q 'delta not usable; fetching the full snapshot' "$T/tamper.out"
restore
check "the tamper node now knows zz.tamper" waitfor 1 on tamper getent passwd zz.tamper
LIVE=$(node_sum tamper)
cp -p "$T/old-manifest.json" "$T/evil/manifest.json"
mirror_once
expect_eq "replayed older manifest: mirror --once exits 3" 3 "$?"
expect_eq "replayed older manifest: live snapshot unchanged" "$LIVE" "$(node_sum tamper)"
check "replayed older manifest: zz.tamper still there" waitfor 1 on tamper getent passwd zz.tamper
on tamper "$SYNCD" status > "$T/tamper-status.out" 2>&1
expect_eq "replayed older manifest: syncd status exits 1" 1 "$?"
check "replayed older manifest: the reason in syncd status" grep -q '^last error: .*refused: manifest serial .* is lower than' "$T/tamper-status.out"

# --- frozen -----------------------------------------------------------------------
# The tamper node is served the head's genuine manifest again and again (a
# copy of the publish directory nobody updates). Time passing is simulated:
# the node's record of when it first verified that signature moves back an
# hour (cache.db.mirror.json), not waiting.
cp -p "$GOOD" "$T/evil/manifest.json"
check "frozen copy: a fresh signature is unchanged (mirror --once exits 0)" mirror_once
on tamper "$SYNCD" status > "$T/frozen-status.out" 2>&1
expect_eq "frozen copy, fresh: syncd status exits 0" 0 "$?"
check "frozen copy, fresh: syncd status names the head it follows (source: mirror PATH)" \
  grep -q "^source: *mirror $T/evil (head serial $(jq -r .payload "$GOOD" | base64 -d | jq -r .serial);" "$T/frozen-status.out"
check "frozen copy, fresh: syncd status gives the signature's age and bound" \
  grep -qE '^signature: .*first verified .*\(([0-9]+s) ago\).*stale after 5m0s: fresh$' "$T/frozen-status.out"
on tamper bash -c 'f=/var/lib/scimbridge/cache.db.mirror.json
  jq --arg t "$(date -u -d "-1 hour" +%Y-%m-%dT%H:%M:%SZ)" ".signed_seen = \$t" "$f" > "$f.t" && mv "$f.t" "$f"'
mirror_once
expect_eq "frozen copy, an hour later: mirror --once exits 1 (stale, not unchanged)" 1 "$?"
check "frozen copy, an hour later: the reason names stale_after and the frozen copy" \
  grep -q 'stale: the newest valid signature from the head .* more than stale_after 5m0s: .*frozen copy' "$T/tamper.out"
on tamper "$SYNCD" status > "$T/frozen-status.out" 2>&1
expect_eq "frozen copy, an hour later: syncd status exits 1" 1 "$?"
check "frozen copy, an hour later: syncd status says STALE" grep -qE '^signature: .*\(1h0m[0-9]+s ago\).*STALE' "$T/frozen-status.out"
check "frozen copy, an hour later: syncd status --json: stale, signature age over an hour, result stale" \
  bash -c "nsenter --mount --target ${NODE_PID[tamper]} '$SYNCD' status --json | jq -e '.mirror.stale == true and .mirror.signature_age_seconds >= 3600 and .status.last_result == \"stale\"'"
expect_eq "frozen copy: the live file's mtime (what gates compare with max_age) is the frozen source_contact" \
  "$(date -u -d "$(jq -r .payload "$GOOD" | base64 -d | jq -r .source_contact)" +%s)" "$(on tamper stat -c %Y /var/lib/scimbridge/cache.db)"
# The head re-signs on its quiet polls (poll_interval 1s): wait until its
# manifest is newer than the frozen one before serving it.
check "the head re-signed its manifest since the frozen copy" \
  waitfor 30 bash -c "! cmp -s '$T/pub/manifest.json' '$GOOD'"
cp -p "$T/pub"/* "$T/evil/"
check "the head's current manifest makes the node fresh again" mirror_once
on tamper "$SYNCD" status > "$T/frozen-status.out" 2>&1
expect_eq "fresh again: syncd status exits 0" 0 "$?"

# --- stop -------------------------------------------------------------------------
kill -TERM "${NODE_PID[dir-a]}" "$HEAD_PID"
check "the head stops on SIGTERM" waitfor 10 bash -c "! kill -0 $HEAD_PID"
check "node http-b, its head gone: the next poll is recorded as failed" \
  waitfor 5 bash -c "nsenter --mount --target ${NODE_PID[http-b]} -- '$SYNCD' status --json | jq -e '.status.last_result == \"failed\"'"
on http-b "$SYNCD" status > "$T/status-down.out" 2>&1
expect_eq "node http-b, its head gone: syncd status exits 1" 1 "$?"
check "node http-b, its head gone: the reason in syncd status" grep -q '^last error: .*connection refused' "$T/status-down.out"
check "node http-b, its head gone: getent still answers from the live snapshot" waitfor 1 on http-b getent passwd zz.cluster
if grep -q 'level=error' "$T/head.log"; then bad "the head logged errors: $(grep 'level=error' "$T/head.log" | head -3)"; else ok "the head logged no errors"; fi
check "the head's log holds no token" bash -c "! grep -qF '$(cat "$T/token")' '$T/head.log'"

# --- rebuild, twoheads ------------------------------------------------------------
. "$ROOT/tests/cluster/heads.sh"

# --- slurm ------------------------------------------------------------------------
. "$ROOT/tests/cluster/slurm.sh"

summary
