#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-query as people and scripts run it (issue 14): one exit status rule
# for SQL errors, DDL on lake tables refused, -c repeated, SCRIPT:LINE in
# errors, NUL bytes, a hint at a terminal and for SQL given as a file name,
# one catalog refresh for a table another host created, no catalog for SQL
# that names no lake table; and SIGINT/SIGTERM/SIGHUP stop a statement or
# an import: its temporary segment is removed, nothing appended, and
# lake-query says "interrupted" and dies of the signal (interrupt.bats:
# the other programs).  The source is a parameter (tests/run: embedded and
# remote+S3).

load helpers/common
load helpers/source
load helpers/background

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace t
  lake-catalog create t.e 'id INTEGER, s TEXT, f FILE'
  lake-query -c "INSERT INTO t.e VALUES (1, 'a', NULL), (2, 'b', NULL)"
  BG=
}

teardown() {
  bg_cleanup
  source_teardown
}

# --- exit statuses (bug 7) ---------------------------------------------------

@test "SQL errors: syntax, unknown column or function, SQLite's runtime errors and FILE functions are 65; an unknown table 66" {
  local sql code text
  while IFS='|' read -r code sql text; do
    run_to "$T/out" lake-query -c "$sql"
    assert_error lake-query "$code" "$text"
  done <<'EOF'
65|SELEC 1|near "SELEC": syntax error
65|SELECT nope FROM t.e|no such column: nope
65|SELECT nofn(1)|no such function: nofn
65|SELECT abs(-9223372036854775808)|integer overflow
65|SELECT fl_get_size('{')|fl_get_size:
65|SELECT to_file('{"location":"file:///etc/passwd"}')|to_file:
65|INSERT INTO t.e VALUES ('x', 'y', NULL)|column id
66|SELECT * FROM t.nope|no such table: t.nope
66|SELECT * FROM nope|no such table: nope
66|INSERT INTO t.nope VALUES (1)|no such table: t.nope
EOF
  run lake-query -c "SELECT count(*) FROM t.e"
  assert_output 2
}

# --- DDL (bug 4) --------------------------------------------------------------

@test "DROP, CREATE and ALTER TABLE of lake tables are refused with 64 and a pointer to lake-catalog; the table is untouched" {
  local v0 sql text
  v0=$(lake-catalog resolve t.e | jq .version)
  while IFS='|' read -r sql text; do
    run_to "$T/out" lake-query -c "$sql"
    assert_error lake-query 64 "$text"
  done <<'EOF'
DROP TABLE t.e|'lake-catalog drop t.e'
DROP TABLE IF EXISTS t.e|'lake-catalog drop t.e'
CREATE TABLE t.x (a INTEGER)|lake-catalog create
CREATE TABLE u.x (a INTEGER)|lake-catalog create
SELECT 1 FROM t.e; CREATE TABLE t.x (a INTEGER)|'lake-catalog create t.x COLUMNS'
ALTER TABLE t.e RENAME TO f|cannot be altered
ALTER TABLE t.e ADD COLUMN q TEXT|cannot be altered
SELECT 1 FROM t.e; CREATE VIEW t.v AS SELECT 1|holds only lake tables
SELECT 1 FROM t.e; CREATE INDEX t.i ON e(id)|lake-catalog create|drop
CREATE TEMP TRIGGER tr AFTER INSERT ON t.e BEGIN SELECT 1; END|lake-catalog create|drop
EOF
  assert_equal "$(lake-catalog resolve t.e | jq .version)" "$v0"
  run lake-catalog list
  assert_output $'t\te'
  run lake-query -c "SELECT id, s FROM t.e ORDER BY id"
  assert_output $'1\ta\n2\tb'
}

@test "temporary tables and views, main tables and CTEs keep working beside lake tables" {
  run --separate-stderr lake-query -c "CREATE TEMP TABLE x AS SELECT id FROM t.e" \
    -c "CREATE TABLE m (n INTEGER); INSERT INTO m SELECT id * 10 FROM x" \
    -c "CREATE TEMP VIEW v AS SELECT s FROM t.e WHERE id = 2" \
    -c "WITH c AS (SELECT max(n) AS n FROM m) SELECT n, (SELECT s FROM v) FROM c" \
    -c "DROP TABLE x; DROP VIEW v; DROP TABLE m"
  assert_success
  assert_output $'20\tb'
  assert_equal "$stderr" ""
}

# --- the command line (rough edges) -------------------------------------------

@test "-c may be repeated: the statements run in order, -H prints one header" {
  run --separate-stderr lake-query -H -c "SELECT 1 AS a" -c "INSERT INTO t.e VALUES (3, 'c', NULL)" \
    -c "SELECT count(*) AS a FROM t.e"
  assert_success
  assert_output $'a\n1\n3'
  run_to "$T/out" lake-query -c "SELECT 1" -c "SELEC 2" -c "INSERT INTO t.e VALUES (9, 'z', NULL)"
  assert_error lake-query 65 '-c#2:1: near "SELEC": syntax error'
  assert_equal "$(cat "$T/out")" 1
  run lake-query -c "SELECT count(*) FROM t.e WHERE id = 9"
  assert_output 0
}

@test "errors in a script name SCRIPT:LINE (file, stdin, a multi-line -c)" {
  printf 'SELECT 1;\n\n-- a comment\nSELECT id\n  FROM t.e\n  WHERE nope = 1;\n' >"$T/s.sql"
  run_to "$T/out" lake-query "$T/s.sql"
  assert_error lake-query 65 "$T/s.sql:6: no such column: nope"
  run_to "$T/out" lake-query <"$T/s.sql"
  assert_error lake-query 65 "stdin:6: no such column: nope"
  run_to "$T/out" lake-query - <<<$'SELECT 1;\nSELECT * FROM t.gone;'
  assert_error lake-query 66 "stdin:2: no such table: t.gone"
  run_to "$T/out" lake-query -c $'SELECT 1;\n  INSERT INTO t.e VALUES (\'x\', 1, NULL)'
  assert_error lake-query 65 "-c:2: " "column id"
  run_to "$T/out" lake-query -c "SELEC 1"
  assert_error lake-query 65 'lake-query: near "SELEC": syntax error'
}

@test "a NUL byte in a script is refused with 65 and its line, before anything runs" {
  printf 'INSERT INTO t.e VALUES (5, %s, NULL);\nSELECT 1;\0SELECT 2;\n' "'n'" >"$T/nul.sql"
  run_to "$T/out" lake-query "$T/nul.sql"
  assert_error lake-query 65 "$T/nul.sql:2: a NUL byte in the script"
  run_to "$T/out" lake-query <"$T/nul.sql"
  assert_error lake-query 65 "stdin:2: a NUL byte"
  run lake-query -c "SELECT count(*) FROM t.e WHERE id = 5"
  assert_output 0
}

@test "SQL given as a file name gets a hint to use -c (64); a missing file is still 66" {
  run_to "$T/out" lake-query 'select 1'
  assert_error lake-query 64 "select 1: no such file" "-c"
  run_to "$T/out" lake-query "$T/missing.sql"
  assert_error lake-query 66 "$T/missing.sql: No such file or directory"
}

@test "lake-query alone on a terminal opens the shell (query-shell.bats), and leaves at Ctrl-D with 0" {
  printf '%s\n' 'prompt lake> ' 'send \x04' 'wait' |
    LAKE_QUERY_HISTORY='' python3 "$BATS_TEST_DIRNAME/helpers/terminal.py" "$T/screen" lake-query
  grep -q "^lake> " "$T/screen" || fail "no prompt: $(cat "$T/screen")"
}

@test "SQL that names no lake table needs no catalog and no writable cache directory" {
  printf 'not a directory' >"$T/file"
  # traced: not one request to the catalog (the trace would say so)
  run --separate-stderr env LAKE_TRACE=1 LAKE_CACHE_DIR="$T/file/cache" lake-query -c "SELECT 1 + 1" -c "WITH x AS (SELECT 2 AS n) SELECT n FROM x"
  assert_success
  assert_output $'2\n2'
  assert_equal "$stderr" ""
  run --separate-stderr env -u HOME -u XDG_CACHE_HOME -u XDG_DATA_HOME lake-query -c "SELECT 'ok'"
  assert_success
  assert_output ok
  # naming a lake table still needs them
  run_to "$T/out" env LAKE_CACHE_DIR="$T/file/cache" lake-query -c "SELECT count(*) FROM t.e"
  [ "$status" -ne 0 ] || fail "a lake table without a cache directory succeeded"
}

@test "a table another host created is found by one refresh, though the cache is fresh" {
  export LAKE_CATALOG_TTL=3600
  lake-query -c "SELECT count(*) FROM t.e" >/dev/null # this host's snapshot: fresh for an hour
  LAKE_CACHE_DIR="$T/host2" lake-catalog create t.new 'n INTEGER'
  LAKE_CACHE_DIR="$T/host2" lake-query -c "INSERT INTO t.new VALUES (7)"
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT n FROM t.new" -c "SELECT n + 1 FROM t.new"
  assert_success
  assert_output $'7\n8'
  assert_equal "$(trace_count "source catalog_snapshot")" 1
  LAKE_CACHE_DIR="$T/host2" lake-catalog create t.new2 'n INTEGER'
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "INSERT INTO t.new2 VALUES (1)"
  assert_success
  assert_equal "$(trace_count "source catalog_snapshot")" 1
  run lake-query -c "SELECT n FROM t.new2"
  assert_output 1
  # a table nobody created: one refresh, then 66
  run_to "$T/out" lake-query -c "SELECT * FROM t.never"
  assert_error lake-query 66 "no such table: t.never"
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT * FROM t.never"
  assert_equal "exit $status" "exit 66"
  assert_equal "$(trace_count "source catalog_snapshot")" 1
}

@test "for a principal denied the snapshot (role user) the one refresh keeps an unknown table 66, not 77" {
  [ "$LAKE_TEST_SOURCE" != local ] || skip "roles need a metadata server"
  local alice
  alice=$(metasrv_token user alice)
  # (a table the user may not read is 77 whether it exists or not: issue 29)
  lake-catalog grant read ON '*' TO alice
  run_to "$T/out" env LAKE_TOKEN_FILE="$alice" lake-query -c "SELECT * FROM t.never"
  assert_error lake-query 66 "no such table: t.never"
  run --separate-stderr env LAKE_TOKEN_FILE="$alice" lake-query -c "SELECT count(*) FROM t.e"
  assert_success
  assert_output 2
}

# --- signals (bug 3) ------------------------------------------------------------

segment_file() { compgen -G "$T/tmp/lake-segments-*/segment-*" >/dev/null; }

@test "--import interrupted by SIGINT, SIGTERM or SIGHUP removes its temporary segment, says so and dies of the signal" {
  mkdir -p "$T/tmp"
  local sig num v0
  v0=$(lake-catalog resolve t.e | jq .version)
  for sig in INT TERM HUP; do
    num=$(kill -l "$sig")
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    TMPDIR="$T/tmp" start_bg "$T/fifo" "$T/out" "$T/err" lake-query --import t.e
    exec 4>"$T/fifo"
    { echo id,s; seq 1 300000 | sed 's/$/,row/'; } >&4 # held open: more may come
    wait_for segment_file
    kill -"$sig" "$BG"
    wait_bg
    exec 4>&-
    assert_equal "$sig: exit $status" "$sig: exit $((128 + num))"
    assert_equal "$sig: $(cat "$T/err")" "$sig: lake-query: interrupted"
    assert_equal "$sig: $(find "$T/tmp" -mindepth 1 | wc -l)" "$sig: 0"
  done
  assert_equal "$(lake-catalog resolve t.e | jq .version)" "$v0"
}

@test "an INSERT interrupted while it runs removes its temporary segment and appends nothing" {
  mkdir -p "$T/tmp"
  local v0
  v0=$(lake-catalog resolve t.e | jq .version)
  TMPDIR="$T/tmp" start_bg /dev/null "$T/out" "$T/err" lake-query -c \
    "WITH RECURSIVE c(n) AS (SELECT 10 UNION ALL SELECT n + 1 FROM c) INSERT INTO t.e SELECT n, 'r', NULL FROM c"
  wait_for segment_file
  kill -TERM "$BG"
  wait_bg
  assert_equal "exit $status" "exit 143"
  assert_equal "$(cat "$T/err")" "lake-query: interrupted"
  assert_equal "$(find "$T/tmp" -mindepth 1 | wc -l)" 0
  assert_equal "$(lake-catalog resolve t.e | jq .version)" "$v0"
}

# threads_at_least N: the background program runs N threads or more (asked
# anew at each call: wait_for's arguments are expanded once)
threads_at_least() {
  [ "$(find "/proc/$BG/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" -ge "$1" ]
}

@test "an aggregate split by segment stops at a signal on every thread: says so and dies of it" {
  lake-catalog create t.slow 'n INTEGER'
  # 3 segments of 70000 rows: 3 threads
  for _ in 1 2 3; do seq 1 70000 | sed 's/^/{"n":/; s/$/}/' | lake-query -q --import t.slow; done
  mkdir -p "$T/tmp"
  # each row costs a 100 kB random blob: many seconds in all
  TMPDIR="$T/tmp" LAKE_TRACE=1 LAKE_QUERY_THREADS=3 start_bg /dev/null "$T/out" "$T/err" lake-query -c \
    "SELECT n % 2, count(*), sum(length(hex(randomblob(100000)))) FROM t.slow GROUP BY 1"
  wait_for grep -q "trace: query scan t.slow" "$T/err"
  # split: the scan line comes from the row-by-row path too; only the
  # split one reads on threads (this one and two workers)
  wait_for threads_at_least 3
  kill -INT "$BG"
  wait_bg
  assert_equal "exit $status" "exit 130"
  assert_equal "$(tail -1 "$T/err")" "lake-query: interrupted"
  grep -q "trace: query aggregate" "$T/err" && fail "the aggregate finished: $(cat "$T/err")"
  assert_equal "$(cat "$T/out")" ""
  assert_equal "$(find "$T/tmp" -mindepth 1 | wc -l)" 0
}
