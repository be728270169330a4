#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Several endpoints in LAKE_METASRV (issue 9, part 3): two real lake-metasrv
# instances over TLS serve one registry (a SQLite file in WAL mode, which
# two processes on one host may share); clients try the endpoints in order,
# remember in the snapshot cache the one that answered, and serve the stale
# snapshot only when every endpoint is down (at once: an endpoint that
# cannot be connected to is not retried; pg-failover.bats has the retries
# of a catalog answering 503).  Instances die by SIGKILL.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup nouse
  A_PID=$METASRV_PID A_URL=$METASRV_URL
  metasrv_start "$SRV"
  B_PID=$METASRV_PID B_URL=$METASRV_URL
  METASRV_PID=
  STORM_PIDS=()
  export LAKE_METASRV="$A_URL,$B_URL" LAKE_TOKEN_FILE=$ADMIN LAKE_CA_FILE=$SRV/cert.pem
}

teardown() {
  local p
  for p in "${A_PID:-}" "${B_PID:-}" "${STORM_PIDS[@]}"; do
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  common_teardown
}

kill_a() {
  kill -KILL "$A_PID" 2>/dev/null || true
  wait "$A_PID" 2>/dev/null || true
  A_PID=
}

restart_a() {
  local port=${A_URL##*:}
  lake-metasrv serve "${METASRV_REGOPT[@]}" --listen "127.0.0.1:$port" \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem" >"$SRV/serve.out.a2" 2>>"$SRV/serve.log" &
  A_PID=$!
  # (60 s at most: a guard against a hung start, not a time A needs)
  for _ in $(seq 2400); do
    grep -q '^listening on ' "$SRV/serve.out.a2" && return 0
    kill -0 "$A_PID" 2>/dev/null || fail "instance A exited: $(tail -n 3 "$SRV/serve.log")"
    sleep 0.025
  done
  fail "instance A did not come back"
}

# The version of s.t, asked of B (empty if it did not answer).
storm_version() {
  METASRV_DIR=$SRV METASRV_URL=$B_URL metasrv_post "$ADMIN" resolve '{"namespace":"s","name":"t"}'
  [ "$HTTP_CODE" != 200 ] || jq .version <<<"$HTTP_BODY"
}

status_of() { # status_of KEY: one key of lake-catalog status
  lake-catalog status | sed -n "s/^$1=//p"
}

@test "both up: the first endpoint answers, and status names it" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'a INTEGER'
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  assert_success
  assert_output $'docs\tt'
  assert_equal "$(trace_count source)" 1
  assert_equal "$(status_of endpoint)" "$A_URL"
  assert_equal "$(status_of source)" "$A_URL,$B_URL"
  run --separate-stderr lake-catalog --json status
  assert_clean_success
  assert_equal "$(jq -r .endpoint <<<"$output")" "$A_URL"
}

@test "the first endpoint down: answered by the next, no stale warning; the cache remembers it and asks it first" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'a INTEGER'
  kill_a
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  assert_success
  assert_output $'docs\tt'
  assert_equal "$(untraced_stderr)" ""
  assert_equal "$(trace_count source)" 2
  [[ $(trace_lines source | head -n1) == "trace: source catalog_snapshot at $A_URL -> error unreachable, trying the next endpoint" ]] ||
    fail "first trace line: $(trace_lines source)"
  assert_equal "$(status_of endpoint)" "$B_URL"
  assert_equal "$(status_of stale)" no

  # the next command asks B first: one call, no attempt at A
  lake-catalog create docs.u 'b TEXT'
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  assert_success
  assert_output $'docs\tt\ndocs\tu'
  assert_equal "$(trace_count source)" 1
  assert_equal "$(untraced_stderr)" ""

  # every kind of call goes through B: resolve, an INSERT, a get of its rows
  run --separate-stderr lake-query -c "insert into docs.t values (1), (2)"
  assert_success
  run --separate-stderr lake-query -f csv -c "select sum(a) from docs.t"
  assert_success
  assert_output 3
}

@test "every endpoint down: the last good snapshot with a warning naming them all; --strict is 69; back when one returns" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'a INTEGER'
  kill_a
  kill -KILL "$B_PID"
  wait "$B_PID" 2>/dev/null || true
  B_PID=
  run --separate-stderr lake-catalog --max-age 0 list
  assert_success
  assert_output $'docs\tt'
  [[ $stderr == "lake-catalog: $A_URL,$B_URL: none of the 2 endpoints answered; serving generation "*" fetched "*" s ago" ]] ||
    fail "warning: $stderr"
  run --separate-stderr lake-catalog --max-age 0 --strict list
  assert_error lake-catalog 69 "none of the 2 endpoints answered"
  # no connection at all is not a failover to wait out: one round, no
  # retry, whatever retry_deadline allows
  run --separate-stderr env LAKE_RETRY_DEADLINE=3600 LAKE_TRACE=1 lake-catalog --strict refresh
  assert_failure 69
  assert_equal "$(trace_count source)" 2
  [[ $stderr != *"trying again"* ]] || fail "retried: $stderr"

  restart_a
  run --separate-stderr lake-catalog refresh
  assert_success
  assert_equal "$(status_of endpoint)" "$A_URL"
  assert_equal "$(status_of stale)" no
}

@test "a storm of INSERTs through both endpoints: one instance killed mid-storm, every INSERT still succeeds, each once" {
  lake-catalog create-namespace s
  lake-catalog create s.t 'client INTEGER, n INTEGER'
  local c
  # one version per INSERT: no compaction after appends (catalog-compact.bats)
  export LAKE_COMPACT_THRESHOLD=0
  for c in 1 2 3 4; do
    (
      for n in $(seq 1 15); do
        lake-query -c "insert into s.t values ($c, $n)" 2>>"$T/storm.$c.err" || echo "$n" >>"$T/storm.$c.failed"
      done
    ) &
    STORM_PIDS+=($!)
  done
  # the storm held where it is (each client stopped; an INSERT it has
  # running goes on: one at most) once 8 of its 60 rows are in, so that A
  # dies mid-storm however fast or slowly the clients run
  local v
  for _ in $(seq 1200); do
    kill -STOP "${STORM_PIDS[@]}"
    v=$(storm_version)
    [ "$v" -ge 8 ] 2>/dev/null && break
    kill -CONT "${STORM_PIDS[@]}"
    sleep 0.05
  done
  [ "$v" -ge 8 ] 2>/dev/null || fail "the storm never reached version 8 (last: $v)"
  [ "$v" -lt 56 ] || fail "the storm was nearly over ($v) when A died"
  kill_a
  kill -CONT "${STORM_PIDS[@]}"
  for c in "${STORM_PIDS[@]}"; do wait "$c"; done
  STORM_PIDS=()
  for c in 1 2 3 4; do
    [ ! -s "$T/storm.$c.failed" ] || fail "client $c lost INSERTs $(paste -sd, "$T/storm.$c.failed"): $(cat "$T/storm.$c.err")"
  done
  run --separate-stderr lake-query -f csv -c "select client, count(*), count(distinct n) from s.t group by client order by client"
  assert_success
  assert_output $'1,15,15\n2,15,15\n3,15,15\n4,15,15'
  assert_equal "$(lake-catalog resolve s.t | jq .version)" 60
}

@test "LAKE_METASRV lists: a bad, repeated, or ninth endpoint is a configuration error (78) on one line" {
  local bad
  for bad in "$A_URL,ftp://x:1" "$A_URL," "$A_URL,$A_URL" "$A_URL,http://10.1.2.3:7700" \
             "$(printf 'https://h%d:1,' 1 2 3 4 5 6 7 8)https://h9:1"; do
    LAKE_METASRV=$bad run --separate-stderr lake-catalog --max-age 0 list
    assert_failure 78
    assert_equal "${#stderr_lines[@]}" 1
    [[ $stderr == "lake-catalog: metasrv: "* ]] || fail "for $bad: $stderr"
  done
  # spaces around the commas and a trailing slash are fine
  LAKE_METASRV="$A_URL/ , $B_URL" run --separate-stderr lake-catalog --max-age 0 list
  assert_success
}

# A fake first endpoint that reads each request and closes the connection
# without an answer: a server lost in the middle of a call, which a real
# lake-metasrv cannot be made to do on cue.
@test "a server lost mid-call: a snapshot is asked again of the next endpoint; a create is not sent twice (69)" {
  python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); c.recv(65536); c.close()
' >"$T/fake.port" &
  STORM_PIDS+=($!)
  for _ in $(seq 1200); do [ -s "$T/fake.port" ] && break; sleep 0.05; done
  [ -s "$T/fake.port" ] || fail "the fake endpoint did not start"
  LAKE_METASRV="http://127.0.0.1:$(cat "$T/fake.port"),$B_URL"
  export LAKE_METASRV
  run --separate-stderr env LAKE_TRACE=1 lake-catalog create-namespace docs
  assert_failure 69
  assert_equal "$(trace_count source)" 1
  [[ $(untraced_stderr) == "lake-catalog: http://127.0.0.1:"*" unreachable (the server closed the connection without an answer; if it serves TLS, the URL must start https://)" ]] ||
    fail "$stderr"
  # nothing was created through B: creating it there now succeeds (a
  # second create would be a conflict)
  run --separate-stderr env LAKE_METASRV="$B_URL" lake-catalog create-namespace docs
  assert_success
  run --separate-stderr env LAKE_METASRV="$B_URL" lake-catalog create-namespace docs
  assert_failure

  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 refresh
  assert_success
  assert_equal "$(trace_count source)" 2
  assert_equal "$(status_of endpoint)" "$B_URL"
}
