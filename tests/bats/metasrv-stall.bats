#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# A stalled registry never stalls lake-metasrv (issue 26): registry work
# runs on worker threads in two lanes, reads and writes, so that writes
# waiting on the registry (a SQLite write lock held by another process, a
# PostgreSQL primary waiting for its lost synchronous standby) leave the
# reads answering; past --max-waiting a request is refused at once (503,
# Retry-After); /v1/health says "waiting" from a background probe, never
# from a registry connection of the request path; a PostgreSQL that stops
# answering altogether (helpers/blackhole.py: a proxy that stops
# forwarding without closing anything) is declared unavailable after 10 s,
# the calls stuck on it cut, and the server recovers by itself when it
# answers again.
#
# One PostgreSQL pair for the file (helpers/pg.bash, as pg-failover.bats),
# a fresh database per test that needs one; the SQLite tests use a fresh
# registry file.  The stalls last 30 s (15 s for the --max-waiting test),
# measured latencies are printed (# lines), never asserted tightly: the
# asserts are on statuses, counts and bounds far from what a loaded
# machine needs (a curl --max-time of 25 s where the server promises 10 s).
# tests/run runs this file once, with the registries it sets up itself.

load helpers/common
load helpers/metasrv
load helpers/pg

setup_file() {
  pgp_start || return 1
}

teardown_file() {
  pgp_stop
}

setup() {
  common_setup
  SRV=$T/srv
  ADMIN=$SRV/admin.token
  mkdir -p "$SRV"
  # the SQLite tests look inside the file: never a registry of tests/run's
  export LAKE_TEST_REGISTRY=sqlite
  # one version per INSERT (no compaction after appends), and a client
  # that rides over the 30 s stalls (it retries 503s that long)
  export LAKE_COMPACT_THRESHOLD=0 LAKE_RETRY_DEADLINE=120
  PIDS=() CLIENTS=() PROBES=()
}

teardown() {
  local p
  for p in "${CLIENTS[@]}" "${PROBES[@]}" "${PIDS[@]}"; do
    [ -z "$p" ] || kill -KILL "$p" 2>/dev/null || true
  done
  for p in "${CLIENTS[@]}" "${PROBES[@]}" "${PIDS[@]}"; do
    [ -z "$p" ] || wait "$p" 2>/dev/null || true
  done
  metasrv_kill
  common_teardown
}

# --- the stall's phases, as files: $T/stalled when the stall began,
# $T/restored when it ended (what a probe records is the phase its answer
# came in)
phase() {
  if [ -e "$T/restored" ]; then echo after
  elif [ -e "$T/stalled" ]; then echo stall
  else echo before; fi
}

# serve [OPTIONS…]: a registry in $SRV (SQLite, or $SRV/registry.url),
# its server with OPTIONS, the client pointed at it, 64 tables
# s.t1..s.t64 (title TEXT, year INTEGER, document FILE) and the client's
# snapshot cache holding them
serve() {
  metasrv_init "$SRV"
  metasrv_start "$SRV" 0 "$@"
  metasrv_use "$SRV"
  metasrv_tables s t 64
  lake-catalog refresh >/dev/null || fail "lake-catalog refresh"
}

# hold_write_lock: another process holds the SQLite registry's write lock
# (BEGIN IMMEDIATE; WAL readers go on), in the background, until
# release_write_lock; $T/stalled once it holds it, $T/restored just before
# it lets go (nothing answered before $T/restored was answered under the
# lock).  Released on a state the test saw, never after a time: the
# stall must outlast the work it is meant to hold up, however slowly a
# loaded machine brings that work.
hold_write_lock() {
  python3 - "$SRV/registry.db" "$T" 3>&- <<'EOF' &
import os, sqlite3, sys, time
db, t = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, isolation_level=None, timeout=60)
c.execute("BEGIN IMMEDIATE")
open(os.path.join(t, "stalled"), "w").close()
while not os.path.exists(os.path.join(t, "release")):
    time.sleep(0.05)
open(os.path.join(t, "restored"), "w").close()
c.execute("ROLLBACK")
c.close()
EOF
  LOCKER=$!
  PIDS+=("$LOCKER")
  for _ in $(seq 1200); do
    [ -e "$T/stalled" ] && return 0
    kill -0 "$LOCKER" 2>/dev/null || break
    sleep 0.05
  done
  fail "the write lock was never taken"
}

# release_write_lock: the holder lets go; waits for it to end
release_write_lock() {
  touch "$T/release"
  wait "$LOCKER"
}

# start_probes TABLE: in the background until $T/stop, as admin:
#   $T/resolves  one line per resolve of TABLE, every 0.2 s:
#                "CURL-EXIT HTTP SECONDS PHASE"
#   $T/health    one line per GET /v1/health, every 0.5 s:
#                "CURL-EXIT HTTP PHASE BODY"
#   $T/metrics   one line per GET /v1/metrics, every 0.5 s: "PHASE" and
#                the registry's waiting and refusal samples
# each request bounded by curl --max-time 25 (what the server promises
# is an answer within 10 s: a request cut there never answered)
start_probes() {
  local table=$1 secret
  IFS= read -r secret <"$ADMIN"
  : >"$T/resolves"
  : >"$T/health"
  : >"$T/metrics"
  (
    while [ ! -e "$T/stop" ]; do
      rc=0
      res=$(curl -sS -m 25 --cacert "$SRV/cert.pem" -H "Authorization: Bearer $secret" -o /dev/null \
        -w '%{http_code} %{time_total}' --data-binary "{\"namespace\":\"s\",\"name\":\"$table\"}" \
        "$METASRV_URL/v1/actions/resolve" 2>/dev/null) || rc=$?
      echo "$rc ${res:-000 0} $(phase)" >>"$T/resolves"
      sleep 0.2
    done
  ) 3>&- &
  PROBES+=($!)
  (
    while [ ! -e "$T/stop" ]; do
      rc=0
      res=$(curl -sS -m 25 --cacert "$SRV/cert.pem" -w '\n%{http_code}' "$METASRV_URL/v1/health" 2>/dev/null) || rc=$?
      echo "$rc ${res##*$'\n'} $(phase) $(head -n 1 <<<"$res" | tr -d '\n')" >>"$T/health"
      sleep 0.5
    done
  ) 3>&- &
  PROBES+=($!)
  (
    while [ ! -e "$T/stop" ]; do
      res=$(curl -sS -m 25 --cacert "$SRV/cert.pem" -H "Authorization: Bearer $secret" \
        "$METASRV_URL/v1/metrics" 2>/dev/null |
        grep -E '^lake_registry_(waiting_requests|oldest_wait_seconds|refused_total)' | paste -sd' ')
      echo "$(phase) $res" >>"$T/metrics"
      sleep 0.5
    done
  ) 3>&- &
  PROBES+=($!)
}

stop_probes() {
  touch "$T/stop"
  local p
  for p in "${PROBES[@]}"; do wait "$p" 2>/dev/null || true; done
  PROBES=()
}

# insert_clients N: N lake-query INSERTs at once, in the background,
# client C appending one row (year = C) to s.tC (one table each: no
# conflict between them; the point is the registry, not commutation);
# "EXIT-STATUS PHASE" in $T/rc.C once it ended, its stderr in
# $T/client.C.err
insert_clients() {
  local c
  for c in $(seq "$1"); do
    (
      rc=0
      lake-query -c "insert into s.t$c (year) values ($c)" 2>"$T/client.$c.err" || rc=$?
      echo "$rc $(phase)" >"$T/rc.$c"
    ) 3>&- &
    CLIENTS+=($!)
  done
}

clients_wait() {
  local p
  for p in "${CLIENTS[@]}"; do wait "$p" 2>/dev/null || true; done
  CLIENTS=()
}

# check_rows N: every client 1..N ended 0 with its row in its table once,
# or 75 (lake-query(1): a server that went on answering 503 until
# retry_deadline; nothing appended) with its row absent; nothing else.
# Prints a summary line (# …) and sets OK_CLIENTS.
check_rows() {
  local n=$1 c sql='' rc ph
  for c in $(seq "$n"); do sql+="${sql:+ union all }select year from s.t$c"; done
  run --separate-stderr lake-query -f csv -c "select year, count(*) from ($sql) group by year"
  assert_success
  printf '%s\n' "$output" | tr , ' ' >"$T/held"
  OK_CLIENTS=0
  local unavailable=0 others=''
  for c in $(seq "$n"); do
    [ -s "$T/rc.$c" ] || fail "client $c never ended"
    read -r rc ph <"$T/rc.$c"
    case $rc in
      0) echo "$c 1"; OK_CLIENTS=$((OK_CLIENTS + 1)) ;;
      75) echo "$c 0"; unavailable=$((unavailable + 1))
          grep -q 'temporarily unavailable' "$T/client.$c.err" ||
            fail "client $c: 75, not for a 503: $(cat "$T/client.$c.err")" ;;
      *) others+=" client $c: exit $rc ($ph): $(cat "$T/client.$c.err");" ;;
    esac
  done >"$T/expected"
  [ -z "$others" ] || fail "clients ended neither 0 nor 75:$others"
  # the rows held, per client: 0 for none (a row twice shows as 2)
  local got
  got=$(awk 'NR == FNR { h[$1] = $2; next } { print $1, ($1 in h) ? h[$1] : 0 }' "$T/held" "$T/expected")
  assert_equal "$got" "$(cat "$T/expected")"
  assert_equal "rows of other clients: $(awk -v n="$n" '$1 < 1 || $1 > n' "$T/held")" "rows of other clients: "
  echo "# $n INSERT clients: $OK_CLIENTS exited 0 (row held once), $unavailable exited 75 (row absent)" >&3
}

# pctl P FILE: the P-th percentile (nearest rank) of the numbers in FILE
pctl() {
  sort -n "$2" | awk -v p="$1" '{ v[NR] = $1 }
    END { if (!NR) { print "-"; exit } i = int((p * NR + 99) / 100); if (i < 1) i = 1; print v[i] }'
}

# refused: the server's refusals by reason, "full=N stalled=N timeout=N"
refused() {
  metasrv_curl "$ADMIN" -m 25 "$METASRV_URL/v1/metrics" |
    awk '$1 ~ /^lake_registry_refused_total\{/ { match($1, /reason="[a-z]+"/); r[substr($1, RSTART + 8, RLENGTH - 9)] = $2 }
         END { printf "full=%d stalled=%d timeout=%d\n", r["full"], r["stalled"], r["timeout"] }'
}

# assert_probes_answered: every probe got an answer, none a connection
# refused (curl 7, HTTP 000) or cut by curl's --max-time (28)
assert_probes_answered() {
  local bad
  bad=$(awk '$1 != 0 || $2 == "000"' "$T/resolves" "$T/health")
  [ -z "$bad" ] || fail "probes without an answer (CURL-EXIT HTTP …): $(head -n 5 <<<"$bad")"
}

# resolve_figures PHASE: "# resolve …" latency line for the answers in PHASE
resolve_figures() {
  awk -v ph="$1" '$4 == ph { print $3 }' "$T/resolves" >"$T/lat"
  echo "# resolve during the $1: $(wc -l <"$T/lat") answers, p50 $(pctl 50 "$T/lat") s, p99 $(pctl 99 "$T/lat") s, max $(pctl 100 "$T/lat") s; codes $(awk -v ph="$1" '$4 == ph { print $2 }' "$T/resolves" | sort | uniq -c | awk '{ printf "%s%s×%s", s, $2, $1; s = " " }')" >&3
}

# assert_reads_went_on: the resolve probe, one request every 0.2 s, got at
# least 10 answers in the 30 s stall (one held up behind the writes, 10 s
# and more, would leave it a handful)
assert_reads_went_on() {
  local n
  n=$(awk '$4 == "stall"' "$T/resolves" | wc -l)
  [ "$n" -ge 10 ] ||
    fail "resolves held up during the stall: $n answers in 30 s (CURL-EXIT HTTP SECONDS PHASE): $(awk '$4 == "stall"' "$T/resolves" | paste -sd,)"
}

# assert_health_waiting: health answered 200 all along, and during the
# stall said "degraded", registry "waiting", with the counts of what waits
assert_health_waiting() {
  local bad waiting
  bad=$(awk '$2 != 200' "$T/health")
  [ -z "$bad" ] || fail "health not 200 while the registry only waited: $(head -n 3 <<<"$bad")"
  waiting=$(awk '$3 == "stall" { $1 = $2 = $3 = ""; print }' "$T/health" |
    jq -c 'select(.registry == "waiting")' 2>/dev/null | tail -n 1)
  [ -n "$waiting" ] || fail "health never said registry waiting: $(awk '$3 == "stall"' "$T/health" | sort -u -k4 | head -n 5)"
  assert_equal "$(jq -r '.status' <<<"$waiting")" degraded
  jq -e '(.reason | type == "string" and . != "") and (.waiting_reads | type == "number")
         and .waiting_writes >= 1 and .oldest_wait_s > 1' <<<"$waiting" >/dev/null ||
    fail "not the degraded health of lake-metasrv(8): $waiting"
  echo "# health during the stall: $(awk '$3 == "stall"' "$T/health" | wc -l) answers, $(awk '$3 == "stall"' "$T/health" | grep -c '"waiting"') said waiting; the last: $waiting" >&3
}

# assert_writes_waited: the metrics showed writes waiting during the stall
assert_writes_waited() {
  local most
  most=$(awk '$1 == "stall"' "$T/metrics" | grep -oE 'lake_registry_waiting_requests\{lane="write"\} [0-9.]+' |
    awk '$2 > m { m = $2 } END { print m + 0 }')
  [ "$most" -gt 0 ] || fail "no write ever waiting in the metrics: $(awk '$1 == "stall"' "$T/metrics" | tail -n 2)"
  echo "# metrics: at most $most writes waiting on the registry" >&3
}

# stall_seen: the probes saw, during the stall, what the write stall
# asserts on (assert_health_waiting, assert_writes_waited): health saying
# registry waiting with a write waiting over 1 s, and the metrics a write
# waiting
stall_seen() {
  awk '$3 == "stall" { $1 = $2 = $3 = ""; print }' "$T/health" |
    jq -e 'select(.registry == "waiting" and .waiting_writes >= 1 and .oldest_wait_s > 1)' >/dev/null 2>&1 &&
    awk '$1 == "stall"' "$T/metrics" | grep -oE 'lake_registry_waiting_requests\{lane="write"\} [0-9.]+' |
      awk '$2 > 0 { f = 1 } END { exit !f }'
}

# stall_hold SECONDS [CMD…]: let the stall last SECONDS (the time the
# asserts on reads during it count on: assert_reads_went_on) and on until
# the probes saw it (stall_seen) and CMD, if given, succeeds (120 s more
# at most: a guard against a hang)
stall_hold() {
  local secs=$1 i
  shift
  sleep "$secs"
  for ((i = 0; i < 1200; i++)); do
    stall_seen && { [ $# -eq 0 ] || "$@"; } && return 0
    sleep 0.1
  done
  fail "the stall was never seen (health: $(awk '$3 == "stall"' "$T/health" | tail -n 2); metrics: $(awk '$1 == "stall"' "$T/metrics" | tail -n 1); refused: $(refused))"
}

# timeout_refused: an append was refused after waiting its time in the queue
timeout_refused() {
  [[ $(refused) =~ timeout=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]
}

# stalled_refused: a request was refused because the registry went silent
# (counted as stalled; seen in the server's log: its metrics need the
# registry to check the token)
stalled_refused() {
  grep -Eq ' message="the registry (does not answer|is not answering reads); retry later"' "$SRV/serve.log"
}

# assert_write_stall WHEN: after a stall of the writes with 64 INSERT
# clients (probes stopped here): the figures printed; every resolve
# answered 200 and on time; health said waiting and the metrics counted
# the writes waiting; no client was told 0 during the stall (nothing
# commits then: it would be a lie); each row once, or absent and its
# client 75; and some INSERT succeeded WHEN.
assert_write_stall() {
  stop_probes
  resolve_figures stall
  resolve_figures after
  echo "# refused: $(refused)" >&3
  assert_probes_answered
  local bad
  bad=$(awk '$2 != 200' "$T/resolves")
  [ -z "$bad" ] || fail "resolves not answered 200 (CURL-EXIT HTTP SECONDS PHASE): $(sort -k2,2 -u <<<"$bad" | head -n 5)"
  assert_reads_went_on
  assert_health_waiting
  assert_writes_waited
  assert_equal "$(grep -l '^0 stall' "$T"/rc.* | paste -sd' ')" ""
  check_rows 64
  [ "$OK_CLIENTS" -gt 0 ] || fail "no INSERT succeeded $1"
}

@test "a SQLite registry write-locked for 30 s: 64 INSERTs wait, resolves answer 200 all along, health says waiting; then each row once, or absent and its client 75" {
  serve
  start_probes t1
  sleep 1
  hold_write_lock
  insert_clients 64
  # 30 s, and until the probes saw the writes wait and appends queued past
  # SQLite's 10 s busy timeout were refused (asserted below): the clients
  # may take long to start on a loaded machine
  stall_hold 30 timeout_refused
  release_write_lock
  sleep 2
  clients_wait
  # WAL reads are not blocked by a writer
  assert_write_stall "after the lock was let go"
  # 60 appends queued behind 4 writers each waiting SQLite's 10 s busy
  # timeout: those still queued after 10 s were refused, without running
  local counts
  counts=$(refused)
  [[ $counts =~ timeout=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "no append refused after 10 s queued: $counts"
}

@test "--max-waiting 4: appends past 4 waiting on a locked registry are refused at once, 503 with Retry-After, counted as full; reads go on; nothing committed" {
  serve --max-waiting 4
  # held until all 16 appends are answered: the 4 admitted ones end by
  # SQLite's 10 s busy timeout, under the lock, however late they came
  hold_write_lock
  local secret i gun rc code secs ph
  IFS= read -r secret <"$ADMIN"
  # 16 appends at once (a starting gun: all are in before the first 4,
  # admitted, can end by SQLite's 10 s busy timeout)
  mkfifo "$T/gun"
  for i in $(seq 16); do
    (
      read -r _ <"$T/gun"
      rc=0
      curl -sS -m 25 --cacert "$SRV/cert.pem" -H "Authorization: Bearer $secret" -D "$T/head.$i" -o "$T/body.$i" \
        -w '%{http_code} %{time_total}' \
        --data-binary "{\"namespace\":\"s\",\"name\":\"t1\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/a$i")],\"files\":[]}" \
        "$METASRV_URL/v1/actions/append" >"$T/code.$i" 2>"$T/curl.$i" || rc=$?
      echo "$rc $(cat "$T/code.$i") $(phase)" >"$T/ans.$i"
    ) 3>&- &
    CLIENTS+=($!)
  done
  sleep 0.3
  exec {gun}<>"$T/gun"
  for i in $(seq 16); do echo go; done >&"$gun"
  # the refused ones are answered before the admitted ones can be: wait
  # for 12 answers (60 s at most, a guard)
  for _ in $(seq 1200); do
    [ "$(cat "$T"/ans.* 2>/dev/null | wc -l)" -ge 12 ] && break
    sleep 0.05
  done
  # a read, while the write lane is full: answered
  METASRV_DIR=$SRV metasrv_post "$ADMIN" resolve '{"namespace":"s","name":"t1"}'
  local read_during full_during
  read_during="$HTTP_CODE $(phase)"
  full_during=$(refused)
  clients_wait
  exec {gun}>&-
  release_write_lock
  echo "# answers (EXIT HTTP SECONDS PHASE): $(cat "$T"/ans.* | sort -k3,3n | awk '{ printf "%s%s %s", s, $2, $3; s = ", " }')" >&3
  echo "# refused while locked: $full_during" >&3
  assert_equal "resolve during the full write lane: $read_during" "resolve during the full write lane: 200 stall"
  # every append answered, 503 unavailable with Retry-After: 1
  local quick=0
  for i in $(seq 16); do
    read -r rc code secs ph <"$T/ans.$i"
    assert_equal "append $i: curl $rc HTTP $code" "append $i: curl 0 HTTP 503"
    HTTP_CODE=$code HTTP_BODY=$(cat "$T/body.$i")
    metasrv_assert_error 503 unavailable
    grep -qi '^Retry-After: 1' "$T/head.$i" || fail "append $i: no Retry-After: 1: $(cat "$T/head.$i")"
    # at once: far inside the 10 s an admitted one waits on the lock
    awk -v s="$secs" 'BEGIN { exit !(s < 5) }' && quick=$((quick + 1))
  done
  [ "$quick" -ge 12 ] || fail "only $quick of 16 appends refused at once (4 may wait): $(cat "$T"/ans.*)"
  # the refusals counted: the 12 past the 4 waiting, as full
  [[ $full_during =~ ^full=([0-9]+)\  ]] || fail "no refusal counts: $full_during"
  [ "${BASH_REMATCH[1]}" -ge 12 ] || fail "refused as full: ${BASH_REMATCH[1]}, expected 12 or more"
  # nothing of them committed; the lock gone, an append goes through
  METASRV_DIR=$SRV metasrv_post "$ADMIN" resolve '{"namespace":"s","name":"t1"}'
  assert_equal "$(jq -c '[.version, (.segments | length)]' <<<"$HTTP_BODY")" "[0,0]"
  METASRV_DIR=$SRV metasrv_post "$ADMIN" append \
    "{\"namespace\":\"s\",\"name\":\"t1\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/after")],\"files\":[]}"
  assert_equal "append after the lock: $HTTP_CODE" "append after the lock: 200"
  assert_equal "$(jq .version <<<"$HTTP_BODY")" 1
}

# pg_database: a fresh database on the pair (made whole first: the test
# before may have left it otherwise); its name in DB
pg_database() {
  pgp_heal || fail "the PostgreSQL pair cannot be made whole again"
  DB=t_${BATS_TEST_NUMBER}_$$_$RANDOM
  pgp_createdb "$DB" || fail "cannot create the database"
}

@test "PostgreSQL, the synchronous standby lost for 30 s: 64 INSERTs wait, resolves answer 200, health says waiting; the standby back, each row once or absent and its client 75" {
  pg_database
  pgp_url "$DB" >"$SRV/registry.url"
  serve
  local s
  s=$(pgp_standby)
  start_probes t1
  sleep 1
  pgp_crash "$s"
  touch "$T/stalled"
  insert_clients 64
  # 30 s, and until the probes saw the writes wait (the clients may take
  # long to start on a loaded machine)
  stall_hold 30
  touch "$T/restored"
  pgp_resume "$s" || fail "the standby does not start again"
  clients_wait
  sleep 1
  assert_write_stall "once the standby was back"
  # what the clients were told is on the standby too
  pgp_wait_replayed "SELECT count(*) FROM versions" "$(pgp_sql "$(pgp_primary)" "$DB" "SELECT count(*) FROM versions")" "$DB" ||
    fail "the standby does not hold what the primary does"
}

@test "PostgreSQL black-holed for 30 s (no answer, no connection closed): resolves answered 200 or 503, never hung; health says unavailable; recovered without a restart" {
  pg_database
  python3 "$BATS_TEST_DIRNAME/helpers/blackhole.py" 0 "$(pgp_node_port "$(pgp_primary)")" >"$T/bh.port" 2>"$T/bh.err" 3>&- &
  local bh=$!
  PIDS+=("$bh")
  for _ in $(seq 1200); do [ -s "$T/bh.port" ] && break; sleep 0.05; done
  [ -s "$T/bh.port" ] || fail "blackhole.py did not start: $(cat "$T/bh.err")"
  printf 'postgresql://lake@127.0.0.1:%s/%s\n' "$(cat "$T/bh.port")" "$DB" >"$SRV/registry.url"
  serve
  start_probes t1
  sleep 2
  kill -USR1 "$bh"
  touch "$T/stalled"
  local t0 t_unavail='' i
  t0=$(date +%s.%N)
  # held 30 s, and until the server says unavailable and has refused a
  # read as stalled (asserted below: a loaded machine may take longer to
  # get there; 120 s at most, a guard)
  for i in $(seq 1200); do
    if [ -z "$t_unavail" ] && grep -q '"registry": *"unavailable"' "$T/health"; then
      t_unavail=$(date +%s.%N)
    fi
    [ "$i" -ge 300 ] && [ -n "$t_unavail" ] && stalled_refused && break
    sleep 0.1
  done
  kill -USR2 "$bh"
  touch "$T/restored"
  local t1 t_ok=''
  t1=$(date +%s.%N)
  # recovered by itself: a resolve answered 200 (60 s at most)
  for _ in $(seq 600); do
    if awk '$4 == "after" && $2 == 200 { f = 1 } END { exit !f }' "$T/resolves"; then
      t_ok=$(date +%s.%N)
      break
    fi
    sleep 0.1
  done
  sleep 1
  stop_probes
  resolve_figures stall
  echo "# health unavailable $(awk -v a="$t0" -v b="$t_unavail" 'BEGIN { if (b == "") print "never"; else printf "%.1f s", b - a }') after the hole; 200 again $(awk -v a="$t1" -v b="$t_ok" 'BEGIN { if (b == "") print "never"; else printf "%.1f s", b - a }') after it ended" >&3
  local counts
  counts=$(refused)
  echo "# refused: $counts" >&3
  # the server was taken as gone once, and its calls cut: counted
  assert_equal "$(metasrv_curl "$ADMIN" -m 25 "$METASRV_URL/v1/metrics" | awk '$1 == "lake_registry_cuts_total" { print $2 }')" 1
  # reads that came while it was silent were refused at once, as stalled
  [[ $counts =~ stalled=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "no read refused as stalled: $counts"
  # never a connection refused, never a request left hanging
  assert_probes_answered
  local bad
  bad=$(awk '$2 != 200 && $2 != 503' "$T/resolves")
  [ -z "$bad" ] || fail "resolves neither 200 nor 503: $(head -n 5 <<<"$bad")"
  [ -n "$t_unavail" ] || fail "health never said unavailable: $(awk '$3 == "stall"' "$T/health" | tail -n 3)"
  [ "$(awk '$2 == 503 && $3 == "stall" { $1 = $2 = $3 = ""; print }' "$T/health" |
         jq -r 'select(.status == "unavailable" and .registry == "unavailable") | .registry' 2>/dev/null | head -n 1)" = unavailable ] ||
    fail "no 503 health saying unavailable: $(grep unavailable "$T/health" | head -n 3)"
  [ -n "$t_ok" ] || fail "no resolve answered 200 within 60 s of the registry's return: $(tail -n 5 "$T/resolves")"
  # reads and writes work again, on the same process
  kill -0 "$METASRV_PID" || fail "the server died"
  METASRV_DIR=$SRV metasrv_post "$ADMIN" append \
    "{\"namespace\":\"s\",\"name\":\"t1\",\"expected_version\":0,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/after")],\"files\":[]}"
  assert_equal "append after the hole: $HTTP_CODE $HTTP_BODY" "append after the hole: 200 $HTTP_BODY"
  METASRV_DIR=$SRV metasrv_req - GET /v1/health
  assert_equal "$HTTP_CODE $(jq -c . <<<"$HTTP_BODY")" '200 {"status":"ok","registry":"ok"}'
}
