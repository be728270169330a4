#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-metasrv SIGKILLed 10 times during an append storm (issue 8): 8
# clients insert one row each per lake-query, in a loop, and record every
# append they were acknowledged (exit 0, with the version from their trace)
# and every failure (its exit status and diagnostic).  The server is killed
# at a random moment, its registry checked with PRAGMA integrity_check,
# and restarted on the same registry file and port.  After each restart:
# every acknowledged row is present, the table's version and the catalog
# generation (raised by one create_table per round) never went back.
# Clients see errors while the server is down: each failure must be one
# documented status (69 unreachable, 75 busy or conflict), its error as
# the last line, no warning repeated, and never a success for a lost append.
#
# The seed and the delays are logged ("# crash: ..." lines, $T/crash.log);
# LAKE_CRASH_SEED=N replays them.

load helpers/common
load helpers/metasrv
load helpers/crash

CLIENTS=8
KILLS=10

setup() {
  metasrv_setup
  crash_seed
  CLIENT_PIDS=()
  lake-catalog create-namespace d
  lake-catalog create d.t 'c INTEGER, s INTEGER'
  # every client reads the registry as it is, not a cached snapshot
  export LAKE_CATALOG_TTL=0
}

teardown() {
  touch "$T/stop"
  local p
  for p in "${CLIENT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${CLIENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  metasrv_stop
  common_teardown
}

# One client: INSERT (c, s) for s = 1, 2, ... until $T/stop exists.
# Acknowledged: "c s version" in $T/acked.c; failed: "c s status line".
client() {
  local c=$1 s=0 rc v
  while [ ! -e "$T/stop" ]; do
    s=$((s + 1))
    rc=0
    # a client that hangs fails the test (124 is no documented status)
    LAKE_TRACE=1 timeout 60 lake-query -c "INSERT INTO d.t VALUES ($c, $s)" >/dev/null 2>"$T/err.$c" || rc=$?
    if [ "$rc" -eq 0 ]; then
      v=$(sed -n 's/^trace: source append d\.t .* -> version=\([0-9][0-9]*\)$/\1/p' "$T/err.$c" | tail -n 1)
      printf '%s %s %s\n' "$c" "$s" "${v:-none}" >>"$T/acked.$c"
    else
      printf '%s %s %s %s\n' "$c" "$s" "$rc" "$(grep -v '^trace: ' "$T/err.$c" | paste -sd'|')" >>"$T/failed.$c"
    fi
  done
}

# The lines of the files $T/NAME.* (acked, failed) so far.
lines_of() {
  cat "$T/$1".* 2>/dev/null | wc -l
}

# has_lines NAME N: $T/NAME.* hold N lines or more.
has_lines() {
  [ "$(lines_of "$1")" -ge "$2" ]
}

# wait_lines NAME N WHY: until $T/NAME.* hold N lines or more (the clients
# write them all along; poll_until's guard), else fail with WHY.
wait_lines() {
  poll_until has_lines "$1" "$2" || fail "$3 ($(lines_of "$1") $1 after 60 s)"
}

# The rows of d.t as "c s", sorted, read from a restarted server.
table_rows() {
  timeout 60 lake-query -f tsv -c 'SELECT c, s FROM d.t' | tr '\t' ' ' | sort
}

table_version() {
  timeout 60 lake-catalog resolve d.t | jq -er .version
}

generation() {
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1,"max_entries":1000,"max_bytes":1000000}'
  [ "$HTTP_CODE" = 200 ] || fail "catalog_snapshot: $HTTP_CODE $HTTP_BODY"
  jq -er .generation <<<"$HTTP_BODY"
}

# After a restart: every acknowledged row present; versions and the
# generation not below what was seen before.
check_round() {
  local k=$1 acked missing v g maxv
  cat "$T"/acked.* 2>/dev/null | sort >"$T/acked" || true
  acked=$(wc -l <"$T/acked")
  table_rows >"$T/rows" || fail "round $k: cannot read d.t back"
  missing=$(cut -d' ' -f1,2 "$T/acked" | sort | comm -23 - "$T/rows")
  [ -z "$missing" ] || fail "round $k: acknowledged appends lost: $missing"
  if grep -q ' none$' "$T/acked"; then fail "round $k: a success without an acknowledged append"; fi
  maxv=$(cut -d' ' -f3 "$T/acked" | sort -n | tail -n 1)
  v=$(table_version)
  [ "$v" -ge "${maxv:-0}" ] || fail "round $k: version $v below an acknowledged version $maxv"
  [ "$v" -ge "$LAST_VERSION" ] || fail "round $k: version went back from $LAST_VERSION to $v"
  g=$(generation)
  [ "$g" -ge "$LAST_GEN" ] || fail "round $k: generation went back from $LAST_GEN to $g"
  crash_log "round $k: $acked acknowledged, $(wc -l <"$T/rows") rows, version $v, generation $g"
  LAST_VERSION=$v LAST_GEN=$g
}

@test "SIGKILL of lake-metasrv 10 times during an append storm of 8 clients: no acknowledged append lost, versions and generation only rise, the registry intact" {
  local port=$METASRV_PORT c k up down rc
  LAST_VERSION=0
  LAST_GEN=$(generation)
  for c in $(seq "$CLIENTS"); do
    client "$c" 3>&- &
    CLIENT_PIDS+=($!)
  done
  local since=0
  for k in $(seq "$KILLS"); do
    up=$((300 + $(crash_rand 900)))
    down=$(crash_rand 400)
    crash_log "round $k: server up ${up} ms, then SIGKILL, down ${down} ms"
    crash_sleep_ms "$up"
    # and until an append was acknowledged since the last start: the kill
    # lands in the storm, not before it, however slowly a loaded machine
    # runs the clients
    wait_lines acked $((since + 1)) "round $k: no append acknowledged since the server started"
    # a change to the directory each round: the generation must keep it
    metasrv_post "$ADMIN" create_table "{\"namespace\":\"d\",\"name\":\"g$k\",\"schema\":[{\"name\":\"x\",\"type\":\"INTEGER\"}]}"
    [ "$HTTP_CODE" = 200 ] || fail "round $k: create_table: $HTTP_CODE $HTTP_BODY"
    LAST_GEN=$(jq -er .generation <<<"$HTTP_BODY")
    crash_sleep_ms "$(crash_rand 200)"
    kill -9 "$METASRV_PID"
    rc=0
    wait "$METASRV_PID" || rc=$?
    assert_equal "server exit $rc" "server exit 137"
    METASRV_PID=
    assert_equal "$(sqlite3 "$SRV/registry.db" 'PRAGMA integrity_check')" ok
    crash_sleep_ms "$down"
    # the last time down: until a client saw it, if none has yet (a kill
    # with no request in flight and a down time shorter than any client
    # took to ask is no outage seen)
    [ "$k" -lt "$KILLS" ] || wait_lines failed 1 "no client ever saw the server down"
    metasrv_start "$SRV" "$port"
    assert_equal "$METASRV_PORT" "$port"
    since=$(lines_of acked)
    check_round "$k"
  done
  # many successes: the storm runs on until then (a loaded machine runs
  # fewer appends in the rounds' times)
  wait_lines acked $((CLIENTS * 3)) "too few appends acknowledged"
  touch "$T/stop"
  for c in "${CLIENT_PIDS[@]}"; do wait "$c"; done
  CLIENT_PIDS=()
  check_round final

  # the storm really ran through the kills: many successes, some failures
  local acked failed
  acked=$(wc -l <"$T/acked")
  failed=$(cat "$T"/failed.* 2>/dev/null | wc -l)
  crash_log "$acked appends acknowledged, $failed failed"
  [ "$acked" -ge $((CLIENTS * 3)) ] || fail "only $acked appends acknowledged"
  [ "$failed" -ge 1 ] || fail "no client ever saw the server down"
  # each failure: a documented status, its error last, and no warning
  # repeated (a statement asks the cache many times, but warns once)
  local bad
  bad=$(cat "$T"/failed.* | awk '{ rc = $3; $1 = $2 = $3 = ""; sub(/^ +/, "")
    n = split($0, l, "|"); dup = 0; delete seen
    for (i = 1; i <= n; i++) { if (l[i] in seen) dup = 1; seen[l[i]] = 1 }
    if ((rc != 69 && rc != 75) || n < 1 || l[n] !~ /^lake-query: / || dup) print }')
  [ -z "$bad" ] || fail "failures with an undocumented status or repeated warnings: $bad"
  # no acknowledged version given twice; each client's versions rise
  [ -z "$(cut -d' ' -f3 "$T/acked" | sort -n | uniq -d)" ] ||
    fail "one version acknowledged to two appends: $(cut -d' ' -f3 "$T/acked" | sort -n | uniq -d)"
  for c in $(seq "$CLIENTS"); do
    [ ! -s "$T/acked.$c" ] || cut -d' ' -f3 "$T/acked.$c" | sort -nc ||
      fail "client $c saw its versions go back"
  done
  # every row once: a lost answer is never appended twice
  assert_equal "$(sort "$T/rows" | uniq -d)" ""
  # every version is one append of one row, or one compaction after the
  # appends (LAKE_COMPACT_THRESHOLD: it runs during the kills too)
  local compactions
  compactions=$(sqlite3 "$SRV/registry.db" "SELECT count(DISTINCT removed_in) FROM segments")
  crash_log "$compactions compactions"
  assert_equal "$(table_version)" "$(($(wc -l <"$T/rows") + compactions))"
  metasrv_stop
  assert_equal "$(sqlite3 "$SRV/registry.db" 'PRAGMA integrity_check')" ok
}
