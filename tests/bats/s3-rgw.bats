#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The S3 promises that an emulator cannot show, against a real S3 server: Ceph
# radosgw (helpers/rgw.bash), one throw-away cluster for the file, a bucket
# per test.  Authentication (a wrong secret, an unknown key: 77, the cause
# named, no key material); abort on every failure, seen through
# ListMultipartUploads (nothing left after lake-put returns, no object under
# the key, the original error reported); a SIGKILLed upload left for
# lake-catalog gc, which removes it; a PUT cut short stores nothing; and
# radosgw's quirks (an empty ETag in the Complete answer, an empty
# <Message> in errors) do not break lake.

load helpers/common
load helpers/rgw

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  s3_start
  export LAKE_TRACE=1
  mkdir -p "$T/in" "$T/out"
}

teardown() {
  put_cleanup
  s3_stop
  common_teardown
}

# The message names no key material: neither the access key nor the secret
# of the test user, nor the wrong ones tried.
assert_no_key_material() {
  local k
  for k in "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$@"; do
    [[ $stderr != *"$k"* ]] || fail "key material '$k' in: $stderr"
  done
}

# --- authentication --------------------------------------------------------

@test "rgw auth: a wrong secret is 77 for put and get, naming SignatureDoesNotMatch, no key material" {
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_equal "exit $status" "exit 0"
  loc=$(json_field location "$(cat "$T/out/v")")
  export AWS_SECRET_ACCESS_KEY=not-the-secret-of-lake
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 77 "access denied" "HTTP 403 SignatureDoesNotMatch"
  assert_no_key_material not-the-secret-of-lake
  assert_equal "$(trace_count stage)" 1
  run_to "$T/out/got" lake-get "$loc"
  assert_traced_error lake-get 77 "$loc: access denied" "HTTP 403 SignatureDoesNotMatch"
  assert_no_key_material not-the-secret-of-lake
  assert_equal "$(wc -c <"$T/out/got")" 0
  assert_equal "$(s3_keys | wc -l)" 1
}

@test "rgw auth: an unknown access key is 77 for put and get, naming InvalidAccessKeyId, no key material" {
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  loc=$(json_field location "$(cat "$T/out/v")")
  export AWS_ACCESS_KEY_ID=NOSUCHACCESSKEY
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 77 "access denied" "HTTP 403 InvalidAccessKeyId"
  assert_no_key_material NOSUCHACCESSKEY
  run_to "$T/out/got" lake-get "$loc"
  assert_traced_error lake-get 77 "$loc: access denied" "HTTP 403 InvalidAccessKeyId"
  assert_no_key_material NOSUCHACCESSKEY
  assert_equal "$(s3_keys | wc -l)" 1
}

@test "rgw auth: a clock an hour off is 77 for put and get, naming RequestTimeTooSkewed" {
  # faketime is not installed: helpers/skew-clock.c moves time(), where
  # libcurl takes the date it signs (an ASan build must allow the preload)
  cc -shared -fPIC -o "$T/skew-clock.so" "$LAKE_SRC/tests/bats/helpers/skew-clock.c"
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_equal "exit $status" "exit 0"
  loc=$(json_field location "$(cat "$T/out/v")")
  local skew
  for skew in -3600 3600; do
    LD_PRELOAD=$T/skew-clock.so LAKE_TEST_CLOCK_SKEW=$skew \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 run_to "$T/out/v" lake-put "$T/in/x"
    assert_traced_error lake-put 77 "access denied" "HTTP 403 RequestTimeTooSkewed"
    assert_no_key_material
    LD_PRELOAD=$T/skew-clock.so LAKE_TEST_CLOCK_SKEW=$skew \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 run_to "$T/out/got" lake-get "$loc"
    assert_traced_error lake-get 77 "$loc: access denied" "HTTP 403 RequestTimeTooSkewed"
    assert_equal "$(wc -c <"$T/out/got")" 0
  done
  assert_equal "$(s3_keys | wc -l)" 1
}

@test "rgw quirks: an S3 error with an empty <Message> names the code alone, with no dangling colon" {
  printf 'x' >"$T/in/x"
  LAKE_STAGE=s3://no-such-bucket-$RANDOM/stage run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 66 "does not exist" "HTTP 404 NoSuchBucket"
  [[ $(untraced_stderr) != *": )"* ]] || fail "an empty message printed as ': ': $stderr"
  export AWS_ACCESS_KEY_ID=NOSUCHACCESSKEY
  run_to "$T/out/v" lake-put "$T/in/x"
  [[ $(untraced_stderr) == *"(HTTP 403 InvalidAccessKeyId)" ]] || fail "not ending with the code: $stderr"
}

# --- abort, proven through ListMultipartUploads ----------------------------

# reader_error_after PARTS: lake-put --part-size 5MiB reads a socket that
# gives it PARTS parts and a MiB, then a read error (ECONNRESET) once the
# trace shows the PARTS parts stored.  Sets status and stderr.
reader_error_after() {
  local parts=$1 bytes=$(($1 * 5 * MIB + MIB))
  rm -f "$T/port" "$T/go"
  python3 "$LAKE_SRC/tests/bats/helpers/reset-reader.py" "$T/port" "$bytes" "$T/go" 3>&- &
  S3_PIDS="$S3_PIDS $!"
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  lake-put --part-size 5MiB </dev/tcp/127.0.0.1/"$(cat "$T/port")" >"$T/put.out" 2>"$T/put.err" 3>&- &
  PUT=$!
  wait_parts "$parts"
  touch "$T/go"
  wait_put
}

@test "rgw abort: a read error after 0, 1 and 3 parts: the read error reported, no upload, no object" {
  local parts
  for parts in 0 1 3; do
    reader_error_after "$parts"
    assert_traced_error lake-put 1 "stdin: Connection reset by peer"
    [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
    assert_equal "$(count_requests POST '\?uploadId=')" 0
    if [ "$parts" = 0 ]; then
      assert_equal "$(trace_count stage)" 0
    else
      assert_equal "$(count_requests PUT '\?partNumber=[^ ]+ bytes=[0-9]+ -> 200')" "$parts"
      assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
      assert_aborted
    fi
    assert_equal "$(s3_uploads)" ""
    assert_no_s3_objects
  done
}

@test "rgw abort: input shorter than --size before the first part is full: no request, no upload, no object, the original error" {
  put_until_parts 0 0 --part-size 5MiB --size $((12 * MIB))
  head -c $((MIB)) /dev/urandom >&4
  exec 4>&-
  wait_put
  assert_traced_error lake-put 65 "stdin: $((MIB)) bytes, not the stated $((12 * MIB))"
  [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
  # no upload was begun for less than a part: no request at all
  assert_equal "$(trace_count stage)" 0
  assert_equal "$(s3_uploads)" ""
  assert_no_s3_objects
}

@test "rgw abort: input shorter than --size after 1 part and after 3 parts: no upload, no object, the original error" {
  local parts
  for parts in 1 3; do
    put_until_parts $((parts * 5 * MIB + MIB)) "$parts" --part-size 5MiB --size $((30 * MIB))
    exec 4>&-
    wait_put
    assert_traced_error lake-put 65 "stdin: $((parts * 5 * MIB + MIB)) bytes, not the stated $((30 * MIB))"
    [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
    assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
    assert_equal "$(count_requests POST '\?uploadId=')" 0
    assert_aborted
  done
}

@test "rgw abort: more input than --size is 65 at once: no upload, no object" {
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB --size $((10 * MIB)) "$T/in/data"
  assert_traced_error lake-put 65 "more than the stated $((10 * MIB)) bytes"
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_aborted
}

@test "rgw abort: a part answered 404 NoSuchUpload by the server (aborted behind lake's back): the original error, no upload, no object" {
  local key id
  put_until_parts $((6 * MIB)) 1 --part-size 5MiB
  read -r key id <<<"$(s3_uploads)"
  [ -n "$id" ] || fail "no upload listed while lake-put runs"
  s3_curl -X DELETE -o /dev/null "$S3_ENDPOINT/$S3_BUCKET/$key?uploadId=$id"
  # (lake-put stops reading at the 404, maybe before it has all of it: a
  # broken pipe here, as in s3-rgw-faults.bats)
  head -c $((5 * MIB)) /dev/urandom >&4 2>/dev/null || true
  exec 4>&-
  wait_put
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 404 NoSuchUpload"
  # lake's own abort is answered 404 NoSuchUpload too: the upload is gone,
  # which is what the abort is for, so no word of a failed abort
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 404')" 1
  [[ $(untraced_stderr) != *"aborting the upload failed"* ]] || fail "an abort called failed: $stderr"
  assert_equal "$(count_requests DELETE '\?uploadId=')" 1
  assert_aborted
}

@test "rgw abort: a part answered 400 (fault proxy in front of radosgw): no upload, no object" {
  s3_fault "PUT?partNumber=2:400:1"
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/data"
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 InvalidArgument"
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_aborted
}

@test "rgw abort: SIGTERM and SIGINT of lake-put after one part: no upload, no object, 'interrupted'" {
  local sig code
  for sig in TERM INT; do
    # put_until_parts gives lake-put the default disposition of SIGINT back
    put_until_parts $((6 * MIB)) 1 --part-size 5MiB
    assert_equal "$(s3_uploads | wc -l)" 1
    kill -"$sig" "$PUT"
    wait_put
    exec 4>&-
    code=$((128 + $(kill -l "$sig")))
    assert_traced_error lake-put "$code" "lake-put: interrupted"
    assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
    assert_aborted
  done
}

@test "rgw gc: a SIGKILLed multipart put leaves an upload; lake-catalog gc aborts it past the grace and leaves others alone" {
  local key id
  put_until_parts $((6 * MIB)) 1 --part-size 5MiB
  kill -KILL "$PUT"
  wait_put
  exec 4>&-
  assert_equal "exit $status" "exit 137"
  read -r key id <<<"$(s3_uploads)"
  [[ $key == stage/* ]] || fail "no upload left under the stage: $(s3_uploads)"
  # an upload outside the managed prefix, and a referenced object
  s3_curl -X POST -o /dev/null "$S3_ENDPOINT/$S3_BUCKET/elsewhere/k?uploads="
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, pdf FILE'
  echo kept >"$T/kept.txt"
  kept=$(lake-put --table docs.papers --column pdf --set title=kept "$T/kept.txt" 2>/dev/null | json_field location)

  # younger than the default grace (1 day): kept
  run --separate-stderr lake-catalog gc
  assert_success
  [[ $stderr != *"multipart upload"* ]] || fail "a young upload touched: $stderr"
  assert_equal "$(s3_uploads stage/ | wc -l)" 1
  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  [[ $stderr == *"1 multipart upload would be aborted"* ]] || fail "dry run: $stderr"
  [[ $stderr != *"does not list or abort multipart uploads"* ]] || fail "listing not seen: $stderr"
  assert_equal "$(s3_uploads stage/ | wc -l)" 1
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  [[ $stderr == *"; 1 multipart upload aborted"* ]] || fail "summary: $stderr"
  [[ $stderr == *"$key"* ]] || fail "the upload's key is not named: $stderr"
  assert_equal "$(s3_uploads stage/)" ""
  assert_equal "$(s3_uploads | cut -d' ' -f1)" "elsewhere/k"
  run --separate-stderr lake-get "$kept"
  assert_success
  assert_output kept
}

@test "rgw abort: radosgw killed after one part is 69 and says the abort failed; the upload is left for gc, which removes it" {
  put_until_parts $((6 * MIB)) 1 --part-size 5MiB
  s3_kill
  head -c $((5 * MIB)) /dev/urandom >&4 2>/dev/null || true # lake-put may stop reading first
  exec 4>&-
  wait_put
  assert_traced_error lake-put 69 "the object store is unreachable" "aborting the upload failed"
  assert_equal "$(count_requests POST '\?uploadId=')" 0
  s3_restart
  # the abort could not be sent: the upload is there, no object
  assert_equal "$(s3_uploads stage/ | wc -l)" 1
  assert_no_s3_objects
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  [[ $stderr == *"; 1 multipart upload aborted"* ]] || fail "summary: $stderr"
  assert_equal "$(s3_uploads)" ""
  assert_no_s3_objects
}

# --- integrity: the payload hash is signed ----------------------------------

@test "rgw integrity: a body changed on the way is refused by radosgw (XAmzContentSHA256Mismatch), single PUT and part" {
  # the proxy's change is invisible without a signed payload hash: an
  # unsigned PUT through it is stored, changed
  printf 'abcdef' >"$T/in/x"
  s3_fault "PUT:flip:1"
  s3_curl -T "$T/in/x" "$AWS_ENDPOINT_URL/$S3_BUCKET/unsigned" -o /dev/null
  s3_curl "$S3_ENDPOINT/$S3_BUCKET/unsigned" -o "$T/out/unsigned"
  assert_equal "$(wc -c <"$T/out/unsigned")" 6
  ! cmp -s "$T/in/x" "$T/out/unsigned" || fail "the proxy did not change the body"
  s3_curl -X DELETE "$S3_ENDPOINT/$S3_BUCKET/unsigned" -o /dev/null

  # lake signs the real SHA-256 of a single PUT: refused, nothing stored
  s3_fault "PUT:flip:1"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 XAmzContentSHA256Mismatch"
  assert_no_s3_objects

  # and of every part: the first, or the last, changed is refused, the
  # upload aborted
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  for part in 1 3; do
    s3_fault "PUT?partNumber=$part:flip:1"
    run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/data"
    assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 XAmzContentSHA256Mismatch"
    assert_equal "$(count_requests PUT "\\?partNumber=$part&[^ ]+ bytes=[0-9]+ -> 400")" 1
    assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
    assert_aborted
  done
}

# --- a PUT cut short -------------------------------------------------------

@test "rgw: a single PUT cut short (lake-put SIGKILLed while sending) stores nothing" {
  head -c $((96 * MIB)) /dev/urandom >"$T/in/data"
  lake-put --part-size 128MiB "$T/in/data" >"$T/put.out" 2>"$T/put.err" 3>&- &
  PUT=$!
  # the first connection to radosgw is the PUT's: kill while it sends
  for _ in $(seq 400); do
    ss -tnpH state established "( dport = :$RGW_PORT )" 2>/dev/null | grep -q "pid=$PUT," && break
    sleep 0.02
  done
  ss -tnpH state established "( dport = :$RGW_PORT )" | grep -q "pid=$PUT," || fail "lake-put never connected"
  kill -KILL "$PUT"
  wait_put
  assert_equal "exit $status" "exit 137"
  sleep 0.5
  assert_no_s3_objects
  assert_equal "$(s3_uploads)" ""
}

# --- the quirks ------------------------------------------------------------

@test "rgw quirks: a multipart put completes although the Complete answer's ETag is empty; its FILE value is right" {
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB --jobs 2 "$T/in/data"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(count_requests POST '\?uploadId=[^ ]+ bytes=[0-9]+ -> 200')" 1
  v=$(cat "$T/out/v")
  assert_equal "$(json_field size "$v")" $((11 * MIB))
  assert_equal "$(json_field sha256 "$v")" "$(sha_of "$T/in/data")"
  loc=$(json_field location "$v")
  assert_equal "$(s3_keys)" "${loc#s3://$S3_BUCKET/}"
  assert_equal "$(s3_uploads)" ""
  # radosgw itself has the object whole: a three-part ETag
  run s3_curl -I "$S3_ENDPOINT$(s3_path "$loc")"
  assert_output --regexp '[Ee][Tt]ag: "[0-9a-f]{32}-3"'
  run_to "$T/got" lake-get "$v"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/data" "$T/got"
  s3_curl "$S3_ENDPOINT$(s3_path "$loc")" -o "$T/curl.got"
  cmp "$T/in/data" "$T/curl.got"
}

# --- parallel ranged gets (lake-get --jobs) ----------------------------------

# put_object BYTES: BYTES random bytes in $T/in/data, put (5 MiB parts when
# more than one); the FILE value in V.
put_object() {
  head -c "$1" /dev/urandom >"$T/in/data"
  V=$(lake-put -q --part-size 5MiB --jobs 2 "$T/in/data" 2>/dev/null)
  [ -n "$V" ] || fail "lake-put failed"
}

@test "rgw get --jobs 3: 21 MiB + 3 bytes as five 5 MiB ranged GETs (206), every byte once in order; --jobs 1 is one GET (200) of the same bytes" {
  put_object $((21 * MIB + 3))
  run_to "$T/got" lake-get --jobs 3 --part-size 5MiB "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(count_requests GET '')" 5
  assert_equal "$(count_requests GET ' -> 206$')" 5
  cmp "$T/in/data" "$T/got"
  # the default (4 jobs of 8 MiB): three ranged GETs
  run_to "$T/got4" lake-get "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(count_requests GET ' -> 206$')" 3
  cmp "$T/in/data" "$T/got4"
  run_to "$T/got1" lake-get --jobs 1 --part-size 5MiB "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(count_requests GET '')" 1
  assert_equal "$(count_requests GET ' -> 200$')" 1
  cmp "$T/in/data" "$T/got1"
  # -o DIR: the same
  run_to "$T/o.log" lake-get --jobs 3 --part-size 5MiB -o "$T/out" "$V"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/data" "$T/out/data"
}

@test "rgw get --jobs: a wrong SHA-256 is refused with 65 and nothing under the final name; a wrong size is 65 before any byte, even with --no-verify" {
  put_object $((12 * MIB))
  bad=$(jq -c '.sha256 = ("0" * 64)' <<<"$V")
  run_to "$T/o.log" lake-get --jobs 4 --part-size 5MiB -o "$T/out" "$bad"
  assert_traced_error lake-get 65 "SHA-256 mismatch (expected $(printf '0%.0s' {1..64}), got $(sha_of "$T/in/data"))"
  assert_equal "$(count_requests GET ' -> 206$')" 3
  assert_equal "$(find "$T/out" -mindepth 1)" ""
  for size in $((12 * MIB + 1)) $((12 * MIB - 1)); do
    run_to "$T/got" lake-get --jobs 2 --part-size 5MiB --no-verify "$(jq -c --argjson s "$size" '.size = $s' <<<"$V")"
    assert_traced_error lake-get 65 "$((12 * MIB)) bytes in the stage, not $size"
    assert_equal "$(stat -c %s "$T/got")" 0
  done
}

@test "rgw get --jobs 4: an object smaller than one part and a zero-byte object are one GET each (200), right" {
  put_object $((3 * MIB))
  run_to "$T/got" lake-get --jobs 4 --part-size 5MiB "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(count_requests GET '')" 1
  assert_equal "$(count_requests GET ' -> 200$')" 1
  cmp "$T/in/data" "$T/got"
  : >"$T/in/empty"
  V=$(lake-put -q "$T/in/empty")
  assert_equal "$(json_field size "$V")" 0
  run_to "$T/got0" lake-get --jobs 4 --part-size 5MiB -o "$T/out" "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(count_requests GET ' -> 200$')" 1
  assert_equal "$(stat -c %s "$T/out/empty")" 0
}

@test "rgw get --jobs 2: a part cut off mid-answer is asked again from where it stopped, a part answered 500 again whole; every byte once, verified" {
  put_object $((15 * MIB))
  # the fault proxy (helpers/s3fault.js) cuts the first GET after half its
  # body and answers the next one 500; it logs each request's Range
  s3_fault 'GET:cut:1,GET:500:1'
  run_to "$T/got" lake-get --jobs 2 --part-size 5MiB "$V"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  cmp "$T/in/data" "$T/got"
  # five GETs: the three parts from their starts, one of the first two
  # again from its start (the 500), the other from past it (the cut)
  local starts="(0|$((5 * MIB))|$((10 * MIB)))"
  assert_equal "$(grep -cE '^GET .* range=bytes=' "$T/fault.err")" 5
  assert_equal "$(grep -cE "^GET .* range=bytes=$starts-" "$T/fault.err")" 4
  assert_equal "$(grep -cE "^GET .* range=bytes=[0-9]+-$((15 * MIB - 1)) " "$T/fault.err")" 1
  grep -qE "^GET .* -> forwarded range=bytes=[1-9][0-9]*-$((5 * MIB - 1)) |^GET .* -> forwarded range=bytes=[0-9]+-$((10 * MIB - 1)) " \
    <(grep -vE "range=bytes=$starts-" "$T/fault.err") || fail "no resumption: $(cat "$T/fault.err")"
}

@test "rgw query: a 12.6 MiB segment the scan waits for is read as two ranged GETs and verified; changed in the stage it is 65, nothing cached" {
  lake-catalog create-namespace t
  lake-catalog create t.b 'id INTEGER, b BLOB'
  lake-query -c "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
                 INSERT INTO t.b SELECT i, randomblob(65536) FROM n"
  run_to "$T/q" lake-query -c "SELECT count(*), sum(length(b)) FROM t.b WHERE id > 0"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(cat "$T/q")" "$(printf '200\t13107200')"
  assert_equal "$(count_requests GET ' -> 206$')" 2
  assert_equal "$(count_requests GET '')" 2
  # the same bytes but one, under the segment's key: refused, not cached
  local key
  key=$(grep -oE "^trace: stage GET s3://$S3_BUCKET/[^ ]+" <<<"$stderr" | head -n 1 | sed -E "s|^trace: stage GET s3://$S3_BUCKET/||")
  s3_curl "$S3_ENDPOINT/$S3_BUCKET/$key" -o "$T/seg"
  flip_byte "$T/seg" $((9 * MIB))
  s3_curl -T "$T/seg" "$S3_ENDPOINT/$S3_BUCKET/$key" -o /dev/null
  rm -rf "$XDG_CACHE_HOME/lake/segments"
  run_to "$T/q" lake-query -c "SELECT sum(length(b)) FROM t.b WHERE id > 0"
  assert_traced_error lake-query 65 "SHA-256 mismatch"
  assert_equal "$(count_requests GET ' -> 206$')" 2
  [ -d "$XDG_CACHE_HOME/lake/segments" ] || fail "no segment cache"
  assert_equal "$(find "$XDG_CACHE_HOME/lake/segments" -type f ! -name .lock)" ""
}

@test "rgw query: the same segment from a store that ignores Range (200, the whole object): read as one stream, verified, the answer right" {
  lake-catalog create-namespace t
  lake-catalog create t.b 'id INTEGER, b BLOB'
  lake-query -c "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
                 INSERT INTO t.b SELECT i, randomblob(65536) FROM n"
  rm -rf "$XDG_CACHE_HOME/lake/segments"
  s3_fault "GET:norange:100"
  run_to "$T/q" lake-query -c "SELECT count(*), sum(length(b)) FROM t.b WHERE id > 0"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(cat "$T/q")" "$(printf '200\t13107200')"
  grep -q ' -> norange range=bytes=' "$T/fault.err" || fail "no ranged GET: $(cat "$T/fault.err")"
}

@test "rgw get: --jobs and --part-size out of range are usage errors (64)" {
  for a in "--jobs 0" "--jobs 65" "--jobs x" "--part-size 4MiB" "--part-size 6GiB" "--part-size x"; do
    # shellcheck disable=SC2086 # $a is an option and its value
    run_to "$T/got" lake-get $a s3://nowhere/x
    assert_error lake-get 64 "${a%% *}: '${a#* }'"
  done
}
