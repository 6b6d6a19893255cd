#!/usr/bin/env bash
# tests/c/fuzz.sh: fuzz the C reader with libFuzzer (ASan + UBSan) for
# FUZZ_SECONDS (default 30; `make fuzz` gives 600), inputs up to
# FUZZ_MAX_LEN bytes (default 96 KiB: the pieced seed is 80 KiB). Seeds are gensnap
# snapshots with small pages plus a few broken files; the corpus grows in
# $BUILD/fuzz/corpus across runs and crashes land in $BUILD/fuzz/artifacts.
# Prints PASS:/FAIL: lines.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
. "$ROOT/tests/lib.sh" # READER_SRC: the reader's parts
secs=${FUZZ_SECONDS:-30}
out=$BUILD/fuzz
bin=$BUILD/tests/fuzz_reader
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts" "$BUILD/tests"

# The reader over the modules' private SQLite (uninstrumented, as the
# system one was: coverage is the reader's).
if ! clang -g -O1 -std=gnu11 -D_GNU_SOURCE -I"$ROOT/include" -I"$BUILD/sqlite" \
     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
     -o "$bin" "$ROOT/tests/c/fuzz_reader.c" "${READER_SRC[@]}" "$BUILD/sqlite/sqlite3.o" -lpthread; then
  echo "FAIL: fuzz: cannot build the libFuzzer harness (clang, libclang-rt-14-dev)"; exit 1
fi

seeds=$out/seeds
PAGE_SIZE=512 "$ROOT/tests/c/gensnap.sh" 5 3 "$seeds/small.db" 3
PAGE_SIZE=512 "$ROOT/tests/c/gensnap.sh" 12 4 "$seeds/medium.db" 8
# Schema version 3: g00001's 140 members (1,119 bytes) are NULL in
# groups.members and in member pieces in the index (the fifth partition).
PAGE_SIZE=512 "$ROOT/tests/c/gensnap.sh" 140 1 "$seeds/pieced.db" 140
PAGE_SIZE=512 SCHEMA_VERSION=4 "$ROOT/tests/c/gensnap.sh" 3 2 "$seeds/v4.db" 2
PAGE_SIZE=512 SCHEMA_VERSION=99 "$ROOT/tests/c/gensnap.sh" 3 2 "$seeds/v99.db" 2
head -c 1024 "$seeds/small.db" > "$seeds/truncated.db"
printf 'SQLite format 3\0' > "$seeds/header.db"

log=$out/fuzz.log
t0=$SECONDS
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=${FUZZ_MAX_LEN:-98304} \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
  "$out/corpus" "$seeds" > "$log" 2>&1
rc=$?
runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
# The seeds must reach the lookups: an input the reader refuses before
# SQLite (its file in a world-writable directory, as /tmp is, stopped
# every input at the path check: cov 121) fuzzes nothing. The seeds alone
# cover over 500 counters.
if [ "$rc" -eq 0 ] && [ "${cov#cov: }" -lt 400 ] 2>/dev/null; then
  echo "FAIL: fuzz: only ${cov:-no coverage} after $((SECONDS - t0)) s: the seeds do not reach the lookups (see $log)"
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "PASS: fuzz: ${runs:-?} inputs in $((SECONDS - t0)) s, no crash, leak or hang (${cov:-cov ?}, corpus $(ls "$out/corpus" | wc -l) files)"
else
  echo "FAIL: fuzz: libFuzzer exit $rc after $((SECONDS - t0)) s; see $log and $out/artifacts/"
  grep -E 'ERROR|SUMMARY|artifact' "$log" | head -10
  exit 1
fi
