#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Sharing a file as a link (issue 17, part 3) against a real S3 server,
# radosgw (helpers/rgw.bash: one cluster for the file or the run, a bucket
# per test), which verifies query-signed URLs and their expiry: an embedded
# lake with the AWS keys in its environment prints, with lake-get
# --presign and lake-query's fl_get_presigned_url, URLs that plain curl,
# holding no key, fetches the exact bytes with; a changed, foreign or
# expired URL is refused by the server; no byte of the object is read to
# make one; bad durations, locations outside the stage and a local stage
# are refused with one line and the documented status.  Remote mode with
# the client's own keys signs the same way, in the stage lake-metasrv
# advertises.

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
  export LAKE_TRACE=1
  mkdir -p "$T/in" "$T/out"
}

teardown() {
  metasrv_stop 2>/dev/null || true
  s3_stop
  common_teardown
}

# curl as anyone holding only the URL: no AWS_* or other lake variable.
plain_curl() {
  env -i PATH="$PATH" curl "$@"
}

# The HTTP status plain curl gets for URL $1 (the body in $T/out/body).
status_of() {
  plain_curl -sS -o "$T/out/body" -w '%{http_code}' "$1"
}

# put_file NAME BYTES: BYTES random bytes in $T/in/NAME, put; the FILE
# value in $T/in/NAME.json.
put_file() {
  head -c "$2" /dev/urandom >"$T/in/$1"
  run_to "$T/in/$1.json" lake-put "$T/in/$1"
  assert_equal "exit $status" "exit 0"
}

# The key of a FILE value's location in the bucket.
key_of() {
  local loc
  loc=$(json_field location "$(cat "$1")")
  printf '%s\n' "${loc#s3://"$S3_BUCKET"/}"
}

@test "presign: a put object's URL, fetched by plain curl with no keys, gives its exact bytes; the object is not read" {
  put_file a.bin $((300 * 1024))
  key=$(key_of "$T/in/a.bin.json")
  run_to "$T/out/urls" lake-get --presign 10m "$(cat "$T/in/a.bin.json")"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(wc -l <"$T/out/urls")" 1
  url=$(cat "$T/out/urls")
  [[ $url == "$S3_ENDPOINT/$S3_BUCKET/$key?"* ]] || fail "not a URL of the object: $url"
  [[ $url == *"X-Amz-Expires=600&"* ]] || fail "not valid for 600 s: $url"
  [[ $url != *"$RGW_SECRET_KEY"* ]] || fail "the secret is in the URL"
  # no byte of the object read: no request on its key at all
  assert_equal "$(count_requests GET "$key")" 0
  assert_equal "$(count_requests HEAD "$key")" 0
  plain_curl -fsS -o "$T/out/a.bin" "$url"
  cmp "$T/in/a.bin" "$T/out/a.bin"
  # a location in the stage with no object: a URL all the same, which S3 answers 404
  run_to "$T/out/url" lake-get --presign 1m "s3://$S3_BUCKET/stage/files/2026/12/NOSUCHOBJECT"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(status_of "$(cat "$T/out/url")")" 404
}

@test "presign: liblake's lake_presign gives a URL plain curl fetches the exact bytes with, as lake-get --presign; bad seconds 64, outside the stage 65" {
  rt=${LAKE_BIN%/bin}/examples/roundtrip
  put_file a.bin $((200 * 1024))
  key=$(key_of "$T/in/a.bin.json")
  run_to "$T/out/url" "$rt" presign "$(cat "$T/in/a.bin.json")" 600
  assert_equal "exit $status" "exit 0"
  url=$(cat "$T/out/url")
  [[ $url == "$S3_ENDPOINT/$S3_BUCKET/$key?"* ]] || fail "not a URL of the object: $url"
  [[ $url == *"X-Amz-Expires=600&"* ]] || fail "not valid for 600 s: $url"
  assert_equal "$(count_requests GET "$key")" 0
  plain_curl -fsS -o "$T/out/a.bin" "$url"
  cmp "$T/in/a.bin" "$T/out/a.bin"
  run_to "$T/out/url" "$rt" presign "$(cat "$T/in/a.bin.json")" 0
  assert_error roundtrip 64 "(usage)"
  run_to "$T/out/url" "$rt" presign "s3://elsewhere/x" 60
  assert_error roundtrip 65 "outside the managed stage" "(data)"
}

@test "presign: REFs as arguments or on stdin give one URL a line, in their order; a bare location too" {
  put_file one 1000
  put_file two 2000
  k1=$(key_of "$T/in/one.json") k2=$(key_of "$T/in/two.json")
  run_to "$T/out/urls" lake-get --presign 1h "$(cat "$T/in/one.json")" "s3://$S3_BUCKET/$k2"
  assert_equal "exit $status" "exit 0"
  mapfile -t urls <"$T/out/urls"
  assert_equal "${#urls[@]}" 2
  [[ ${urls[0]} == *"/$k1?"* && ${urls[1]} == *"/$k2?"* ]] || fail "not in order: ${urls[*]}"
  plain_curl -fsS -o "$T/out/one" "${urls[0]}"
  plain_curl -fsS -o "$T/out/two" "${urls[1]}"
  cmp "$T/in/one" "$T/out/one"
  cmp "$T/in/two" "$T/out/two"

  # stdin, in the other order, a JSON row and a blank line among them
  printf '%s\n\n{"f":%s}\n' "$(cat "$T/in/two.json")" "$(cat "$T/in/one.json")" >"$T/in/refs"
  run_to "$T/out/urls" lake-get --presign 90s <"$T/in/refs"
  assert_equal "exit $status" "exit 0"
  mapfile -t urls <"$T/out/urls"
  assert_equal "${#urls[@]}" 2
  [[ ${urls[0]} == *"/$k2?"* && ${urls[1]} == *"/$k1?"*"X-Amz-Expires=90&"* ]] || fail "stdin: ${urls[*]}"
  assert_equal "$(count_requests GET 'files/')" 0
}

@test "presign: a URL with one signature digit changed, or moved to another key, is refused 403 by the server" {
  put_file a 100
  put_file b 100
  kb=$(key_of "$T/in/b.json")
  run_to "$T/out/url" lake-get --presign 1h "$(cat "$T/in/a.json")"
  assert_equal "exit $status" "exit 0"
  url=$(cat "$T/out/url")
  assert_equal "$(status_of "$url")" 200
  sig=${url##*X-Amz-Signature=}
  [[ $sig =~ ^[0-9a-f]{64}$ ]] || fail "no signature at the end: $url"
  last=${sig: -1}
  [ "$last" = 0 ] && other=1 || other=0
  assert_equal "$(status_of "${url%?}$other")" 403
  grep -q '<Code>SignatureDoesNotMatch</Code>' "$T/out/body" || fail "tampered: $(cat "$T/out/body")"
  # the same query string on another key
  assert_equal "$(status_of "$S3_ENDPOINT/$S3_BUCKET/$kb?${url#*\?}")" 403
}

@test "presign: a URL of 1s is refused 403 by the server once it has expired" {
  put_file a 100
  run_to "$T/out/url" lake-get --presign 1s "$(cat "$T/in/a.json")"
  assert_equal "exit $status" "exit 0"
  url=$(cat "$T/out/url")
  [[ $url == *"X-Amz-Expires=1&"* ]] || fail "not valid for 1 s: $url"
  sleep 2
  assert_equal "$(status_of "$url")" 403
  grep -q '<Code>AccessDenied</Code>' "$T/out/body" || fail "expired: $(cat "$T/out/body")"
}

@test "presign: a DURATION of 0s, 8d, -1 or garbage, or --presign with -o or --archive, is 64 with one line and no output" {
  put_file a 100
  for d in 0s 0 8d 604801 -1 garbage 1w 1.5h ''; do
    run_to "$T/out/url" lake-get --presign "$d" "$(cat "$T/in/a.json")"
    assert_error lake-get 64 "--presign: '$d' is not a duration of 1s to 7d"
    assert_equal "$(wc -c <"$T/out/url")" 0
  done
  run_to "$T/out/url" lake-get --presign 7d "$(cat "$T/in/a.json")"
  assert_equal "exit $status" "exit 0"
  [[ $(cat "$T/out/url") == *"X-Amz-Expires=604800&"* ]] || fail "7d: $(cat "$T/out/url")"
  run_to "$T/out/url" lake-get --presign 1h -o "$T/out" "$(cat "$T/in/a.json")"
  assert_error lake-get 64 "--presign cannot be used with -o"
  run_to "$T/out/url" lake-get --archive --presign 1h "$(cat "$T/in/a.json")"
  assert_error lake-get 64 "--presign cannot be used with --archive"
  assert_equal "$(wc -c <"$T/out/url")" 0
  assert_equal "$(trace_count stage)" 0
}

@test "presign: a location outside the stage is 65 with nothing printed; the REFs before it are printed" {
  put_file a 100
  for loc in "s3://$S3_BUCKET/stage2/x" "s3://other-bucket/stage/files/x" "s3://$S3_BUCKET/stage/../x" \
             "file:///etc/passwd"; do
    run_to "$T/out/url" lake-get --presign 1h "$loc"
    assert_error lake-get 65 "$loc: outside the managed stage"
    assert_equal "$(wc -c <"$T/out/url")" 0
    assert_equal "$(trace_count stage)" 0
  done
  run_to "$T/out/url" lake-get --presign 1h "$(cat "$T/in/a.json")" "s3://$S3_BUCKET/stage2/x"
  assert_traced_error lake-get 65 "outside the managed stage"
  assert_equal "$(wc -l <"$T/out/url")" 1
}

@test "presign: a local stage is 78 with one line and no URL" {
  export LAKE_STAGE=file://$T/stage
  mkdir -p "$T/stage"
  printf 'x' >"$T/in/x"
  run_to "$T/in/x.json" lake-put "$T/in/x"
  assert_equal "exit $status" "exit 0"
  run_to "$T/out/url" lake-get --presign 1h "$(cat "$T/in/x.json")"
  assert_error lake-get 78 "file://$T/stage: presigned URLs need an S3 stage"
  assert_equal "$(wc -c <"$T/out/url")" 0
  run_to "$T/out/url" lake-query -c "SELECT fl_get_presigned_url('$(cat "$T/in/x.json")', 60)"
  assert_error lake-query 78 "fl_get_presigned_url: file://$T/stage: presigned URLs need an S3 stage"
  assert_equal "$(wc -c <"$T/out/url")" 0
}

@test "presign: lake-query's fl_get_presigned_url(f, seconds) on a FILE column gives URLs curl fetches; NULL gives NULL" {
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'name TEXT, f FILE'
  put_file a.pdf 5000
  put_file b.pdf 7000
  run_to "$T/out/v" lake-put --table docs.scans --set name=x "$T/in/a.pdf" "$T/in/b.pdf"
  assert_equal "exit $status" "exit 0"
  lake-query -c "INSERT INTO docs.scans VALUES ('none', NULL)"
  run_to "$T/out/rows" lake-query -f tsv \
    -c "SELECT fl_get_file_name(f), fl_get_presigned_url(f, 600) FROM docs.scans WHERE f IS NOT NULL ORDER BY 1"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(count_requests GET 'files/')" 0
  assert_equal "$(cut -f 1 "$T/out/rows")" "$(printf 'a.pdf\nb.pdf')"
  while IFS=$'\t' read -r name url; do
    [[ $url == *"X-Amz-Expires=600&"* ]] || fail "$name: $url"
    plain_curl -fsS -o "$T/out/$name" "$url"
    cmp "$T/in/$name" "$T/out/$name"
  done <"$T/out/rows"
  # a bare location works as well
  loc=$(json_field location "$(cat "$T/in/a.pdf.json")")
  run_to "$T/out/url" lake-query -f tsv -c "SELECT fl_get_presigned_url('$loc', 60)"
  assert_equal "exit $status" "exit 0"
  plain_curl -fsS -o "$T/out/c" "$(cat "$T/out/url")"
  cmp "$T/in/a.pdf" "$T/out/c"
  # NULL in, NULL out: the NULL row, a NULL argument, NULL seconds
  run_to "$T/out/n" lake-query -f tsv \
    -c "SELECT quote(fl_get_presigned_url(f, 600)) FROM docs.scans WHERE name = 'none'" \
    -c "SELECT quote(fl_get_presigned_url(NULL, 600)), quote(fl_get_presigned_url('$loc', NULL))"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(cat "$T/out/n")" "$(printf 'NULL\nNULL\tNULL')"
}

@test "presign: fl_get_presigned_url with bad seconds, a bad value or a location outside the stage is an error exit 65" {
  put_file a 100
  v=$(cat "$T/in/a.json")
  for secs in 0 -5 604801 "'600'" 1.5; do
    run_to "$T/out/x" lake-query -c "SELECT fl_get_presigned_url('$v', $secs)"
    assert_traced_error lake-query 65 "fl_get_presigned_url: seconds must be an integer from 1 to 604800"
    assert_equal "$(wc -c <"$T/out/x")" 0
  done
  run_to "$T/out/x" lake-query -c "SELECT fl_get_presigned_url('s3://$S3_BUCKET/stage2/x', 60)"
  assert_traced_error lake-query 65 "fl_get_presigned_url: s3://$S3_BUCKET/stage2/x: outside the managed stage"
  run_to "$T/out/x" lake-query -c "SELECT fl_get_presigned_url('{\"location\":1}', 60)"
  assert_traced_error lake-query 65 "fl_get_presigned_url: "
  run_to "$T/out/x" lake-query -c "SELECT fl_get_presigned_url(x'00', 60)"
  assert_traced_error lake-query 65 "fl_get_presigned_url: not a FILE value or a location: not text"
  assert_equal "$(wc -c <"$T/out/x")" 0
}

@test "presign: remote mode with the client's own keys: lake-get --presign and fl_get_presigned_url sign in the advertised stage" {
  STAGE_URL=s3://$S3_BUCKET/stage
  (unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; metasrv_init "$T/srv" "$STAGE_URL")
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  unset LAKE_STAGE
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE'
  head -c 4000 /dev/urandom >"$T/in/a"
  run_to "$T/in/a.json" lake-put --table docs.scans "$T/in/a"
  assert_equal "exit $status" "exit 0"
  [[ $(json_field location "$(cat "$T/in/a.json")") == "$STAGE_URL/files/"* ]] || fail "$(cat "$T/in/a.json")"
  run_to "$T/out/url" lake-get --presign 5m "$(cat "$T/in/a.json")"
  assert_equal "exit $status" "exit 0"
  plain_curl -fsS -o "$T/out/a" "$(cat "$T/out/url")"
  cmp "$T/in/a" "$T/out/a"
  run_to "$T/out/url" lake-query -f tsv -c "SELECT fl_get_presigned_url(f, 300) FROM docs.scans"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(count_requests GET 'files/')" 0
  plain_curl -fsS -o "$T/out/b" "$(cat "$T/out/url")"
  cmp "$T/in/a" "$T/out/b"
}
