# The S3 test helpers that do not depend on which server is the peer:
# loaded by helpers/s3.bash (s3rver) and helpers/rgw.bash (radosgw), which
# set S3_ENDPOINT, S3_PORT, S3_BUCKET, S3_KEY and S3_SECRET in s3_start.
#
#   s3_fault RULES      put the fault proxy (s3fault.js) in front of the server
#   s3_stop_pids        stop every process recorded in S3_PIDS, and wait
#   s3_curl ARGS...     curl --aws-sigv4 with the test credentials
#   s3_keys             the keys in $S3_BUCKET, one per line, sorted
#   s3_path LOCATION    the endpoint path of an s3:// location
#   count_requests METHOD RE   trace lines of METHOD on a target matching RE
#   traced_key, assert_traced_error, assert_no_s3_objects, closed_port

MIB=$((1024 * 1024))

# Wait until file $1 has a line "... listening on ...:PORT"; echo PORT.
_s3_port_of() {
  local i port
  for i in $(seq 100); do
    port=$(sed -nE 's/.*[Ll]istening on [^ ]*:([0-9]+).*/\1/p' "$1" 2>/dev/null | head -n 1)
    if [ -n "$port" ]; then
      printf '%s\n' "$port"
      return 0
    fi
    sleep 0.1
  done
  return 1
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

# Every key in the bucket, asked of the server directly (ListObjects).
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
