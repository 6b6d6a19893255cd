#!/usr/bin/env bash
# make demo: the main job on the bundled SCIM fixture, changing no system file.
#
# Starts build/scim-testserver with tests/scimserver/testdata/sample.json on
# 127.0.0.1, runs `syncd sync --once` into a temporary folder, and shows
# what a node then answers for a sample user: getent and id (in a private
# mount namespace whose nsswitch.conf lists scim), the SSH keys sshd would
# accept, what sbatch would be told by spank_scim, and `syncd status`.
# DEMO_USER picks the user (default alice); KEEP=1 keeps the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
export ROOT=$PWD BUILD=${BUILD:-$PWD/build}
. tests/lib.sh
USER_=${DEMO_USER:-alice}

[ "$(id -u)" = 0 ] || { echo "make demo needs root (it uses a private mount namespace)"; exit 1; }

T=$(mktemp -d /tmp/scimbridge-demo.XXXXXX)
chmod 0755 "$T"
SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "(kept $T)"; else rm -rf "$T"; fi
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

step "1. The identity provider: the bundled SCIM fixture on loopback"
(umask 077; head -c 24 /dev/urandom | base64 > "$T/token")
"$BUILD/scim-testserver" -fixture tests/scimserver/testdata/sample.json -token-file "$T/token" \
  > "$T/url" 2> "$T/server.log" &
SRV=$!
for _ in $(seq 50); do [ -s "$T/url" ] && break; sleep 0.1; done
URL=$(head -n1 "$T/url")
[ -n "$URL" ] || { cat "$T/server.log"; exit 1; }
echo "SCIM 2.0 server: $URL (11 users, 4 groups; some of them bad on purpose)"

cat > "$T/syncd.toml" <<CONF
# The demo's syncd config: root-only, like the real one.
base_url    = "$URL"
token_file  = "$T/token"
preset      = "posix"
cache_path  = "$T/cache.db"
status_path = "$T/status.json"
posix_groups = ["slurm-users", "slurm-sudo"]
max_retries = 1
CONF
chmod 0600 "$T/syncd.toml"
syncd() { "$BUILD/syncd" --config "$T/syncd.toml" "$@"; }

step "2. syncd: fetch every page, validate every record, commit one snapshot"
show syncd sync --once
syncd sync --once || true

stage_new "$T/stage" "$T/cache.db"
ns() { scim_ns "$T/stage" "$@"; }

step "3. NSS: the node answers from the snapshot (no network in any lookup)"
for cmd in "getent passwd $USER_" "getent group slurm-users" "getent initgroups $USER_" "id $USER_" "getent passwd carol"; do
  show "$cmd"; ns $cmd || echo "(exit $?)"
done

step "4. SSH: what sshd's AuthorizedKeysCommand returns for $USER_"
show "scim-keys --cache $T/cache.db --allow-groups slurm-users,slurm-sudo $USER_"
ns "$BUILD/scim-keys" --cache "$T/cache.db" --allow-groups slurm-users,slurm-sudo "$USER_" | cut -c1-80

step "5. SPANK: what sbatch would say (no Slurm here, so no associations yet)"
for u in "$USER_" carol; do
  show "sbatch --wrap id   # as $u"
  ns "$BUILD/spank_host" "$BUILD/spank_scim.so" "$u" "cache=$T/cache.db" || true
done

step "6. syncd status (any user may run it)"
show syncd status
syncd status || true

step "7. The source goes down: lookups keep working from the last good snapshot"
kill "$SRV"; wait "$SRV" 2>/dev/null || true; SRV=
show syncd sync --once
syncd sync --once 2>&1 | tail -n 3 || true
show "getent passwd $USER_"
ns getent passwd "$USER_"
echo
echo "Nothing outside $T was changed."
