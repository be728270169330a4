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
#   and those of helpers/s3common.bash (s3_fault, s3_curl, s3_keys, ...),
#   shared with helpers/rgw.bash (radosgw), which offers the same names

# shellcheck source=s3common.bash
source "$LAKE_SRC/tests/bats/helpers/s3common.bash"

S3RVER="$LAKE_SRC/tests/node_modules/s3rver/bin/s3rver.js"
S3_BUCKET=lake-test
S3_KEY=S3RVER S3_SECRET=S3RVER
S3_PIDS=

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
  s3_use_bucket
}

s3_kill() {
  kill -9 "$S3_PID" 2>/dev/null || true
  wait "$S3_PID" 2>/dev/null || true
}

s3_restart() {
  _s3_launch
  export AWS_ENDPOINT_URL=$S3_ENDPOINT
}

s3_stop() {
  s3_stop_pids
}
