#!/usr/bin/env bash
# Installs the Debian packages that building and testing need, only if
# missing. Needs root (as on the CI machine); never starts a service
# (Debian's policy-rc.d here refuses, and the tests start their own).
set -euo pipefail
# build: what `make` and `make demo` need; all (default): also every
# service and tool the tests start or call.
BUILD_PKGS=(gcc make pkg-config libsqlite3-dev sqlite3 libpam0g-dev libslurm-dev util-linux)
TEST_PKGS=(
  libnss-cache valgrind clang libclang-rt-14-dev llvm
  slurmctld slurmd slurm-client slurmdbd munge mariadb-server
  openssh-server openssh-client pamtester sudo iproute2 jq curl nginx-light
  dpkg-dev fakeroot python3 lintian
  glusterfs-server glusterfs-client
)
case "${1:-all}" in
  build) PKGS=("${BUILD_PKGS[@]}") ;;
  all) PKGS=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  *) echo "usage: $0 [build|all]" >&2; exit 64 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The syncd suite's independent SCIM server (tests/scimmy) runs on Node.js
# with packages from npm: Debian's nodejs and npm unless a node and an npm
# are already there (a nodejs from elsewhere ships its own npm, which
# Debian's npm package would conflict with).
if [ "${1:-all}" = all ] && ! { command -v node && command -v npm; } > /dev/null; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi
go mod download
