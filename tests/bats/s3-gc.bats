#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-catalog gc on an S3 stage against radosgw (helpers/rgw.bash): the
# unreferenced objects go in DeleteObjects requests of up to 1,000 keys
# (Quiet mode, Content-MD5), keys with XML-special characters included;
# the referenced ones stay; an object the store refuses to remove (a bucket
# policy that denies it, answered per key inside a 200) is reported with
# the exit status of a refused delete, and only what is gone is printed.

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
}

teardown() {
  s3_stop
  common_teardown
}

# Two objects referenced by docs.t (FILE values), their locations in
# $REFERENCED, one a line; with the table's segment, $KEPT_KEYS: the keys
# that gc must keep, sorted.
put_referenced() {
  lake-catalog create-namespace docs 2>/dev/null
  lake-catalog create docs.t 'f FILE' 2>/dev/null
  printf 'one' >"$T/one"
  printf 'two' >"$T/two"
  REFERENCED=$(lake-put --table docs.t --column f "$T/one" "$T/two" 2>/dev/null | json_field location)
  KEPT_KEYS=$(s3_keys)
  assert_equal "$(wc -l <<<"$KEPT_KEYS")" 3
}

@test "s3 gc: 1,201 unreferenced objects go in 2 DeleteObjects requests; a key with & < > \" ' goes too; the referenced stay" {
  put_referenced
  put_garbage 1200
  # the odd key: stage/files/2026/01/x&y<z>"q'.bin
  s3_curl -T "$T/one" "$S3_ENDPOINT/$S3_BUCKET/stage/files/2026/01/x%26y%3Cz%3E%22q%27.bin" -o /dev/null

  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  assert_equal "$(wc -l <<<"$output")" 1201
  assert_equal "$(count_requests POST '\?delete')" 0
  assert_equal "$(count_requests DELETE '')" 0

  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(wc -l <<<"$output")" 1201
  # exactly the garbage was printed: 1,200 gNNNNN and the odd key (encoded)
  assert_equal "$(grep -c "^s3://$S3_BUCKET/stage/files/2026/01/g[0-9]\{5\}	0$" <<<"$output")" 1200
  assert_line "$(printf 's3://%s/stage/files/2026/01/x%%26y%%3Cz%%3E%%22q%%27.bin\t3' "$S3_BUCKET")"
  [[ $stderr == *"lake-catalog: gc: 1201 objects, 3 bytes removed; 3 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $stderr"
  # ceil(1201 / 1000) requests, no single DeleteObject
  assert_equal "$(count_requests POST '\?delete=')" 2
  assert_equal "$(count_requests DELETE '')" 0
  # what is left is exactly the referenced objects, and they read back
  assert_equal "$(s3_keys)" "$KEPT_KEYS"
  [[ $(s3_keys) != *"x&amp;y"* ]] || fail "the odd key is still there"
  run --separate-stderr lake-get $REFERENCED
  assert_success
  assert_output onetwo

  # nothing left to remove: no request
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_output ""
  assert_equal "$(count_requests POST '\?delete=')" 0
}

@test "s3 gc: an object the store refuses inside a 200 DeleteObjects answer is named on stderr, exit 77, only the removed are printed; a re-run finishes" {
  put_referenced
  put_garbage 3
  s3_curl -T "$T/one" "$S3_ENDPOINT/$S3_BUCKET/stage/files/2026/02/denied" -o /dev/null
  cat >"$T/policy.json" <<EOF
{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject",
 "Resource":"arn:aws:s3:::$S3_BUCKET/stage/files/2026/02/*"}]}
EOF
  s3_curl -X PUT -T "$T/policy.json" "$S3_ENDPOINT/$S3_BUCKET?policy=" -o /dev/null

  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 77"
  assert_equal "$(count_requests POST '\?delete=')" 1
  # stdout: exactly the three that went
  assert_equal "$(cut -f1 <<<"$output")" "$(printf "s3://$S3_BUCKET/stage/files/2026/01/g%05d\n" 0 1 2)"
  # stderr: one line for the refused object, then the count; no summary
  assert_equal "$(untraced_stderr)" "lake-catalog: s3://$S3_BUCKET/stage/files/2026/02/denied: not removed: access denied (AccessDenied)
lake-catalog: gc: 1 object not removed, refused by the object store; stopped"
  assert_equal "$(s3_keys | grep -c denied)" 1
  assert_equal "$(s3_keys | grep -c /g0)" 0

  # the same with -q: the refusal is an error, still shown
  run --separate-stderr lake-catalog -q gc --grace 0
  assert_equal "exit $status" "exit 77"
  assert_output ""
  assert_equal "$(untraced_stderr | wc -l)" 2

  s3_curl -X DELETE "$S3_ENDPOINT/$S3_BUCKET?policy=" -o /dev/null
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_output "$(printf 's3://%s/stage/files/2026/02/denied\t3' "$S3_BUCKET")"
  assert_equal "$(s3_keys)" "$KEPT_KEYS"
}

# The fault proxy (helpers/s3fault.js) is in front of radosgw below:
# radosgw itself does not fail a DeleteObjects on demand.

@test "s3 gc: a DeleteObjects answered 503, then 200 with an error document, is sent again; the third removes every object" {
  put_referenced
  put_garbage 5
  s3_fault "POST?delete:503:1,POST?delete:200error:1"
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(cut -f1 <<<"$output")" "$(printf "s3://$S3_BUCKET/stage/files/2026/01/g%05d\n" 0 1 2 3 4)"
  assert_equal "$(count_requests POST '\?delete=')" 3
  assert_equal "$(s3_keys)" "$KEPT_KEYS"
}

@test "s3 gc: a DeleteObjects refused as a whole (403) is 77 with one line, prints nothing and removes nothing" {
  put_referenced
  put_garbage 5
  s3_fault "POST?delete:403:1"
  run --separate-stderr lake-catalog gc --grace 0
  assert_traced_error lake-catalog 77 "s3://$S3_BUCKET/?delete=: access denied" "HTTP 403 AccessDenied"
  assert_output ""
  assert_equal "$(count_requests POST '\?delete=')" 1
  assert_equal "$(s3_keys | wc -l)" 8
}

@test "s3 gc: a store without DeleteObjects (501 NotImplemented) is asked once, not retried, then served one DeleteObject per object" {
  put_referenced
  put_garbage 5
  s3_fault "POST?delete:501:99"
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(cut -f1 <<<"$output")" "$(printf "s3://$S3_BUCKET/stage/files/2026/01/g%05d\n" 0 1 2 3 4)"
  assert_equal "$(count_requests POST '\?delete=')" 1
  assert_equal "$(count_requests DELETE)" 5
  assert_equal "$(s3_keys)" "$KEPT_KEYS"
}
