#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Bad requests to lake-metasrv (DESIGN §5, issue 4 "Bad input and faults"):
# malformed JSON, a body that is not one object, wrong types and unknown
# fields (400 invalid_argument), an oversized body (413, with and without
# "Expect: 100-continue", chunked too), an unknown action or resource (404).
# Every error is exactly one JSON object {"error":{code,message,request_id}}
# naming no file path, SQL or token, and changes nothing; the server's log
# has one line per request under the same request_id, and never a token.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup nouse
}

teardown() {
  metasrv_stop
  common_teardown
}

# The log line format of lake-metasrv(8), LOGGING.
LOG_LINE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z request_id=[0-9A-Z]+ principal=[^ ]+ action=[^ ]+ status=[0-9]+ duration_ms=[0-9]+\.[0-9]+( |$)'

@test "malformed JSON, a body that is not one object, wrong types, unknown fields: 400 invalid_argument, nothing changed" {
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"a","type":"TEXT"}]}'
  local before
  before=$(metasrv_directory)

  # ACTION<TAB>BODY, one request each
  local cases=(
    # malformed JSON
    $'whoami\t{'
    $'create_namespace\t{"namespace":"x"'
    $'create_namespace\t{"namespace":"x",}'
    $'create_namespace\t{namespace:"x"}'
    $'create_namespace\t{"namespace":"x"}garbage'
    $'create_namespace\t{"namespace":"x"} {"namespace":"y"}'
    $'whoami\t\xff\xfe{}'
    # JSON, but not one object
    $'catalog_snapshot\t[]'
    $'catalog_snapshot\t[{"known_generation":-1}]'
    $'create_namespace\t[{"namespace":"x"}]'
    $'whoami\tnull'
    $'whoami\t42'
    $'whoami\t"x"'
    # wrong types
    $'create_namespace\t{"namespace":5}'
    $'create_namespace\t{"namespace":["x"]}'
    $'create_namespace\t{"namespace":true}'
    $'catalog_snapshot\t{"known_generation":"x"}'
    $'catalog_snapshot\t{"known_generation":1.5}'
    $'catalog_snapshot\t{"known_generation":-2}'
    $'catalog_snapshot\t{"max_entries":0}'
    $'catalog_snapshot\t{"max_bytes":"1"}'
    $'resolve\t{"namespace":"m","name":"t","version":"1"}'
    $'resolve\t{"namespace":"m","name":5}'
    $'append\t{"namespace":"m","name":"t","expected_version":"0","segments":[]}'
    $'append\t{"namespace":"m","name":"t","expected_version":0,"segments":"x"}'
    $'append\t{"namespace":"m","name":"t","segments":[]}'
    $'create_table\t{"namespace":"m","name":"u","schema":"a TEXT"}'
    $'create_table\t{"namespace":"m","name":"u","schema":[{"name":"a","type":"NOPE"}]}'
    $'create_table\t{"namespace":"m","name":"u"}'
    $'drop_table\t{"namespace":"m","name":{}}'
    # names that are not names
    $'create_namespace\t{"namespace":"a-b"}'
    $'create_namespace\t{"namespace":"../etc"}'
    $'create_namespace\t{"namespace":""}'
    # unknown fields
    $'catalog_snapshot\t{"known_generation":-1,"bogus":1}'
    $'whoami\t{"x":1}'
    $'create_namespace\t{"namespace":"x","Namespace":"y"}'
    $'create_table\t{"namespace":"m","name":"u","schema":[{"name":"a","type":"TEXT"}],"if_not_exists":true}'
    $'drop_table\t{"namespace":"m","name":"t","cascade":true}'
    $'resolve\t{"namespace":"m","name":"t","versoin":1}'
  )
  local c action body
  for c in "${cases[@]}"; do
    action=${c%%$'\t'*} body=${c#*$'\t'}
    echo "# $action: $body"
    metasrv_post "$ADMIN" "$action" "$body"
    metasrv_expect_error 400 invalid_argument
  done
  metasrv_check_errors

  assert_equal "$(metasrv_directory)" "$before"
  local total=0 a n
  for a in catalog_snapshot resolve append create_namespace create_table drop_table whoami; do
    n=$(metasrv_count "$a" 400)
    total=$((total + n))
  done
  assert_equal "400s counted: $total" "400s counted: ${#cases[@]}"
}

@test "a body over --max-body is answered 413, with and without Expect: 100-continue, chunked too; one at the bound is served" {
  metasrv_stop
  metasrv_start "$SRV" 0 --max-body 4096
  head -c 10240 /dev/zero | tr '\0' ' ' >"$T/10k"
  printf '{}' >>"$T/10k"
  # valid JSON of exactly 4096 and 4097 bytes: {} padded with spaces
  head -c 4094 /dev/zero | tr '\0' ' ' >"$T/4096"
  printf '{}' >>"$T/4096"
  { cat "$T/4096"; printf ' '; } >"$T/4097"
  assert_equal "$(stat -c %s "$T/4096") $(stat -c %s "$T/4097")" "4096 4097"

  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/10k")"
  metasrv_assert_error 413 payload_too_large
  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/10k")" -H 'Expect:'
  metasrv_assert_error 413 payload_too_large
  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/10k")" -H 'Expect: 100-continue'
  metasrv_assert_error 413 payload_too_large
  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/10k")" -H 'Expect:' -H 'Transfer-Encoding: chunked'
  metasrv_assert_error 413 payload_too_large
  # without a token too: the bound comes before authentication
  metasrv_req - POST /v1/actions/create_namespace "$(cat "$T/10k")" -H 'Expect:'
  metasrv_assert_error 413 payload_too_large

  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/4097")" -H 'Expect:'
  metasrv_assert_error 413 payload_too_large
  metasrv_req "$ADMIN" POST /v1/actions/whoami "$(cat "$T/4096")" -H 'Expect:'
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  assert_equal "$(jq -r .principal <<<"$HTTP_BODY")" admin

  # the server lives on and counted each refusal
  metasrv_req - GET /v1/health
  assert_equal "$HTTP_CODE" 200
  local n413
  n413=$(metasrv_curl "$ADMIN" "$METASRV_URL/v1/metrics" | awk '/^lake_requests_total/ && /status="413"/ { n += $2 } END { print n + 0 }')
  assert_equal "413s counted: $n413" "413s counted: 6"
}

@test "an unknown action or resource is 404 not_found" {
  local path
  for path in /v1/actions/nope /v1/actions/ /v1/actions/whoami/x /v1/actions/WHOAMI /v1/nothing /v2/actions/whoami /; do
    echo "# POST $path"
    metasrv_req "$ADMIN" POST "$path" '{}'
    metasrv_assert_error 404 not_found
  done
  metasrv_req "$ADMIN" GET /v1/nothing
  metasrv_assert_error 404 not_found
  # no token: authentication comes first, so nothing is learnt about names
  metasrv_req - POST /v1/actions/nope '{}'
  metasrv_assert_error 401 unauthenticated
}

@test "the log: one line per request with its request_id, principal, action, status and duration; never a token" {
  local alice n=0
  alice=$(metasrv_token user alice)
  printf 'lk_admin_%064d\n' 7 >"$SRV/wrong.token"

  # expected: ID-or-dash principal action status, one per request
  local want=()
  req() { # PRINCIPAL ACTION STATUS then metasrv_req arguments
    local p=$1 a=$2 s=$3
    shift 3
    metasrv_req "$@"
    assert_equal "HTTP $HTTP_CODE" "HTTP $s"
    local id=-
    [ "$s" = 200 ] || id=$(jq -r .error.request_id <<<"$HTTP_BODY")
    want+=("$id $p $a $s")
    n=$((n + 1))
  }
  req - health 200 - GET /v1/health
  req admin whoami 200 "$ADMIN" POST /v1/actions/whoami '{}'
  req - whoami 401 - POST /v1/actions/whoami '{}'
  req - whoami 401 "$SRV/wrong.token" POST /v1/actions/whoami '{}'
  req alice catalog_snapshot 403 "$alice" POST /v1/actions/catalog_snapshot '{}'
  req alice metrics 403 "$alice" GET /v1/metrics
  req admin create_namespace 400 "$ADMIN" POST /v1/actions/create_namespace '{"namespace":5}'
  req admin create_namespace 200 "$ADMIN" POST /v1/actions/create_namespace '{"namespace":"m"}'
  req admin create_namespace 412 "$ADMIN" POST /v1/actions/create_namespace '{"namespace":"m"}'
  req admin resolve 404 "$ADMIN" POST /v1/actions/resolve '{"namespace":"m","name":"nope"}'
  req admin actions 200 "$ADMIN" GET /v1/actions

  metasrv_log_wait "$n"
  sleep 0.1 # nothing more comes
  local lines
  lines=$(metasrv_log_lines)
  assert_equal "request lines: $(wc -l <<<"$lines")" "request lines: $n"
  local line
  while IFS= read -r line; do
    [[ $line =~ $LOG_LINE ]] || fail "not a log line of lake-metasrv(8): $line"
  done <<<"$lines"
  # the same requests (in whatever order the lines were written) ...
  assert_equal "$(sed -E 's/.* principal=([^ ]+) action=([^ ]+) status=([0-9]+) .*/\1 \2 \3/' <<<"$lines" | sort)" \
    "$(printf '%s\n' "${want[@]}" | cut -d' ' -f2- | sort)"
  # ... and each error's line under the request_id its answer gave
  local w id p a s
  for w in "${want[@]}"; do
    read -r id p a s <<<"$w"
    [ "$id" != - ] || continue
    assert_equal "lines with $id: $(grep -c " request_id=$id " "$SRV/serve.log")" "lines with $id: 1"
    [[ $(grep " request_id=$id " "$SRV/serve.log") == *" principal=$p action=$a status=$s duration_ms="* ]] ||
      fail "the line of $id is not '$p $a $s': $(grep " request_id=$id " "$SRV/serve.log")"
  done

  # no token anywhere in what the server wrote
  local tok secret
  for tok in "$ADMIN" "$alice" "$SRV/wrong.token"; do
    secret=$(cat "$tok")
    secret=${secret##*_}
    if grep -qF "$secret" "$SRV/serve.log" "$SRV/serve.out"; then
      fail "a token's secret is in the server's output"
    fi
  done
  if grep -q -e 'lk_' -e 'Bearer' "$SRV/serve.log"; then fail "token material in the log"; fi
  assert_equal "$(cat "$SRV/serve.out")" "listening on $METASRV_URL"
}

@test "a client cannot forge log lines: the action name in a URL is not written raw" {
  # %0A decodes to a newline in the path; the log must stay one line per request
  metasrv_req - POST '/v1/actions/x%0A2026-01-01T00:00:00Z%20request_id=FORGED%20status=200' '{}'
  metasrv_assert_error 401 unauthenticated
  metasrv_req "$ADMIN" POST '/v1/actions/y%0Aforged%20principal=admin' '{}'
  metasrv_assert_error 404 not_found
  metasrv_log_wait 2
  sleep 0.1
  local line
  while IFS= read -r line; do
    [[ $line == "lake-metasrv: "* ]] && continue
    [[ $line =~ $LOG_LINE ]] || fail "a line of the log is not a request line: $line"
  done <"$SRV/serve.log"
  assert_equal "request lines: $(metasrv_log_lines | wc -l)" "request lines: 2"
}

@test "a registry the server can no longer open: the error names no path" {
  sqlite_registry_only "moves the SQLite file (PostgreSQL lost: pg-registry.bats)"
  metasrv_stop
  metasrv_start "$SRV" 0 --threads 1 # one worker: it opens the registry at its first request
  mv "$SRV/registry.db" "$SRV/registry.moved"
  metasrv_post "$ADMIN" whoami
  [[ $HTTP_CODE == [45]?? ]] || fail "HTTP $HTTP_CODE"
  metasrv_assert_error "$HTTP_CODE" "$(jq -r .error.code <<<"$HTTP_BODY")"
  echo 'not a registry' >"$SRV/registry.db"
  metasrv_post "$ADMIN" whoami
  [[ $HTTP_CODE == [45]?? ]] || fail "HTTP $HTTP_CODE"
  metasrv_assert_error "$HTTP_CODE" "$(jq -r .error.code <<<"$HTTP_BODY")"
  # the detail is the operator's: in the log, under the request id
  local id
  id=$(jq -r .error.request_id <<<"$HTTP_BODY")
  metasrv_log_wait 2
  grep "request_id=$id " "$SRV/serve.log" | grep -q "registry.db" || fail "the log lacks the detail"
}

@test "a registry without a directory marker is not served: snapshots fail closed (412 failed_precondition)" {
  sqlite_registry_only "edits the SQLite file"
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_stop
  sqlite3 "$SRV/registry.db" 'DELETE FROM directory_marker'
  metasrv_start
  grep -q 'no directory marker' "$SRV/serve.log" || fail "no warning at start"
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  metasrv_assert_error 412 failed_precondition
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":0}'
  metasrv_assert_error 412 failed_precondition
  metasrv_use
  run --separate-stderr lake-catalog list
  assert_error lake-catalog 1
  assert_output ""
}
