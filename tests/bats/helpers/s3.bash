# A real S3 peer for the bats suites: s3rver, the npm package pinned by
# tests/package-lock.json (make deps installs it), on an ephemeral loopback
# port with a fresh data directory under $T; and an independent S3 client,
# curl --aws-sigv4.  Load after helpers/common and call s3_start in setup
# and s3_stop in teardown (before common_teardown).
#
#   s3_start            start s3rver, create the bucket $S3_BUCKET, and
#                       point lake at it: AWS_* and LAKE_STAGE=s3://$S3_BUCKET/stage
#   s3_stop             stop every server started here and wait for it
#   s3_kill             stop s3rver abruptly (SIGKILL), keeping its data
#   s3_restart          start s3rver again on the same data directory
#   s3_fault RULES      put the fault proxy (s3fault.js) in front of s3rver
#   s3_curl ARGS...     curl --aws-sigv4 with the test credentials
#   s3_keys             the keys in $S3_BUCKET, one per line, sorted
#   s3_path LOCATION    the endpoint path of an s3:// location
#   count_requests METHOD RE   trace lines of METHOD on a target matching RE

S3RVER="$LAKE_SRC/tests/node_modules/s3rver/bin/s3rver.js"
S3_BUCKET=lake-test
S3_PIDS=
# shellcheck disable=SC2034 # for the suites
MIB=$((1024 * 1024))

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

# Start s3rver on the data directory $S3_DIR; sets S3_PID and S3_PORT.
_s3_launch() {
  : >"$T/s3rver.out"
  # fd 3 is closed so that bats never waits on the server
  node "$S3RVER" -d "$S3_DIR" -a 127.0.0.1 -p 0 --silent >"$T/s3rver.out" 2>"$T/s3rver.err" 3>&- &
  S3_PID=$!
  S3_PIDS="$S3_PIDS $S3_PID"
  S3_PORT=$(_s3_port_of "$T/s3rver.out") ||
    fail "s3rver did not start: $(cat "$T/s3rver.err" "$T/s3rver.out")"
  S3_ENDPOINT=http://127.0.0.1:$S3_PORT
}

s3_start() {
  command -v node >/dev/null || fail "node is not installed"
  [ -f "$S3RVER" ] || fail "s3rver is not installed (make deps)"
  S3_DIR="$T/s3rver"
  mkdir -p "$S3_DIR"
  _s3_launch
  unset AWS_ENDPOINT_URL_S3 AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_CA_BUNDLE AWS_PROFILE
  export AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
         AWS_REGION=us-east-1 LAKE_STAGE=s3://$S3_BUCKET/stage
  s3_curl -X PUT "$S3_ENDPOINT/$S3_BUCKET" -o /dev/null || fail "cannot create bucket $S3_BUCKET"
}

s3_kill() {
  kill -9 "$S3_PID" 2>/dev/null || true
  wait "$S3_PID" 2>/dev/null || true
}

s3_restart() {
  _s3_launch
  export AWS_ENDPOINT_URL=$S3_ENDPOINT
}

# s3_fault RULES: start the fault proxy between lake and s3rver (see
# s3fault.js for RULES) and point AWS_ENDPOINT_URL at it.  Its log of
# requests is $T/fault.err (an earlier proxy's is moved aside).
s3_fault() {
  [ -f "$T/fault.err" ] && mv -f "$T/fault.err" "$T/fault.err.old"
  node "$LAKE_SRC/tests/bats/helpers/s3fault.js" "$S3_PORT" "$1" >"$T/fault.out" 2>"$T/fault.err" 3>&- &
  S3_PIDS="$S3_PIDS $!"
  local port
  port=$(_s3_port_of "$T/fault.out") || fail "the fault proxy did not start: $(cat "$T/fault.err")"
  export AWS_ENDPOINT_URL=http://127.0.0.1:$port
}

s3_stop() {
  local p
  for p in $S3_PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $S3_PIDS; do wait "$p" 2>/dev/null || true; done
  S3_PIDS=
}

# curl, signing with SigV4 as the test credentials; the payload hash is
# left unsigned (s3rver accepts that; the signing itself is proved in
# tests/unit/test_s3sign.c).
s3_curl() {
  curl -sS --fail --aws-sigv4 "aws:amz:us-east-1:s3" --user "S3RVER:S3RVER" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

s3_path() {
  printf '/%s\n' "${1#s3://}"
}

# Every key in the bucket, asked of s3rver directly (ListObjects).
s3_keys() {
  s3_curl "$S3_ENDPOINT/$S3_BUCKET/" | grep -oE '<Key>[^<]*</Key>' | sed -E 's/<\/?Key>//g' | sort
}

# No object at all in the bucket (each test starts with an empty one).
assert_no_s3_objects() {
  local keys
  keys=$(s3_keys)
  if [ -n "$keys" ]; then
    fail "expected no objects in $S3_BUCKET, found: $keys"
  fi
}

# The trace lines in $stderr of METHOD on a target (s3://BUCKET/key?query)
# that matches the extended regular expression RE, counted.
count_requests() {
  # shellcheck disable=SC2154 # $stderr is bats' (run --separate-stderr)
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
  # shellcheck disable=SC2154 # $status is bats' (run)
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
