#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# liblake's proof on a real object store (issue 31, part 5): the example
# program (examples/roundtrip.c, built against <lake.h> and liblake.so.0)
# puts a multipart-sized file into an S3 stage on radosgw and reads it
# back verified,
#  - as a keyless client of lake-metasrv (no S3 keys in its environment:
#    the server vends presigned URLs), with no object byte passing through
#    lake-metasrv: its request-body counter grows by far less than the
#    object, and its request and answer sizes are capped at 64 KiB;
#  - embedded, with the S3 keys: the same multipart upload, direct;
#  - embedded with the default local stage, where the size needs nothing
#    of multipart.
# The object is multipart on radosgw: its ETag ends in "-2".  And a put
# from a FIFO stopped by lake_interrupt once its first part is uploaded,
# while it waits for more input, aborts its multipart upload.
#
# The size: the library puts with the default part size, 8 MiB
# (lib/stage/stage.h, STAGE_PART_DEFAULT; lake_put_fd has no part size of
# its own), so 8 MiB + 1 byte is the smallest input of two parts.
#
# Each test runs the program through roundtrip_proof below, which says
# what a round trip is here: the seed's (roundtrip seed NS.T FILE): put
# FILE and print its FILE value (line 1), insert a row holding it into
# docs.scans (created when absent), query the row back by bound
# parameters, decode its FILE column, read the object through it
# verified and compare, "read back N bytes: the same" (line 2), "seed: OK
# SIZE SHA256" (line 3).

load helpers/common
load helpers/rgw
load helpers/metasrv

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  s3_start
  [ -n "${AWS_ENDPOINT_URL:-}" ] || export AWS_ENDPOINT_URL=$S3_ENDPOINT
  BUILD=${LAKE_BIN%/bin}
  RT=$BUILD/examples/roundtrip
  [ -x "$RT" ] || fail "$RT is not built (make)"
  SIZE=$((8 * MIB + 1))
  head -c "$SIZE" /dev/urandom >"$T/scan.bin"
}

teardown() {
  metasrv_stop "$T/srv" 2>/dev/null || true
  s3_stop
  common_teardown
}

# roundtrip_proof FILE: the example's round trip of FILE, run as a test
# runs a command (status, output, lines, stderr); then its FILE value is
# $FV and, in an S3 stage, the object's key $KEY; the table's row holds $FV.
roundtrip_proof() {
  run --separate-stderr "$RT" seed docs.scans "$1"
  assert_success
  assert_equal "$(untraced_stderr)" ""
  assert_line --index 1 "read back $(stat -c %s "$1") bytes: the same"
  assert_line --index 2 "seed: OK $(stat -c %s "$1") $(sha256sum <"$1" | cut -d' ' -f1)"
  FV=${lines[0]}
  # the row lake-query reads holds the same FILE value
  row=$(LAKE_TRACE="" lake-query -f jsonl -c "SELECT f FROM docs.scans") || fail "lake-query: exit $?"
  assert_equal "$(jq -c .f <<<"$row")" "$(jq -c . <<<"$FV")"
  assert_equal "$(json_field size "$FV")" "$(stat -c %s "$1")"
  assert_equal "$(json_field sha256 "$FV")" "$(sha256sum <"$1" | cut -d' ' -f1)"
  KEY=$(json_field location "$FV")
  KEY=${KEY#"s3://$S3_BUCKET/"}
}

# The ETag radosgw gives the object at $KEY (HEAD, with the test's keys).
etag_of() {
  s3_curl -I "$S3_ENDPOINT/$S3_BUCKET/$KEY" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: *//p' | tr -d '"'
}

# lake-metasrv's count of request-body bytes received (GET /v1/metrics).
metasrv_body_bytes() {
  metasrv_curl "$T/srv/admin.token" "$METASRV_URL/v1/metrics" |
    awk '$1 == "lake_metasrv_request_body_bytes_total" { print $2 }'
}

@test "keyless, through lake-metasrv: 8 MiB + 1 byte put as two parts through vended URLs and read back verified; no object byte through the server" {
  # the server starts with the S3 keys in its environment; then the
  # client's loses them (as tests/bats/s3-vended.bats)
  metasrv_init "$T/srv" "s3://$S3_BUCKET/stage"
  # the largest request body it takes, and the largest answer the client
  # reads, both far below the object
  metasrv_start "$T/srv" 0 --max-body 65536
  metasrv_use "$T/srv"
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 LAKE_STAGE
  export LAKE_MAX_RESPONSE=65536 LAKE_TRACE=1
  if env | grep -qE '^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)='; then fail "the client has S3 keys"; fi
  before=$(metasrv_body_bytes)
  [ -n "$before" ] || fail "no lake_metasrv_request_body_bytes_total in the server's metrics"

  roundtrip_proof "$T/scan.bin"
  [[ $(json_field location "$FV") == "s3://$S3_BUCKET/stage/files/"* ]] || fail "not in the server's stage: $FV"
  # two parts, each through a URL the server signed, then the upload completed
  assert_equal "$(count_requests PUT 'partNumber=')" 2
  grep -q '^trace: source upload_begin' <<<"$stderr" || fail "no vended upload: $stderr"
  grep -q '^trace: source upload_complete' <<<"$stderr" || fail "no upload_complete: $stderr"
  grep -q '^trace: source presign_get' <<<"$stderr" || fail "the read asked for no URL: $stderr"
  if grep -q 'X-Amz-Signature' <<<"$stderr"; then fail "a signature in the trace"; fi
  # what the server received, all requests together, is a few KiB of JSON
  after=$(metasrv_body_bytes)
  echo "# lake-metasrv received $((after - before)) request-body bytes for a $SIZE-byte object" >&3
  [ $((after - before)) -lt 65536 ] || fail "lake-metasrv received $((after - before)) bytes for a $SIZE-byte object"
  # multipart on radosgw
  [[ $(etag_of) == *-2 ]] || fail "not a 2-part object: ETag $(etag_of)"
  # and lake-get, keyless too, reads the same bytes
  run_to "$T/back" lake-get "$FV"
  assert_equal "exit $status" "exit 0"
  cmp "$T/scan.bin" "$T/back"
}

@test "embedded, with the S3 keys: the same file put as two parts straight to radosgw and read back verified" {
  export LAKE_TRACE=1
  roundtrip_proof "$T/scan.bin"
  [[ $(json_field location "$FV") == "s3://$S3_BUCKET/stage/files/"* ]] || fail "not in the S3 stage: $FV"
  assert_equal "$(count_requests PUT 'partNumber=')" 2
  [[ $(etag_of) == *-2 ]] || fail "not a 2-part object: ETag $(etag_of)"
  run_to "$T/back" lake-get "$FV"
  assert_equal "exit $status" "exit 0"
  cmp "$T/scan.bin" "$T/back"
}

@test "embedded default (the local stage): the same file round trips as one object, nothing of multipart needed" {
  unset LAKE_STAGE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL
  roundtrip_proof "$T/scan.bin"
  assert_equal "$stderr" ""
  [[ $(json_field location "$FV") == "file://$STAGE/files/"* ]] || fail "not in the default stage: $FV"
  assert_equal "$(stage_objects | wc -l)" 1
  cmp "$T/scan.bin" "$(stage_objects)"
}

@test "embedded, with the S3 keys: lake_interrupt once the first part is uploaded, while the put waits for more input, aborts the upload: status 1, code interrupted, no object, no upload left open" {
  export LAKE_TRACE=1
  mkfifo "$T/fifo"
  # held open here (read-write: no wait for a reader) so that the put
  # sees no end after the bytes written (fd 7: bats's own is 3)
  exec 7<>"$T/fifo"
  "$RT" "$T/fifo" >"$T/out" 2>"$T/err" &
  local pid=$! rc=0 up="" i
  # the FIFO open: roundtrip's SIGUSR1 handler is installed
  fd_open_wait "$pid" "$T/fifo" "$T/err"
  # 8 MiB + 1 byte: one whole part, and one byte of the next
  cat "$T/scan.bin" >&7 &
  local writer=$!
  # the first part uploaded: in the upload's part listing (ListParts)
  for ((i = 0; i < 1200; i++)); do
    up=$(s3_uploads stage/)
    if [ -n "$up" ] && s3_curl "$S3_ENDPOINT/$S3_BUCKET/${up% *}?uploadId=${up#* }" |
      grep -q '<PartNumber>1</PartNumber>'; then break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ "$i" -eq 1200 ] || ! kill -0 "$pid" 2>/dev/null; then
    kill "$pid" "$writer" 2>/dev/null || true
    fail "no first part listed (upload '$up'): $(cat "$T/err")"
  fi
  # the writer done (the last byte fits in the FIFO), and the put waits
  # for more (in poll(2), with lake_interrupt's wake-up)
  wait "$writer"
  read_wait "$pid" "$T/err"
  kill -USR1 "$pid"
  wait "$pid" || rc=$?
  exec 7>&-
  assert_equal "exit $rc" "exit 1"
  stderr=$(cat "$T/err")
  assert_equal "$(untraced_stderr)" "roundtrip: fifo: interrupted (interrupted)"
  assert_equal "$(cat "$T/out")" ""
  assert_equal "$(count_requests PUT 'partNumber=1[^0-9]')" 1
  assert_equal "$(count_requests PUT 'partNumber=2[^0-9]')" 0
  # the upload aborted, nothing stored
  assert_equal "$(s3_uploads '')" ""
  assert_no_s3_objects
}
