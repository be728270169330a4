#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The rewrite action (DELETE and UPDATE, issue 28) of a real TLS
# lake-metasrv: its checks and answers over HTTPS, and lake-query's DELETE
# and UPDATE racing 8 appending clients.  tests/run runs this on a SQLite
# and on a PostgreSQL registry.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"a","type":"INTEGER"}]}'
  [ "$HTTP_CODE" = 200 ] || fail "create_table: $HTTP_CODE $HTTP_BODY"
}

teardown() {
  metasrv_stop
  common_teardown
}

seg() { metasrv_segment "$STAGE_URL/tables/m/$1"; }

# rewrite_body EXPECTED OPERATION REPLACE-JSON SEGMENTS-JSON
rewrite_body() {
  printf '{"namespace":"m","name":"t","expected_version":%s,"operation":"%s","replace":%s,"segments":%s,"files":[]}' "$@"
}

table_state() {
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  [ "$HTTP_CODE" = 200 ] || fail "resolve: $HTTP_CODE $HTTP_BODY"
  jq -c '[.version, [.segments[].location | sub(".*/"; "")]]' <<<"$HTTP_BODY"
}

@test "rewrite over HTTPS: segments replaced by fewer or none, retries answer their version, a lost race is 409, bad requests 400" {
  local i
  for i in 1 2 3; do
    metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":$((i - 1)),\"segments\":[$(seg "s$i")],\"files\":[]}"
    assert_equal "$HTTP_CODE" 200
  done
  # an UPDATE of s1 into u1 (its rows need not add up: the registry does
  # not count them for a rewrite)
  local body
  body=$(rewrite_body 3 update "[\"$STAGE_URL/tables/m/s1\"]" "[$(seg u1)]")
  metasrv_post "$ADMIN" rewrite "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":4}'
  assert_equal "$(table_state)" '[4,["s2","s3","u1"]]'
  # the same request again (a lost answer): the version it committed
  metasrv_post "$ADMIN" rewrite "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":4}'
  # a DELETE of s2 and s3 that leaves no segment, expected 3 (an append
  # since commutes); and its retry
  body=$(rewrite_body 3 delete "[\"$STAGE_URL/tables/m/s2\",\"$STAGE_URL/tables/m/s3\"]" '[]')
  metasrv_post "$ADMIN" rewrite "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":5}'
  metasrv_post "$ADMIN" rewrite "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":5}'
  assert_equal "$(table_state)" '[5,["u1"]]'
  # s1 was rewritten at version 4: another rewrite of it lost the race
  metasrv_post "$ADMIN" rewrite "$(rewrite_body 3 delete "[\"$STAGE_URL/tables/m/s1\"]" '[]')"
  metasrv_expect_error 409 conflict
  # bad requests change nothing
  metasrv_post "$ADMIN" rewrite "$(rewrite_body 5 truncate "[\"$STAGE_URL/tables/m/u1\"]" '[]')"
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" rewrite "$(rewrite_body 5 delete '[]' '[]')"
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" rewrite "$(rewrite_body 5 delete "[\"$STAGE_URL/tables/m/nothing\"]" '[]')"
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" rewrite "$(rewrite_body 9 delete "[\"$STAGE_URL/tables/m/u1\"]" '[]')"
  metasrv_expect_error 409 conflict
  assert_equal "$(table_state)" '[5,["u1"]]'
  # the versions' operations, recorded (the registry behind the server)
  case ${LAKE_TEST_REGISTRY:-sqlite} in
    pg) source "${BATS_TEST_DIRNAME}/helpers/pg.bash"
        ops=$(pg_sql "$(cat "$SRV/registry.url")" "SELECT string_agg(operation, ',' ORDER BY version) FROM versions") ;;
    *) ops=$(sqlite3 "$SRV/registry.db" "SELECT group_concat(operation, ',') FROM (SELECT operation FROM versions ORDER BY version)") ;;
  esac
  assert_equal "$ops" "create,append,append,append,update,delete"
}

@test "DELETE and UPDATE racing 8 appending clients: every acknowledged append present, every deleted row absent" {
  lake-catalog create m.s 'id INTEGER, tag TEXT'
  local i c
  # ids 1..200, tagged old, in 4 segments
  for i in 0 1 2 3; do
    awk -v i="$i" 'BEGIN { for (n = 50 * i + 1; n <= 50 * i + 50; n++) printf "{\"id\":%d,\"tag\":\"old\"}\n", n }' |
      lake-query -q --import m.s
  done
  # 8 clients, 12 INSERTs each of a new id; an acknowledged one is an exit 0
  local clients=()
  for c in $(seq 1 8); do
    (
      for i in $(seq 1 12); do
        id=$((1000 * c + i))
        if lake-query -q -c "INSERT INTO m.s VALUES ($id, 'new')" 2>>"$T/client.$c.err"; then echo "$id"; fi
      done >"$T/acked.$c"
    ) &
    clients+=($!)
  done
  # meanwhile: the even old ids deleted, then the odd ones tagged
  run --separate-stderr lake-query -c "DELETE FROM m.s WHERE tag = 'old' AND id % 2 = 0"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: m.s: 100 rows deleted"
  run --separate-stderr lake-query -c "UPDATE m.s SET tag = 'upd' WHERE tag = 'old'"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: m.s: 100 rows updated"
  wait "${clients[@]}" # (not the server, also a child of this shell)
  cat "$T"/acked.* | sort -n >"$T/acked"
  [ "$(wc -l <"$T/acked")" -ge 80 ] || fail "too few appends acknowledged: $(cat "$T"/client.*.err)"
  lake-query -c "SELECT id FROM m.s WHERE tag = 'new' ORDER BY id" >"$T/new"
  diff "$T/acked" "$T/new" || fail "acknowledged appends lost or rows added twice"
  assert_equal "$(lake-query -c "SELECT count(*), count(DISTINCT id), sum(id % 2) FROM m.s WHERE tag = 'upd'")" \
    "$(printf '100\t100\t100')"
  assert_equal "$(lake-query -c "SELECT count(*) FROM m.s WHERE tag = 'old' OR (id <= 200 AND id % 2 = 0)")" 0
}

@test "history pages by after and limit; resolve by timestamp; rollback over HTTPS, its 409 and 400" {
  local i
  for i in 1 2 3 4 5; do
    metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":$((i - 1)),\"segments\":[$(seg "h$i")],\"files\":[]}"
    assert_equal "$HTTP_CODE" 200
  done
  # pages of 2: 0 1 | 2 3 | 4 5, each but the last saying more
  local after=-1 seen=""
  for i in 1 2 3; do
    metasrv_post "$ADMIN" history "{\"namespace\":\"m\",\"name\":\"t\",\"after\":$after,\"limit\":2}"
    assert_equal "$HTTP_CODE" 200
    seen+="$(jq -c '[[.versions[] | [.version, .operation, .segments]], .more]' <<<"$HTTP_BODY")"
    after=$(jq '.versions[-1].version' <<<"$HTTP_BODY")
  done
  assert_equal "$seen" '[[[0,"create",0],[1,"append",1]],true][[[2,"append",2],[3,"append",3]],true][[[4,"append",4],[5,"append",5]],false]'
  metasrv_post "$ADMIN" history '{"namespace":"m","name":"t","after":5}'
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"versions":[],"more":false}'
  metasrv_post "$ADMIN" history '{"namespace":"m","name":"nope"}'
  metasrv_expect_error 404 not_found
  # a timestamp: now is after every commit; 2000 before the creation
  metasrv_post "$ADMIN" resolve "{\"namespace\":\"m\",\"name\":\"t\",\"timestamp\":\"$(date -u -d '+1 min' +%FT%TZ)\"}"
  assert_equal "$HTTP_CODE $(jq -c .version <<<"$HTTP_BODY")" "200 5"
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","timestamp":"2000-01-01T00:00:00Z"}'
  metasrv_expect_error 404 not_found
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","timestamp":"soon"}'
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","timestamp":"2026-01-01T00:00:00Z","version":1}'
  metasrv_expect_error 400 invalid_argument
  # rollback to 2: h3..h5 removed; a stale expected version is 409
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":5,"version":2}'
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":6}'
  assert_equal "$(table_state)" '[6,["h1","h2"]]'
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":5,"version":4}'
  metasrv_expect_error 409 conflict
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":6,"version":7}'
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":6}'
  metasrv_expect_error 400 invalid_argument
  # and forward to 5: h3..h5 live again, the same locations
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":6,"version":5}'
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":7}'
  assert_equal "$(table_state)" '[7,["h1","h2","h3","h4","h5"]]'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","version":6}'
  assert_equal "$(jq -c '[.segments[].location | sub(".*/"; "")]' <<<"$HTTP_BODY")" '["h1","h2"]'
}

@test "alter over HTTPS: each change a version with its schema, ids never reused; segments of an earlier schema taken, of ids never the table's refused" {
  alter() { metasrv_post "$ADMIN" alter "{\"namespace\":\"m\",\"name\":\"t\",$1}"; }
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(seg s1)],\"files\":[]}"
  alter '"operation":"add-column","column":"b TEXT"'
  assert_equal "$HTTP_CODE $(jq -c '[.version, .schema, (.generation | type)]' <<<"$HTTP_BODY")" \
    '200 [2,[{"name":"a","type":"INTEGER"},{"name":"b","type":"TEXT"}],"number"]'
  # without columns, a segment has the shape of a schema the table had:
  # one column (a writer that read version 1) or two, not three
  local s1b s3
  s1b=$(seg s1b | jq -c '. + {stats: [{nulls: 0, min: 1, max: 1}]}')
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":2,\"segments\":[$s1b],\"files\":[]}"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":3}'
  s3=$(seg s3 | jq -c '. + {stats: [{nulls: 1}, {nulls: 1}, {nulls: 1}]}')
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":3,\"segments\":[$s3],\"files\":[]}"
  metasrv_expect_error 400 invalid_argument
  alter '"operation":"drop-column","column":"a"'
  assert_equal "$HTTP_CODE $(jq -c .schema <<<"$HTTP_BODY")" '200 [{"name":"b","type":"TEXT","id":2}]'
  alter '"operation":"add-column","column":"a INTEGER"'
  assert_equal "$HTTP_CODE $(jq -c .schema <<<"$HTTP_BODY")" \
    '200 [{"name":"b","type":"TEXT","id":2},{"name":"a","type":"INTEGER","id":3}]'
  alter '"operation":"rename-column","column":"b","to":"label"'
  assert_equal "$HTTP_CODE $(jq -c '[.version, [.schema[].name]]' <<<"$HTTP_BODY")" '200 [6,["label","a"]]'
  # each version answers with its own schema
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","version":1}'
  assert_equal "$(jq -c '[.version, .schema]' <<<"$HTTP_BODY")" '[1,[{"name":"a","type":"INTEGER"}]]'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t","version":4}'
  assert_equal "$(jq -c '[.version, [.schema[].name]]' <<<"$HTTP_BODY")" '[4,["b"]]'
  # a writer that read version 2 (ids 1 and 2, the 1 dropped since): taken,
  # its ids stored; one naming an id the table never had: 400
  local s2 s9
  s2=$(seg s2 | jq -c '. + {columns: [1, 2], stats: [{nulls: 0, min: 5, max: 5}, {nulls: 1}]}')
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":6,\"segments\":[$s2],\"files\":[]}"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":7}'
  s9=$(seg s9 | jq -c '. + {columns: [9]}')
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":7,\"segments\":[$s9],\"files\":[]}"
  metasrv_expect_error 400 invalid_argument
  # statistics that do not match the columns' types: 400
  s9=$(seg s9 | jq -c '. + {columns: [3], stats: [{nulls: 0, min: "x", max: "y"}]}')
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":7,\"segments\":[$s9],\"files\":[]}"
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[] | .columns]]' <<<"$HTTP_BODY")" '[7,[null,null,[1,2]]]'
  # refusals: a clash, no such column, the last column, an unknown operation,
  # a rename without its new name; nothing changed
  alter '"operation":"add-column","column":"LABEL TEXT"'
  metasrv_expect_error 400 invalid_argument
  alter '"operation":"drop-column","column":"nope"'
  metasrv_expect_error 404 not_found
  alter '"operation":"retype-column","column":"a"'
  metasrv_expect_error 400 invalid_argument
  alter '"operation":"rename-column","column":"a"'
  metasrv_expect_error 400 invalid_argument
  alter '"operation":"drop-column","column":"a"'
  assert_equal "$HTTP_CODE" 200
  alter '"operation":"drop-column","column":"label"'
  metasrv_expect_error 400 invalid_argument
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, .schema]' <<<"$HTTP_BODY")" '[8,[{"name":"label","type":"TEXT","id":2}]]'
  metasrv_check_errors
}
