#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-query at a terminal (issue 32): the interactive shell, driven
# through a real pseudo-terminal (helpers/terminal.py): keystrokes in, the
# screen out.  Statements over lines and several on a line, the
# dot-commands, TAB completion from the on-disk catalog cache (no call to
# the source), history kept 0600 and read back, Ctrl-C at a prompt and
# during a running INSERT (nothing appended), Ctrl-D, each statement
# pinned afresh; piped input stays a script.  Issue 42: the history file
# appended to, never a device's or a foreign file's; UTF-8 in the C locale
# and a byte no encoding has refused, never dropped; SIGTERM and SIGHUP end
# the session; TEMP VIEWs across inputs; .tables and .schema current.
# Embedded, and remote with the stage on S3 (tests/run).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  export XDG_STATE_HOME=$T/state
  lake-catalog create-namespace hr
  lake-catalog create hr.scans 'who TEXT, pages INTEGER'
  lake-catalog create hr.payroll 'who TEXT, salary REAL'
  lake-query -c "INSERT INTO hr.scans VALUES ('ann', 3), ('bob', 5)"
}

teardown() {
  source_teardown
}

# shell STEP...: lake-query at a terminal, playing the steps
# (helpers/terminal.py); its exit status in $status, the screen without
# carriage returns, bells and cursor moves in $screen.
shell() {
  local rc=0
  printf '%s\n' "$@" | python3 "$BATS_TEST_DIRNAME/helpers/terminal.py" "$T/screen" lake-query || rc=$?
  status=$rc
  screen=$(sed -e 's/\r//g' -e 's/\x07//g' -e 's/\x1b\[[0-9;]*[A-Za-z]//g' "$T/screen")
}

# The screen has this line.
assert_line_shown() {
  grep -qxF -- "$1" <<<"$screen" || fail "no line '$1' on the screen: $screen"
}

@test "a statement over two lines, two on one line, the table format, UTF-8 typed; an error is one line and the shell goes on; Ctrl-D leaves with 0" {
  LC_ALL=C.UTF-8 shell 'prompt lake> ' 'send SELECT who, pages\r' 'prompt \.\.\.> ' 'send FROM hr.scans ORDER BY who;\r' \
    'prompt lake> ' 'send SELECT 1 AS one; SELECT 2 AS two;\r' \
    "prompt lake> " "send SELECT 'snö ☃' AS text;\r" \
    'prompt lake> ' 'send SELECT nosuch FROM hr.scans;\r' \
    'prompt lake> ' 'send SELECT count(*) AS n FROM hr.scans;\r' \
    'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  [[ $screen == "lake-query "*": SQL over lake tables; .help for help, Ctrl-D to leave"* ]] || fail "no banner: $screen"
  assert_equal "$(sed -n '/^  \.\.\.> FROM/,/^lake> SELECT 1/p' <<<"$screen")" "  ...> FROM hr.scans ORDER BY who;
who  pages
---  -----
ann  3
bob  5
lake> SELECT 1 AS one; SELECT 2 AS two;"
  assert_equal "$(sed -n '/^lake> SELECT 1 AS one/,/^lake> SELECT .sn/p' <<<"$screen" | sed '1d;$d')" $'one\n---\n1\ntwo\n---\n2'
  assert_line_shown "snö ☃" # typed and shown in the terminal's encoding
  assert_line_shown "lake-query: no such column: nosuch"
  assert_equal "$(sed -n '/^lake> SELECT count/,$p' <<<"$screen")" $'lake> SELECT count(*) AS n FROM hr.scans;\nn\n-\n2\nlake> ^D'
}

@test "dot-commands: .tables, .schema, .mode, .headers, .timer, .explain, .read, .help; an unknown one is one line" {
  printf "SELECT who FROM hr.scans\nWHERE pages > 4;\n" >"$T/q.sql"
  printf "SELECT nosuch;\n" >"$T/bad.sql"
  shell 'prompt lake> ' 'send .tables\r' 'prompt lake> ' 'send .tables nosuch\r' \
    'prompt lake> ' 'send .schema hr.payroll\r' \
    'prompt lake> ' 'send .mode csv\r' 'prompt lake> ' 'send .headers on\r' \
    'prompt lake> ' 'send SELECT who, pages FROM hr.scans ORDER BY who;\r' \
    'prompt lake> ' 'send .mode\r' 'prompt lake> ' 'send .mode yaml\r' \
    'prompt lake> ' 'send .headers off\r' 'prompt lake> ' 'send .mode tsv\r' \
    "prompt lake> " "send .read $T/q.sql\r" "prompt lake> " "send .read $T/bad.sql\r" \
    'prompt lake> ' 'send .timer on\r' 'prompt lake> ' 'send SELECT 7;\r' 'prompt lake> ' 'send .timer off\r' \
    'prompt lake> ' 'send .explain on\r' 'prompt lake> ' 'send SELECT who FROM hr.scans WHERE pages > 4;\r' \
    'prompt lake> ' 'send .explain off\r' 'prompt lake> ' 'send .help\r' \
    'prompt lake> ' 'send .frobnicate\r' 'prompt lake> ' 'send .quit\r' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(sed -n '/^lake> \.tables$/,/^lake> \.tables nosuch/p' <<<"$screen" | sed '1d;$d')" $'hr.payroll\nhr.scans'
  assert_equal "$(sed -n '/^lake> \.tables nosuch/,/^lake> \.schema/p' <<<"$screen" | sed '1d;$d')" ""
  assert_equal "$(sed -n '/^lake> \.schema/,/^lake> \.mode csv/p' <<<"$screen" | sed '1d;$d')" $'who\tTEXT\nsalary\tREAL'
  assert_equal "$(sed -n '/^lake> SELECT who, pages/,/^lake> \.mode$/p' <<<"$screen" | sed '1d;$d')" $'who,pages\nann,3\nbob,5'
  assert_equal "$(sed -n '/^lake> \.mode$/,/^lake> \.mode yaml/p' <<<"$screen" | sed '1d;$d')" csv
  assert_line_shown "lake-query: .mode: 'yaml' is not table, tsv, csv, json or jsonl"
  assert_equal "$(sed -n '/^lake> \.read .*q\.sql/,/^lake> \.read/p' <<<"$screen" | sed '1d;$d')" bob
  assert_line_shown "lake-query: $T/bad.sql:1: no such column: nosuch"
  assert_equal "$(sed -n '/^lake> SELECT 7;/,/^lake> \.timer off/p' <<<"$screen" | sed '1d;$d' | sed 's/[0-9]\.[0-9]\{3\}/N/g')" \
    $'7\nRun Time: real N user N sys N'
  grep -q "^hr.scans version 1: 1 segment, 1 kept" <<<"$(sed -n '/^lake> SELECT who FROM hr.scans WHERE pages/,/^lake> \.explain off/p' <<<"$screen")" ||
    fail "no explanation: $screen"
  assert_line_shown ".schema NS.T       the columns of a table"
  assert_line_shown "lake-query: .frobnicate: no such command (.help lists them)"
}

@test "TAB completes keywords, namespaces, NS.T names and columns from the on-disk cache, with no call to the source" {
  lake-catalog list >/dev/null # the cache holds the catalog
  export LAKE_TRACE=1
  shell 'prompt lake> ' 'send sel\t' 'expect ect ' 'send * FROM hr\t' 'expect \.' 'send sc\t' 'expect ans ' \
    'send WHERE pag\t' 'expect es ' 'send > 4;' 'expect 4;' 'send \x03' \
    'prompt lake> ' 'send SELECT sal\t' 'expect ary ' 'send \x03' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  # what was typed, completed (and dropped with Ctrl-C, never run)
  grep -qF "select * FROM hr.scans WHERE pages > 4;" <<<"$screen" || fail "not completed: $screen"
  grep -qF "SELECT salary " <<<"$screen" || fail "no column of a table not named: $screen"
  # anywhere on the screen, not only at a line's start (the editor may
  # have drawn a prompt before it)
  ! grep -q "trace: source" <<<"$screen" || fail "TAB asked the source: $screen"
}

@test "history: kept 0600 under XDG_STATE_HOME/lake, read back by the next session; LAKE_QUERY_HISTORY moves it or, empty, keeps none" {
  shell 'prompt lake> ' 'send SELECT count(*) AS n\r' 'prompt \.\.\.> ' 'send FROM hr.scans;\r' \
    'prompt lake> ' 'send .mode tsv\r' 'prompt lake> ' 'send \x04' 'wait'
  local h=$T/state/lake/query_history
  assert_equal "$(stat -c %a "$h") $(stat -c %a "$T/state/lake")" "600 700"
  # the next session: up twice is the statement, whole
  shell 'prompt lake> ' 'send \x1b[A\x1b[A\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(sed -n '/^n$/,/^lake> /p' <<<"$screen")" $'n\n-\n2\nlake> ^D'

  LAKE_QUERY_HISTORY=$T/elsewhere shell 'prompt lake> ' 'send SELECT 1;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "$(stat -c %a "$T/elsewhere")" 600
  grep -q "SELECT\\\\0401;" "$T/elsewhere" || fail "not in its history: $(cat "$T/elsewhere")"
  ! grep -q "SELECT\\\\0401;" "$h" || fail "written to the default too"
  rm -rf "$T/state"
  LAKE_QUERY_HISTORY='' shell 'prompt lake> ' 'send SELECT 1;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  [ ! -e "$T/state" ] || fail "a history kept: $(find "$T/state")"
}

@test "Ctrl-C drops the input at a prompt and cancels a running INSERT, which appends nothing; the shell goes on" {
  local before
  before=$(lake-catalog --max-age 0 resolve hr.scans | jq .version)
  shell 'prompt lake> ' 'send SELECT 1 +\r' 'prompt \.\.\.> ' 'send \x03' \
    'prompt lake> ' "send INSERT INTO hr.scans WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT 'w', x FROM c;\r" \
    'busy' 'send \x03' 'prompt lake> ' 'send SELECT count(*) AS n FROM hr.scans;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  # the dropped input's fresh prompt
  assert_equal "$(grep -A1 '^  \.\.\.> $' <<<"$screen" | tail -1 | cut -c1-18)" "lake> INSERT INTO "
  grep -q "lake-query: interrupted$" <<<"$screen" || fail "no interruption said: $screen"
  assert_equal "$(sed -n '/^n$/,/^lake> /p' <<<"$screen")" $'n\n-\n2\nlake> ^D'
  assert_equal "$(lake-catalog --max-age 0 resolve hr.scans | jq .version)" "$before"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM hr.scans')" 2
}

@test "each statement pins its tables afresh: another process's INSERT is seen by the next statement" {
  shell 'prompt lake> ' 'send SELECT count(*) AS n FROM hr.scans;\r' 'prompt lake> ' \
    "run lake-query -c \"INSERT INTO hr.scans VALUES ('cy', 1)\"" \
    'send SELECT count(*) AS n FROM hr.scans;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(grep -A2 '^n$' <<<"$screen" | grep -v '^[-n]' | paste -sd,)" 2,3
}

@test "input that is not a terminal is a script as before: no prompt, no history, the failure's exit status" {
  run --separate-stderr lake-query <<<"SELECT count(*) FROM hr.scans; SELECT nosuch;"
  assert_equal "exit $status" "exit 65"
  assert_output 2
  assert_equal "$stderr" "lake-query: stdin:1: no such column: nosuch"
  [ ! -e "$T/state" ] || fail "a history kept: $(find "$T/state")"
}

@test "a TEMP VIEW over a lake table keeps working in later inputs (issue 42)" {
  shell 'prompt lake> ' 'send CREATE TEMP VIEW v AS SELECT * FROM hr.scans WHERE pages > 4;\r' \
    'prompt lake> ' 'send SELECT count(*) AS n FROM v;\r' 'prompt lake> ' 'send SELECT who FROM v;\r' \
    'prompt lake> ' 'send SELECT sum(pages) AS s FROM hr.scans WHERE who NOT IN (SELECT who FROM v);\r' \
    'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(sed -n '/^lake> SELECT count/,/^lake> SELECT who/p' <<<"$screen" | sed '1d;$d')" $'n\n-\n1'
  assert_equal "$(sed -n '/^lake> SELECT who/,/^lake> /p' <<<"$screen" | sed '1d;$d')" $'who\n---\nbob'
  assert_equal "$(sed -n '/^lake> SELECT sum/,/^lake> /p' <<<"$screen" | sed '1d;$d')" $'s\n-\n3'
}

# The pid of the lake-query a `run` step's shell runs beside (terminal.py
# is that shell's parent and lake-query's).
LAKE_QUERY_PID='$(pgrep -P $PPID -x lake-query)'

@test "history: a device or a foreign file is never chmod'ed nor truncated: one warning, no history, the shell goes on (issue 42)" {
  if [ "$(id -u)" = 0 ]; then # a /dev/null of our own: mknod needs root
    mknod -m 666 "$T/null" c 1 3
    LAKE_QUERY_HISTORY=$T/null shell 'prompt lake> ' 'send SELECT 1;\r' 'prompt lake> ' 'send SELECT 2;\r' \
      'prompt lake> ' 'send \x04' 'wait'
    assert_equal "exit $status" "exit 0"
    assert_equal "$(stat -c '%a %F' "$T/null")" "666 character special file"
    assert_equal "$(grep -c 'history' <<<"$screen")" 1
    assert_line_shown "lake-query: $T/null: not a regular file: no history kept"
  fi
  printf 'my notes\nline two\n' >"$T/notes"
  chmod 644 "$T/notes"
  LAKE_QUERY_HISTORY=$T/notes shell 'prompt lake> ' 'send SELECT 1;\r' 'prompt lake> ' 'send .mode\r' \
    'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(stat -c %a "$T/notes")" 644
  assert_equal "$(cat "$T/notes")" $'my notes\nline two'
  assert_equal "$(grep -c 'history' <<<"$screen")" 1
  assert_line_shown "lake-query: $T/notes: not a lake-query history file (no _HiStOrY_V2_ line): no history kept"
}

@test "the C locale: typed UTF-8 reaches SQLite unchanged, never dropped (issue 42)" {
  LC_ALL=C shell 'prompt lake> ' "send SELECT length('田田田') AS n, hex('田') AS h;\r" 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(sed -n '/^n  *h$/,/^lake> /p' <<<"$screen" | sed -n 3p)" "3  E794B0"
}

@test "a byte the locale's encoding does not have refuses the input with one line, never drops the byte (issue 42)" {
  LC_ALL=C shell 'prompt lake> ' "send SELECT 'a' AS x,\r" 'prompt \.\.\.> ' "sendraw 'b\xffc' AS y;\r" \
    'prompt lake> ' "send SELECT 'd' AS z;\r" 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_line_shown "lake-query: a byte the locale's encoding (UTF-8) does not have: the input was not run"
  ! grep -qx "x *y" <<<"$screen" || fail "the input ran: $screen"
  assert_equal "$(sed -n '/^lake> SELECT .d/,/^lake> /p' <<<"$screen" | sed '1d;$d')" $'z\n-\nd'
}

@test "SIGTERM and SIGHUP end the session at the prompt and during a running INSERT, which appends nothing (issue 42)" {
  local before
  before=$(lake-catalog --max-age 0 resolve hr.scans | jq .version)
  shell 'prompt lake> ' 'send SELECT 1 +\r' 'prompt \.\.\.> ' "run kill -TERM $LAKE_QUERY_PID" 'wait'
  assert_equal "exit $status" "exit 143"
  shell 'prompt lake> ' "run kill -HUP $LAKE_QUERY_PID" 'wait'
  assert_equal "exit $status" "exit 129"
  shell 'prompt lake> ' \
    "send INSERT INTO hr.scans WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT 'w', x FROM c;\r" \
    'busy' "run kill -TERM $LAKE_QUERY_PID" 'wait'
  assert_equal "exit $status" "exit 143"
  grep -q "lake-query: interrupted" <<<"$screen" || fail "no interruption said: $screen"
  assert_equal "$(lake-catalog --max-age 0 resolve hr.scans | jq .version)" "$before"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM hr.scans')" 2
}

@test "history: each input appended, two sessions at once both kept; trimmed to the last 1000 only past twice that (issue 42)" {
  local h=$T/hist
  # a second session runs whole while the first waits at its prompt
  LAKE_QUERY_HISTORY=$h shell 'prompt lake> ' 'send SELECT 1;\r' 'prompt lake> ' \
    "run printf '%s\n' 'prompt lake> ' 'send SELECT 2;\\r' 'prompt lake> ' 'send \\x04' 'wait' | python3 $BATS_TEST_DIRNAME/helpers/terminal.py $T/screen2 lake-query" \
    'send SELECT 3;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(cat "$h")" $'_HiStOrY_V2_\nSELECT\\0401;\nSELECT\\0402;\nSELECT\\0403;'
  # 1500 entries: appended to, never rewritten
  { echo _HiStOrY_V2_; for i in $(seq 1500); do echo "SELECT\\040$i;"; done; } >"$h"
  cp "$h" "$T/before"
  LAKE_QUERY_HISTORY=$h shell 'prompt lake> ' 'send SELECT 7;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "$(head -n 1501 "$h" | cmp - "$T/before" && wc -l <"$h")" 1502
  # past 2000: the last 1000 kept, then the new one
  { echo _HiStOrY_V2_; for i in $(seq 2001); do echo "SELECT\\040$i;"; done; } >"$h"
  LAKE_QUERY_HISTORY=$h shell 'prompt lake> ' 'send SELECT 8;\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "$(wc -l <"$h") $(sed -n 2p "$h") $(tail -n 1 "$h")" "1002 SELECT\\0401002; SELECT\\0408;"
  assert_equal "$(stat -c %a "$h")" 600
}

@test ".tables and .schema see another process's new table and column at once, as the next statement would (issue 42)" {
  shell 'prompt lake> ' 'send .tables\r' 'prompt lake> ' 'send .schema hr.payroll\r' 'prompt lake> ' \
    "run lake-catalog create hr.fresh 'a TEXT' && lake-catalog alter hr.payroll add-column 'grade INTEGER'" \
    'send .tables hr\r' 'prompt lake> ' 'send .schema hr.payroll\r' 'prompt lake> ' 'send \x04' 'wait'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(sed -n '/^lake> \.tables hr$/,/^lake> \.schema/p' <<<"$screen" | sed '1d;$d')" \
    $'hr.fresh\nhr.payroll\nhr.scans'
  assert_equal "$(sed -n '/^lake> \.tables hr$/,$p' <<<"$screen" | sed -n '/^lake> \.schema/,/^lake> /p' | sed '1d;$d')" \
    $'who\tTEXT\nsalary\tREAL\ngrade\tINTEGER'
}
