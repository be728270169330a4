#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Round trips through an S3 stage against a real S3 server (radosgw, one
# cluster for the file or the run, a bucket per test: helpers/rgw.bash):
# lake-put then lake-get, checked with sha256sum and cmp,
# and read back by an independent client (curl --aws-sigv4); one PUT below
# the part size, a multipart upload above it, parts in flight at once.

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
  s3_stop
  common_teardown
}

# Check the FILE value in $T/value against INPUT: one JSON line, size and
# digest right, a location s3://BUCKET/stage/files/YYYY/MM/<id>.
check_value() {
  local input=$1 v loc re
  assert_equal "$(wc -l <"$T/value")" 1
  v=$(cat "$T/value")
  assert_equal "$(json_field size "$v")" "$(stat -c %s "$input")"
  assert_equal "$(json_field sha256 "$v")" "$(sha_of "$input")"
  loc=$(json_field location "$v")
  re="^s3://$S3_BUCKET/stage/files/[0-9]{4}/[0-9]{2}/[0-9A-HJKMNP-TV-Z]{26}\$"
  [[ $loc =~ $re ]] || fail "location not of the form s3://$S3_BUCKET/stage/files/YYYY/MM/<id>: $loc"
  assert_equal "$(s3_keys)" "${loc#s3://$S3_BUCKET/}"
}

# put BYTES of random data with the given lake-put options, check the
# requests it made, read it back every way: round_trip BYTES PARTS [OPT...]
# PARTS is 0 for a single PUT, else the number of parts expected.
round_trip() {
  local bytes=$1 parts=$2 v loc
  shift 2
  head -c "$bytes" /dev/urandom >"$T/in/data"
  run_to "$T/value" lake-put "$@" "$T/in/data"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  PUT_TRACE=$stderr
  check_value "$T/in/data"
  v=$(cat "$T/value")
  loc=$(json_field location "$v")

  # the requests: one PUT, or Create + PARTS parts + Complete
  if [ "$parts" -eq 0 ]; then
    assert_equal "$(trace_count stage)" 1
    assert_equal "$(count_requests PUT "files/[^?]*( |$)")" 1
  else
    assert_equal "$(count_requests POST '\?uploads=')" 1
    assert_equal "$(count_requests PUT '\?partNumber=[0-9]+&uploadId=[^ ]+ bytes=[0-9]+ -> 200')" "$parts"
    assert_equal "$(count_requests POST '\?uploadId=[^ ]+ bytes=[0-9]+ -> 200')" 1
    assert_equal "$(trace_count stage)" $((parts + 2))
  fi

  # lake-get of the FILE value, to stdout: one GET, or (over 8 MiB) a
  # ranged GET per 8 MiB, 4 at once
  local gets=$(((bytes + 8 * MIB - 1) / (8 * MIB)))
  [ "$gets" -gt 1 ] || gets=1
  run_to "$T/got" lake-get "$v"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(trace_count stage)" "$gets"
  [ "$gets" = 1 ] || assert_equal "$(count_requests GET ' -> 206$')" "$gets"
  cmp "$T/in/data" "$T/got"
  assert_equal "$(sha_of "$T/got")" "$(sha256sum <"$T/in/data" | cut -c1-64)"

  # into -o DIR, named by the FILE value's name
  run_to "$T/got" lake-get -o "$T/out" "$v"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/data" "$T/out/data"
  rm -f "$T/out/data"

  # an independent client reads the same bytes
  s3_curl "$S3_ENDPOINT$(s3_path "$loc")" -o "$T/curl.got"
  cmp "$T/in/data" "$T/curl.got"
}

@test "s3: round trip of 0 bytes (one PUT)" {
  round_trip 0 0
  assert_equal "$(json_field content_type "$(cat "$T/value")")" application/octet-stream
}

@test "s3: round trip of 1 byte (one PUT)" {
  round_trip 1 0
}

@test "s3: round trip of exactly one part (one PUT)" {
  round_trip $((5 * MIB)) 0 --part-size 5MiB
}

@test "s3: round trip of one part plus one byte (a multipart upload of two parts)" {
  round_trip $((5 * MIB + 1)) 2 --part-size 5MiB
  # the last part holds the one byte
  stderr=$PUT_TRACE
  assert_equal "$(count_requests PUT '\?partNumber=2&[^ ]+ bytes=1 -> 200')" 1
}

@test "s3: round trip of 23 MiB in parts of 5 MiB, one at a time" {
  round_trip $((23 * MIB)) 5 --part-size 5MiB --jobs 1
}

@test "s3: round trip of 23 MiB in parts of 5 MiB, four at once" {
  round_trip $((23 * MIB)) 5 --part-size 5MiB --jobs 4
}

@test "s3: the default part size is 8 MiB" {
  round_trip $((8 * MIB + 1)) 2
  stderr=$PUT_TRACE
  assert_equal "$(count_requests PUT '\?partNumber=1&[^ ]+ bytes=8388608 -> 200')" 1
}

@test "s3: part sizes are accepted as bytes or with K, KiB, M, MiB, G, GiB" {
  local p
  printf 'x' >"$T/in/x"
  for p in 5242880 5120K 5120KiB 5M 5MiB 1G 1GiB 5GiB; do
    run_to "$T/value" lake-put -q --part-size "$p" "$T/in/x"
    assert_equal "$p: exit $status" "$p: exit 0"
  done
}

# The most requests the fault proxy saw in progress at once.
max_inflight() {
  sed -nE 's/.* inflight=([0-9]+)$/\1/p' "$T/fault.err" | sort -n | tail -n 1
}

@test "s3: --jobs 4 has parts in flight at once; --jobs 1 one at a time" {
  head -c $((20 * MIB)) /dev/urandom >"$T/in/data"
  s3_fault ""
  run_to "$T/value" lake-put --part-size 5MiB --jobs 4 "$T/in/data"
  assert_equal "exit $status" "exit 0"
  check_value "$T/in/data"
  assert_equal "$(count_requests PUT '\?partNumber=')" 4
  [ "$(max_inflight)" -ge 2 ] || fail "never more than one request in flight: $(cat "$T/fault.err")"
  s3_fault ""
  run_to "$T/value" lake-put --part-size 5MiB --jobs 1 "$T/in/data"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(max_inflight)" 1
}

@test "s3: a bare location is verified against the digest recorded at put" {
  printf 'hello\n' >"$T/in/hello.txt"
  run_to "$T/value" lake-put "$T/in/hello.txt"
  assert_equal "exit $status" "exit 0"
  loc=$(json_field location "$(cat "$T/value")")
  # the digest is stored with the object as x-amz-meta-sha256
  s3_curl -I "$S3_ENDPOINT$(s3_path "$loc")" >"$T/head"
  grep -qi "^x-amz-meta-sha256: $(sha_of "$T/in/hello.txt")" "$T/head" ||
    fail "no x-amz-meta-sha256 header: $(cat "$T/head")"
  run_to "$T/got" lake-get "$loc"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  cmp "$T/in/hello.txt" "$T/got"
  # replace the object's bytes behind lake's back, keeping its metadata
  # (from a file: radosgw wants a Content-Length, 411 to a chunked body)
  printf 'HELLO\n' >"$T/in/other"
  s3_curl -T "$T/in/other" -H "x-amz-meta-sha256: $(sha_of "$T/in/hello.txt")" \
    "$S3_ENDPOINT$(s3_path "$loc")" -o /dev/null
  run_to "$T/got" lake-get "$loc"
  assert_traced_error lake-get 65 "$loc: SHA-256 mismatch"
}

@test "s3: a multipart object stated with --sha256 records it; without, a bare location warns" {
  head -c $((6 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/value" lake-put --part-size 5MiB --sha256 "$(sha_of "$T/in/data" | tr a-f A-F)" "$T/in/data"
  assert_equal "exit $status" "exit 0"
  loc=$(json_field location "$(cat "$T/value")")
  run_to "$T/got" lake-get "$loc"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  cmp "$T/in/data" "$T/got"

  run_to "$T/value" lake-put --part-size 5MiB "$T/in/data"
  loc=$(json_field location "$(cat "$T/value")")
  run_to "$T/got" lake-get "$loc"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" "lake-get: $loc: no recorded SHA-256; not verified"
  cmp "$T/in/data" "$T/got"
  # the FILE value itself always carries the digest
  run_to "$T/got" lake-get "$(cat "$T/value")"
  assert_equal "$(untraced_stderr)" ""
}

@test "s3: an object whose bytes changed is refused (65)" {
  head -c $((6 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/value" lake-put --part-size 5MiB "$T/in/data"
  v=$(cat "$T/value")
  loc=$(json_field location "$v")
  # same size, one byte different
  { head -c 100 "$T/in/data"; printf 'Z'; tail -c +102 "$T/in/data"; } >"$T/in/bad"
  cmp -s "$T/in/data" "$T/in/bad" && skip "the random byte was already Z"
  s3_curl -T "$T/in/bad" "$S3_ENDPOINT$(s3_path "$loc")" -o /dev/null
  run_to "$T/got" lake-get "$v"
  assert_traced_error lake-get 65 "$loc: SHA-256 mismatch"
  # a shorter object is refused before a byte is written
  head -c 10 "$T/in/data" >"$T/in/short"
  s3_curl -T "$T/in/short" "$S3_ENDPOINT$(s3_path "$loc")" -o /dev/null
  run_to "$T/got" lake-get "$v"
  assert_traced_error lake-get 65 "$loc: 10 bytes in the stage, not $((6 * MIB))"
  assert_equal "$(stat -c %s "$T/got")" 0
  # -o leaves no file under the final name
  run_to "$T/got" lake-get -o "$T/out" "$v"
  assert_equal "exit $status" "exit 65"
  assert_equal "$(ls -A "$T/out")" ""
}

@test "s3: several inputs, then all of them back from stdin into -o DIR" {
  printf 'a\n' >"$T/in/a.txt"
  head -c $((5 * MIB + 3)) /dev/urandom >"$T/in/b.bin"
  printf 'c\n' >"$T/in/c.txt"
  run_to "$T/values" lake-put -q --part-size 5MiB "$T/in/a.txt" "$T/in/b.bin" "$T/in/c.txt"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(wc -l <"$T/values")" 3
  run_to "$T/got" lake-get -o "$T/out" <"$T/values"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/a.txt" "$T/out/a.txt"
  cmp "$T/in/b.bin" "$T/out/b.bin"
  cmp "$T/in/c.txt" "$T/out/c.txt"
  assert_equal "$(s3_keys | wc -l)" 3
}

@test "s3: a huge --size grows the part so that 10,000 parts are enough" {
  # 100 GiB in parts of at least 5 MiB needs 11 MiB parts; only 23 MiB
  # come (the first 22 at once, so that two parts are sent before the
  # input ends), so the put fails (65) and is aborted
  head -c $((23 * MIB)) /dev/urandom >"$T/in/data"
  run_to "$T/value" lake-put --part-size 5MiB --size $((100 * 1024 * MIB)) \
    < <(head -c $((22 * MIB)) "$T/in/data"; sleep 1; tail -c $((1 * MIB)) "$T/in/data")
  assert_traced_error lake-put 65 "not the stated $((100 * 1024 * MIB))"
  assert_equal "$(count_requests PUT '\?partNumber=1&[^ ]+ bytes=11534336 -> 200')" 1
  assert_equal "$(count_requests PUT '\?partNumber=2&[^ ]+ bytes=11534336 -> 200')" 1
  assert_equal "$(count_requests DELETE '\?uploadId=')" 1
  assert_no_s3_objects
}

@test "s3: the local stage accepts and ignores --part-size and --jobs" {
  unset LAKE_STAGE
  printf 'x\n' >"$T/in/x"
  run_to "$T/value" lake-put --part-size 5MiB --jobs 4 "$T/in/x"
  assert_equal "exit $status" "exit 0"
  [[ $(json_field location "$(cat "$T/value")") == file://* ]] || fail "not a local put"
}

@test "s3: LAKE_TRACE prints one line per request, none without it" {
  run_to "$T/value" lake-put < <(printf 'x\n')
  assert_equal "exit $status" "exit 0"
  run_to "$T/got" lake-get <"$T/value"
  assert_equal "$(trace_lines stage)" "trace: stage GET $(json_field location "$(cat "$T/value")") -> 200"
  unset LAKE_TRACE
  run_to "$T/got" lake-get <"$T/value"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" ""
}
