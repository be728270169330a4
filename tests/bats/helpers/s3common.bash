# SPDX-License-Identifier: BSD-2-Clause
# The S3 test helpers that do not depend on how the server is run: loaded
# by helpers/rgw.bash (radosgw), which sets S3_ENDPOINT, S3_PORT,
# S3_BUCKET, S3_KEY and S3_SECRET in s3_start.
#
#   s3_fault RULES      put the fault proxy (s3fault.js) in front of the server
#   s3_stop_pids        stop every process recorded in S3_PIDS, and wait
#   s3_curl ARGS...     curl --aws-sigv4 with the test credentials
#   s3_keys             the keys in $S3_BUCKET, one per line, sorted
#   s3_path LOCATION    the endpoint path of an s3:// location
#   count_requests METHOD RE   trace lines of METHOD on a target matching RE
#   s3_use_bucket       create $S3_BUCKET and point lake at it (AWS_*, LAKE_STAGE)
#   put_until_parts BYTES PARTS ARGS...   lake-put ARGS on a FIFO (fd 4) until
#                       the trace shows PARTS parts stored; wait_parts N,
#                       wait_put, put_cleanup (for teardown)
#   put_garbage N       N empty objects stage/files/2026/01/gNNNNN, no table's
#   traced_key, assert_traced_error, assert_no_s3_objects, closed_port

# shellcheck disable=SC2034 # for the suites
MIB=$((1024 * 1024))
PUT=

# Create the bucket $S3_BUCKET on $S3_ENDPOINT and point lake at it, as the
# test user: AWS_* and LAKE_STAGE=s3://$S3_BUCKET/stage.
s3_use_bucket() {
  unset AWS_ENDPOINT_URL_S3 AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_CA_BUNDLE AWS_PROFILE
  export AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET \
         AWS_REGION=us-east-1 LAKE_STAGE=s3://$S3_BUCKET/stage
  s3_curl -X PUT "$S3_ENDPOINT/$S3_BUCKET" -o /dev/null || fail "cannot create bucket $S3_BUCKET"
}

# Wait until the trace of the put in the background ($T/put.err) shows N
# parts stored (bounded at 60 s only against a hang).
wait_parts() {
  poll_until lines_at_least "$T/put.err" "$1" 'partNumber=[0-9]+&.* -> 200$' ||
    fail "$1 parts were never stored: $(cat "$T/put.err")"
}

# Start lake-put ARGS in the background on the FIFO $T/fifo, held open on
# fd 4, write BYTES random bytes into it and wait until PARTS parts are
# stored.  Sets PUT; its output goes to $T/put.out and $T/put.err.  A
# background job starts with SIGINT ignored (which lake-put respects): it
# gets the default disposition back, as from an interactive shell.
put_until_parts() {
  local bytes=$1 parts=$2
  shift 2
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' \
    lake-put "$@" <"$T/fifo" >"$T/put.out" 2>"$T/put.err" 3>&- &
  PUT=$!
  exec 4>"$T/fifo"
  head -c "$bytes" /dev/urandom >&4
  wait_parts "$parts"
}

# Wait for the put; sets status and stderr.
wait_put() {
  status=0
  wait "$PUT" || status=$?
  PUT=
  stderr=$(cat "$T/put.err")
}

# In teardown: a put still running is killed, the FIFO closed.
put_cleanup() {
  if [ -n "$PUT" ]; then
    kill -9 "$PUT" 2>/dev/null || true
    wait "$PUT" 2>/dev/null || true
  fi
  exec 4>&- 2>/dev/null || true
}

# Wait until file $1 has a line "... listening on ...:PORT"; echo PORT.
_s3_port_of() {
  local port
  for _ in $(seq 100); do
    port=$(sed -nE 's/.*[Ll]istening on [^ ]*:([0-9]+).*/\1/p' "$1" 2>/dev/null | head -n 1)
    if [ -n "$port" ]; then
      printf '%s\n' "$port"
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# s3_fault RULES [RELEASE_FILE]: start the fault proxy between lake and the
# server (see s3fault.js for RULES; a "hold" rule holds its request until
# RELEASE_FILE exists) and point AWS_ENDPOINT_URL at it.  Its log of
# requests is $T/fault.err (an earlier proxy's is moved aside).
s3_fault() {
  [ -f "$T/fault.err" ] && mv -f "$T/fault.err" "$T/fault.err.old"
  node "$LAKE_SRC/tests/bats/helpers/s3fault.js" "$S3_PORT" "$1" ${2:+"$2"} >"$T/fault.out" 2>"$T/fault.err" 3>&- &
  S3_PIDS="$S3_PIDS $!"
  local port
  port=$(_s3_port_of "$T/fault.out") || fail "the fault proxy did not start: $(cat "$T/fault.err")"
  export AWS_ENDPOINT_URL=http://127.0.0.1:$port
}

# Stop every process recorded in S3_PIDS (servers, fault proxies) and
# wait for it.
s3_stop_pids() {
  local p
  for p in $S3_PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $S3_PIDS; do wait "$p" 2>/dev/null || true; done
  S3_PIDS=
}

# curl, signing with SigV4 as the test credentials ($S3_KEY, $S3_SECRET);
# the payload hash is left unsigned (both servers accept that; the signing
# itself is proved in tests/unit/test_s3sign.c).
s3_curl() {
  curl -sS --fail --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_KEY:$S3_SECRET" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

s3_path() {
  printf '/%s\n' "${1#s3://}"
}

# s3_list URL: the answer of a listing request, or, when the request
# fails, a line no listing can hold, so that a comparison with the
# expected keys (none, say) fails instead of passing on an empty answer.
s3_list() {
  s3_curl "$1" || echo "LISTING FAILED: $1"
}

# N empty objects stage/files/2026/01/gNNNNN put straight into the bucket
# (curl, 8 at once on reused connections): garbage to gc, referenced by
# no table.
put_garbage() {
  local n=$1 i
  : >"$T/empty"
  for ((i = 0; i < n; i++)); do
    printf 'url = "%s/%s/stage/files/2026/01/g%05d"\nupload-file = "%s"\noutput = /dev/null\n' \
      "$S3_ENDPOINT" "$S3_BUCKET" "$i" "$T/empty"
  done >"$T/put.curl"
  s3_curl --no-progress-meter -Z --parallel-max 8 -K "$T/put.curl" || fail "could not put $n objects"
}

# Every key in the bucket, asked of the server directly (ListObjects).
s3_keys() {
  local page
  page=$(s3_list "$S3_ENDPOINT/$S3_BUCKET/")
  [[ $page != "LISTING FAILED"* ]] || { echo "$page"; return 1; }
  grep -oE '<Key>[^<]*</Key>' <<<"$page" | sed -E 's/<\/?Key>//g' | sort
}

# No object at all in the bucket (each test starts with an empty one).
assert_no_s3_objects() {
  local keys
  keys=$(s3_keys)
  if [ -n "$keys" ]; then
    fail "expected no objects in $S3_BUCKET, found: $keys"
  fi
}

# Nothing stored by the failed put traced in $stderr: its key is not found
# (HEAD: radosgw waits long on a GET error) and the bucket is empty.
assert_nothing_stored() {
  local key
  key=$(traced_key)
  [ -n "$key" ] || fail "no request in the trace: $stderr"
  run s3_curl -o /dev/null -I "$S3_ENDPOINT/$S3_BUCKET/$key"
  assert_failure
  assert_output --partial "404"
  assert_no_s3_objects
}

# The trace lines in $stderr of METHOD on a target (s3://BUCKET/key?query)
# that matches the extended regular expression RE, counted.
count_requests() {
  grep -cE "^trace: stage $1 s3://$S3_BUCKET/[^ ]*$2" <<<"$stderr" || true
}

# The key a put worked on, from its trace lines in $stderr (the location
# is printed only on success).
traced_key() {
  grep -oE "^trace: stage (PUT|POST) s3://$S3_BUCKET/[^? ]+" <<<"$stderr" | head -n 1 |
    sed -E "s|^trace: stage [A-Z]+ s3://$S3_BUCKET/||"
}

# The diagnostics of a failure beside its trace lines: exactly one
# non-trace line on stderr, starting "PROG: " and containing each TEXT.
assert_traced_error() {
  local prog=$1 code=$2 text lines
  shift 2
  assert_equal "exit $status" "exit $code"
  lines=$(untraced_stderr)
  if [ "$(grep -c . <<<"$lines")" -ne 1 ]; then
    fail "expected exactly one diagnostic line, got: $lines"
  fi
  if [[ $lines != "$prog: "* ]]; then
    fail "stderr does not start with '$prog: ': $lines"
  fi
  for text in "$@"; do
    if [[ $lines != *"$text"* ]]; then
      fail "stderr does not mention '$text': $lines"
    fi
  done
}

# A TCP port on loopback that nothing listens on.
closed_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{const p=s.address().port;s.close(()=>console.log(p))})'
}
