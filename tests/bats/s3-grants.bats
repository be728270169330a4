#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Grants down to the bytes (issue 29): two teams' keyless clients on one
# radosgw stage, served by one lake-metasrv that holds the S3 keys.  Each
# user may read and write its own team's tables; neither can read, list,
# presign, append into or overwrite the other's, even with the other's
# FILE values in hand.  radosgw checks every URL the server signed.

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
  STAGE_URL=s3://$S3_BUCKET/stage
  metasrv_init "$T/srv" "$STAGE_URL"
  metasrv_start "$T/srv"
  ANN=$(metasrv_token user ann)   # the HR team
  LEO=$(metasrv_token user leo)   # the logs team
  # the clients hold no keys: every URL is the server's to sign
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 LAKE_STAGE
  metasrv_use "$T/srv"
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'who TEXT, f FILE'
  lake-catalog create-namespace logs
  lake-catalog create logs.app 'line TEXT, f FILE'
  local p
  for p in read write; do
    lake-catalog grant "$p" ON hr TO ann
    lake-catalog grant "$p" ON logs TO leo
  done
}

teardown() {
  metasrv_stop "$T/srv" 2>/dev/null || true
  s3_stop
  common_teardown
}

as() { # TOKENFILE COMMAND…: run as that user, with a cache of its own
  local tok=$1
  shift
  env LAKE_TOKEN_FILE="$tok" XDG_CACHE_HOME="$T/cache-$(basename "$tok" .token)" "$@"
}

@test "two teams on one keyless stage: each reads and appends its own tables and nothing of the other's, even with its FILE values" {
  printf 'salary review\n' >"$T/hr.txt"
  printf 'GET /index.html\n' >"$T/log.txt"
  run --separate-stderr as "$ANN" lake-put --table hr.scans --set who=ann "$T/hr.txt"
  assert_clean_success
  local hrfile logfile
  hrfile=$(as "$ANN" lake-query -f jsonl -c 'SELECT f FROM hr.scans' | jq -c .f)
  run --separate-stderr as "$LEO" lake-put --table logs.app --set line=one "$T/log.txt"
  assert_clean_success
  logfile=$(as "$LEO" lake-query -f jsonl -c 'SELECT f FROM logs.app' | jq -c .f)
  [ -n "$hrfile" ] && [ -n "$logfile" ] || fail "no FILE values: '$hrfile' '$logfile'"

  # each reads its own bytes back through a signed URL
  run --separate-stderr as "$ANN" lake-get "$hrfile"
  assert_clean_success
  assert_output "salary review"

  # leo: the HR table is not his to resolve, query or list
  run --separate-stderr as "$LEO" lake-catalog resolve hr.scans
  assert_error lake-catalog 77 "leo holds no read privilege on hr.scans"
  run --separate-stderr as "$LEO" lake-query -c 'SELECT count(*) FROM hr.scans'
  assert_equal "exit $status" "exit 77"
  run --separate-stderr as "$LEO" lake-catalog grants hr
  assert_clean_success
  assert_output ""

  # with ann's FILE value in hand: no URL, no bytes
  run --separate-stderr as "$LEO" lake-get "$hrfile"
  assert_error lake-get 77 "leo may not read that location"
  metasrv_post "$LEO" presign_get "$(jq -c '{location}' <<<"$hrfile")"
  metasrv_expect_error 403 permission_denied
  # nor by appending it to his own table and reading it there
  run --separate-stderr as "$LEO" lake-query -c "INSERT INTO logs.app VALUES ('stolen', '$hrfile')"
  assert_equal "exit $status" "exit 77"
  [[ $stderr == *"leo may not refer to a location it did not upload and may not read"* ]] || fail "$stderr"
  assert_equal "$(as "$LEO" lake-query -c 'SELECT count(*) FROM logs.app')" 1
  metasrv_post "$LEO" append "{\"namespace\":\"logs\",\"name\":\"app\",\"expected_version\":1,\"segments\":[],\"files\":[$(jq -c .location <<<"$hrfile")]}"
  metasrv_expect_error 403 permission_denied

  # nor put into HR's table, by name or by its segments' directory
  run --separate-stderr as "$LEO" lake-put --table hr.scans --set who=leo "$T/log.txt"
  assert_equal "exit $status" "exit 77"
  metasrv_post "$LEO" upload_begin '{"content_type":"text/plain","table":"hr.scans"}'
  metasrv_expect_error 403 permission_denied
  local hrid
  hrid=$(lake-catalog --max-age 0 resolve hr.scans | jq -r .id)
  metasrv_post "$LEO" upload_begin "{\"content_type\":\"text/plain\",\"dir\":\"tables/$hrid\"}"
  metasrv_expect_error 403 permission_denied
  # an upload URL is always for a key the server makes up: no user names
  # the key, so nobody overwrites another's object
  metasrv_post "$LEO" upload_begin "{\"content_type\":\"text/plain\",\"location\":$(jq -c .location <<<"$hrfile")}"
  metasrv_expect_error 400 invalid_argument

  # ann's table and bytes are as she left them
  assert_equal "$(as "$ANN" lake-query -c 'SELECT who FROM hr.scans')" ann
  assert_equal "$(as "$ANN" lake-get "$hrfile")" "salary review"
  # and the other way round: ann gets nothing of leo's
  run --separate-stderr as "$ANN" lake-get "$logfile"
  assert_error lake-get 77
  metasrv_check_errors
}

# upload_begin as TOKENFILE with BODY: the error's code and message, or
# "200 " and the location's key below the stage.
upload_as() {
  metasrv_post "$1" upload_begin "$2"
  if [ "$HTTP_CODE" = 200 ]; then
    echo "200 $(jq -r .location <<<"$HTTP_BODY" | sed "s|^$STAGE_URL/||")"
  else
    metasrv_expect_error "$HTTP_CODE" "$(jq -r .error.code <<<"$HTTP_BODY")"
    echo "$HTTP_CODE $(jq -r .error.message <<<"$HTTP_BODY")"
  fi
}

@test "upload_begin's dir is a live table's segments directory, the one its table names; an id's refusal does not name the table (issue 41, holes 2 and 3)" {
  local hrid logid b
  hrid=$(lake-catalog --max-age 0 resolve hr.scans | jq -r .id)
  logid=$(lake-catalog --max-age 0 resolve logs.app | jq -r .id)
  b='"content_type":"text/plain"'
  # leo names his own table but HR's directory: refused, nothing signed
  assert_equal "$(upload_as "$LEO" "{$b,\"table\":\"logs.app\",\"dir\":\"tables/$hrid\"}")" \
    "403 leo holds no write privilege on that table"
  # a live table's id and an unknown one: the same answer
  assert_equal "$(upload_as "$LEO" "{$b,\"dir\":\"tables/$hrid\"}")" "403 leo holds no write privilege on that table"
  assert_equal "$(upload_as "$LEO" "{$b,\"dir\":\"tables/01NOSUCHTABLE\"}")" "403 leo holds no write privilege on that table"
  # nowhere gc does not look, whoever asks
  assert_equal "$(upload_as "$LEO" "{$b,\"dir\":\"anything/at/all\"}")" "403 a user's uploads go to files/ or a table's segments"
  assert_equal "$(upload_as "$T/srv/admin.token" "{$b,\"dir\":\"anything/at/all\"}")" "400 dir: files/..., tables/ID of a table, or none (files/)"
  assert_equal "$(upload_as "$T/srv/admin.token" "{$b,\"dir\":\"tables/01NOSUCHTABLE\"}")" "400 dir: no live table has that id"
  assert_equal "$(upload_as "$T/srv/admin.token" "{$b,\"table\":\"hr.scans\",\"dir\":\"tables/$logid\"}")" \
    "400 dir and table name two different tables"
  # a dropped table's directory is no longer one
  lake-catalog create logs.old 'line TEXT'
  local oldid
  oldid=$(lake-catalog --max-age 0 resolve logs.old | jq -r .id)
  lake-catalog drop logs.old
  assert_equal "$(upload_as "$LEO" "{$b,\"dir\":\"tables/$oldid\"}")" "403 leo holds no write privilege on that table"
  # what agrees is signed, and lands where it says
  [[ $(upload_as "$LEO" "{$b,\"table\":\"logs.app\",\"dir\":\"tables/$logid\"}") == "200 tables/$logid/"* ]] ||
    fail "leo's own table: $HTTP_CODE $HTTP_BODY"
  [[ $(upload_as "$LEO" "{$b,\"dir\":\"tables/$logid\"}") == "200 tables/$logid/"* ]] || fail "$HTTP_BODY"
  metasrv_check_errors
  # nothing landed in HR's directory
  assert_equal "$(s3_keys | grep -c "/tables/$hrid/")" 0
}

@test "modify alone (with read) lets a user DELETE and UPDATE on the keyless stage: a rewrite's segment uploads need no write (issue 41)" {
  printf 'a\n' >"$T/a.txt"
  printf 'b\n' >"$T/b.txt"
  run --separate-stderr as "$ANN" lake-put --table hr.scans --set who=keep "$T/a.txt"
  assert_clean_success
  run --separate-stderr as "$ANN" lake-put --table hr.scans --set who=gone "$T/b.txt"
  assert_clean_success
  local mia
  mia=$(metasrv_token user mia) # HR's auditor: reads and corrects, adds nothing
  lake-catalog grant read ON hr.scans TO mia
  lake-catalog grant modify ON hr.scans TO mia
  # (one segment a put: the DELETE drops one whole, the UPDATE writes one)
  run --separate-stderr as "$mia" lake-query -c "DELETE FROM hr.scans WHERE who = 'gone'"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: hr.scans: 1 row deleted"
  run --separate-stderr as "$mia" lake-query -c "UPDATE hr.scans SET who = 'kept' WHERE who = 'keep'"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: hr.scans: 1 row updated"
  # (ann's cached version is her own last: she asks again)
  assert_equal "$(as "$ANN" env LAKE_CATALOG_TTL=0 lake-query -c 'SELECT who FROM hr.scans')" kept
  # modify is no write: mia adds no row, and puts no object
  run --separate-stderr as "$mia" lake-query -c "INSERT INTO hr.scans (who) VALUES ('new')"
  assert_equal "exit $status" "exit 77"
  run --separate-stderr as "$mia" lake-put --table hr.scans --set who=new "$T/a.txt"
  assert_equal "exit $status" "exit 77"
  assert_equal "$(as "$ANN" env LAKE_CATALOG_TTL=0 lake-query -c 'SELECT count(*) FROM hr.scans')" 1
}

@test "a bare lake-put needs write on some table; its object is its uploader's to append and read, no one else's" {
  printf 'draft\n' >"$T/d.txt"
  local carol value
  carol=$(metasrv_token user carol) # holds nothing
  run --separate-stderr as "$carol" lake-put "$T/d.txt"
  assert_error lake-put 77 "carol holds no write privilege on any table"
  # ann may write hr: her bare put is hers to read and to reference
  run --separate-stderr as "$ANN" lake-put "$T/d.txt"
  assert_clean_success
  value=$output
  assert_equal "$(as "$ANN" lake-get "$value")" draft
  run --separate-stderr as "$LEO" lake-get "$value"
  assert_error lake-get 77
  run --separate-stderr as "$ANN" lake-query -c "INSERT INTO hr.scans VALUES ('ann', '$value')"
  assert_clean_success
  # once in hr.scans, whoever may read hr reads it
  lake-catalog grant read ON hr.scans TO leo
  assert_equal "$(as "$LEO" lake-get "$value")" draft
}

@test "upload_begin's table must name one: a malformed one is 400, whoever asks" {
  local table
  for table in '"hr"' '"hr.scans.x"' '"hr."' '".scans"' '"hr.sc-ans"' '7' '["hr.scans"]'; do
    metasrv_post "$ANN" upload_begin "{\"content_type\":\"text/plain\",\"table\":$table}"
    metasrv_expect_error 400 invalid_argument
    metasrv_post "$T/srv/admin.token" upload_begin "{\"content_type\":\"text/plain\",\"table\":$table}"
    metasrv_expect_error 400 invalid_argument
  done
  metasrv_post "$ANN" upload_begin '{"content_type":"text/plain","table":"hr.scans"}'
  assert_equal "$HTTP_CODE" 200
  metasrv_check_errors
}

@test "a user who loses read while a query runs: the pinned version's bytes are refused (77), nothing printed, no other version mixed in" {
  lake-query -c "INSERT INTO hr.scans VALUES ('one', NULL), ('two', NULL)"
  local bob
  bob=$(metasrv_token user bob)
  lake-catalog grant read ON hr.scans TO bob
  # bob's statement holds between its pin (version 1) and its first read
  as "$bob" env LAKE_TEST_PIN_HOLD="$T/go" lake-query -c 'SELECT who FROM hr.scans ORDER BY who' \
    >"$T/q.out" 2>"$T/q.err" &
  local pid=$!
  held_wait "$T/go" "$pid" "$T/q.err"
  lake-catalog revoke read ON hr.scans FROM bob
  lake-query -c "INSERT INTO hr.scans VALUES ('three', NULL)" # another version meanwhile
  held_release "$T/go" "$pid"
  assert_equal "exit $HELD_STATUS" "exit 77"
  assert_equal "$(cat "$T/q.out")" ""
  assert_equal "$(cat "$T/q.err")" "lake-query: bob may not read that location"
  # with read again, the same pin shows its own version, whole
  lake-catalog grant read ON hr.scans TO bob
  rm -f "$T/go" "$T/go.held"
  as "$bob" env LAKE_TEST_PIN_HOLD="$T/go" LAKE_CATALOG_TTL=0 lake-query -c 'SELECT who FROM hr.scans ORDER BY who' \
    >"$T/q.out" 2>"$T/q.err" &
  pid=$!
  held_wait "$T/go" "$pid" "$T/q.err"
  lake-query -c "INSERT INTO hr.scans VALUES ('four', NULL)"
  held_release "$T/go" "$pid"
  assert_equal "exit $HELD_STATUS" "exit 0"
  assert_equal "$(cat "$T/q.out")" $'one\nthree\ntwo'
}

@test "presign_get of a segment only expired versions refer to: refused even to a reader, granted before the expiry" {
  lake-query -c "INSERT INTO hr.scans VALUES ('old', NULL)"
  local bob seg
  bob=$(metasrv_token user bob)
  lake-catalog grant read ON hr TO bob
  seg=$(lake-catalog --max-age 0 resolve hr.scans | jq -c '{location: .segments[0].location}')
  metasrv_post "$bob" presign_get "$seg"
  assert_equal "$HTTP_CODE" 200
  lake-query -c "DELETE FROM hr.scans" # version 2 no longer has it
  lake-query -c "INSERT INTO hr.scans VALUES ('new', NULL)"
  # time travel: version 1 is readable, so is its segment
  metasrv_post "$bob" presign_get "$seg"
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(as "$bob" lake-query -c 'SELECT who FROM hr.scans AT (VERSION => 1)')" old
  lake-catalog expire hr.scans --older-than 0
  metasrv_post "$bob" presign_get "$seg"
  metasrv_expect_error 403 permission_denied
  assert_equal "$(as "$bob" lake-query -c 'SELECT who FROM hr.scans')" new
  metasrv_check_errors
}

@test "a user's own uploads are presigned only while it holds what they were uploaded under: once its grants are revoked, the refusal anyone gets (issue 41, hole 5)" {
  printf 'draft\n' >"$T/d.txt"
  local value file seg hrid
  run --separate-stderr as "$ANN" lake-put "$T/d.txt"
  assert_clean_success
  value=$output
  file=$(jq -r .location <<<"$value")
  # a segment of hr.scans begun, never appended
  hrid=$(lake-catalog --max-age 0 resolve hr.scans | jq -r .id)
  metasrv_post "$ANN" upload_begin "{\"content_type\":\"application/octet-stream\",\"table\":\"hr.scans\",\"dir\":\"tables/$hrid\"}"
  assert_equal "$HTTP_CODE" 200
  seg=$(jq -r .location <<<"$HTTP_BODY")
  local loc
  for loc in "$file" "$seg"; do
    metasrv_post "$ANN" presign_get "{\"location\":\"$loc\"}"
    assert_equal "ann's own ${loc#"$STAGE_URL"/}: HTTP $HTTP_CODE" "ann's own ${loc#"$STAGE_URL"/}: HTTP 200"
  done
  # write alone was what both needed: read on hr does not keep them hers
  lake-catalog revoke write ON hr FROM ann
  for loc in "$file" "$seg"; do
    metasrv_post "$ANN" presign_get "{\"location\":\"$loc\"}"
    metasrv_expect_error 403 permission_denied
    assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" "ann may not read that location"
    metasrv_post "$LEO" presign_get "{\"location\":\"$loc\"}"
    metasrv_expect_error 403 permission_denied
    assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" "leo may not read that location"
  done
  run --separate-stderr as "$ANN" lake-get "$value"
  assert_error lake-get 77
  assert_output ""
  # write on another table gives back her files/ object (a bare put's
  # grant), not HR's segment
  lake-catalog grant write ON logs.app TO ann
  metasrv_post "$ANN" presign_get "{\"location\":\"$file\"}"
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ANN" presign_get "{\"location\":\"$seg\"}"
  metasrv_expect_error 403 permission_denied
  metasrv_check_errors
}
