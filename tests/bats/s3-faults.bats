#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Bad input and faults with an S3 stage (DESIGN §1, §4): the documented exit
# status, one line of diagnostics, and no object under the key after any
# failure; containment decided before any request; retries on 5xx,
# throttling and broken connections only; bounded memory.  Against radosgw
# (helpers/rgw.bash), with a fault-injecting proxy where S3 must misbehave.
# What s3-rgw.bats proves against radosgw (input shorter than --size after
# a part, SIGTERM and SIGINT after a part, the server killed after a part:
# the upload aborted or left for gc, nothing stored) is not repeated here.

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

# --- configuration and access ---------------------------------------------

@test "s3 faults: no credentials is a configuration error (78) before any request" {
  unset AWS_ACCESS_KEY_ID
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_error lake-put 78 "s3://$S3_BUCKET/stage: no S3 credentials" AWS_ACCESS_KEY_ID
  export AWS_ACCESS_KEY_ID=$S3_KEY
  unset AWS_SECRET_ACCESS_KEY
  run_to "$T/out/v" lake-get "s3://$S3_BUCKET/stage/files/2026/12/X"
  assert_error lake-get 78 "no S3 credentials" AWS_SECRET_ACCESS_KEY
  export AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_ENDPOINT_URL=ftp://127.0.0.1/
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_error lake-put 78 "AWS_ENDPOINT_URL 'ftp://127.0.0.1/' is not an http:// or https:// URL"
  export AWS_ENDPOINT_URL=$S3_ENDPOINT LAKE_STAGE=s3://$S3_BUCKET
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_error lake-put 78 "s3://$S3_BUCKET" "the prefix may not be empty"
  export LAKE_STAGE=s3://Not_A_Bucket/stage
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_error lake-put 78 "'Not_A_Bucket' is not a valid bucket name"
  assert_no_s3_objects
}

@test "s3 faults: an unknown bucket is 66, for put and get" {
  export LAKE_STAGE=s3://no-such-bucket/stage
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 66 "bucket 'no-such-bucket' does not exist" NoSuchBucket
  assert_equal "$(trace_count stage)" 1
  head -c $((6 * MIB)) /dev/urandom >"$T/in/big"
  run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/big"
  assert_traced_error lake-put 66 "bucket 'no-such-bucket' does not exist"
  run_to "$T/out/v" lake-get "s3://no-such-bucket/stage/files/2026/12/X"
  assert_traced_error lake-get 66 "bucket 'no-such-bucket' does not exist"
}

@test "s3 faults: a missing object is 66" {
  run_to "$T/out/v" lake-get "s3://$S3_BUCKET/stage/files/2026/12/01M8VNBFR0NF150KF9VD75661R"
  assert_traced_error lake-get 66 "s3://$S3_BUCKET/stage/files/2026/12/01M8VNBFR0NF150KF9VD75661R: no such object"
  assert_equal "$(trace_count stage)" 1
}

@test "s3 faults: access denied is 77, for put and get, never retried" {
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  loc=$(json_field location "$(cat "$T/out/v")")
  export AWS_ACCESS_KEY_ID=NOT-THE-KEY
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 77 "access denied" "HTTP 403 InvalidAccessKeyId"
  assert_equal "$(trace_count stage)" 1
  run_to "$T/out/v" lake-get "$loc"
  assert_traced_error lake-get 77 "$loc: access denied"
  assert_equal "$(trace_count stage)" 1
  assert_equal "$(s3_keys | wc -l)" 1
}

@test "s3 faults: an unreachable endpoint is 69 after retries" {
  AWS_ENDPOINT_URL=http://127.0.0.1:$(closed_port)
  export AWS_ENDPOINT_URL
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 69 "the object store is unreachable" "after 5 attempts"
  assert_equal "$(trace_count stage)" 5
  run_to "$T/out/v" lake-get "s3://$S3_BUCKET/stage/files/2026/12/X"
  assert_traced_error lake-get 69 "the object store is unreachable"
  assert_equal "$(trace_count stage)" 5
}

@test "s3 faults: a location outside the stage is 65 with no request at all" {
  local loc
  # nothing listens: a request would show as a trace line and a 69
  AWS_ENDPOINT_URL=http://127.0.0.1:$(closed_port)
  export AWS_ENDPOINT_URL
  for loc in "s3://$S3_BUCKET/stage2/x" "s3://$S3_BUCKET/stag/x" "s3://other-bucket/stage/x" \
             "s3://$S3_BUCKET/stage/../x" "s3://$S3_BUCKET/stage/%2e%2e/x" \
             "s3://$S3_BUCKET/stage/files/%2E%2E/%2e%2e/x" "s3://$S3_BUCKET/stage%2Fx" \
             "s3://$S3_BUCKET/stage/" "s3://$S3_BUCKET/stage" "s3://$S3_BUCKET/stage//x" \
             "s3://$S3_BUCKET/stage/x%00" "s3://$S3_BUCKET/stage/x?versionId=1" \
             "file:///etc/passwd" "https://$S3_BUCKET.s3.amazonaws.com/stage/x"; do
    run_to "$T/out/v" lake-get "$loc"
    assert_error lake-get 65 "$loc: outside the managed stage"
    # a FILE value and a line on stdin are refused the same way
    file_value='{"location":"'"$loc"'","size":1,"sha256":"'"$(printf x | sha256sum | cut -c1-64)"'"}'
    run_to "$T/out/v" lake-get "$file_value"
    assert_error lake-get 65 "outside the managed stage"
    run_to "$T/out/v" lake-get < <(printf '%s\n' "$file_value")
    assert_error lake-get 65 "outside the managed stage"
  done
  assert_equal "$(ls -A "$T/out")" "v"
}

@test "s3 faults: a part size below 5 MiB, or a bad --jobs, is a usage error (64)" {
  local p
  printf 'x' >"$T/in/x"
  for p in 5242879 4MiB 1M 0 -5MiB 5XB abc 5.5MiB "" 6GiB 99999999999999999999; do
    run_to "$T/out/v" lake-put --part-size "$p" "$T/in/x"
    assert_error lake-put 64 "--part-size"
  done
  for p in 0 -1 65 x 1.5 ""; do
    run_to "$T/out/v" lake-put --jobs "$p" "$T/in/x"
    assert_error lake-put 64 "--jobs"
  done
  assert_equal "$(trace_count stage)" 0
  assert_no_s3_objects
}

# --- interrupted uploads ----------------------------------------------------

@test "s3 faults: a --sha256 mismatch is 65 and leaves no object, single PUT or multipart" {
  local wrong
  wrong=$(printf 'other' | sha256sum | cut -c1-64)
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put --sha256 "$wrong" "$T/in/x"
  assert_error lake-put 65 "SHA-256 is" "not the stated $wrong"
  assert_equal "$(trace_count stage)" 0
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB --sha256 "$wrong" "$T/in/data"
  assert_traced_error lake-put 65 "not the stated $wrong"
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_equal "$(count_requests POST '\?uploadId=')" 0
  assert_nothing_stored
  assert_equal "$(s3_uploads)" ""
}

# polling_lake_put PID: process PID is lake-put, blocked in poll.
polling_lake_put() {
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = lake-put ] && [[ $(cat "/proc/$1/wchan" 2>/dev/null) == *poll* ]]
}

@test "s3 faults: a signal ignored at start stays ignored (nohup)" {
  mkfifo "$T/fifo"
  nohup lake-put --part-size 5MiB <"$T/fifo" >"$T/put.out" 2>"$T/put.err" 3>&- &
  PUT=$!
  exec 4>"$T/fifo"
  head -c 100 /dev/urandom >&4
  # lake-put itself (nohup has exec'ed it), its set-up done, waits for
  # more input (in poll): a HUP sent before would meet nohup's child before
  # it ignores HUP, or lake-put before it decides what to do with HUP
  state_wait "$PUT" "$T/put.err" "waited for input" polling_lake_put "$PUT"
  kill -HUP "$PUT"
  exec 4>&-
  wait_put
  assert_equal "exit $status" "exit 0"
  assert_equal "$(s3_keys | wc -l)" 1
}

# --- retries ---------------------------------------------------------------

@test "s3 faults: a 503 on a part is retried with backoff, and the put succeeds" {
  s3_fault "PUT?partNumber=2:503:2,POST?uploads:500:1"
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB --jobs 2 "$T/in/data"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(count_requests POST '\?uploads= -> 500')" 1
  assert_equal "$(count_requests POST '\?uploads= -> 200')" 1
  assert_equal "$(count_requests PUT '\?partNumber=2&[^ ]+ bytes=[0-9]+ -> 503')" 2
  assert_equal "$(count_requests PUT '\?partNumber=2&[^ ]+ bytes=[0-9]+ -> 200')" 1
  run_to "$T/got" lake-get <"$T/out/v"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/data" "$T/got"
}

@test "s3 faults: a 4xx is never retried: the upload is aborted" {
  s3_fault "PUT?partNumber=2:400:1"
  head -c $((11 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/data"
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 InvalidArgument"
  assert_equal "$(count_requests PUT '\?partNumber=2&')" 1
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_nothing_stored
  assert_equal "$(s3_uploads)" ""
}

@test "s3 faults: throttling that outlasts the retries is 75" {
  s3_fault "PUT:503:9"
  printf 'x' >"$T/in/x"
  run_to "$T/out/v" lake-put "$T/in/x"
  assert_traced_error lake-put 75 "HTTP 503 SlowDown" "retry later" "after 5 attempts"
  assert_equal "$(trace_count stage)" 5
  assert_no_s3_objects
}

# Put 6 MiB in two parts through the fault proxy with RULES; it must
# succeed (its trace is then in $stderr) and read back the same bytes.
put_despite() {
  s3_fault "$1"
  head -c $((6 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/data"
  assert_equal "exit $status" "exit 0"
  local trace=$stderr
  run_to "$T/got" lake-get <"$T/out/v"
  cmp "$T/in/data" "$T/got"
  stderr=$trace
}

@test "s3 faults: a broken connection on a part is retried" {
  put_despite "PUT?partNumber=1:reset:1"
  assert_equal "$(count_requests PUT '\?partNumber=1&[^ ]+ bytes=[0-9]+ -> curl')" 1
  assert_equal "$(count_requests PUT '\?partNumber=1&[^ ]+ bytes=[0-9]+ -> 200')" 1
}

@test "s3 faults: CompleteMultipartUpload answered 200 with an error is retried" {
  put_despite "POST?uploadId:200error:1"
  assert_equal "$(count_requests POST '\?uploadId=[^ ]+ bytes=[0-9]+ -> 200')" 2
}

@test "s3 faults: a read cut off midway resumes where it stopped, verified" {
  head -c $((3 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put "$T/in/data"
  s3_fault "GET:cut:1"
  run_to "$T/got" lake-get <"$T/out/v"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(trace_count stage)" 2
  # the second read asked for the rest only: at most half the object
  # was relayed before the cut, and lake-get had some of it
  from=$(sed -nE 's/^GET .* -> forwarded range=bytes=([0-9]+)- .*/\1/p' "$T/fault.err")
  [ -n "$from" ] && [ "$from" -gt 0 ] && [ "$from" -le $((3 * MIB / 2)) ] ||
    fail "no resumed read: $(cat "$T/fault.err")"
  cmp "$T/in/data" "$T/got"
}

# --- a server that ignores Range --------------------------------------------
# HTTP lets a server answer a ranged GET with 200 and the whole object
# (s3fault.js "norange").  The get then reads one answer as one stream,
# skipping what it already wrote, verified as always.

# get_norange RULES ARGS...: a 48 MiB object put in 5 MiB parts, then
# lake-get ARGS through the proxy with RULES, to $T/got, its peak RSS
# (KiB) in $T/rss.
get_norange() {
  local rules=$1
  shift
  head -c $((48 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put --part-size 5MiB "$T/in/data"
  assert_equal "exit $status" "exit 0"
  s3_fault "$rules"
  run_to "$T/got" /usr/bin/time -f '%M' -o "$T/rss" lake-get "$@" <"$T/out/v"
}

@test "s3 faults: every ranged GET answered 200 with the whole object: lake-get --jobs 4 reads it as one stream, verified, memory bounded" {
  get_norange "GET:norange:100" --jobs 4 --part-size 5MiB
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  cmp "$T/in/data" "$T/got"
  # the ranged GETs in flight when the first 200 came, then one read of
  # the whole object; not a GET per part
  local gets
  gets=$(grep -c '^GET ' "$T/fault.err")
  [ "$gets" -le 5 ] || fail "$gets GETs: $(cat "$T/fault.err")"
  # streamed: within the (jobs + 1) x part size of a ranged get + 16 MiB,
  # less than the object
  if ! ldd "$LAKE_BIN/lake-get" | grep -q libasan; then
    local rss
    rss=$(cat "$T/rss")
    echo "# peak RSS $rss KiB" >&3
    [ "$rss" -le $(((5 * 5 + 16) * 1024)) ] || fail "peak RSS $rss KiB"
  fi
}

@test "s3 faults: the first parts ranged (206), the rest answered 200 whole: every byte once, in order, verified" {
  get_norange "GET:pass:2,GET:norange:100" --jobs 2 --part-size 5MiB
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  cmp "$T/in/data" "$T/got"
}

@test "s3 faults: a whole-object answer to a ranged GET with a byte changed is refused: 65, SHA-256 mismatch" {
  unset LAKE_TRACE
  get_norange "GET:norangeflip:100" --jobs 4 --part-size 5MiB
  assert_error lake-get 65 "SHA-256 mismatch"
}

@test "s3 faults: a read cut off midway, the resumed read answered 200 whole: the bytes already written skipped, verified" {
  head -c $((3 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/out/v" lake-put "$T/in/data"
  s3_fault "GET:cut:1,GET:norange:1"
  run_to "$T/got" lake-get --jobs 1 <"$T/out/v"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(grep -c ' -> norange range=bytes=' "$T/fault.err")" 1
  cmp "$T/in/data" "$T/got"
}

# --- memory -----------------------------------------------------------------

# Peak RSS (KiB) of lake-put ARGS reading $T/in/big.
peak_rss() {
  /usr/bin/time -f '%M' -o "$T/rss" lake-put -q "$@" <"$T/in/big" >"$T/out/v" 2>/dev/null
  cat "$T/rss"
}

@test "s3 faults: peak memory of a 200 MiB put stays within (jobs + 1) x part size + 16 MiB" {
  ldd "$LAKE_BIN/lake-put" | grep -q libasan && skip "a sanitizer build's memory is not lake's"
  head -c $((200 * MIB)) /dev/urandom >"$T/in/big"
  unset LAKE_TRACE
  local jobs part rss bound
  for jobs in 1 4; do
    for part in 5 8; do
      rss=$(peak_rss --jobs "$jobs" --part-size "${part}MiB")
      bound=$(( ((jobs + 1) * part + 16) * 1024 ))
      echo "# jobs $jobs, part $part MiB: peak RSS $rss KiB (bound $bound KiB)" >&3
      [ "$rss" -le "$bound" ] || fail "jobs $jobs, part $part MiB: peak RSS $rss KiB > $bound KiB"
    done
  done
  assert_equal "$(json_field size "$(cat "$T/out/v")")" $((200 * MIB))
}
