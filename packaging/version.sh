#!/bin/sh
# Prints the version of this tree, in Debian's order (dpkg --compare-versions):
#   - HEAD tagged vX.Y.Z:                X.Y.Z
#   - after a tag vX.Y.Z:                X.Y.Z+git<commit time>.<hash>  (above X.Y.Z, below the next tag)
#   - before any tag:                    0.1.0~git<commit time>.<hash>  (below a first tag v0.1.0, which
#                                        is then an upgrade, not a downgrade)
#   - no git (a tarball):                0~unknown                      (below every build above: a build
#                                        of unknown date never shadows a dated one)
# <commit time> is UTC, YYYYMMDDhhmmss, so untagged builds sort by date
# (git describe's bare hashes and counts did not). ".dirty" marks
# uncommitted changes.
cd "$(dirname "$0")/.." || exit 1
if ! git rev-parse --verify -q HEAD > /dev/null 2>&1; then
  echo 0~unknown
  exit 0
fi
if t=$(git describe --tags --exact-match 2> /dev/null); then
  v=${t#v}
else
  d=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
  base=$(git describe --tags --abbrev=0 2> /dev/null)
  if [ -n "$base" ]; then
    v="${base#v}+git$d.$(git rev-parse --short=7 HEAD)"
  else
    v="0.1.0~git$d.$(git rev-parse --short=7 HEAD)"
  fi
fi
git diff --quiet HEAD -- 2> /dev/null || v="$v.dirty"
echo "$v"
