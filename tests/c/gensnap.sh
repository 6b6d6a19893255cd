#!/usr/bin/env bash
# gensnap.sh USERS GROUPS OUT [MEMBERS_BIG]: a synthetic snapshot built from
# syncd/snapshot/schema.sql (the real schema, not a copy), for the reader's
# tests, the benchmark and the swap test.
#
#   users   u000001.. uid 100000+i, primary gid one of the groups,
#           every 97th user disabled (active=0), one secondary group each (not g00001)
#   groups  g00001.. gid 200000+j
#   g00001  has MEMBERS_BIG members (default 1000: u000001..)
#   u000001 is in 50 groups (g00001..g00050)
#   ssh keys for the first 10 users (1 or 2 each), Slurm associations for
#   the first 10 users (u000002's "acct2" blocked)
#   meta    schema_version, serial, created_at, source, counts
#
# Environment: SERIAL (meta serial, default 1), VARIANT (appended to every
# GECOS, so two snapshots can be told apart), SCHEMA_VERSION (default: the
# user_version schema.sql sets, the reader's; another value builds a
# snapshot of a version the reader must refuse), PAGE_SIZE (SQLite
# page size, default 4096; the fuzzer's seeds use 512 to stay small),
# INDEX (1: add the NSS index as syncd's writer does, the default; 0: none),
# PRIVATE (1: every user also gets a private group, gid 100000+i named
# as the user, as its primary group; the GROUPS groups are then project
# groups only; default 0: the primary gid is one of the GROUPS groups).
# The file is built next to OUT and renamed over it, as syncd does.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 USERS GROUPS OUT [MEMBERS_BIG]" >&2; exit 64; }
users=$1 groups=$2 out=$3 big=${4:-1000}
root=$(cd "$(dirname "$0")/../.." && pwd)
schema=$root/syncd/snapshot/schema.sql
derive=$root/syncd/snapshot/derive.sql
version=$(sed -n 's/^PRAGMA user_version = \([0-9]*\);.*/\1/p' "$schema")
[ "$users" -ge 1 ] && [ "$groups" -ge 1 ] || { echo "gensnap: need >= 1 user and group" >&2; exit 64; }

tmp=$(mktemp "$(dirname "$out")/.gensnap.XXXXXX")
trap 'rm -f "$tmp"' EXIT

{
  echo "PRAGMA page_size = ${PAGE_SIZE:-4096}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
  cat "$schema"
  echo "BEGIN;"
  awk -v U="$users" -v G="$groups" -v BIG="$big" -v SERIAL="${SERIAL:-1}" \
      -v VARIANT="${VARIANT:-}" -v SV="${SCHEMA_VERSION:-$version}" \
      -v PRIV="${PRIVATE:-0}" -v NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)" '
  function uname(i) { return sprintf("u%06d", i) }
  BEGIN {
    tag = VARIANT == "" ? "" : " " VARIANT
    for (j = 1; j <= G; j++)
      printf "INSERT INTO groups (gid, name, scim_id) VALUES (%d,%s,%s);\n", 200000 + j,
        "'\''" sprintf("g%05d", j) "'\''", "'\''gid-" j "'\''"
    for (i = 1; i <= U && PRIV == 1; i++)
      printf "INSERT INTO groups (gid, name, scim_id) VALUES (%d,%s,%s);\n", 100000 + i,
        "'\''" uname(i) "'\''", "'\''pgid-" i "'\''"
    for (i = 1; i <= U; i++) {
      printf "INSERT INTO users VALUES (%d,%s,%d,%s,%s,%s,%d,%s);\n",
        100000 + i, "'\''" uname(i) "'\''", PRIV == 1 ? 100000 + i : 200000 + ((i - 1) % G) + 1,
        "'\''User " i tag "'\''", "'\''/home/" uname(i) "'\''",
        "'\''/bin/bash'\''", (i % 97 == 0) ? 0 : 1, "'\''uid-" i "'\''"
      printf "INSERT OR IGNORE INTO memberships VALUES (%d,%s);\n",
        200000 + (G > 1 ? 2 + (i * 7) % (G - 1) : 1), "'\''" uname(i) "'\''"
    }
    for (i = 1; i <= BIG && i <= U; i++)
      printf "INSERT OR IGNORE INTO memberships VALUES (%d,%s);\n",
        200001, "'\''" uname(i) "'\''"
    for (j = 1; j <= 50 && j <= G; j++)
      printf "INSERT OR IGNORE INTO memberships VALUES (%d,%s);\n",
        200000 + j, "'\''" uname(1) "'\''"
    nkeys = 0; nassoc = 0
    for (i = 1; i <= 10 && i <= U; i++) {
      for (k = 1; k <= 1 + i % 2; k++) {
        printf "INSERT INTO ssh_keys VALUES (%s,%d,%s);\n", "'\''" uname(i) "'\''", k,
          "'\''ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" sprintf("%08d%04d", i, k) " " uname(i) "@test" k "'\''"
        nkeys++
      }
      printf "INSERT INTO slurm_associations VALUES (%s,%s,%s,%s,1,0);\n",
        "'\''" uname(i) "'\''", "'\''acct1'\''", "'\''normal,high'\''", "'\''normal'\''"
      nassoc++
      if (i % 2 == 0) {
        printf "INSERT INTO slurm_associations VALUES (%s,%s,%s,%s,0,%d);\n",
          "'\''" uname(i) "'\''", "'\''acct2'\''", "'\''normal'\''", "'\''normal'\''", i == 2
        nassoc++
      }
    }
    printf "INSERT INTO meta VALUES ('\''schema_version'\'','\''%s'\'');\n", SV
    printf "INSERT INTO meta VALUES ('\''serial'\'','\''%s'\'');\n", SERIAL
    printf "INSERT INTO meta VALUES ('\''created_at'\'','\''%s'\'');\n", NOW
    printf "INSERT INTO meta VALUES ('\''source'\'','\''gensnap'\'');\n"
    printf "INSERT INTO meta VALUES ('\''users'\'','\''%d'\'');\n", U
    printf "INSERT INTO meta VALUES ('\''groups'\'','\''%d'\'');\n", G + (PRIV == 1 ? U : 0)
    printf "INSERT INTO meta VALUES ('\''ssh_keys'\'','\''%d'\'');\n", nkeys
    printf "INSERT INTO meta VALUES ('\''associations'\'','\''%d'\'');\n", nassoc
  }'
  # groups.members as syncd writes it: member names, comma-separated, in
  # name order (the subquery's ORDER BY orders group_concat in SQLite).
  echo "UPDATE groups SET members = coalesce((SELECT group_concat(user_name, ',') FROM
          (SELECT user_name FROM memberships m WHERE m.gid = groups.gid ORDER BY user_name)), '');"
  # Schema version 3 (syncd/snapshot/write.go): a list of more than 1,000
  # bytes is NULL, its memberships rows are the list (the index pieces it).
  [ "${SCHEMA_VERSION:-$version}" -ge 3 ] && echo "UPDATE groups SET members = NULL WHERE length(members) > 1000;"
  echo "INSERT INTO meta SELECT 'memberships', count(*) FROM memberships;"
  cat "$derive" # user_groups, as syncd writes it
  echo "COMMIT;"
} | sqlite3 -bail "$tmp" >/dev/null

# The NSS index, as syncd's writer adds it (INDEX=0: a file without one,
# read through SQL only, as older writers made them).
if [ "${INDEX:-1}" = 1 ]; then
  "${BUILD:-$root/build}/scim-nssindex" "$tmp" || { echo "gensnap: scim-nssindex failed (make all builds it)" >&2; exit 1; }
fi
chmod 0644 "$tmp"
mv -f "$tmp" "$out"
trap - EXIT
