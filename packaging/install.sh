#!/usr/bin/env bash
# packaging/install.sh install|uninstall|list DESTDIR BUILD VAR=DIR...
#
# The one list of what scimbridge installs, used by `make install`,
# `make uninstall` and `make deb` (which installs into a staging root and
# packs exactly that), so the three can never disagree. The Makefile
# passes the directories (NSSDIR, PAMDIR, SLURM_PLUGINDIR, UNITDIR,
# PAMCONFDIR, SYSCONFDIR, STATEDIR, SBINDIR, BINDIR, MANDIR, DOCDIR).
#
# Nothing here edits configuration: nsswitch.conf, PAM stacks, sshd_config
# and plugstack.conf stay the admin's to change.
set -euo pipefail

action=$1 destdir=$2 build=$3
shift 3
for kv in "$@"; do
  case $kv in
    NSSDIR=*|PAMDIR=*|SLURM_PLUGINDIR=*|UNITDIR=*|PAMCONFDIR=*|SYSCONFDIR=*|STATEDIR=*|SBINDIR=*|BINDIR=*|MANDIR=*|DOCDIR=*)
      declare "$kv" ;;
    *) echo "install.sh: unknown setting $kv" >&2; exit 2 ;;
  esac
done
: "${NSSDIR:?} ${PAMDIR:?} ${SLURM_PLUGINDIR:?} ${UNITDIR:?} ${PAMCONFDIR:?} ${SYSCONFDIR:?}"
: "${STATEDIR:?} ${SBINDIR:?} ${BINDIR:?} ${MANDIR:?} ${DOCDIR:?}"
pkg=$(cd "$(dirname "$0")" && pwd)

# Owner flags only when root: an unprivileged DESTDIR build (make deb as a
# user) gets root ownership from dpkg-deb --root-owner-group instead.
own=()
[ "$(id -u)" = 0 ] && own=(-o root -g root)

# files prints "MODE SOURCE DEST" for every installed file. SOURCE "-"
# means generated (see put).
files() {
  echo "0644 $build/libnss_scim.so.2 $NSSDIR/libnss_scim.so.2"
  # The NSS module's private SQLite, loaded from beside the module on its
  # first call that needs SQL (c/sqlite_api.h); outside ldconfig's dirs.
  echo "0644 $build/scimbridge/libscimbridge-sqlite.so $NSSDIR/scimbridge/libscimbridge-sqlite.so"
  echo "0644 $build/pam_scim.so $PAMDIR/pam_scim.so"
  echo "0644 $build/spank_scim.so $SLURM_PLUGINDIR/spank_scim.so"
  echo "0755 $build/syncd $SBINDIR/syncd"
  # sshd runs AuthorizedKeysCommand only if it and every parent directory
  # are root-owned and not writable by group or others.
  echo "0755 $build/scim-keys $SBINDIR/scim-keys"
  echo "0755 $build/mylimits $BINDIR/mylimits"
  # The snapshot query tool (tests/c/scimlookup.c): what the modules see,
  # through the same reader. Users may run it: the snapshot is world-readable.
  echo "0755 $build/scimlookup $BINDIR/scim-lookup"
  echo "0644 $pkg/scimbridge-syncd.service $UNITDIR/scimbridge-syncd.service"
  echo "0644 $pkg/pam-config $PAMCONFDIR/scimbridge"
  echo "0644 $pkg/copyright $DOCDIR/copyright"
  echo "0644 $pkg/changelog $DOCDIR/changelog.gz"
  # An example, not a config file: under doc/, so a package upgrade always
  # refreshes it and it is never a conffile the admin is asked about.
  echo "0644 $pkg/syncd.toml.example $DOCDIR/examples/syncd.toml.example"
  # Completion for syncd (commands and flags from `syncd help`),
  # scim-keys and mylimits; bash-completion loads it by command name.
  local compdir
  compdir=$(dirname "$MANDIR")/bash-completion/completions
  echo "0644 $pkg/completion/syncd $compdir/syncd"
  echo "0644 $pkg/completion/syncd $compdir/scim-keys"
  echo "0644 $pkg/completion/syncd $compdir/mylimits"
  echo "0644 $pkg/completion/syncd $compdir/scim-lookup"
  local m sec
  for m in "$pkg"/man/*.[1578]; do
    sec=${m##*.}
    echo "0644 $m $MANDIR/man$sec/$(basename "$m").gz"
  done
}

# Directories that belong to scimbridge even when empty: the config
# directory (root's syncd.toml, reader.conf, tokens go here) and the
# cache directory, world-readable because every process reads the cache.
dirs() {
  echo "0755 $SYSCONFDIR/scimbridge"
  echo "0755 $STATEDIR"
}

put() {
  local mode=$1 src=$2 dst=$destdir$3
  install -d -m 0755 "$(dirname "$dst")"
  case $dst in
    *.gz)
      # Man pages and the changelog compressed the way Debian wants them
      # (-n: no name or timestamp, so the package is reproducible).
      gzip -9nc "$src" > "$dst.tmp"
      chmod "$mode" "$dst.tmp"
      [ ${#own[@]} -eq 0 ] || chown root:root "$dst.tmp"
      mv -f "$dst.tmp" "$dst" ;;
    *.service)
      sed -e "s|@SBINDIR@|$SBINDIR|g" -e "s|@STATEDIR@|$STATEDIR|g" \
          -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" "$src" > "$dst.tmp"
      chmod "$mode" "$dst.tmp"
      [ ${#own[@]} -eq 0 ] || chown root:root "$dst.tmp"
      mv -f "$dst.tmp" "$dst" ;;
    *)
      install "${own[@]}" -m "$mode" "$src" "$dst" ;;
  esac
}

case $action in
  install)
    files | while read -r mode src dst; do
      [ -f "$src" ] || { echo "install.sh: $src missing (run make first)" >&2; exit 1; }
      put "$mode" "$src" "$dst"
    done
    dirs | while read -r mode d; do install "${own[@]}" -d -m "$mode" "$destdir$d"; done
    ;;
  uninstall)
    files | while read -r _ _ dst; do rm -f "$destdir$dst"; done
    # Directories go only when empty: the config and the cache stay.
    for d in "$NSSDIR/scimbridge" "$DOCDIR/examples" "$DOCDIR" "$SYSCONFDIR/scimbridge" "$STATEDIR"; do
      rmdir "$destdir$d" 2>/dev/null || true
    done
    ;;
  list)
    files | while read -r _ _ dst; do echo "$dst"; done
    dirs | while read -r _ d; do echo "$d/"; done
    ;;
  *) echo "usage: install.sh install|uninstall|list DESTDIR BUILD VAR=DIR..." >&2; exit 2 ;;
esac
