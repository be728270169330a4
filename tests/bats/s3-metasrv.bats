#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# An S3 stage advertised by the metadata authority (issue 5, DESIGN §4, §5):
# lake-metasrv init --stage s3://... needs no AWS credentials, whoami
# advertises the stage, append refuses segments and FILEs outside it (the
# same containment as lake-get's, decided on the location alone), and a
# remote-mode lake-put stores into the advertised S3 stage.

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
  STAGE_URL=s3://$S3_BUCKET/stage
  # the authority itself never talks to S3: it needs no credentials
  (unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; metasrv_init "$T/srv" "$STAGE_URL")
  metasrv_start "$T/srv"
  ADMIN=$T/srv/admin.token
  metasrv_post "$ADMIN" create_namespace '{"namespace":"docs"}'
  metasrv_post "$ADMIN" create_table \
    '{"namespace":"docs","name":"papers","schema":[{"name":"pdf","type":"FILE"}]}'
  assert_equal "$HTTP_CODE" 200
}

teardown() {
  metasrv_stop "$T/srv" 2>/dev/null || true
  s3_stop
  common_teardown
}

# An append of one segment at SEG whose rows reference FILE, at version V.
append_body() {
  printf '{"namespace":"docs","name":"papers","expected_version":%s,"segments":[%s],"files":["%s"]}' \
    "$1" "$(metasrv_segment "$2")" "$3"
}

@test "s3 stage via metasrv: whoami advertises the S3 stage" {
  metasrv_post "$ADMIN" whoami
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -r .stage <<<"$HTTP_BODY")" "$STAGE_URL"
}

@test "s3 stage via metasrv: append refuses segments and FILEs outside the S3 stage" {
  local loc inside=$STAGE_URL/tables/docs/seg1
  for loc in "s3://$S3_BUCKET/stage2/tables/docs/seg" "s3://other-bucket/stage/tables/docs/seg" \
             "s3://$S3_BUCKET/stage/../x" "s3://$S3_BUCKET/stage/%2e%2e/x" "s3://$S3_BUCKET/stage" \
             "file:///etc/passwd"; do
    metasrv_post "$ADMIN" append "$(append_body 0 "$loc" "$STAGE_URL/files/2026/12/A")"
    metasrv_assert_error 400 invalid_argument
    metasrv_post "$ADMIN" append "$(append_body 0 "$inside" "$loc")"
    metasrv_assert_error 400 invalid_argument
  done
  metasrv_post "$ADMIN" append "$(append_body 0 "$inside" "$STAGE_URL/files/2026/12/A")"
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"version":1}'
}

@test "s3 stage via metasrv: a remote-mode lake-put stores into the advertised S3 stage" {
  unset LAKE_STAGE
  metasrv_use "$T/srv"
  export LAKE_TRACE=1
  head -c $((6 * MIB)) /dev/urandom >"$T/data"
  run_to "$T/value" lake-put --part-size 5MiB "$T/data"
  assert_equal "exit $status" "exit 0"
  loc=$(json_field location "$(cat "$T/value")")
  [[ $loc == "$STAGE_URL/files/"* ]] || fail "not in the advertised stage: $loc"
  assert_equal "$(count_requests PUT '\?partNumber=')" 2
  run_to "$T/got" lake-get "$(cat "$T/value")"
  assert_equal "exit $status" "exit 0"
  cmp "$T/data" "$T/got"
}
