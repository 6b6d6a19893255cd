#!/bin/sh
# Prints the version of this tree: the tag (v1.2.3 -> 1.2.3) when HEAD is
# tagged, else <last tag, or 0.1.0>+git<commit time, UTC, YYYYMMDDhhmmss>.
# <short hash>, so that versions of untagged builds sort by date: apt
# never sees a newer tree as a downgrade (git describe's bare hashes and
# counts did not sort). ".dirty" marks uncommitted changes.
cd "$(dirname "$0")/.." || exit 1
if ! git rev-parse --verify -q HEAD > /dev/null 2>&1; then
  echo 0.1.0+unknown
  exit 0
fi
if t=$(git describe --tags --exact-match 2> /dev/null); then
  v=${t#v}
else
  base=$(git describe --tags --abbrev=0 2> /dev/null)
  base=${base#v}
  [ -n "$base" ] || base=0.1.0
  d=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
  v="$base+git$d.$(git rev-parse --short=7 HEAD)"
fi
git diff --quiet HEAD -- 2> /dev/null || v="$v.dirty"
echo "$v"
