#!/usr/bin/env bash
# tests/syncd/fuzz.sh: run syncd's Go fuzz targets (SCIM JSON decoding,
# validation, credential scrubbing) for GO_FUZZ_SECONDS each (default 60;
# `make fuzz` gives FUZZ_SECONDS/4). Their seed corpora also run in every `go test`. A
# failing input is written under the package's testdata/fuzz/ (commit it:
# it then runs as a regression test). Prints PASS:/FAIL: lines.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
secs=${GO_FUZZ_SECONDS:-60}
cd "$ROOT" || exit 1
fail=0
for t in ./syncd/source/scim:FuzzListPage ./syncd/validate:FuzzDirectory ./syncd/redact:FuzzString; do
  pkg=${t%%:*} name=${t##*:}
  log=$(mktemp /tmp/scim-gofuzz.XXXXXX)
  t0=$SECONDS
  # -fuzzminimizetime 0: minimising a new corpus entry when the time runs
  # out is reported as "context deadline exceeded", a false failure.
  if go test -tags=libsqlite3 -run '^$' -fuzz "^$name\$" -fuzztime "${secs}s" -fuzzminimizetime 0 "$pkg" > "$log" 2>&1; then
    execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
    echo "PASS: go fuzz $name: ${execs:-?} inputs in $((SECONDS - t0)) s, no failure"
  else
    echo "FAIL: go fuzz $name after $((SECONDS - t0)) s:"
    grep -vE '^fuzz: elapsed' "$log" | head -20
    fail=1
  fi
  rm -f "$log"
done
exit $fail
