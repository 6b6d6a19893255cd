#!/usr/bin/env bash
# sssd_setup.sh DIR: Debian's sssd-proxy and the libraries it needs,
# downloaded with apt-get download and unpacked into DIR/root (dpkg-deb -x:
# no maintainer script runs, nothing is installed, the host's
# nsswitch.conf and PAM stacks stay as they are; installing the packages
# would add sss to both). Reused when DIR/root exists. Exit 0 ready, 1 not
# available (reason on stderr).
set -euo pipefail
dir=$1
[ -x "$dir/root/usr/sbin/sssd" ] && exit 0
command -v apt-get >/dev/null || { echo "sssd_setup: no apt-get" >&2; exit 1; }
mkdir -p "$dir/debs"
# Everything apt would install for sssd-proxy on this machine, then the
# client library; the list comes from apt's own resolver (a simulation).
pkgs=$(apt-get install -s --no-install-recommends sssd-proxy libnss-sss 2>/dev/null | awk '/^Inst / {print $2}')
[ -n "$pkgs" ] || { echo "sssd_setup: apt cannot resolve sssd-proxy" >&2; exit 1; }
# shellcheck disable=SC2086
(cd "$dir/debs" && apt-get download $pkgs >/dev/null 2>&1) || { echo "sssd_setup: apt-get download failed" >&2; exit 1; }
rm -rf "$dir/root.tmp"; mkdir -p "$dir/root.tmp"
for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root.tmp"; done
# Merged /usr: the client library and a few others ship in /lib.
if [ -d "$dir/root.tmp/lib" ]; then
  mkdir -p "$dir/root.tmp/usr/lib"
  cp -a "$dir/root.tmp/lib/." "$dir/root.tmp/usr/lib/"
fi
mv "$dir/root.tmp" "$dir/root"
[ -x "$dir/root/usr/sbin/sssd" ]
