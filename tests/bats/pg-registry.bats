#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The registry on PostgreSQL (issue 9): one real PostgreSQL for this file
# (helpers/pg.bash, or the one tests/run started), a fresh database per
# test, two real lake-metasrv instances over TLS sharing it.  DDL through
# one is in the other's next snapshot; snapshots stay generation-coherent
# under DDL from the other instance; 8 clients appending through both lose
# nothing and see strictly increasing versions, while one instance is
# SIGKILLed mid-storm; and the faults: an
# unreachable PostgreSQL (69), PostgreSQL lost while serving (503, then
# recovery without a restart), a newer schema (78, untouched), with the
# URL's password never printed; and a database of schema version 1 is
# upgraded to 5 by the next server, its data intact.  (The lake clients themselves, with
# LAKE_METASRV=A,B and one instance killed mid-storm, are
# metasrv-failover.bats, which tests/run also runs on PostgreSQL.)

load helpers/common
load helpers/metasrv
load helpers/pg
load helpers/instances

setup_file() {
  if [ -z "${PG_DIR:-}" ]; then
    pg_start || return 1
    export PG_OWNED=1
  fi
}

teardown_file() {
  [ -z "${PG_OWNED:-}" ] || pg_stop
}

setup() {
  common_setup
  export LAKE_TEST_REGISTRY=pg
  SRV=$T/srv
  ADMIN=$SRV/admin.token
  mkdir -p "$SRV"
  # a password in the URL (the server trusts local connections and
  # ignores it): no message or log line may show it
  PW="pw-$RANDOM-never-shown"
  pg_fresh_url "$PW" >"$SRV/registry.url"
  URL=$(cat "$SRV/registry.url")
  DB=$PG_DB
  instances_start
}

teardown() {
  instances_stop
  [ -z "${PG_DIR:-}" ] || pg_resume 2>/dev/null || true # after an outage test
  common_teardown
}

# The password shows nowhere: not in the servers' logs, not in $1.
assert_no_password() {
  [[ ${1:-} != *"$PW"* ]] || fail "the password is shown: $1"
  if grep -rqF "$PW" "$SRV"/serve.log "$SRV"/serve.out 2>/dev/null; then
    fail "the password is in a log: $(grep -rF "$PW" "$SRV"/serve.log | head -n 3)"
  fi
}

@test "init made the schema and the marker in the database; a second init refuses it (exit 1) and leaves it untouched" {
  assert_equal "$(pg_sql "$DB" "SELECT value FROM lake_meta WHERE key = 'format'")" lake-registry
  assert_equal "$(pg_sql "$DB" "SELECT generation FROM directory_marker")" 0
  assert_equal "$(pg_sql "$DB" "SELECT name || ' ' || role FROM principals")" "admin admin"
  local before
  before=$(pg_sql "$DB" "SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM lake_meta")
  run --separate-stderr lake-metasrv init --registry "$URL" --stage "file://$SRV/stage"
  assert_error lake-metasrv 1 "exists; init never touches an existing registry"
  assert_output ""
  assert_no_password "$stderr"
  [[ $stderr == *"postgresql://lake:***@/"* ]] || fail "the URL is not shown redacted: $stderr"
  assert_equal "$(pg_sql "$DB" "SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM lake_meta")" "$before"
  assert_equal "$(pg_sql "$DB" "SELECT count(*) FROM principals")" 1
  # tokens: created, listed and revoked through the same URL
  run --separate-stderr lake-metasrv token create --registry "$URL" --role user --name bob
  assert_clean_success
  run --separate-stderr lake-metasrv token list --registry "$URL"
  assert_clean_success
  assert_equal "$(cut -f1,2 <<<"$output")" $'admin\tadmin\nbob\tuser'
}

@test "two instances on one database: DDL through one is in the other's next snapshot" {
  local g
  post "$A_URL" create_namespace '{"namespace":"docs"}' >/dev/null
  post "$A_URL" create_table '{"namespace":"docs","name":"t","schema":[{"name":"a","type":"INTEGER"}]}' >/dev/null
  run post "$B_URL" catalog_snapshot '{"known_generation":-1}'
  assert_success
  assert_equal "$(jq -c '[.generation, [.entries[] | [.kind, .namespace, .name]]]' <<<"$output")" \
    '[2,[["namespace","docs",null],["table","docs","t"]]]'
  g=$(jq .generation <<<"$output")
  post "$B_URL" drop_table '{"namespace":"docs","name":"t"}' >/dev/null
  run post "$A_URL" catalog_snapshot "{\"known_generation\":$g}"
  assert_success
  assert_equal "$(jq -c '[.status, .generation, [.entries[].kind]]' <<<"$output")" '["snapshot",3,["namespace"]]'
  # and the clients, with both endpoints, see the same
  LAKE_METASRV="$B_URL,$A_URL" run --separate-stderr lake-catalog --max-age 0 list docs
  assert_clean_success
  assert_output ""
  assert_no_password
}

@test "snapshots through one instance stay generation-coherent while the other takes DDL" {
  post "$B_URL" create_namespace '{"namespace":"c"}' >/dev/null
  local g0 i tok
  g0=$(post "$A_URL" catalog_snapshot '{"known_generation":-1}' | jq .generation)
  tok=$(cat "$ADMIN")
  # 120 creates through B and 120 snapshots through A at the same time,
  # one curl process each
  for i in $(seq 120); do
    [ "$i" -gt 1 ] && echo next
    printf 'url = "%s/v1/actions/create_table"\ncacert = "%s"\noutput = "/dev/null"\nfail\n' "$B_URL" "$SRV/cert.pem"
    printf 'header = "Authorization: Bearer %s"\n' "$tok"
    printf 'data = "{\\"namespace\\":\\"c\\",\\"name\\":\\"t%d\\",\\"schema\\":[{\\"name\\":\\"a\\",\\"type\\":\\"TEXT\\"}]}"\n' "$i"
  done >"$T/ddl.curl"
  for i in $(seq 120); do
    [ "$i" -gt 1 ] && echo next
    printf 'url = "%s/v1/actions/catalog_snapshot"\ncacert = "%s"\noutput = "%s/snaps/%d"\n' "$A_URL" "$SRV/cert.pem" "$T" "$i"
    printf 'header = "Authorization: Bearer %s"\ndata = "{\\"known_generation\\":-1}"\n' "$tok"
  done >"$T/snap.curl"
  mkdir "$T/snaps"
  curl -sS -K "$T/ddl.curl" &
  PIDS+=($!)
  curl -sS -K "$T/snap.curl" || fail "the snapshots failed"
  wait "${PIDS[0]}" || fail "the DDL failed"
  PIDS=()
  # a snapshot at generation g holds exactly the g - g0 tables created by
  # then, never a mix of two states; one that found the catalog moving on
  # every scan says so (503 unavailable, which clients retry)
  local bad moving between f
  for f in "$T"/snaps/*; do jq -e type "$f" >/dev/null || fail "not one JSON answer in $f: $(head -c 300 "$f")"; done
  bad=$(cat "$T"/snaps/* | jq -r --argjson g0 "$g0" \
    'select(.error == null) | select(([.entries[] | select(.kind == "table")] | length) != .generation - $g0)
     | "generation \(.generation): \([.entries[] | select(.kind == "table")] | length) tables"')
  [ -z "$bad" ] || fail "incoherent snapshots: $bad"
  moving=$(cat "$T"/snaps/* | jq -r 'select(.error != null) | .error.code' | sort | uniq -c | paste -sd' ')
  between=$(cat "$T"/snaps/* | jq -r --argjson g0 "$g0" 'select(.error == null and .generation > $g0 and .generation < $g0 + 120) | .generation' | sort -un | wc -l)
  echo "# $between distinct generations seen mid-DDL; errors: ${moving:-none}" >&3
  [ "$between" -ge 3 ] || fail "the snapshots did not overlap the DDL ($between generations seen mid-way)"
  [[ -z $moving || $moving =~ ^\ *[0-9]+\ unavailable$ ]] || fail "unexpected errors: $moving"
  assert_equal "$(post "$A_URL" catalog_snapshot '{"known_generation":-1}' | jq .generation)" $((g0 + 120))
}

@test "8 clients appending through both instances, one SIGKILLed mid-storm: nothing lost, versions strictly increasing" {
  new_table
  local at_kill
  # (helpers/instances: a lost or refused call goes to the other instance)
  storm_start 8 8
  # A dies once a quarter of the appends are in
  at_kill=$(wait_version "$B_URL" 16)
  kill -KILL "$A_PID"
  [ "$at_kill" -lt 56 ] || fail "the storm was nearly over ($at_kill) when A was killed"
  echo "# A killed at version $at_kill" >&3
  wait "$A_PID" 2>/dev/null || true
  A_PID=
  storm_wait
  storm_check 8 8
  # every version 1..64 acknowledged exactly once, and the registry agrees
  assert_equal "$(cut -d' ' -f2 "$T"/versions.* | sort -n | paste -sd,)" "$(seq -s, 1 64)"
  run post "$B_URL" resolve '{"namespace":"s","name":"t"}'
  assert_success
  assert_equal "$(jq '[.version, (.segments | length), ([.segments[].location] | unique | length)]' -c <<<"$output")" '[64,64,64]'
  assert_equal "$(pg_sql "$DB" "SELECT count(*) || ' ' || count(DISTINCT version) || ' ' || max(version) FROM versions")" "65 65 64"
  assert_no_password
}

@test "an unreachable PostgreSQL: serve, init and token are 69 on one line naming the URL redacted" {
  local url="postgresql://lake:$PW@127.0.0.1:1/lake"
  run --separate-stderr lake-metasrv serve --registry "$url" --listen 127.0.0.1:0 \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem"
  assert_error lake-metasrv 69 "postgresql://lake:***@127.0.0.1:1/lake" "cannot connect to the registry"
  assert_output ""
  assert_no_password "$stderr"
  run --separate-stderr lake-metasrv init --registry "$url"
  assert_error lake-metasrv 69 "postgresql://lake:***@127.0.0.1:1/lake"
  assert_no_password "$stderr"
  run --separate-stderr lake-metasrv token list --registry "postgresql://127.0.0.1:1/lake?user=lake&password=$PW"
  assert_error lake-metasrv 69 "password=***"
  assert_no_password "$stderr"
  # not a registry URL at all: a usage error
  run --separate-stderr lake-metasrv token list --registry "mysql://lake:$PW@db/lake"
  assert_failure 64
  assert_no_password "$stderr"
}

@test "PostgreSQL lost while serving: 503 unavailable to clients, then answers again without a restart" {
  post "$A_URL" create_namespace '{"namespace":"docs"}' >/dev/null
  pg_halt || fail "cannot stop PostgreSQL"
  METASRV_DIR=$SRV METASRV_URL=$A_URL metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  metasrv_assert_error 503 unavailable
  [[ $HTTP_HEAD == *"Retry-After:"* ]] || fail "no Retry-After: $HTTP_HEAD"
  METASRV_DIR=$SRV METASRV_URL=$B_URL metasrv_post "$ADMIN" create_namespace '{"namespace":"x"}'
  metasrv_assert_error 503 unavailable
  # a client with the catalog cached serves it stale, one warning
  pg_resume || fail "cannot start PostgreSQL again"
  run post "$A_URL" catalog_snapshot '{"known_generation":-1}'
  assert_success
  assert_equal "$(jq -c '[.generation, [.entries[].namespace]]' <<<"$output")" '[1,["docs"]]'
  run post "$B_URL" create_namespace '{"namespace":"x"}'
  assert_success
  kill -0 "$A_PID" && kill -0 "$B_PID" || fail "an instance died"
  assert_no_password
}

@test "a database holding a newer schema version: serve and token are 78, the database untouched" {
  kill -TERM "$A_PID" "$B_PID"
  wait "$A_PID" "$B_PID" 2>/dev/null || true
  A_PID='' B_PID=''
  pg_sql "$DB" "UPDATE lake_meta SET value = '99' WHERE key = 'schema_version'"
  local q="SELECT string_agg(key || '=' || value, ',' ORDER BY key) || ' ' ||
             (SELECT count(*) FROM pg_tables WHERE schemaname = 'public') FROM lake_meta" before
  before=$(pg_sql "$DB" "$q")
  run --separate-stderr lake-metasrv serve --registry "$URL" --listen 127.0.0.1:0 \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem"
  assert_error lake-metasrv 78 "registry schema version 99" "postgresql://lake:***@/"
  assert_no_password "$stderr"
  run --separate-stderr lake-metasrv token create --registry "$URL" --role user --name bob
  assert_error lake-metasrv 78 "registry schema version 99"
  assert_equal "$(pg_sql "$DB" "$q")" "$before"
  assert_equal "$(pg_sql "$DB" "SELECT count(*) FROM principals")" 1
}

@test "a database of schema version 1 is upgraded to 5 when a server opens it, its data intact" {
  post "$A_URL" create_namespace '{"namespace":"u"}' >/dev/null
  post "$A_URL" create_table '{"namespace":"u","name":"t","schema":[{"name":"a","type":"INTEGER"}]}' >/dev/null
  post "$A_URL" append "{\"namespace\":\"u\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/u/s1")],\"files\":[]}" >/dev/null
  local before cols="SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_name)
                     FROM information_schema.columns WHERE table_name = 'segments' AND column_name IN ('stats', 'removed_in')"
  before=$(post "$A_URL" resolve '{"namespace":"u","name":"t"}')
  kill -TERM "$A_PID" "$B_PID"
  wait "$A_PID" "$B_PID" 2>/dev/null || true
  A_PID='' B_PID=''
  # back to schema 1, as a database written before issue 18 is
  pg_sql "$DB" "ALTER TABLE segments DROP COLUMN stats; ALTER TABLE segments DROP COLUMN removed_in;
                ALTER TABLE versions DROP COLUMN operation; ALTER TABLE versions DROP COLUMN schema;
                ALTER TABLE versions DROP COLUMN expired_at; ALTER TABLE segments DROP COLUMN columns;
                DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit; ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at; UPDATE lake_meta SET value = '1' WHERE key = 'schema_version'"
  assert_equal "$(pg_sql "$DB" "$cols")" ""

  metasrv_start "$SRV"
  A_PID=$METASRV_PID
  assert_equal "$(pg_sql "$DB" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  assert_equal "$(pg_sql "$DB" "SELECT count(*) FROM information_schema.columns WHERE table_name = 'versions' AND column_name = 'operation'")" 1
  assert_equal "$(pg_sql "$DB" "$cols")" "removed_in bigint, stats text"
  run post "$METASRV_URL" resolve '{"namespace":"u","name":"t"}'
  assert_success
  assert_equal "$output" "$before"
  # and it takes appends with statistics
  run post "$METASRV_URL" append "{\"namespace\":\"u\",\"name\":\"t\",\"expected_version\":1,\"segments\":[{\"location\":\"file://$SRV/stage/tables/u/s2\",\"size\":1,\"sha256\":\"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\",\"rows\":1,\"stats\":[{\"nulls\":0,\"min\":7,\"max\":7}]}],\"files\":[]}"
  assert_success
  run post "$METASRV_URL" resolve '{"namespace":"u","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[].stats]]' <<<"$output")" '[2,[null,[{"nulls":0,"min":7,"max":7}]]]'
  assert_no_password
}

@test "two instances on one database: a grant and a revoke through one are enforced by the other at its next request" {
  post "$A_URL" create_namespace '{"namespace":"hr"}' >/dev/null
  post "$A_URL" create_table '{"namespace":"hr","name":"t","schema":[{"name":"a","type":"INTEGER"}]}' >/dev/null
  lake-metasrv token create --registry "$URL" --role user --name ann >"$SRV/ann.token"
  ann() { # URL ACTION BODY: the HTTP status of ann's request
    curl -sS -o /dev/null -w '%{http_code}' --cacert "$SRV/cert.pem" -H "Authorization: Bearer $(cat "$SRV/ann.token")" \
      --data-binary "$3" "$1/v1/actions/$2"
  }
  local body='{"namespace":"hr","name":"t"}'
  assert_equal "$(ann "$B_URL" resolve "$body")" 403
  post "$A_URL" grant '{"privilege":"read","on":"hr","grantee":"ann"}' >/dev/null
  assert_equal "$(ann "$B_URL" resolve "$body")" 200
  post "$A_URL" revoke '{"privilege":"read","on":"hr","grantee":"ann"}' >/dev/null
  assert_equal "$(ann "$B_URL" resolve "$body")" 403
  assert_equal "$(ann "$A_URL" resolve "$body")" 403
}
