# tests/syncd/http.sh: sourced by tests/syncd/run.sh (its helpers, $T,
# $TOKEN, $SYNCD, start_server). A hostile SCIM server, real syncd:
#
#   echo      401/403 bodies echoing the Authorization header: the sync
#             fails naming the status; the token is in no file syncd wrote,
#             not in its output, not in status.json
#   redirect  to another host (Location carrying the token) and from https
#             to http on the same host: refused naming
#             allowed_redirect_origins; the target gets no request
#   caps      endless cursor, ignored count: fail within seconds naming
#             max_users / max_response_bytes; the live snapshot stays
#   cmdline   no process has the token on its command line

H=$T/http
mkdir -p "$H/state"
# The token and its random tail (a scrubbed echo keeps none of it), as
# grep patterns in a file: on grep's command line they would be in
# /proc/*/cmdline themselves.
(umask 077; printf '%s\n%s\n' "$TOKEN" "${TOKEN: -12}" > "$H/token.pat")
# noleak DESC FILE...: neither the token nor its tail is in the files.
noleak() {
  local d=$1
  shift
  if grep -rqFf "$H/token.pat" "$@"; then
    bad "$d"
    grep -rnFf "$H/token.pat" "$@" | head -n3
  else
    ok "$d"
  fi
}
# A second, plain server: the target of refused redirects, which must
# never see a request.
start_server -generate 10,2 -seed 3
TARGET=$URL
TARGET_ADMIN=$ADMIN
target_requests() { curl -fsS "$TARGET_ADMIN/_admin/counters" | jq -r .total; }
start_server -generate 300,20 -seed 5
HURL=$URL
HADMIN=$ADMIN
hconfig() {
  printf '%s\n' \
    "base_url = \"$1\"" \
    "token_file = \"$T/token\"" \
    'preset = "posix"' \
    "cache_path = \"$H/state/cache.db\"" \
    "status_path = \"$H/state/status.json\"" \
    'page_size = 50' \
    'max_retries = 0' \
    'request_timeout = "5s"' \
    'max_users = 1000' \
    'max_response_bytes = 100000' \
    'group_members = "per-group"' \
    'log_level = "debug"' > "$H/syncd.toml"
  [ -z "${2:-}" ] || echo "$2" >> "$H/syncd.toml"
  chmod 0600 "$H/syncd.toml"
}
hconfig "$HURL"
hsync() { "$SYNCD" --config "$H/syncd.toml" sync --once > "$H/$1.out" 2>&1; }
hserial() { sqlite3 "file:$H/state/cache.db?mode=ro&immutable=1" "select value from meta where key='serial'" 2> /dev/null; }
faults() { curl -fsS -X PUT "$HADMIN/_admin/faults" -d "$1" > /dev/null; }

hsync first
expect_eq "http: a well-behaved server commits (serial 1)" "0 1" "$? $(hserial)"

# hostile NAME FAULTS REASON: the sync fails naming REASON, the live
# snapshot stays, and no trace of the token is anywhere syncd wrote.
hostile() {
  local name=$1 f=$2 reason=$3 t0=$SECONDS
  faults "$f"
  hsync "$name"
  expect_eq "http $name: sync exits 1 within 20 s" "1 yes" "$? $([ $((SECONDS - t0)) -le 20 ] && echo yes)"
  check "http $name: the error names '$reason'" grep -qF -- "$reason" "$H/$name.out"
  check "http $name: status.json names '$reason'" bash -c "jq -r .last_error '$H/state/status.json' | grep -qF -- '$reason'"
  expect_eq "http $name: the live snapshot stays (serial 1)" 1 "$(hserial)"
  noleak "http $name: no token in the state dir or syncd's output" "$H/state" "$H/$name.out"
}
hostile echo401 '{"echoAuthStatus":401}' "HTTP 401"
hostile echo403 '{"echoAuthStatus":403,"echoAuthPlain":true}' "HTTP 403"
hostile echo500 '{"echoAuthStatus":500}' "HTTP 500"
other=${TARGET%/scim/v2}
other=${other/127.0.0.1/localhost}
hostile cross-host "{\"redirectTo\":\"$other\",\"redirectEchoToken\":true}" "allowed_redirect_origins"
check "http cross-host: the error names the origin to list" grep -qF "list \"${other%:*}:${other##*:}\"" "$H/cross-host.out"
expect_eq "http cross-host: the other host got no request" 0 "$(target_requests)"
hostile endless-cursor '{"endlessCursor":true}' "max_users = 1000"
hostile ignored-count '{"ignoreCount":true}' "max_response_bytes = 100000"
check "http ignored-count: the error says count was ignored" grep -qF "count=50" "$H/ignored-count.out"
hostile repeated-page '{"repeatPageForever":true}' "pages in a row brought no record not seen before"
faults '{}'

# https to http on the same host (127.0.0.1): never followed, whatever
# allowed_redirect_origins says.
TLSD=$ROOT/tests/scimserver/testdata/tls
: > "$H/tls.url"
"$BUILD/scim-testserver" -token-file "$T/token" -generate 10,2 -tls-cert "$TLSD/server.pem" -tls-key "$TLSD/server.key" \
  -faults-json "{\"redirectTo\":\"${TARGET%/scim/v2}\"}" > "$H/tls.url" 2> "$H/tls.log" &
PIDS+=("$!")
waitfor 10 test -s "$H/tls.url"
hconfig "$(head -n1 "$H/tls.url")" "ca_file = \"$TLSD/ca.pem\"
allowed_redirect_origins = [\"${TARGET%/scim/v2}\"]"
hostile https-to-http '{}' "leaves https for http"
expect_eq "http https-to-http: the http server got no request" 0 "$(target_requests)"

# The daemon against the echoing server: its log holds no token either,
# and no process has the token on its command line.
hconfig "$HURL" 'poll_interval = "1s"
poll_jitter = "100ms"'
faults '{"echoAuthStatus":401}'
"$SYNCD" --config "$H/syncd.toml" run > "$H/daemon.log" 2>&1 &
HD=$!
PIDS+=("$HD")
check "http daemon: a failed poll is logged naming HTTP 401" waitfor 15 grep -q "sync failed.*HTTP 401" "$H/daemon.log"
check "http daemon: status.json names HTTP 401" bash -c "jq -r .last_error '$H/state/status.json' | grep -q 'HTTP 401'"
if grep -lFf "$H/token.pat" /proc/[0-9]*/cmdline 2> /dev/null | grep -q .; then
  bad "http: the token is on a command line: $(grep -lFf "$H/token.pat" /proc/[0-9]*/cmdline 2> /dev/null | head -n3)"
else
  ok "http: no process has the token in /proc/*/cmdline (syncd, the servers)"
fi
kill -TERM "$HD"
wait "$HD" 2> /dev/null
noleak "http daemon: the log holds no token" "$H/daemon.log"
faults '{}'
