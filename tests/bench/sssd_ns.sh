#!/usr/bin/env bash
# sssd_ns.sh SSSD_ROOT WORK CMD...: runs CMD with SSSD answering, all inside
# the caller's private mount namespace (run it under tests/lib.sh scim_ns,
# whose stage holds sssd.conf in etc/sssd and SSSD's libraries in its lib
# overlay). Nothing is installed on the host and nothing of the host's
# changes: SSSD's programs come from Debian's packages unpacked into
# SSSD_ROOT (sssd_setup.sh), its state (/var/lib/sss, /var/log/sssd,
# /run) lives in WORK and tmpfs, and sssd stops when CMD ends.
set -euo pipefail
R=$1 W=$2; shift 2
mkdir -p "$W/up/lib" "$W/wk/lib" "$W/up/log" "$W/wk/log"
mount -t overlay sss-libexec -o "lowerdir=$R/usr/libexec:/usr/libexec" /usr/libexec
mount -t overlay sss-share -o "lowerdir=$R/usr/share:/usr/share" /usr/share
mount -t overlay sss-varlib -o "lowerdir=/var/lib,upperdir=$W/up/lib,workdir=$W/wk/lib" /var/lib
mount -t overlay sss-varlog -o "lowerdir=/var/log,upperdir=$W/up/log,workdir=$W/wk/log" /var/log
mount -t tmpfs sss-run /run
mkdir -p /var/lib/sss/db /var/lib/sss/mc /var/lib/sss/pipes/private /var/lib/sss/pubconf \
  /var/lib/sss/gpo_cache /var/log/sssd
# The cache and the memory-cache files in memory: no fsync per entry.
mount -t tmpfs sss-db /var/lib/sss/db
mount -t tmpfs sss-mc /var/lib/sss/mc
"$R/usr/sbin/sssd" -i --logger=stderr > "$W/sssd.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S /var/lib/sss/pipes/nss ] && break; sleep 0.1; done
if [ ! -S /var/lib/sss/pipes/nss ]; then
  echo "sssd_ns: sssd did not start (log: $W/sssd.log)" >&2; tail -5 "$W/sssd.log" >&2
  kill "$spid" 2>/dev/null; exit 1
fi
rc=0
"$@" || rc=$?
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null || true
exit "$rc"
