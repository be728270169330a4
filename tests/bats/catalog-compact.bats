#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Compaction (issue 18 part 4), run against the source LAKE_TEST_SOURCE
# names (helpers/source.bash): lake-catalog compact rewrites a table's
# small segments into few large ones as one new version with the same rows
# (in the same order within what was one segment) and FILE references;
# readers of older versions keep their segments until gc's grace has
# passed; 8 appending processes beside repeated compactions lose and
# double nothing; two compactions at once commit one; the compaction
# after appends (compact_threshold) starts above the threshold and never
# with 0; and the compact action itself over HTTPS (409 for a segment
# compacted meanwhile, 400 for a row count that differs, 403 for a
# metadata-peer); and a stop signal during compact, which commits nothing.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  export LAKE_COMPACT_THRESHOLD=0 # each test turns it on where it wants it
  lake-catalog create-namespace d
}

teardown() {
  # the action test's own server in local mode (remote: source_teardown's)
  [ "$LAKE_TEST_SOURCE" != local ] || [ -z "${METASRV_PID:-}" ] || metasrv_stop
  source_teardown
}

# version and segment count of d.t now, as "V N"
shape() {
  lake-catalog --max-age 0 resolve d.t | jq -r '"\(.version) \(.segments | length)"'
}

# Every row of d.t as JSON Lines, in scan order.
rows_of() {
  lake-query -f jsonl -c "SELECT * FROM d.t"
}

# d.t of 33 single-row appends (one lake-put --table with a FILE, the rest
# lake-query -c each), with NULL, '', x'' and a NUL byte in TEXT, and two
# multi-row appends whose rows are not in key order (their order within a
# segment must survive).
make_small_appends() {
  lake-catalog create d.t 'k INTEGER, s TEXT, r REAL, b BLOB, ts TIMESTAMP, ok BOOLEAN, f FILE'
  echo "attached bytes" >"$T/a.txt"
  lake-put --table d.t --column f --set k=0 --set s=file "$T/a.txt" >/dev/null
  local args=() i
  for i in $(seq 1 30); do
    case $((i % 4)) in
      0) args+=(-c "INSERT INTO d.t VALUES ($i, NULL, NULL, NULL, NULL, NULL, NULL)") ;;
      1) args+=(-c "INSERT INTO d.t VALUES ($i, '', $i.25, x'', '2026-12-0$((i % 9 + 1))T10:00:00+02:00', 1, NULL)") ;;
      *) args+=(-c "INSERT INTO d.t VALUES ($i, 'v$i', -$i.5, x'00ff$((i % 10))0', '2026-01-01T00:00:0$((i % 10))Z', 0, NULL)") ;;
    esac
  done
  args+=(-c "INSERT INTO d.t (k, s) VALUES (50, 'nul' || char(0) || 'byte')")
  lake-query "${args[@]}"
  lake-query -c "INSERT INTO d.t (k, s) VALUES (103, 'c'), (101, 'a'), (102, 'b')" \
             -c "INSERT INTO d.t (k, s) VALUES (202, 'y'), (203, 'z'), (201, 'x')"
  lake-query -c "INSERT INTO d.t (k, s) VALUES (9, 'last')"
}

# --- lake-catalog compact ---------------------------------------------------

@test "compact: many single-row appends become one segment, one version on, the same rows in the same order, FILE references kept" {
  make_small_appends
  local before v0 n0
  before=$(rows_of)
  read -r v0 n0 <<<"$(shape)"
  assert_equal "$n0" 35
  local old_segs
  old_segs=$(lake-catalog resolve d.t | jq -c '[.segments[].location]')

  run --separate-stderr lake-catalog compact d.t
  assert_clean_success
  assert_equal "$output" "compacted d.t: 35 segments -> 1, version $((v0 + 1))"
  assert_equal "$(shape)" "$((v0 + 1)) 1"
  # the same rows, unsorted (scan order) and sorted
  assert_equal "$(rows_of)" "$before"
  assert_equal "$(lake-query -f jsonl -c 'SELECT * FROM d.t ORDER BY k, s')" \
    "$(printf '%s\n' "$before" | jq -sc 'sort_by(.k, .s) | .[]')"
  assert_equal "$(lake-query -c "SELECT group_concat(k) FROM (SELECT k FROM d.t WHERE k > 100)")" "103,101,102,202,203,201"
  assert_equal "$(lake-query -c "SELECT count(*), sum(s IS NULL), sum(s = ''), sum(b = x'') FROM d.t")" $'39\t7\t8\t8'
  # the FILE value still reads back
  lake-query -f jsonl -c 'SELECT f FROM d.t WHERE f IS NOT NULL' | lake-get >"$T/back"
  cmp "$T/a.txt" "$T/back"

  # the version read before still lists the old segments, which still exist
  run --separate-stderr lake-catalog resolve d.t --version "$v0"
  assert_clean_success
  assert_equal "$(jq -c '[.segments[].location]' <<<"$output")" "$old_segs"
  local loc
  for loc in $(jq -r '.[]' <<<"$old_segs"); do
    lake-get "$loc" >/dev/null || fail "an old segment is gone: $loc"
  done

  # nothing left to do: exit 0, a note, no new version
  run --separate-stderr lake-catalog compact d.t
  assert_equal "exit $status" "exit 0"
  assert_equal "$output" ""
  [[ $stderr == "lake-catalog: d.t: nothing to compact"* ]] || fail "no note: $stderr"
  assert_equal "$(shape)" "$((v0 + 1)) 1"
}

@test "compact --target-size: only segments under half the target, in as few segments of at most the target as fit" {
  lake-catalog create d.t 'k INTEGER, pad TEXT'
  # one large segment (about 600 KiB), then twelve small ones
  lake-query -c "INSERT INTO d.t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000) SELECT n, printf('%.200c', 'x') FROM s"
  local i args=()
  for i in $(seq 1 12); do
    args+=(-c "INSERT INTO d.t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) SELECT 10000 * $i + n, printf('%.200c', 'y') FROM s")
  done
  lake-query "${args[@]}"
  local before large
  before=$(rows_of | sort)
  large=$(lake-catalog resolve d.t | jq -r '.segments[0].location')
  run --separate-stderr lake-catalog compact --target-size 100K d.t
  assert_clean_success
  [[ $output == "compacted d.t: 12 segments -> "*", version 14" ]] || fail "unexpected: $output"
  local written=${output#*-> }
  written=${written%%,*}
  [ "$written" -ge 2 ] && [ "$written" -le 6 ] || fail "12 segments of ~24 KiB into $written of at most 100K"
  # the large segment is untouched and still first
  assert_equal "$(lake-catalog resolve d.t | jq -r '.segments[0].location')" "$large"
  assert_equal "$(rows_of | sort)" "$before"

  run --separate-stderr lake-catalog compact --target-size 12Q d.t
  assert_error lake-catalog 64 "--target-size"
  run --separate-stderr lake-catalog compact
  assert_equal "$status" 64
  run --separate-stderr lake-catalog compact d.nope
  assert_error lake-catalog 66 "d.nope"
}

@test "8 appending processes while compaction runs again and again: no row lost or doubled, versions strictly increasing" {
  lake-catalog create d.t 'v INTEGER'
  local p
  for p in 1 2 3 4 5 6 7 8; do
    # one INSERT a lake-query, each tried again on 75: the table moved on
    # more often than the client retries (a matter of luck and load, not
    # an error), nothing was appended, and a script tries again, as the
    # exit status says (75: retry later)
    (
      for j in $(seq 1 8); do
        until LAKE_TRACE=1 lake-query -c "INSERT INTO d.t VALUES ($((p * 1000 + j)))"; do
          [ $? = 75 ] || exit 1
        done
      done
    ) 2>"$T/app.$p.err" 3>&- &
    echo $! >"$T/app.$p.pid"
  done
  local n=0 running=1
  while [ $running = 1 ]; do
    LAKE_TRACE=1 lake-catalog compact --target-size 1M d.t >>"$T/compact.out" 2>>"$T/compact.err" ||
      fail "compact failed: $(grep -v '^trace: ' "$T/compact.err")"
    n=$((n + 1))
    running=0
    for p in 1 2 3 4 5 6 7 8; do kill -0 "$(cat "$T/app.$p.pid")" 2>/dev/null && running=1; done
  done
  for p in 1 2 3 4 5 6 7 8; do
    wait "$(cat "$T/app.$p.pid")" || fail "appender $p failed: $(grep -v '^trace: ' "$T/app.$p.err")"
  done
  LAKE_TRACE=1 lake-catalog compact --target-size 1M d.t >>"$T/compact.out" 2>>"$T/compact.err"
  echo "# $n compaction runs, $(grep -c '^compacted' "$T/compact.out") committed" >&3

  # every value exactly once
  assert_equal "$(lake-query -c 'SELECT v FROM d.t ORDER BY v' | paste -sd,)" \
    "$(for p in 1 2 3 4 5 6 7 8; do seq $((p * 1000 + 1)) $((p * 1000 + 8)); done | paste -sd,)"
  assert_equal "$(shape | cut -d' ' -f2)" 1
  # each commit got its own version, each process saw its versions rise,
  # and the versions are exactly 1..current
  local f all
  for f in "$T"/app.*.err "$T/compact.err"; do
    sed -n 's/^trace: source \(append\|compact\) d\.t .* -> version=\([0-9]*\)$/\2/p' "$f" >"$f.v"
    sort -n -c -u "$f.v" 2>/dev/null || fail "$f: versions not strictly increasing: $(paste -sd, "$f.v")"
  done
  all=$(cat "$T"/*.err.v | sort -n | paste -sd,)
  assert_equal "$all" "$(seq -s, 1 "$(shape | cut -d' ' -f1)")"
}

@test "two compactions at once: one commits, the other finds nothing left; no row doubled" {
  lake-catalog create d.t 'v INTEGER'
  local args=() i
  for i in $(seq 1 40); do args+=(-c "INSERT INTO d.t VALUES ($i)"); done
  lake-query "${args[@]}"
  lake-catalog compact d.t >"$T/c1.out" 2>"$T/c1.err" &
  local a=$!
  lake-catalog compact d.t >"$T/c2.out" 2>"$T/c2.err" &
  local b=$!
  wait $a || fail "compaction 1 failed: $(cat "$T/c1.err")"
  wait $b || fail "compaction 2 failed: $(cat "$T/c2.err")"
  assert_equal "$(cat "$T/c1.out" "$T/c2.out")" "compacted d.t: 40 segments -> 1, version 41"
  assert_equal "$(cat "$T/c1.err" "$T/c2.err" | grep -c 'nothing to compact')" 1
  assert_equal "$(shape)" "41 1"
  assert_equal "$(lake-query -c 'SELECT count(*), count(DISTINCT v), sum(v) FROM d.t')" $'40\t40\t820'
}

@test "a stop signal during compact removes its temporary files and commits nothing" {
  lake-catalog create d.t 'v INTEGER'
  local args=() i
  for i in $(seq 1 300); do args+=(-c "INSERT INTO d.t VALUES ($i)"); done
  lake-query "${args[@]}"
  mkdir "$T/tmp"
  # stopped once it has fetched a few segments (none is in the segment
  # cache yet: each fetch is traced)
  TMPDIR=$T/tmp LAKE_TRACE=1 lake-catalog compact d.t >"$T/out" 2>"$T/err" &
  local pid=$!
  for i in $(seq 200); do
    [ "$(grep -c '^trace: stage GET' "$T/err")" -ge 5 ] && break
    sleep 0.05
  done
  kill -TERM $pid
  local rc=0
  wait $pid || rc=$?
  assert_equal "exit $rc" "exit 143"
  grep -q '^lake-catalog: interrupted' "$T/err" || fail "not said: $(grep -v '^trace: ' "$T/err")"
  grep -q '^trace: source compact' "$T/err" && fail "a compact was sent"
  assert_equal "$(cat "$T/out")" ""
  assert_equal "$(find "$T/tmp" -mindepth 1)" ""
  assert_equal "$(shape)" "300 300"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(v) FROM d.t')" $'300\t45150'
}

# --- the compaction after appends ------------------------------------------

@test "compact_threshold: an append that leaves more small segments than the threshold compacts; 0 never does" {
  lake-catalog create d.t 'v INTEGER, f FILE'
  export LAKE_COMPACT_THRESHOLD=3
  local i
  for i in 1 2 3; do lake-query -c "INSERT INTO d.t (v) VALUES ($i)"; done
  assert_equal "$(shape)" "3 3"
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "INSERT INTO d.t (v) VALUES (4)"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  trace_lines compact | grep -q '^trace: compact d.t: 4 small segments, threshold 3: compacting$' ||
    fail "no compaction traced: $stderr"
  assert_equal "$(shape)" "5 1"
  # --import and lake-put --table do the same
  for i in 5 6; do echo "{\"v\":$i}" | lake-query --import d.t --jsonl 2>/dev/null; done
  assert_equal "$(shape)" "7 3"
  echo x >"$T/x.txt"
  lake-put --table d.t --column f --set v=7 "$T/x.txt" >/dev/null
  assert_equal "$(shape)" "9 1"
  assert_equal "$(lake-query -c 'SELECT group_concat(v) FROM d.t')" "1,2,3,4,5,6,7"

  # the configuration file's key, below the environment
  unset LAKE_COMPACT_THRESHOLD
  mkdir -p "$XDG_CONFIG_HOME/lake"
  echo "compact_threshold = 0" >>"$XDG_CONFIG_HOME/lake/config"
  for i in $(seq 11 16); do lake-query -c "INSERT INTO d.t (v) VALUES ($i)"; done
  assert_equal "$(shape)" "15 7"
  LAKE_COMPACT_THRESHOLD=2 lake-query -c "INSERT INTO d.t (v) VALUES (17)"
  assert_equal "$(shape)" "17 1"

  # a bad value is a configuration error before anything is done
  run --separate-stderr env LAKE_COMPACT_THRESHOLD=-1 lake-query -c "INSERT INTO d.t (v) VALUES (99)"
  assert_error lake-query 78 "compact_threshold"
  assert_equal "$(shape)" "17 1"
}

@test "a failed compaction after an append is a warning; the append stands and the exit status is 0" {
  lake-catalog create d.t 'v INTEGER'
  export LAKE_COMPACT_THRESHOLD=1
  lake-query -c "INSERT INTO d.t VALUES (1)"
  # the first segment's bytes damaged in the stage: compaction cannot read it
  local loc
  loc=$(lake-catalog resolve d.t | jq -r '.segments[0].location')
  echo damage >>"$(loc_path "$loc")"
  run --separate-stderr lake-query -c "INSERT INTO d.t VALUES (2)"
  assert_equal "exit $status" "exit 0"
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "lake-query: d.t: auto-compaction failed: "* ]] || fail "not a warning: $stderr"
  assert_equal "$(shape)" "2 2"
}

# --- gc ---------------------------------------------------------------------

@test "gc keeps compacted segments while a version that holds them is unexpired; once expired, gc removes them and the old version answers 67" {
  lake-catalog create d.t 'v INTEGER'
  local args=() i
  for i in $(seq 1 5); do args+=(-c "INSERT INTO d.t VALUES ($i)"); done
  lake-query "${args[@]}"
  local old
  old=$(lake-catalog resolve d.t | jq -r '.segments[].location')
  lake-catalog compact d.t >/dev/null
  # versions 1 to 5 are within the retention (7 days): kept, whatever the grace
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  assert_equal "$output" ""
  local loc
  for loc in $old; do lake-get "$loc" >/dev/null || fail "gc removed a segment of an unexpired version: $loc"; done
  assert_equal "$(lake-catalog resolve d.t --version 5 | jq -r '.segments[].location')" "$old"

  assert_equal "$(lake-catalog expire d.t --older-than 0)" "expired 6 versions of d.t"
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  assert_equal "$(cut -f1 <<<"$output" | sort)" "$(sort <<<"$old")"
  for loc in $old; do
    run --separate-stderr lake-get "$loc"
    assert_equal "$status" 66
  done
  # the current version reads; version 5 expired: refused, never read in part
  assert_equal "$(lake-query -c 'SELECT group_concat(v) FROM d.t')" "1,2,3,4,5"
  run --separate-stderr lake-catalog resolve d.t --version 5
  assert_equal "exit $status" "exit 67"
  assert_equal "$stderr" "lake-catalog: d.t: version 5 expired at $(lake-catalog history d.t | awk -F'\t' '$1 == 5 {print $10}') (past the retention); its objects may be gone"
}

# --- the action, over HTTPS ---------------------------------------------------

# A segment record: seg NAME ROWS (the stage need not hold it: the
# registry records what it is told).
seg() {
  printf '{"location":"%s/tables/c/%s","size":1,"sha256":"%s","rows":%d}' "$STAGE_URL" "$1" \
    2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 "$2"
}

# compact_req EXPECTED '["a","b"]' NEWSEGS...: a compact request body
compact_req() {
  local expected=$1 replace=$2
  shift 2
  jq -cn --argjson e "$expected" --argjson r "$replace" --arg st "$STAGE_URL/tables/c/" \
    --argjson s "[$(IFS=,; echo "$*")]" \
    '{namespace: "c", name: "t", expected_version: $e, replace: ($r | map($st + .)), segments: $s, files: []}'
}

@test "the compact action: replace live segments (400 for a row count that differs, 409 for one compacted meanwhile, 403 for a metadata-peer); a retry answers its version" {
  load_metasrv
  if [ "$LAKE_TEST_SOURCE" = local ]; then # the action's own server, over TLS
    metasrv_init "$T/srv"
    metasrv_start "$T/srv"
  fi
  STAGE_URL=$(METASRV_DIR=$T/srv metasrv_post "$T/srv/admin.token" whoami '{}'; jq -r .stage <<<"$HTTP_BODY")
  local ADMIN=$T/srv/admin.token
  metasrv_post "$ADMIN" create_namespace '{"namespace":"c"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"c","name":"t","schema":[{"name":"a","type":"INTEGER"}]}'
  metasrv_post "$ADMIN" append "{\"namespace\":\"c\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(seg a 2),$(seg b 3)],\"files\":[]}"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":1}'

  # 2 + 3 rows are not 4
  metasrv_post "$ADMIN" compact "$(compact_req 1 '["a","b"]' "$(seg ab 4)")"
  metasrv_expect_error 400 invalid_argument
  # a location that is no segment of the table
  metasrv_post "$ADMIN" compact "$(compact_req 1 '["a","zz"]' "$(seg ab 5)")"
  metasrv_expect_error 400 invalid_argument
  # a metadata-peer may not
  metasrv_token metadata-peer peer "$T/srv"
  metasrv_post "$T/srv/peer.token" compact "$(compact_req 1 '["a","b"]' "$(seg ab 5)")"
  metasrv_expect_error 403 permission_denied
  # and lake-catalog compact as a metadata-peer stops before it writes a segment
  mkdir "$T/tmp"
  run --separate-stderr env LAKE_METASRV="$METASRV_URL" LAKE_TOKEN_FILE="$T/srv/peer.token" \
    LAKE_CA_FILE="$T/srv/cert.pem" TMPDIR="$T/tmp" LAKE_TRACE=1 lake-catalog compact c.t
  assert_equal "exit $status" "exit 77"
  assert_equal "$(untraced_stderr)" "lake-catalog: $METASRV_URL: principal peer (role metadata-peer) may not run compact"
  assert_equal "$(trace_count stage)" 0

  metasrv_post "$ADMIN" compact "$(compact_req 1 '["a","b"]' "$(seg ab 5)")"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":2}'
  # the same request again (a lost answer): its version, nothing twice
  metasrv_post "$ADMIN" compact "$(compact_req 1 '["a","b"]' "$(seg ab 5)")"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":2}'
  # a segment another compaction removed meanwhile
  metasrv_post "$ADMIN" compact "$(compact_req 1 '["a"]' "$(seg a2 2)")"
  metasrv_expect_error 409 conflict
  [[ $HTTP_BODY == *"was compacted or rewritten meanwhile"* ]] || fail "not said: $HTTP_BODY"

  # an append since the version read is no conflict: appends commute
  metasrv_post "$ADMIN" append "{\"namespace\":\"c\",\"name\":\"t\",\"expected_version\":2,\"segments\":[$(seg c 1)],\"files\":[]}"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":3}'
  metasrv_post "$ADMIN" compact "$(compact_req 2 '["ab"]' "$(seg ab2 5)")"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":4}'
  # a version above the current one is
  metasrv_post "$ADMIN" compact "$(compact_req 9 '["c"]' "$(seg c2 1)")"
  metasrv_expect_error 409 conflict
  metasrv_check_errors

  metasrv_post "$ADMIN" resolve '{"namespace":"c","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[] | (.location | sub(".*/"; "")), .rows]]' <<<"$HTTP_BODY")" \
    '[4,["c",1,"ab2",5]]'
  metasrv_post "$ADMIN" resolve '{"namespace":"c","name":"t","version":1}'
  assert_equal "$(jq -c '[.segments[] | .location | sub(".*/"; "")]' <<<"$HTTP_BODY")" '["a","b"]'
}
