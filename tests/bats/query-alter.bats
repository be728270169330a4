#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Schema evolution (issue 28, part 2): lake-catalog alter NS.T
# add-column | rename-column | drop-column makes a new version whose
# schema changed; no segment is rewritten: older segments are read through
# the new schema by each column's stable id (a new column is NULL in
# them).  A version read AT an earlier version keeps its schema; rollback
# takes the schema back too; a dropped column's id is never reused.
# Embedded, and remote with the stage on S3 (tests/run).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
  lake-catalog create d.t 'k INTEGER, s TEXT, x REAL'
  local j
  for j in 0 1; do
    awk -v j="$j" 'BEGIN { for (k = 10 * j; k < 10 * j + 10; k++) printf "{\"k\":%d,\"s\":\"s%d\",\"x\":%d.5}\n", k, k, k }' |
      lake-query -q --import d.t
  done
}

teardown() {
  source_teardown
}

# The table's segment locations, one line.
locations() {
  lake-catalog --max-age 0 resolve d.t | jq -c '[.segments[].location]'
}

@test "add-column: a new version, NULL in the rows written before, filled in the rows after; no segment rewritten" {
  local before
  before=$(locations)
  run --separate-stderr lake-catalog alter d.t add-column 'owner TEXT'
  assert_equal "exit $status: $output: $stderr" "exit 0: altered d.t: version 3: "
  assert_equal "$(locations)" "$before"
  assert_equal "$(lake-catalog show d.t)" $'k\tINTEGER\ns\tTEXT\nx\tREAL\nowner\tTEXT'
  assert_equal "$(lake-catalog history d.t | tail -1 | cut -f1,4-7)" $'3\talter\t0\t0\t2'
  lake-query -q -c "INSERT INTO d.t VALUES (20, 's20', 20.5, 'ann'), (21, 's21', NULL, NULL)"
  both "SELECT k, owner FROM d.t WHERE k IN (0, 19, 20, 21) ORDER BY k"
  assert_output $'{"k":0,"owner":null}\n{"k":19,"owner":null}\n{"k":20,"owner":"ann"}\n{"k":21,"owner":null}'
  # the older segments hold no value of it: pruned by their statistics
  both "SELECT count(*) FROM d.t WHERE owner = 'ann'"
  assert_output '{"count(*)":1}'
  grep -q "trace: query scan d.t v4: 1 of 3 segments" "$T/trace" || fail "not pruned: $(grep scan "$T/trace")"
  both "SELECT count(*), count(owner), sum(x) FROM d.t"
  assert_output '{"count(*)":22,"count(owner)":1,"sum(x)":220.5}'
  both "SELECT k FROM d.t WHERE owner IS NULL AND k > 18 ORDER BY k"
  assert_output $'{"k":19}\n{"k":21}'
}

@test "rename-column: the old segments answer under the new name, the old name is gone; AT an earlier version keeps it" {
  local before
  before=$(locations)
  lake-catalog alter d.t rename-column s label
  assert_equal "$(locations)" "$before"
  both "SELECT k, label FROM d.t WHERE label IN ('s18', 's3') ORDER BY k"
  assert_output $'{"k":3,"label":"s3"}\n{"k":18,"label":"s18"}'
  run --separate-stderr lake-query -c "SELECT s FROM d.t"
  assert_equal "exit $status" "exit 65"
  [[ $stderr == *"no such column: s"* ]] || fail "$stderr"
  # the version before the rename reads with the schema it had
  both "SELECT k, s FROM d.t AT (VERSION => 2) WHERE k = 3"
  assert_output '{"k":3,"s":"s3"}'
  run --separate-stderr lake-query -c "SELECT label FROM d.t AT (VERSION => 2)"
  assert_equal "exit $status" "exit 65"
  run --separate-stderr lake-query -H -c "SELECT * FROM d.t AT (VERSION => 1) LIMIT 1"
  assert_output $'k\ts\tx\n0\ts0\t0.5'
  # a case-only rename, and a name that clashes
  lake-catalog alter d.t rename-column LABEL Label
  assert_equal "$(lake-catalog show d.t | cut -f1 | paste -sd,)" "k,Label,x"
  run --separate-stderr lake-catalog alter d.t rename-column label K
  assert_equal "exit $status: $stderr" "exit 65: lake-catalog: d.t: column 'K' exists"
}

@test "drop-column: gone from SELECT *, its values carried unread; a column added under its name is a new one, NULL in the old rows" {
  local before
  before=$(locations)
  lake-catalog alter d.t drop-column s
  assert_equal "$(locations)" "$before"
  # a set-up script's create of the columns the table has now: the same
  # schema, whatever ids the alter gave them
  run --separate-stderr lake-catalog create --if-not-exists d.t 'k INTEGER, x REAL'
  assert_equal "exit $status: $stderr" "exit 0: "
  run --separate-stderr lake-query -H -c "SELECT * FROM d.t WHERE k = 1"
  assert_output $'k\tx\n1\t1.5'
  lake-query -q -c "INSERT INTO d.t VALUES (30, 30.5)"
  # the new segment lists its columns' ids: the dropped one is not among them
  assert_equal "$(lake-catalog --max-age 0 resolve d.t | jq -c '[.segments[].columns]')" '[null,null,[1,3]]'
  lake-catalog alter d.t add-column 's TEXT'
  assert_equal "$(lake-catalog --max-age 0 resolve d.t | jq -c '[.schema[] | [.name, .id]]')" '[["k",1],["x",3],["s",4]]'
  both "SELECT k, s FROM d.t WHERE k IN (1, 30) ORDER BY k"
  assert_output $'{"k":1,"s":null}\n{"k":30,"s":null}'
  # the version before the drop still reads its values
  assert_equal "$(lake-query -c "SELECT s FROM d.t AT (VERSION => 2) WHERE k = 1")" s1
}

@test "drop-column: no reader of a later version sees the dropped column's bounds (resolve keeps its null count only); the version before keeps them" {
  lake-catalog alter d.t drop-column s
  # the segments' entries of column 2 (s): bounds gone, nulls kept
  run lake-catalog --max-age 0 resolve d.t
  assert_success
  [[ $output != *'"s1'* && $output != *'"s0"'* ]] || fail "the dropped column's bounds are served: $output"
  assert_equal "$(jq -c '[.segments[].stats[1]]' <<<"$output")" '[{"nulls":0},{"nulls":0}]'
  # the other columns keep theirs, and pruning by them still works
  assert_equal "$(jq -c '[.segments[].stats[0]]' <<<"$output")" '[{"nulls":0,"min":0,"max":9},{"nulls":0,"min":10,"max":19}]'
  # the version before the drop has the column, and its bounds
  assert_equal "$(lake-catalog --max-age 0 resolve d.t --version 2 | jq -c '[.segments[].stats[1]]')" \
    '[{"nulls":0,"min":"s0","max":"s9"},{"nulls":0,"min":"s10","max":"s19"}]'
  both "SELECT count(*) FROM d.t AT (VERSION => 2) WHERE s = 's3'"
  assert_output '{"count(*)":1}'
}

@test "DELETE, UPDATE, compaction and split aggregates after alters: every row as the schema says" {
  lake-catalog alter d.t add-column 'n INTEGER'
  lake-catalog alter d.t drop-column x
  lake-catalog alter d.t rename-column s name
  lake-query -q -c "INSERT INTO d.t(k, name, n) VALUES (40, 'forty', 4)"
  lake-query -q -c "UPDATE d.t SET n = k * 2 WHERE k < 3"
  run --separate-stderr lake-query -c "DELETE FROM d.t WHERE name = 's5' OR k = 40"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: d.t: 2 rows deleted"
  both "SELECT k, name, n FROM d.t WHERE k < 6 ORDER BY k"
  assert_output $'{"k":0,"name":"s0","n":0}\n{"k":1,"name":"s1","n":2}\n{"k":2,"name":"s2","n":4}\n{"k":3,"name":"s3","n":null}\n{"k":4,"name":"s4","n":null}'
  local rows
  rows=$(lake-query -f jsonl -c "SELECT * FROM d.t ORDER BY k")
  run --separate-stderr lake-catalog compact d.t
  assert_success
  assert_equal "$(lake-query -f jsonl -c "SELECT * FROM d.t ORDER BY k")" "$rows"
  # the compacted segment is written in the current schema, with its ids
  assert_equal "$(lake-catalog --max-age 0 resolve d.t | jq -c '[.segments[].columns] | unique')" '[[1,2,4]]'
  both "SELECT count(*), sum(n), max(name) FROM d.t GROUP BY n IS NULL ORDER BY 1"
  assert_output $'{"count(*)":3,"sum(n)":6,"max(name)":"s2"}\n{"count(*)":16,"sum(n)":null,"max(name)":"s9"}'
}

@test "rollback to a version before an alter takes its schema back; a column added after takes an id never used" {
  lake-catalog alter d.t add-column 'owner TEXT'
  lake-query -q -c "INSERT INTO d.t VALUES (20, 's20', 20.5, 'ann')"
  run --separate-stderr lake-catalog rollback d.t --to-version 2
  assert_equal "exit $status: $output" "exit 0: rolled back d.t to version 2: version 5"
  assert_equal "$(lake-catalog show d.t | cut -f1 | paste -sd,)" "k,s,x"
  assert_equal "$(lake-query -c "SELECT count(*) FROM d.t")" 20
  lake-catalog alter d.t add-column 'owner TEXT'
  assert_equal "$(lake-catalog --max-age 0 resolve d.t | jq -c '[.schema[] | .id]')" '[1,2,3,5]'
  # the row written under id 4 is not the new owner's
  lake-catalog rollback d.t --to-version 4
  assert_equal "$(lake-query -c "SELECT owner FROM d.t WHERE k = 20")" ann
  assert_equal "$(lake-catalog history d.t | cut -f4 | tail -4 | paste -sd,)" "append,rollback,alter,rollback"
}

@test "a statement that read the table before an alter commits after it: its rows keep their columns by id" {
  local_only "LAKE_TEST_REWRITE_HOLD stops the embedded client between its read and its commit"
  LAKE_TEST_REWRITE_HOLD=$T/go lake-query -c "UPDATE d.t SET s = 'up' WHERE k = 1" 2>"$T/u.err" &
  local held=$!
  held_wait "$T/go" "$held" "$T/u.err"
  lake-catalog alter d.t drop-column x
  lake-catalog alter d.t rename-column s label
  held_release "$T/go" "$held"
  [ "$HELD_STATUS" = 0 ] || fail "the UPDATE failed: $(cat "$T/u.err")"
  assert_equal "$(cat "$T/u.err")" "lake-query: d.t: 1 row updated"
  assert_equal "$(lake-catalog history d.t | cut -f4 | tail -3 | paste -sd,)" "alter,alter,update"
  assert_equal "$(lake-query -c "SELECT k, label FROM d.t WHERE k <= 2 ORDER BY k")" $'0\ts0\n1\tup\n2\ts2'
  # the dropped column's values, written by the UPDATE, still read AT the version before
  assert_equal "$(lake-query -c "SELECT x FROM d.t AT (VERSION => 2) WHERE k = 1")" 1.5
}

@test "refused with one line and nothing changed: a name clash or the last column (65), a bad type or form (64), no such column or table (66)" {
  local v
  v=$(lake-catalog --max-age 0 resolve d.t | jq .version)
  run --separate-stderr lake-catalog alter d.t add-column 'S TEXT'
  assert_equal "exit $status: $stderr" "exit 65: lake-catalog: d.t: column 'S' exists"
  run --separate-stderr lake-catalog alter d.t add-column 'y VARCHAR'
  assert_equal "exit $status" "exit 64"
  [[ $stderr == *"unknown type 'VARCHAR'"* ]] || fail "$stderr"
  run --separate-stderr lake-catalog alter d.t add-column 'a TEXT, b TEXT'
  assert_equal "exit $status: $stderr" "exit 64: lake-catalog: alter add-column takes one 'COL TYPE' (see 'lake-catalog --help')"
  run --separate-stderr lake-catalog alter d.t add-column 'y'
  assert_equal "exit $status" "exit 64"
  run --separate-stderr lake-catalog alter d.t rename-column nope other
  assert_equal "exit $status: $stderr" "exit 66: lake-catalog: d.t: no column 'nope'"
  run --separate-stderr lake-catalog alter d.t drop-column nope
  assert_equal "exit $status: $stderr" "exit 66: lake-catalog: d.t: no column 'nope'"
  run --separate-stderr lake-catalog alter d.t retype-column s INTEGER
  assert_equal "exit $status" "exit 64"
  [[ $stderr == *"not add-column, rename-column or drop-column"* ]] || fail "$stderr"
  run --separate-stderr lake-catalog alter d.t rename-column s
  assert_equal "exit $status" "exit 64"
  run --separate-stderr lake-catalog alter d.nope drop-column s
  assert_equal "exit $status: $stderr" "exit 66: lake-catalog: d.nope: no such table"
  run --separate-stderr lake-catalog --offline alter d.t drop-column s
  assert_equal "exit $status" "exit 64"
  lake-catalog alter d.t drop-column s
  lake-catalog alter d.t drop-column x
  run --separate-stderr lake-catalog alter d.t drop-column k
  assert_equal "exit $status: $stderr" "exit 65: lake-catalog: d.t: column 'k' is the last one: a table keeps one"
  assert_equal "$(lake-catalog --max-age 0 resolve d.t | jq .version)" $((v + 2))
  lake-catalog drop d.t
  run --separate-stderr lake-catalog alter d.t add-column 'z TEXT'
  assert_equal "exit $status" "exit 66"
}
