#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The registry on a PostgreSQL primary and its streaming standby (issue
# 19): one pair for this file (helpers/pg.bash: initdb, pg_basebackup -R,
# synchronous replication, both on 127.0.0.1), a fresh database per test,
# two real lake-metasrv instances over TLS given the multi-host URL
# postgresql://lake@A,B/DB?target_session_attrs=read-write.  The primary
# dies by SIGKILL to all its processes at once (a machine's death), the
# standby is promoted with pg_ctl promote; the dead one comes back as the
# new standby by pg_rewind (helpers/pg.bash, pgp_rejoin).  Each test starts
# from a healthy pair, whichever node is the primary by then.

load helpers/common
load helpers/metasrv
load helpers/pg
load helpers/instances

setup_file() {
  pgp_start || return 1
}

teardown_file() {
  pgp_stop
}

setup() {
  pgp_heal || fail "the PostgreSQL pair cannot be made whole again"
  common_setup
  export LAKE_TEST_REGISTRY=pg
  SRV=$T/srv
  ADMIN=$SRV/admin.token
  mkdir -p "$SRV"
  DB=t_${BATS_TEST_NUMBER}_$$_$RANDOM
  pgp_createdb "$DB" || fail "cannot create the database"
  pgp_url "$DB" >"$SRV/registry.url"
  instances_start
}

teardown() {
  instances_stop
  common_teardown
}

# health URL: "HTTP-STATUS REGISTRY" of GET /v1/health
health() {
  METASRV_DIR=$SRV METASRV_URL=$1 metasrv_req - GET /v1/health
  [ "$HTTP_CODE" != 000 ] || return 1 # (no answer at all)
  printf '%s %s\n' "$HTTP_CODE" "$(jq -r .registry <<<"$HTTP_BODY")"
}

# wait_health URL STATE: until the instance says registry=STATE (60 s at
# most: a guard against a hang, not a time the instance needs)
wait_health() {
  for _ in $(seq 600); do
    [ "$(health "$1" | cut -d' ' -f2)" = "$2" ] && return 0
    sleep 0.1
  done
  fail "$1: registry never $2 (last: $(health "$1"))"
}

# wait_sql NODE DB SQL VALUE WHAT: until SQL on NODE answers VALUE (60 s
# at most, a guard), else fail saying it never WHAT
wait_sql() {
  local got
  poll_until sql_answers "$1" "$2" "$3" "$4" || fail "never $5 (last: $got)"
}
# sql_answers NODE DB SQL VALUE: SQL on NODE answers VALUE (the answer in
# the caller's got)
sql_answers() {
  got=$(pgp_sql "$1" "$2" "$3" 2>/dev/null) && [ "$got" = "$4" ]
}

# Every acknowledged append of clients 1..$1 ($2 each): versions rise
# strictly per client; then assert_held $3.
assert_acknowledged() {
  storm_check "$1" "$2"
  assert_held "$3"
}

# assert_held NODE: the registry on NODE holds exactly the appends the
# clients were told of ($T/versions.C: "N VERSION" lines), each once, at
# its version; the versions told cover 1..max once.
assert_held() {
  local node=$1 f c n v total
  total=$(cat "$T"/versions.* | wc -l)
  assert_equal "$(cut -d' ' -f2 "$T"/versions.* | sort -n | paste -sd,)" "$(seq -s, 1 "$total")"
  pgp_sql "$node" "$DB" "SELECT location || ' ' || version FROM segments ORDER BY location" >"$T/held"
  for f in "$T"/versions.*; do
    c=${f##*.}
    while read -r n v; do echo "file://$SRV/stage/tables/s/c$c-$n $v"; done <"$f"
  done | LC_ALL=C sort >"$T/acked"
  diff "$T/acked" "$T/held" >&2 || fail "node $node does not hold exactly the acknowledged appends"
  assert_equal "$(pgp_sql "$node" "$DB" "SELECT count(*) || ' ' || max(version) FROM versions")" "$((total + 1)) $total"
}

@test "8 clients through two instances; the primary SIGKILLed mid-storm, the standby promoted: every acknowledged append once, versions strictly increasing" {
  new_table
  local at_kill old new t0 t1 u
  old=$(pgp_primary) new=$(pgp_standby)
  storm_start 8 8
  # the storm held where it is (each client stopped; a request it has in
  # flight goes on: one append at most) once it reached version 16, so
  # that the primary dies mid-storm however fast the clients run
  for _ in $(seq 1200); do
    kill -STOP "${PIDS[@]}"
    at_kill=$(version_of "$B_URL")
    [ "$at_kill" -ge 16 ] 2>/dev/null && break
    kill -CONT "${PIDS[@]}"
    sleep 0.05
  done
  [ "$at_kill" -ge 16 ] 2>/dev/null || fail "the storm never reached version 16 (last: $at_kill)"
  pgp_crash "$old"
  kill -CONT "${PIDS[@]}"
  t0=$(date +%s.%N)
  [ "$at_kill" -lt 56 ] || fail "the storm was nearly over ($at_kill) when the primary died"
  # no primary: both instances say so (once their probe has seen it), the
  # standby answering read-only
  for u in "$A_URL" "$B_URL"; do
    wait_health "$u" read_only
    assert_equal "$(health "$u")" "503 read_only"
  done
  METASRV_DIR=$SRV METASRV_URL=$A_URL metasrv_post "$ADMIN" resolve '{"namespace":"s","name":"t"}'
  metasrv_assert_error 503 unavailable
  [[ $HTTP_HEAD == *"Retry-After: 1"* ]] || fail "no Retry-After: $HTTP_HEAD"
  sleep 1
  pgp_promote "$new" || fail "cannot promote the standby"
  wait_health "$A_URL" ok
  t1=$(date +%s.%N)
  echo "# primary $old killed at version $at_kill; $new promoted; instance A ready $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after the kill" >&3
  storm_wait
  assert_acknowledged 8 8 "$new"
  assert_equal "$(health "$B_URL")" "200 ok"
  run post "$B_URL" resolve '{"namespace":"s","name":"t"}'
  assert_success
  assert_equal "$(jq -c '[.version, (.segments | length), ([.segments[].location] | unique | length)]' <<<"$output")" '[64,64,64]'
  kill -0 "$A_PID" && kill -0 "$B_PID" || fail "an instance died"
}

@test "the synchronous standby lost: appends wait, none acknowledged, then all succeed when it returns; the old primary rejoins by pg_rewind and holds them" {
  new_table
  local p s c
  p=$(pgp_primary) s=$(pgp_standby)
  post "$A_URL" append "{\"namespace\":\"s\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/c1-1")],\"files\":[]}" >/dev/null
  echo "1 1" >"$T/versions.1"
  pgp_crash "$s"
  for c in 2 3; do
    append_client "$A_URL $B_URL" "$c" 1 >"$T/versions.$c" 2>"$T/client.$c.err" &
    PIDS+=($!)
  done
  # both appends are waiting for the lost standby, however long the
  # clients took to send them: the first one's commit in SyncRep on the
  # primary, the other's SyncRep too or its row lock (FOR UPDATE) behind it
  wait_sql "$p" postgres "SELECT count(*) FILTER (WHERE wait_event = 'SyncRep') >= 1 AND
                                 count(*) FILTER (WHERE wait_event = 'SyncRep' OR wait_event_type = 'Lock') >= 2
                          FROM pg_stat_activity WHERE application_name = 'lake-metasrv'" t \
    "had both appends waiting for the standby"
  # still waiting: nothing acknowledged, nothing visible on the primary
  for c in 2 3; do
    [ ! -s "$T/versions.$c" ] || fail "client $c was acknowledged without the standby: $(cat "$T/versions.$c")"
  done
  assert_equal "$(pgp_sql "$p" "$DB" "SELECT max(version) FROM versions")" 1
  # the instance says the writes wait (once its probe has seen them), and
  # answers reads meanwhile
  wait_health "$A_URL" waiting
  assert_equal "$(health "$A_URL")" "200 waiting"
  post "$A_URL" resolve '{"namespace":"s","name":"t"}' | jq -e '.version == 1' >/dev/null ||
    fail "a resolve was not answered while the appends waited"
  # the standby returns (a restart after the crash): the waits end
  pgp_resume "$s" || fail "the standby does not start again"
  storm_wait
  assert_acknowledged 3 1 "$s"
  assert_acknowledged 3 1 "$p"

  # now the primary dies; the standby takes over; appends go on; the old
  # primary is wound back (pg_rewind) and follows the new one
  pgp_crash "$p"
  pgp_promote "$s" || fail "cannot promote"
  append_client "$B_URL $A_URL" 4 3 >"$T/versions.4" 2>"$T/client.4.err" || fail "$(cat "$T/client.4.err")"
  pgp_rejoin "$p" || fail "the old primary does not come back as a standby"
  assert_equal "$(pgp_sql "$p" postgres "SELECT pg_is_in_recovery()")" t
  assert_equal "$(pgp_sql "$s" postgres "SELECT application_name || ' ' || sync_state FROM pg_stat_replication")" "$p sync"
  # synchronous again: an acknowledged append is on both
  append_client "$A_URL $B_URL" 5 1 >"$T/versions.5" 2>"$T/client.5.err" || fail "$(cat "$T/client.5.err")"
  assert_held "$s"
  assert_held "$p"
  assert_equal "$(pgp_sql "$p" "$DB" "SELECT string_agg(location, ',' ORDER BY version) FROM segments")" \
    "$(pgp_sql "$s" "$DB" "SELECT string_agg(location, ',' ORDER BY version) FROM segments")"
  # and back: the rejoined node is promoted in turn; the instances follow
  pgp_crash "$s"
  pgp_promote "$p" || fail "cannot promote the old primary again"
  # one request to wake B's pool: a 503 at most while it reconnects
  post "$B_URL" resolve '{"namespace":"s","name":"t"}' >/dev/null 2>&1 || true
  wait_health "$B_URL" ok
  assert_equal "$(version_of "$B_URL")" 7
  append_client "$B_URL $A_URL" 6 1 >"$T/versions.6" 2>"$T/client.6.err" || fail "$(cat "$T/client.6.err")"
  assert_equal "$(cat "$T/versions.6")" "1 8"
}

@test "a primary made read-only: its connections are dropped, never written through, and the instances find the promoted standby" {
  new_table
  local p s
  p=$(pgp_primary) s=$(pgp_standby)
  append_client "$A_URL $B_URL" 1 2 >"$T/versions.1" || fail "the first appends failed"
  # fence the primary (default_transaction_read_only), the way an operator
  # stops writes before promoting the standby: no writable server at all
  pgp_set "$p" default_transaction_read_only on
  # reloaded: a new session sees it, so the postmaster has reloaded and
  # signalled every session, which applies it before its next command
  wait_sql "$p" postgres "SHOW default_transaction_read_only" on "took default_transaction_read_only"
  METASRV_DIR=$SRV METASRV_URL=$A_URL metasrv_post "$ADMIN" append \
    "{\"namespace\":\"s\",\"name\":\"t\",\"expected_version\":2,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/x")],\"files\":[]}"
  metasrv_assert_error 503 unavailable
  # health is the probe's answer, asked every second
  wait_health "$A_URL" read_only
  wait_health "$B_URL" read_only
  assert_equal "$(health "$A_URL")" "503 read_only"
  assert_equal "$(health "$B_URL")" "503 read_only"
  # the standby is promoted: the same instances, never restarted, write there
  pgp_promote "$s" || fail "cannot promote"
  wait_health "$A_URL" ok
  wait_health "$B_URL" ok
  append_client "$A_URL $B_URL" 2 2 >"$T/versions.2" || fail "appends after the promotion failed"
  append_client "$B_URL $A_URL" 3 2 >"$T/versions.3" || fail "appends after the promotion failed"
  assert_acknowledged 3 2 "$s"
  # nothing of it reached the fenced node: it stopped at version 2
  assert_equal "$(pgp_sql "$p" "$DB" "SELECT max(version) FROM versions")" 2
  kill -0 "$A_PID" && kill -0 "$B_PID" || fail "an instance died"
  # the fenced node goes (pgp_heal, next test, winds it back as a standby);
  # not reloaded (pgp_set would): writable again, even for a moment, it
  # would be a second primary
  pgp_sql "$p" postgres "ALTER SYSTEM RESET default_transaction_read_only" >/dev/null
  pgp_halt "$p"
  # neither server answering: unavailable
  pgp_halt "$s"
  wait_health "$A_URL" unavailable
  assert_equal "$(health "$A_URL")" "503 unavailable"
  pgp_resume "$s" || fail "cannot start the primary again"
  wait_health "$A_URL" ok
}

@test "a query during the failover finishes on its pinned version or fails 69/75, never mixing versions" {
  export LAKE_METASRV="$A_URL,$B_URL" LAKE_COMPACT_THRESHOLD=0
  lake-catalog create-namespace q
  lake-catalog create q.t 'n INTEGER'
  local n p s rc
  p=$(pgp_primary) s=$(pgp_standby)
  for n in 1 2 3 4 5; do lake-query -c "insert into q.t values ($n)" || fail "insert $n"; done
  printf '%s\n' 1 2 3 4 5 >"$T/written"
  # one writer, one INSERT at a time, a new n for every attempt (a failed
  # one may have committed or not): the versions hold the rows committed
  # so far, so a version's rows are a prefix of the final rows in n order
  (
    n=6
    while [ ! -e "$T/stop" ]; do
      if lake-query -c "insert into q.t values ($n)" 2>>"$T/writer.err"; then echo "$n" >>"$T/written"; else sleep 0.2; fi
      n=$((n + 1))
    done
  ) &
  PIDS+=($!)
  (
    while [ ! -e "$T/stop" ]; do
      LAKE_CACHE_DIR=$T/rcache lake-query -f csv -c "select count(*), count(distinct n), max(n) from q.t" \
        >>"$T/reads" 2>>"$T/reader.err"
      echo "rc=$?" >>"$T/reads"
    done
  ) &
  PIDS+=($!)
  # both at work before the primary dies: an INSERT of the writer's and a
  # query of the reader's done
  poll_until lines_at_least "$T/written" 6 || fail "the writer never inserted a row: $(cat "$T/writer.err")"
  poll_until lines_at_least "$T/reads" 1 '^rc=' || fail "the reader never ended a query: $(cat "$T/reader.err")"
  pgp_crash "$p"
  sleep 1
  pgp_promote "$s" || fail "cannot promote"
  wait_health "$A_URL" ok
  # and after the promotion: an INSERT and a query answered
  local nw nr
  nw=$(wc -l <"$T/written") nr=$(grep -c '^rc=0' "$T/reads")
  poll_until lines_at_least "$T/written" $((nw + 1)) ||
    fail "no INSERT succeeded after the promotion: $(tail -n 3 "$T/writer.err")"
  poll_until lines_at_least "$T/reads" $((nr + 1)) '^rc=0' ||
    fail "no query answered after the promotion: $(tail -n 3 "$T/reader.err")"
  touch "$T/stop"
  for rc in "${PIDS[@]}"; do wait "$rc" || true; done
  PIDS=()
  run --separate-stderr lake-query -f csv -c "select n from q.t order by n"
  assert_success
  printf '%s\n' "$output" >"$T/final"
  # every INSERT that succeeded is there, once
  # (comm wants lexical order: 10 sorts before 9)
  assert_equal "$(comm -23 <(sort "$T/written") <(sort "$T/final") | paste -sd,)" ""
  assert_equal "$(sort -n "$T/final" | uniq -d | paste -sd,)" ""
  # every read: rows distinct, and exactly the final rows up to its max
  local bad codes
  bad=$(awk -F, 'NR == FNR { f[++k] = $1; next } /^rc=/ { next }
                 { m = 0; for (i = 1; i <= k && f[i] <= $3; i++) m++; if ($1 != $2 || $1 != m) print }' \
    "$T/final" "$T/reads")
  [ -z "$bad" ] || fail "a query saw no version's rows: $bad"
  codes=$(sed -n 's/^rc=//p' "$T/reads" | sort -u | paste -sd,)
  echo "# $(grep -c '^rc=' "$T/reads") queries, exit codes $codes; $(wc -l <"$T/written") INSERTs succeeded" >&3
  [[ ,$codes, =~ ^(,(0|69|75))+,$ ]] || fail "queries exited $codes: $(sort -u "$T/reader.err" | head -n 5)"
  grep -q '^rc=0' "$T/reads" || fail "no query answered"
}

@test "a schema migration cut short by the primary's death is rolled back; the next server migrates on the new primary" {
  post "$A_URL" create_namespace '{"namespace":"u"}' >/dev/null
  post "$A_URL" create_table '{"namespace":"u","name":"t","schema":[{"name":"a","type":"INTEGER"}]}' >/dev/null
  post "$A_URL" append "{\"namespace\":\"u\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/u/s1")],\"files\":[]}" >/dev/null
  local before p s cols="SELECT count(*) FROM information_schema.columns
                               WHERE table_name = 'segments' AND column_name IN ('stats', 'removed_in')"
  p=$(pgp_primary) s=$(pgp_standby)
  before=$(post "$A_URL" resolve '{"namespace":"u","name":"t"}')
  kill -TERM "$A_PID" "$B_PID"
  wait "$A_PID" "$B_PID" 2>/dev/null || true
  A_PID='' B_PID=''
  # back to schema 1, as a database written before issue 18 is
  pgp_sql "$p" "$DB" "ALTER TABLE segments DROP COLUMN stats; ALTER TABLE segments DROP COLUMN removed_in;
                      ALTER TABLE versions DROP COLUMN operation; ALTER TABLE versions DROP COLUMN schema;
                      ALTER TABLE versions DROP COLUMN expired_at; ALTER TABLE segments DROP COLUMN columns;
                      DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit; ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at; UPDATE lake_meta SET value = '1' WHERE key = 'schema_version'"
  # a session holds lake_meta: the migration adds its columns, then waits
  # to record the new version, inside its transaction
  # (its pg_sleep is ended by the crash below; 600 s only outlasts a slow run)
  psql -X -q -h 127.0.0.1 -p "$(pgp_node_port "$p")" -U lake -d "$DB" \
    -c "BEGIN; LOCK TABLE lake_meta IN EXCLUSIVE MODE; SELECT pg_sleep(600)" >/dev/null 2>&1 &
  PIDS+=($!)
  # the lock is held before the server starts
  wait_sql "$p" "$DB" "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                        WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        AND c.relname = 'lake_meta' AND l.mode = 'ExclusiveLock' AND l.granted" 1 \
    "saw the session hold lake_meta"
  lake-metasrv serve --registry "$(cat "$SRV/registry.url")" --listen 127.0.0.1:0 \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem" >"$T/mig.out" 2>"$T/mig.err" 3>&- &
  local mig=$!
  PIDS+=("$mig")
  local waiting=0
  for _ in $(seq 1200); do
    if [ "$(pgp_sql "$p" postgres "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lake-metasrv'
           AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO lake_meta%'")" = 1 ]; then
      waiting=1
      break
    fi
    sleep 0.05
  done
  [ "$waiting" = 1 ] || fail "the migration never waited on lake_meta"
  # the columns exist, uncommitted, in the migration's transaction
  pgp_crash "$p"
  local rc=0
  wait "$mig" || rc=$?
  assert_equal "serve exit $rc: $(cat "$T/mig.err")" "serve exit 75: $(cat "$T/mig.err")"
  [[ $(cat "$T/mig.err") == "lake-metasrv: "* ]] || fail "no error from serve"
  assert_equal "$(wc -l <"$T/mig.err")" 1
  pgp_promote "$s" || fail "cannot promote"
  # nothing of the migration on the new primary
  assert_equal "$(pgp_sql "$s" "$DB" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 1
  assert_equal "$(pgp_sql "$s" "$DB" "$cols")" 0
  # the next server migrates there, its data intact
  metasrv_start "$SRV"
  A_PID=$METASRV_PID
  assert_equal "$(pgp_sql "$s" "$DB" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  assert_equal "$(pgp_sql "$s" "$DB" "$cols")" 2
  run post "$METASRV_URL" resolve '{"namespace":"u","name":"t"}'
  assert_success
  assert_equal "$output" "$before"
}

# --- clients during a failover (issue 25): a call answered 503 by every
# instance goes round them again, with backoff, for retry_deadline seconds

# wait_trace FILE TEXT: until FILE (a client's LAKE_TRACE stderr) holds
# TEXT (120 s: the clients below wait for the test, never the other way)
wait_trace() {
  for _ in $(seq 1200); do
    grep -qF -- "$2" "$1" && return 0
    sleep 0.1
  done
  fail "no '$2' in $1: $(cat "$1")"
}

# run_traced COMMAND…: bats' run with LAKE_TRACE=1; the trace lines in
# $trace, the others in $stderr and $stderr_lines (for assert_error)
run_traced() {
  run --separate-stderr env LAKE_TRACE=1 "$@"
  trace=$stderr
  stderr=$(untraced_stderr)
  mapfile -t stderr_lines <<<"$stderr"
}

# a table q.t with the rows 1 and 2, through both instances; the snapshot
# cache holds them (the second INSERT read what the first wrote)
failover_table() {
  export LAKE_METASRV="$A_URL,$B_URL" LAKE_COMPACT_THRESHOLD=0
  lake-catalog create-namespace q
  lake-catalog create q.t 'n INTEGER'
  lake-query -c "insert into q.t values (1)" || fail "insert 1"
  lake-query -c "insert into q.t values (2)" || fail "insert 2"
}

@test "an INSERT and a lake-put --table during a failover: they retry until the standby is promoted, then succeed, each row once" {
  failover_table
  # the cached catalog and whoami stay fresh while the clients wait: what
  # they retry is the calls that have no cached answer, and nothing is
  # served stale (with a warning) because a loaded machine took longer
  # than the default 5 s TTL to get here
  export LAKE_CATALOG_TTL=3600
  lake-catalog create q.f 'doc FILE'
  local p s
  p=$(pgp_primary) s=$(pgp_standby)
  echo hello >"$T/doc"
  pgp_crash "$p"
  # both clients start with no primary: every instance answers 503
  LAKE_RETRY_DEADLINE=120 LAKE_TRACE=1 lake-query -c "insert into q.t values (3)" 2>"$T/insert.err" &
  local insert=$!
  PIDS+=("$insert")
  LAKE_RETRY_DEADLINE=120 LAKE_TRACE=1 lake-put --table q.f "$T/doc" >"$T/put.out" 2>"$T/put.err" &
  local put=$!
  PIDS+=("$put")
  # each is going round the instances, backing off, before the promotion
  wait_trace "$T/insert.err" "round 2; trying again in"
  wait_trace "$T/put.err" "round 2; trying again in"
  pgp_promote "$s" || fail "cannot promote the standby"
  local rc=0
  # nothing said (the cache fresh: no whoami or snapshot served stale)
  wait "$insert" || rc=$?
  assert_equal "INSERT exit $rc: $(grep -v '^trace: ' "$T/insert.err")" "INSERT exit 0: "
  rc=0
  wait "$put" || rc=$?
  assert_equal "lake-put exit $rc: $(grep -v '^trace: ' "$T/put.err")" "lake-put exit 0: "
  PIDS=()
  # the trace says what happened: 503s from both instances, the server's
  # own words there (and only there), the pauses between rounds
  grep -Eq "^trace: source [a-z_]+ at $A_URL,$B_URL -> error unavailable \(.+\), round 1; trying again in [0-9]+ ms$" "$T/insert.err" ||
    fail "no round line: $(cat "$T/insert.err")"
  # every row once: the INSERT's, and the put's FILE row
  run --separate-stderr lake-query -f csv -c "select n from q.t order by n"
  assert_success
  assert_output $'1\n2\n3'
  assert_equal "$(lake-catalog resolve q.t | jq .version)" 3
  run --separate-stderr lake-query -f csv -c "select count(*), max(fl_get_size(doc)) from q.f"
  assert_success
  assert_output "1,6"
  assert_equal "$(lake-catalog resolve q.f | jq .version)" 1
  assert_equal "$(jq -r .location "$T/put.out")" "$(lake-query -f csv -c "select json_extract(doc, '\$.location') from q.f")"
}

@test "an INSERT with a short retry_deadline and no primary coming back: 75 after it, one line a user understands, nothing appended" {
  failover_table
  # (the cached catalog stays fresh while the deadlines run out: no stale
  # read's warning joins the one line)
  export LAKE_CATALOG_TTL=3600
  local p s
  p=$(pgp_primary) s=$(pgp_standby)
  pgp_crash "$p"
  local trace
  # (5 s: the first round ends inside it even on a slow machine, so a retry is seen)
  run_traced env LAKE_RETRY_DEADLINE=5 lake-query -c "insert into q.t values (3)"
  assert_error lake-query 75 "$A_URL,$B_URL: the catalog is temporarily unavailable (its registry may be failing over); gave up after 5 s (retry_deadline)"
  [[ $stderr != *"registry unreachable"* && $stderr != *"registry is unavailable"* && $stderr != *principal* ]] ||
    fail "the server's internal words reached the user: $stderr"
  [[ $trace == *"round 1; trying again in "* ]] || fail "not retried: $trace"
  # the same from the file: retry_deadline = 1
  printf 'retry_deadline = 1\n' >"$T/conf"
  run --separate-stderr env LAKE_CONFIG="$T/conf" lake-query -c "insert into q.t values (4)"
  assert_error lake-query 75 "gave up after 1 s (retry_deadline)"
  # nothing of it was appended: the promoted standby holds rows 1 and 2
  pgp_promote "$s" || fail "cannot promote the standby"
  wait_health "$A_URL" ok
  run --separate-stderr lake-query -f csv -c "select n from q.t order by n"
  assert_success
  assert_output $'1\n2'
  assert_equal "$(lake-catalog resolve q.t | jq .version)" 2
}

@test "LAKE_RETRY_DEADLINE=0: one round of instances, as before retries existed; 75 saying it was not retried" {
  failover_table
  # (the cached catalog stays fresh: the append is the one call, with no
  # stale read's call and warning before it on a slow machine)
  export LAKE_CATALOG_TTL=3600
  pgp_crash "$(pgp_primary)"
  local trace
  run_traced env LAKE_RETRY_DEADLINE=0 lake-query -c "insert into q.t values (3)"
  assert_error lake-query 75 "$A_URL,$B_URL: the catalog is temporarily unavailable (its registry may be failing over); not retried (retry_deadline = 0)"
  [[ $trace != *"trying again"* ]] || fail "retried: $trace"
  # each instance asked once: A, then B, whose 503 ends the call
  assert_equal "$(grep -c "^trace: source .* at $A_URL -> error unavailable, trying the next endpoint$" <<<"$trace")" 1
  assert_equal "$(grep -c -- "-> error unavailable$" <<<"$trace")" 1
}

@test "reads during a failover are answered from the cache at once, not after retry_deadline: list, resolve, whoami, a user's show, SELECT" {
  failover_table
  local alice trace
  alice=$(metasrv_token user alice "$SRV")
  lake-catalog grant read ON q TO alice
  # the cache holds the directory, the registrations and whoami of both
  lake-query -c 'select count(*) from q.t' >/dev/null || fail "admin query"
  LAKE_TOKEN_FILE=$alice lake-query -c 'select count(*) from q.t' >/dev/null || fail "user query"
  pgp_crash "$(pgp_primary)"
  # a deadline a test would notice (not one it would hang on), and every
  # cached answer expired
  export LAKE_RETRY_DEADLINE=60 LAKE_CATALOG_TTL=0

  run_traced lake-catalog list
  assert_success
  assert_output $'q\tt'
  [[ $trace == *"-> error unavailable"* && $trace != *"trying again"* ]] || fail "not one round: $trace"
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == "lake-catalog: $A_URL,$B_URL: the catalog is temporarily unavailable (its registry may be failing over); serving generation "* ]] ||
    fail "not the stale warning: $stderr"

  run_traced lake-catalog resolve q.t
  assert_success
  assert_equal "$(jq .version <<<"$output")" 2
  [[ $trace == *"trace: source resolve q.t"*"-> error unavailable"* && $trace != *"trying again"* ]] ||
    fail "not one round: $trace"
  [[ $stderr == *"serving q.t version 2 resolved "* ]] || fail "not the stale warning: $stderr"

  run_traced lake-query -c 'select count(*) from q.t'
  assert_success
  assert_output 2
  [[ $trace != *"trying again"* ]] || fail "retried: $trace"

  run_traced env LAKE_TOKEN_FILE="$alice" lake-catalog show q.t
  assert_success
  assert_output $'n\tINTEGER'
  [[ $trace == *"trace: source resolve q.t known=2"*"-> error unavailable"* && $trace != *"trying again"* ]] ||
    fail "not one round: $trace"
  [[ $stderr == *"serving q.t version 2 resolved "* ]] || fail "not the stale warning: $stderr"
  run_traced env LAKE_TOKEN_FILE="$alice" lake-query -c 'select count(*) from q.t'
  assert_success
  assert_output 2
  [[ $trace != *"trying again"* ]] || fail "retried: $trace"

  # an append has nothing to serve instead: it retries (until the deadline)
  # (the reads before it are served stale, with their warnings)
  run_traced env LAKE_RETRY_DEADLINE=5 lake-query -c "insert into q.t values (3)"
  assert_equal "exit $status" "exit 75"
  assert_equal "${stderr_lines[-1]}" "lake-query: $A_URL,$B_URL: the catalog is temporarily unavailable (its registry may be failing over); gave up after 5 s (retry_deadline)"
  [[ $trace == *"trying again"* ]] || fail "not retried: $trace"
}
