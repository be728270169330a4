#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-metasrv under load and faults (DESIGN §5, issue 4): snapshot permits
# (64 concurrent snapshots, 2 permits: 503 with Retry-After for some, the
# rest correct, the server lives on); generation fencing under a change
# injected between a snapshot's scan and its re-check; an append whose
# answer was lost retried without adding anything twice; append's conflict
# and containment refusals; snapshot bounds at the server (--max-entries,
# --max-bytes) and at the client (LAKE_MAX_RESPONSE): a clear error, never
# a truncated list, and the cache keeps its last good snapshot.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
}

teardown() {
  metasrv_stop
  common_teardown
}

# lake-catalog list as the server has it (no cache involved).
server_list() {
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  [ "$HTTP_CODE" = 200 ] || fail "catalog_snapshot: $HTTP_CODE $HTTP_BODY"
  jq -r '.entries[] | select(.kind == "table") | "\(.namespace)\t\(.name)"' <<<"$HTTP_BODY"
}

# The one snapshot file of this test's cache, or nothing.
snapshot_files() {
  find "$XDG_CACHE_HOME/lake" -name snapshot -type f 2>/dev/null || true
}

append_body() { # EXPECTED_VERSION SEGMENT_LOCATION [FILES_JSON]
  printf '{"namespace":"m","name":"t","expected_version":%s,"segments":[%s],"files":%s}\n' \
    "$1" "$(metasrv_segment "$2")" "${3:-[]}"
}

make_table() {
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"a","type":"TEXT"}]}'
  assert_equal "$HTTP_CODE" 200
}

@test "64 concurrent snapshots with 2 permits: some 503 unavailable with Retry-After, the rest correct, the server lives on" {
  metasrv_stop
  metasrv_start "$SRV" 0 --snapshot-permits 2 --threads 4
  # a directory big enough that building and sending it takes a while
  metasrv_tables big t 400
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  assert_equal "$HTTP_CODE" 200
  local reference=$HTTP_BODY
  assert_equal "$(jq '.entries | length' <<<"$reference")" 401

  # 64 transfers at once from one curl (connections opened together, so
  # the requests arrive together)
  mkdir "$T/par"
  local i secret
  secret=$(cat "$ADMIN")
  for i in $(seq 64); do
    [ "$i" -gt 1 ] && echo next
    printf 'url = "%s/v1/actions/catalog_snapshot"\ncacert = "%s"\n' "$METASRV_URL" "$SRV/cert.pem"
    printf 'header = "Authorization: Bearer %s"\n' "$secret"
    printf 'data = "{\\"known_generation\\":-1}"\n'
    printf 'output = "%s/par/%d.body"\ndump-header = "%s/par/%d.head"\n' "$T" "$i" "$T" "$i"
  done >"$T/par.curl"
  curl -sS --no-progress-meter --parallel --parallel-immediate --parallel-max 64 -K "$T/par.curl" \
    2>"$T/par.err" || fail "curl: $(cat "$T/par.err")"

  printf '%s' "$reference" >"$T/reference"
  local ok=0 busy=0 code head retry=$'\n''retry-after: [0-9]+'
  for i in $(seq 64); do
    code='' head=''
    IFS= read -r -d '' head <"$T/par/$i.head" || true
    read -r _ code _ <<<"$head"
    case $code in
      200)
        ok=$((ok + 1))
        cmp -s "$T/reference" "$T/par/$i.body" || fail "request $i: a snapshot that differs"
        ;;
      503)
        busy=$((busy + 1))
        [[ ${head,,} =~ $retry ]] || fail "request $i: 503 without Retry-After: $head"
        HTTP_CODE=$code HTTP_BODY=
        IFS= read -r -d '' HTTP_BODY <"$T/par/$i.body" || true
        metasrv_expect_error 503 unavailable
        ;;
      *) fail "request $i: HTTP $code $(cat "$T/par.err")" ;;
    esac
  done
  echo "# $ok snapshots, $busy busy"
  [ "$busy" -gt 0 ] || fail "no request was refused for want of a permit"
  [ "$ok" -gt 0 ] || fail "no snapshot was served"
  metasrv_check_errors

  # alive, and every permit given back
  kill -0 "$METASRV_PID" || fail "lake-metasrv died"
  metasrv_req - GET /v1/health
  assert_equal "$HTTP_CODE" 200
  metasrv_req "$ADMIN" GET /v1/metrics
  grep -q '^lake_snapshot_permits_in_use 0$' <<<"$HTTP_BODY" || fail "permits still held: $HTTP_BODY"
  assert_equal "$(metasrv_count catalog_snapshot 503)" "$busy"
  assert_equal "$(metasrv_count catalog_snapshot 200)" "$((ok + 1))"
}

# LAKE_TEST_SNAPSHOT_MUTATIONS=N is a test-only fault switch of lake-metasrv:
# between a snapshot's scan and its re-check of the generation, the server
# bumps the catalog generation through a second registry connection, as a
# concurrent writer would, N times in all.  No real peer can be made to hit
# that window on cue.
@test "fencing: one change between a snapshot's scan and its re-check: the scan is repeated and the bumped generation answered" {
  make_table
  local before
  before=$(server_list)
  metasrv_stop
  LAKE_TEST_SNAPSHOT_MUTATIONS=1 metasrv_start
  grep -q 'TEST FAULT' "$SRV/serve.log" || fail "the fault switch was not taken"

  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  assert_equal "$(jq -c '[.status, .generation]' <<<"$HTTP_BODY")" '["snapshot",3]'
  assert_equal "$(server_list)" "$before"
  metasrv_req "$ADMIN" GET /v1/metrics
  grep -q '^lake_registry_generation 3$' <<<"$HTTP_BODY" || fail "generation not bumped once: $HTTP_BODY"
  # one retry was enough: the next snapshot is not fenced at all
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":3}'
  assert_equal "$(jq -c '[.status, .generation]' <<<"$HTTP_BODY")" '["not_modified",3]'
}

@test "fencing: a change during each of the 3 scans: 503 unavailable, never a directory of mixed generations" {
  make_table
  local port=$METASRV_PORT
  metasrv_stop
  LAKE_TEST_SNAPSHOT_MUTATIONS=3 metasrv_start "$SRV" "$port"

  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  metasrv_assert_error 503 unavailable
  grep -qi '^retry-after: [0-9]' <<<"$HTTP_HEAD" || fail "503 without Retry-After: $HTTP_HEAD"
  metasrv_req "$ADMIN" GET /v1/metrics
  grep -q '^lake_registry_generation 5$' <<<"$HTTP_BODY" || fail "not exactly 3 scans: $HTTP_BODY"
  # the faults are spent: the next snapshot answers the generation reached
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  assert_equal "$(jq -c '[.status, .generation, (.entries | length)]' <<<"$HTTP_BODY")" '["snapshot",5,2]'

  # the client without retries (retry_deadline 0): a temporary failure
  # (75), on one line
  metasrv_stop
  LAKE_TEST_SNAPSHOT_MUTATIONS=3 metasrv_start "$SRV" "$port"
  run --separate-stderr env LAKE_RETRY_DEADLINE=0 lake-catalog refresh --force
  assert_error lake-catalog 75 "the catalog is temporarily unavailable" "not retried (retry_deadline = 0)"
  assert_output ""
  # with them (the default): the second round finds the faults spent
  metasrv_stop
  LAKE_TEST_SNAPSHOT_MUTATIONS=3 metasrv_start "$SRV" "$port"
  run --separate-stderr env LAKE_TRACE=1 lake-catalog refresh --force
  assert_success
  [[ $stderr == *"catalog_snapshot at $METASRV_URL -> error unavailable ("*"), round 1; trying again in "* ]] ||
    fail "not retried: $stderr"
  assert_equal "$(untraced_stderr)" ""
}

# LAKE_TEST_KILL_AFTER_APPEND=1 is a test-only fault switch of lake-metasrv:
# the server SIGKILLs itself right after an append commits, before it
# answers, so the client never learns that its append went through.
@test "an append whose answer was lost (server killed after the commit) is retried without adding anything twice" {
  make_table
  metasrv_stop
  LAKE_TEST_KILL_AFTER_APPEND=1 metasrv_start
  local port=$METASRV_PORT body
  body=$(append_body 0 "file://$T/srv/stage/tables/x/seg1")

  metasrv_post "$ADMIN" append "$body"
  assert_equal "HTTP $HTTP_CODE" "HTTP 000" # the connection dropped: no answer
  [ -s "$SRV/.curl.err" ] || fail "curl saw no failure"
  local rc=0
  wait "$METASRV_PID" || rc=$?
  assert_equal "server exit $rc" "server exit 137" # SIGKILL
  METASRV_PID=

  metasrv_start "$SRV" "$port" # normally, on the same port
  assert_equal "$METASRV_PORT" "$port"
  metasrv_post "$ADMIN" append "$body"
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"version":1}'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[].location]]' <<<"$HTTP_BODY")" \
    "[1,[\"file://$T/srv/stage/tables/x/seg1\"]]"
  # and once more: still the same version, still one segment
  metasrv_post "$ADMIN" append "$body"
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"version":1}'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","version":1}'
  assert_equal "$(jq '.segments | length' <<<"$HTTP_BODY")" 1
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","version":2}'
  metasrv_assert_error 404 not_found
}

@test "append: a stale expected_version is 409 conflict; a segment or a FILE outside the stage is 400; nothing changes" {
  make_table
  metasrv_post "$ADMIN" append "$(append_body 0 "$STAGE_URL/tables/m/seg1" "[\"$STAGE_URL/files/a\"]")"
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"version":1}'

  metasrv_post "$ADMIN" append "$(append_body 0 "$STAGE_URL/tables/m/seg2")"
  metasrv_assert_error 409 conflict
  metasrv_post "$ADMIN" append "$(append_body 5 "$STAGE_URL/tables/m/seg2")"
  metasrv_assert_error 409 conflict

  local loc
  for loc in file:///etc/passwd "file://$T/srv/stage2/tables/m/seg2" "file://$T/srv/stage/../registry.db" \
    "file://$T/srv" s3://bucket/tables/m/seg2 "https://example.com/seg2" "tables/m/seg2"; do
    echo "# segment at $loc"
    metasrv_post "$ADMIN" append "$(append_body 1 "$loc")"
    metasrv_assert_error 400 invalid_argument
    echo "# file at $loc"
    metasrv_post "$ADMIN" append "$(append_body 1 "$STAGE_URL/tables/m/seg2" "[\"$STAGE_URL/files/b\",\"$loc\"]")"
    metasrv_assert_error 400 invalid_argument
  done
  metasrv_post "$ADMIN" append "$(append_body 1 "$STAGE_URL/tables/m/seg2" '[5]')"
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" append '{"namespace":"m","name":"nope","expected_version":0,"segments":[],"files":[]}'
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" append "$(append_body 0 "$STAGE_URL/tables/m/seg2" | sed 's/"name":"t"/"name":"nope"/')"
  metasrv_assert_error 404 not_found

  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[].location]]' <<<"$HTTP_BODY")" "[1,[\"$STAGE_URL/tables/m/seg1\"]]"
  # and the right expected version still appends
  metasrv_post "$ADMIN" append "$(append_body 1 "$STAGE_URL/tables/m/seg2")"
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"version":2}'
}

@test "bounds: over --max-entries the snapshot is an error (payload_too_large, exit 1), never a truncated list; the cache keeps the last good one" {
  metasrv_tables m t 5
  run --separate-stderr lake-catalog refresh --force
  assert_clean_success
  local good
  good=$(lake-catalog list)
  assert_equal "$(wc -l <<<"$good")" 5
  # a client that asks for fewer entries than there are is refused too
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1,"max_entries":5}'
  metasrv_assert_error 413 payload_too_large

  local port=$METASRV_PORT
  metasrv_stop
  metasrv_start "$SRV" "$port" --max-entries 3
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  metasrv_assert_error 413 payload_too_large
  # the server's bound caps a client that asks for more
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1,"max_entries":1000}'
  metasrv_assert_error 413 payload_too_large

  local snap
  snap=$(snapshot_files)
  local before
  before=$(sha256sum "$snap")
  run --separate-stderr lake-catalog refresh --force
  assert_error lake-catalog 1 "exceeds"
  assert_output ""
  assert_equal "$(sha256sum "$snap")" "$before"
  kill -0 "$METASRV_PID" || fail "lake-metasrv died"

  # the last good list is still served; unchanged, it costs a not_modified
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output "$good"
  run --separate-stderr lake-catalog --max-age 0 list
  assert_clean_success
  assert_output "$good"
}

@test "bounds: over --max-bytes likewise" {
  metasrv_tables m t 12
  run --separate-stderr lake-catalog refresh --force
  assert_clean_success
  local good
  good=$(lake-catalog list)
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  local size=${#HTTP_BODY}
  [ "$size" -gt 1500 ] || fail "the test catalog is too small: $size bytes"
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1,"max_bytes":1024}'
  metasrv_assert_error 413 payload_too_large

  local port=$METASRV_PORT
  metasrv_stop
  metasrv_start "$SRV" "$port" --max-bytes 1024
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1,"max_bytes":100000000}'
  metasrv_assert_error 413 payload_too_large
  local snap before
  snap=$(snapshot_files)
  before=$(sha256sum "$snap")
  run --separate-stderr lake-catalog refresh --force
  assert_error lake-catalog 1 "exceeds"
  assert_output ""
  assert_equal "$(sha256sum "$snap")" "$before"
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output "$good"
  kill -0 "$METASRV_PID" || fail "lake-metasrv died"
}

@test "bounds: an admin with no snapshot past --max-entries keeps working: list through list_tables (paged, every table), resolve by name, the refusal remembered" {
  metasrv_tables m t 5
  local port=$METASRV_PORT
  metasrv_stop
  metasrv_start "$SRV" "$port" --max-entries 3
  export XDG_CACHE_HOME=$T/fresh-cache LAKE_CATALOG_TTL=3600
  run_traced env LAKE_TEST_LIST_PAGE=2 lake-catalog list
  assert_success
  assert_output $'m\tt1\nm\tt2\nm\tt3\nm\tt4\nm\tt5'
  assert_equal "$(trace_lines source | sed 's/generation=[0-9]*/generation=G/')" "trace: source catalog_snapshot known=-1 -> error payload_too_large
trace: source list_tables -> generation=G tables=2 more=yes
trace: source list_tables after=m.t2 -> generation=G tables=2 more=yes
trace: source list_tables after=m.t4 -> generation=G tables=1 more=no"
  assert_equal "$(untraced_stderr)" ""
  # a table by name: resolve, no snapshot asked for (the refusal is kept)
  run_traced lake-catalog resolve m.t4
  assert_success
  assert_equal "$(jq -r .name <<<"$output")" t4
  assert_equal "$(trace_lines 'source catalog_snapshot')" ""
  # and the list again: the cached listing, no call
  run_traced lake-catalog list
  assert_success
  assert_equal "$(wc -l <<<"$output")" 5
  assert_equal "$(trace_lines source)" ""
  [ -z "$(snapshot_files)" ] || fail "a snapshot was written past the bound"
}

@test "an answer larger than LAKE_MAX_RESPONSE is a clear error (exit 1, one line), not a crash or a truncated catalog" {
  metasrv_tables m t 20
  run --separate-stderr env LAKE_MAX_RESPONSE=1024 lake-catalog list
  assert_error lake-catalog 1 "answer larger than 1024 bytes"
  assert_output ""
  assert_equal "$(snapshot_files)" ""
  run --separate-stderr env LAKE_MAX_RESPONSE=1024 lake-catalog refresh --force
  assert_error lake-catalog 1 "answer larger than 1024 bytes"
  # small answers still fit
  run --separate-stderr env LAKE_MAX_RESPONSE=1024 lake-catalog whoami
  assert_clean_success
  # an unusable ceiling is a configuration error
  run --separate-stderr env LAKE_MAX_RESPONSE=1000 lake-catalog list
  assert_error lake-catalog 78 max_response
  run --separate-stderr env LAKE_MAX_RESPONSE=lots lake-catalog list
  assert_error lake-catalog 78 max_response
  # without the ceiling, the whole catalog
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_equal "$(wc -l <<<"$output")" 20
}

@test "with a cached catalog, an answer over LAKE_MAX_RESPONSE is still an error, not an outage served stale" {
  metasrv_tables m t 2
  lake-catalog refresh --force
  metasrv_tables n t 20 # the catalog grows past the ceiling
  run --separate-stderr env LAKE_MAX_RESPONSE=1024 lake-catalog refresh --force
  assert_error lake-catalog 1 "answer larger than 1024 bytes"
  # like payload_too_large from the server: the source said what was wrong,
  # and serving the old catalog would hide it
  run --separate-stderr env LAKE_MAX_RESPONSE=1024 lake-catalog --max-age 0 list
  assert_error lake-catalog 1 "answer larger than 1024 bytes"
  assert_output ""
}
