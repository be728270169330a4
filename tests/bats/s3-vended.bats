#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Keyless clients (issue 17, DESIGN §4 "Vended access"): lake-metasrv holds
# the S3 keys (AWS_* in its environment only), the clients hold a lake
# token and nothing else, and move the bytes to and from radosgw through
# URLs the server signed.  radosgw checks every presigned signature,
# expiry, Content-MD5 and length (../shared/PEERS.md).

load helpers/common
load helpers/rgw
load helpers/metasrv
load helpers/background

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

# The server: started with the S3 keys; then the client's environment
# loses them.  SERVE_ARGS: more lake-metasrv serve options.
keyless_setup() {
  STAGE_URL=s3://$S3_BUCKET/stage
  metasrv_init "$T/srv" "$STAGE_URL"
  # shellcheck disable=SC2086 # SERVE_ARGS is a list of options
  metasrv_start "$T/srv" 0 ${SERVE_ARGS:-}
  ADMIN=$T/srv/admin.token
  metasrv_use "$T/srv"
  SRV_ENV=(AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
           AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL")
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 LAKE_STAGE
}

setup() {
  common_setup
  s3_start
  [ -n "${AWS_ENDPOINT_URL:-}" ] || export AWS_ENDPOINT_URL=$S3_ENDPOINT
}

teardown() {
  metasrv_stop "$T/srv" 2>/dev/null || true
  s3_stop
  common_teardown
}

# With the keys again, for what only a key holder does (gc, listings).
with_keys() {
  env "${SRV_ENV[@]}" "$@"
}

@test "keyless: one PUT and a multipart put with --jobs 4 go client -> radosgw through signed URLs; lake-get reads them back the same way" {
  keyless_setup
  env | grep -qE '^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)=' && fail "the client still has AWS keys"
  export LAKE_TRACE=1
  printf 'small object\n' >"$T/small"
  run --separate-stderr lake-put "$T/small"
  assert_success
  small=$output
  [[ $(json_field location "$small") == "$STAGE_URL/files/"* ]] || fail "not in the stage: $small"
  assert_equal "$(grep -c '^trace: source upload_begin' <<<"$stderr")" 1
  assert_equal "$(count_requests PUT '')" 1

  head -c $((23 * MIB)) /dev/urandom >"$T/big"
  run --separate-stderr lake-put --part-size 5MiB --jobs 4 "$T/big"
  assert_success
  big=$output
  assert_equal "$(count_requests PUT 'partNumber=')" 5
  grep -q '^trace: source upload_complete' <<<"$stderr" || fail "no upload_complete: $stderr"
  # no signature in any trace or message
  if grep -q 'X-Amz-Signature' <<<"$stderr"; then fail "a signature in the trace"; fi

  run_to "$T/got-small" lake-get "$small"
  assert_equal "exit $status" "exit 0"
  cmp "$T/small" "$T/got-small"
  run --separate-stderr bash -c 'lake-get "$1" >"$2"' _ "$big" "$T/got-big"
  assert_success
  cmp "$T/big" "$T/got-big"
  grep -q '^trace: source presign_get' <<<"$stderr" || fail "lake-get did not ask for a URL: $stderr"
  # the object carries its digest (x-amz-meta-sha256, signed into the URL):
  # a get of the bare location verifies against it
  run --separate-stderr lake-get "$(json_field location "$small")"
  assert_success
  assert_output "small object"
  [[ $stderr != *"not verified"* ]] || fail "no recorded digest: $stderr"

  # sharing: the server signs the link; plain curl fetches it
  run --separate-stderr lake-get --presign 10m "$small"
  assert_success
  grep -q '^trace: source presign_get' <<<"$stderr" || fail "no presign_get: $stderr"
  curl -fsS "$output" | cmp - "$T/small"
}

@test "keyless: lake-get --jobs 3 reads 21 MiB + 3 bytes as five ranged GETs through one vended URL; the same bytes as --jobs 1; a wrong SHA-256 is 65, nothing kept" {
  keyless_setup
  export LAKE_TRACE=1
  head -c $((21 * MIB + 3)) /dev/urandom >"$T/big"
  big=$(lake-put -q --part-size 5MiB --jobs 2 "$T/big" 2>/dev/null)
  run_to "$T/got" lake-get --jobs 3 --part-size 5MiB "$big"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  # one URL asked for, every part read through it (Range is not signed)
  assert_equal "$(grep -c '^trace: source presign_get' <<<"$stderr")" 1
  assert_equal "$(count_requests GET ' -> 206$')" 5
  cmp "$T/big" "$T/got"
  run_to "$T/got1" lake-get --jobs 1 "$big"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(count_requests GET ' -> 200$')" 1
  cmp "$T/big" "$T/got1"
  mkdir "$T/out"
  run_to "$T/o.log" lake-get --jobs 3 --part-size 5MiB -o "$T/out" "$(jq -c '.sha256 = ("f" * 64)' <<<"$big")"
  assert_traced_error lake-get 65 "SHA-256 mismatch"
  assert_equal "$(find "$T/out" -mindepth 1)" ""
}

@test "keyless: no object byte passes through lake-metasrv (a 64 KiB request cap and a 64 KiB answer cap, 12 MiB each way)" {
  SERVE_ARGS="--max-body 65536" keyless_setup
  export LAKE_MAX_RESPONSE=65536
  head -c $((12 * MIB)) /dev/urandom >"$T/data"
  run_to "$T/value" lake-put --part-size 5MiB "$T/data"
  assert_equal "exit $status" "exit 0"
  run_to "$T/got" lake-get "$(cat "$T/value")"
  assert_equal "exit $status" "exit 0"
  cmp "$T/data" "$T/got"
}

@test "keyless: --table, lake-query INSERT and SELECT, and lake-get of the rows' files: segments are put and read through URLs too" {
  keyless_setup
  metasrv_post "$ADMIN" create_namespace '{"namespace":"docs"}'
  metasrv_post "$ADMIN" create_table \
    '{"namespace":"docs","name":"scans","schema":[{"name":"name","type":"TEXT"},{"name":"f","type":"FILE"}]}'
  assert_equal "$HTTP_CODE" 200
  mkdir "$T/in" "$T/out"
  for i in 1 2 3; do printf 'scan %s\n' "$i" >"$T/in/s$i.txt"; done
  for i in 1 2 3; do
    run lake-put --table docs.scans --set "name=s$i.txt" "$T/in/s$i.txt"
    assert_success
  done
  run lake-query -c "INSERT INTO docs.scans (name) VALUES ('none')"
  assert_success
  run lake-query -c "SELECT count(*), count(f) FROM docs.scans"
  assert_success
  assert_output "$(printf '4\t3')"
  run bash -c 'lake-query -f jsonl -c "SELECT f FROM docs.scans WHERE f IS NOT NULL" | lake-get -o "$1"' _ "$T/out"
  assert_success
  diff -r "$T/in" "$T/out"
  run lake-query -c "SELECT fl_get_presigned_url(f, 600) FROM docs.scans WHERE name = 's2.txt'"
  assert_success
  curl -fsS "$output" | cmp - "$T/in/s2.txt"
}

@test "keyless: an archive in and out (--archive) with no keys" {
  keyless_setup
  mkdir -p "$T/tree/a"
  printf 'one\n' >"$T/tree/a/1.txt"
  head -c $((6 * MIB)) /dev/urandom >"$T/tree/big.bin"
  tar -C "$T/tree" -cf "$T/in.tar" a big.bin
  run_to "$T/values" lake-put --archive --part-size 5MiB "$T/in.tar"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(wc -l <"$T/values")" 2
  mkdir "$T/out"
  run bash -c 'lake-get -o "$1" <"$2"' _ "$T/out" "$T/values"
  assert_success
  cmp "$T/tree/big.bin" "$T/out/big.bin"
  cmp "$T/tree/a/1.txt" "$T/out/1.txt"
}

@test "keyless: a part URL refused with 403 (as radosgw answers an expired one) is asked for again and the put goes on" {
  # A fault proxy in front of radosgw answers the first UploadPart of
  # part 2 with 403 AccessDenied: radosgw refuses an expired URL so, but
  # not on demand.  The server signs for the proxy's address.
  s3_fault 'PUT?partNumber=2:403:1' # exports AWS_ENDPOINT_URL: the proxy
  keyless_setup
  export LAKE_TRACE=1
  head -c $((11 * MIB)) /dev/urandom >"$T/data"
  run --separate-stderr lake-put --part-size 5MiB "$T/data"
  assert_success
  value=$output
  assert_equal "$(grep -c '^trace: source upload_parts' <<<"$stderr")" 4 # 1, 2, 2 again, 3
  run_to "$T/got" lake-get "$value"
  assert_equal "exit $status" "exit 0"
  cmp "$T/data" "$T/got"
}

@test "keyless: a ranged GET refused with 403 (an expired URL) has the URL asked for again, once, and the get goes on" {
  # the first presigned GET (not the server's probe of its keys) refused
  s3_fault 'GET?X-Amz-Signature:403:1' # exports AWS_ENDPOINT_URL: the proxy
  keyless_setup
  export LAKE_TRACE=1
  head -c $((11 * MIB)) /dev/urandom >"$T/data"
  value=$(lake-put -q --part-size 5MiB "$T/data" 2>/dev/null)
  run_to "$T/got" lake-get --jobs 3 --part-size 5MiB "$value"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(grep -c '^trace: source presign_get' <<<"$stderr")" 2
  assert_equal "$(count_requests GET ' -> 403$')" 1
  assert_equal "$(count_requests GET ' -> 206$')" 3
  cmp "$T/data" "$T/got"
}

@test "keyless: SIGINT mid-upload aborts through the server (no upload left); SIGKILL leaves one that gc, run by a key holder, aborts" {
  keyless_setup
  mkfifo "$T/fifo"
  # SIGINT: lake-put aborts the upload through upload_abort
  (head -c $((11 * MIB)) /dev/urandom; sleep 30) >"$T/fifo" &
  feeder=$!
  LAKE_TRACE=1 start_bg "$T/fifo" "$T/out" "$T/err" lake-put --part-size 5MiB
  for _ in $(seq 200); do grep -q 'trace: stage PUT .*partNumber=2' "$T/err" && break; sleep 0.05; done
  grep -q 'trace: stage PUT .*partNumber=2' "$T/err" || fail "no second part: $(cat "$T/err")"
  kill -INT "$BG"
  wait_bg
  assert_equal "exit $status" "exit 130"
  assert_equal "$(cat "$T/out")" ""
  kill "$feeder" 2>/dev/null || true
  grep -q '^trace: source upload_abort' "$T/err" || fail "no upload_abort: $(cat "$T/err")"
  assert_equal "$(s3_uploads '')" ""

  # SIGKILL: the upload stays until gc aborts it
  (head -c $((11 * MIB)) /dev/urandom; sleep 30) >"$T/fifo" &
  feeder=$!
  LAKE_TRACE=1 start_bg "$T/fifo" "$T/out" "$T/err" lake-put --part-size 5MiB
  for _ in $(seq 200); do grep -q 'trace: stage PUT .*partNumber=2' "$T/err" && break; sleep 0.05; done
  kill -KILL "$BG"
  wait_bg
  kill "$feeder" 2>/dev/null || true
  assert_equal "$(s3_uploads '' | wc -l)" 1
  run with_keys env LAKE_STAGE="$STAGE_URL" lake-catalog gc --grace 0
  assert_success
  assert_equal "$(s3_uploads '')" ""
}

@test "keyless: a metadata-peer token may not ask for URLs (77, nothing stored); LAKE_S3_ACCESS=keys without keys is 78; a bad value is 78" {
  keyless_setup
  peer=$(metasrv_token metadata-peer peer)
  printf 'x\n' >"$T/x"
  LAKE_TOKEN_FILE=$peer run --separate-stderr lake-put "$T/x"
  assert_equal "exit $status" "exit 77"
  [[ $stderr == "lake-put: "* ]] || fail "$stderr"
  LAKE_S3_ACCESS=keys run --separate-stderr lake-put "$T/x"
  assert_equal "exit $status" "exit 78"
  [[ $stderr == *"no S3 credentials"* ]] || fail "$stderr"
  LAKE_S3_ACCESS=maybe run --separate-stderr lake-put "$T/x"
  assert_equal "exit $status" "exit 78"
  [[ $stderr == *"s3_access"* ]] || fail "$stderr"
  assert_no_s3_objects
}

# A keyless deployment's gc (issue 41): docs.t refers to two files and a
# segment ($KEPT, the keys that stay); docs.gone's file and segment, once
# dropped, and an object put straight into the bucket are $GARBAGE.
keyless_garbage() {
  lake-catalog create-namespace docs 2>/dev/null
  lake-catalog create docs.t 'f FILE' 2>/dev/null
  lake-catalog create docs.gone 'f FILE' 2>/dev/null
  printf 'one' >"$T/one"
  printf 'two' >"$T/two"
  printf 'gone!' >"$T/gone"
  REFERENCED=$(lake-put --table docs.t --column f "$T/one" "$T/two" 2>/dev/null | json_field location)
  KEPT=$(s3_keys)
  assert_equal "$(wc -l <<<"$KEPT")" 3
  lake-put -q --table docs.gone --column f "$T/gone" >/dev/null 2>&1 || fail "put into docs.gone failed"
  s3_curl -T "$T/one" "$S3_ENDPOINT/$S3_BUCKET/stage/files/2026/01/orphan" -o /dev/null
  lake-catalog drop docs.gone 2>/dev/null
  GARBAGE=$(comm -13 <(printf '%s\n' "$KEPT") <(s3_keys))
  assert_equal "$(wc -l <<<"$GARBAGE")" 3
}

# The keys gc printed (location<TAB>size lines), sorted.
printed_keys() {
  cut -f1 <<<"$output" | sed "s|^s3://$S3_BUCKET/||" | sort
}

@test "keyless gc: lake-catalog gc runs where the keys are (the gc action); --dry-run lists and removes nothing; --grace 0 removes the unreferenced and keeps the referenced" {
  keyless_setup
  keyless_garbage
  export LAKE_TRACE=1

  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  assert_equal "$(printed_keys)" "$GARBAGE"
  assert_equal "$(s3_keys)" "$(printf '%s\n' "$KEPT" "$GARBAGE" | sort)"
  grep -q '^trace: source gc' <<<"$stderr" || fail "gc did not ask the server: $stderr"
  [[ $stderr == *"lake-catalog: gc: 3 objects, "*" bytes would be removed; 3 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $stderr"
  # the client itself sent nothing to the object store
  assert_equal "$(grep -c '^trace: stage' <<<"$stderr")" 0

  # a young object is kept by the default grace (1d)
  run --separate-stderr lake-catalog gc --dry-run
  assert_success
  assert_output ""
  [[ $stderr == *"0 objects, 0 bytes would be removed; 3 kept (referenced), 3 kept (younger than the grace)"* ]] ||
    fail "summary: $stderr"

  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(printed_keys)" "$GARBAGE"
  [[ $stderr == *"lake-catalog: gc: 3 objects, "*" bytes removed; 3 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $stderr"
  assert_equal "$(s3_keys)" "$KEPT"
  run --separate-stderr lake-get $REFERENCED
  assert_success
  assert_output onetwo
  # the same as JSON: an empty list now
  run --separate-stderr lake-catalog --json gc --grace 0
  assert_success
  assert_output "[]"

  # each call is one row of the audit trail, without a target
  metasrv_regopt "$T/srv"
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --action gc
  assert_success
  assert_equal "$(cut -f2-6 <<<"$output")" "$(printf 'admin\tadmin\tgc\t-\tok\n%.0s' 1 2 3 4)"
}

@test "keyless gc: 1,203 unreferenced objects are two pages (two gc calls), printed and removed; the referenced stay" {
  keyless_setup
  keyless_garbage
  put_garbage 1200
  export LAKE_TRACE=1
  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  assert_equal "$(grep -c '^trace: source gc' <<<"$stderr")" 2
  assert_equal "$(grep -c . <<<"$output")" 1203
  [[ $stderr == *"lake-catalog: gc: 1203 objects, "*" bytes would be removed; 3 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $(untraced_stderr)"
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(grep -c '^trace: source gc' <<<"$stderr")" 2
  # every line once, in key order: the pages follow each other
  assert_equal "$(cut -f1 <<<"$output" | sort -u | wc -l)" 1203
  assert_equal "$(cut -f1 <<<"$output" | LC_ALL=C sort -c && echo sorted)" sorted
  assert_equal "$(grep -c "^s3://$S3_BUCKET/stage/files/2026/01/g[0-9]\{5\}	0$" <<<"$output")" 1200
  [[ $stderr == *"lake-catalog: gc: 1203 objects, "*" bytes removed; 3 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $(untraced_stderr)"
  assert_equal "$(s3_keys)" "$KEPT"
}

@test "keyless gc: the gc action pages (limit, after, next); a user or query-service is refused (77, audited) and nothing is removed" {
  keyless_setup
  keyless_garbage
  # one object a call: six calls (three garbage, three kept), each naming
  # where the next resumes, the last none
  metasrv_gc_pages "$ADMIN" '"dry_run":true,'
  assert_equal "$GC_CALLS calls, $GC_KEPT kept" "6 calls, 3 kept"
  assert_equal "$(sed "s|^s3://$S3_BUCKET/||" <<<"$GC_OBJECTS" | sort)" "$GARBAGE"
  metasrv_post "$ADMIN" gc '{"limit":0}'
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" gc '{"grace":-1}'
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" gc '{"dry_run":1}'
  metasrv_assert_error 400 invalid_argument

  user=$(metasrv_token user alice)
  LAKE_TOKEN_FILE=$user run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 77"
  assert_equal "$(grep -c . <<<"$stderr")" 1
  [[ $stderr == "lake-catalog: "*"may not run gc"* ]] || fail "$stderr"
  qs=$(metasrv_token query-service qs)
  LAKE_TOKEN_FILE=$qs run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_equal "exit $status" "exit 77"
  assert_equal "$(s3_keys)" "$(printf '%s\n' "$KEPT" "$GARBAGE" | sort)"
  metasrv_regopt "$T/srv"
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --action gc --result permission_denied
  assert_success
  assert_equal "$(cut -f2-6 <<<"$output")" "$(printf 'alice\tuser\tgc\t-\tpermission_denied\nqs\tquery-service\tgc\t-\tpermission_denied')"
}
