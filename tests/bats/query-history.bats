#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# History and time travel (issue 28, part 3): lake-catalog history lists
# every version with what made it; lake-query reads a table AT (VERSION =>
# N) or AT (TIMESTAMP => '…'); lake-catalog rollback makes a new version
# of an older one's rows.  Embedded, and remote with the stage on S3
# (tests/run).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
  lake-catalog create d.t 'k INTEGER, s TEXT'
  local j
  for j in 0 1 2; do
    awk -v j="$j" 'BEGIN { for (k = 10 * j; k < 10 * j + 10; k++) printf "{\"k\":%d,\"s\":\"s%d\"}\n", k, k }' |
      lake-query -q --import d.t
  done
  lake-query -q -c "DELETE FROM d.t WHERE k < 5"
}

teardown() {
  source_teardown
}

@test "lake-catalog history: each version, what made it, by whom, and the table's totals after it" {
  lake-query -q -c "UPDATE d.t SET s = 'x' WHERE k = 7"
  run --separate-stderr lake-catalog history d.t -H
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_equal "$(cut -f1,4-8 <<<"$output")" "$(printf '%s\n' \
    $'version\toperation\trows_added\trows_removed\tsegments\trows' \
    $'0\tcreate\t0\t0\t0\t0' $'1\tappend\t10\t0\t1\t10' $'2\tappend\t10\t0\t2\t20' \
    $'3\tappend\t10\t0\t3\t30' $'4\tdelete\t0\t5\t3\t25' $'5\tupdate\t0\t0\t3\t25')"
  # committed_at is RFC 3339 UTC; the principal of a change is the caller's
  cut -f2 <<<"$output" | tail -n +2 | grep -vqxE '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z' &&
    fail "a committed_at that is not RFC 3339: $output"
  assert_equal "$(sed -n 2p <<<"$output" | cut -f3)" "-"
  [ -n "$(sed -n 3p <<<"$output" | cut -f3)" ] || fail "no principal: $output"
  # bytes: the sizes of the live segments
  assert_equal "$(tail -1 <<<"$output" | cut -f9)" "$(lake-catalog resolve d.t | jq '[.segments[].size] | add')"
  run --separate-stderr lake-catalog history d.t --json
  assert_equal "$(jq -c '[.[] | [.version, .operation, .rows]]' <<<"$output")" \
    '[[0,"create",0],[1,"append",10],[2,"append",20],[3,"append",30],[4,"delete",25],[5,"update",25]]'
  run --separate-stderr lake-catalog history d.nope
  assert_equal "exit $status" "exit 66"
  run --separate-stderr lake-catalog --offline history d.t
  assert_equal "exit $status" "exit 64"
}

@test "AT (VERSION => N) reads that version, with pruning and aggregates as the current one; joins of two versions" {
  run --separate-stderr lake-query -c "SELECT count(*), sum(k) FROM d.t AT (VERSION => 2)"
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_output "$(printf '20\t190')"
  assert_equal "$(lake-query -c "SELECT count(*) FROM d.t at(version=>3)")" 30
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 25
  assert_equal "$(lake-query -c "SELECT min(k), max(s) FROM d.t AT (VERSION => 1) WHERE k >= 3")" "$(printf '3\ts9')"
  # the rows a DELETE removed: the older version less the current
  assert_equal "$(lake-query -c "SELECT group_concat(o.k, ',') FROM d.t AT (VERSION => 3) o LEFT JOIN d.t n ON n.k = o.k WHERE n.k IS NULL")" \
    "0,1,2,3,4"
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "SELECT count(*) FROM d.t AT (VERSION => 1) WHERE k > 100"
  assert_output 0
  grep -q "^trace: query prune d.t@v1 v1 segment 0 " <<<"$stderr" || fail "not pruned: $stderr"
  run --separate-stderr lake-query --explain -c "SELECT * FROM d.t AT (VERSION => 2) WHERE k >= 10"
  assert_equal "exit $status" "exit 0"
  [[ $output == *"d.t@v2 version 2: 2 segments, 1 kept, 1 pruned"* ]] || fail "$output"
  # the words in a string or as an alias are left alone
  assert_equal "$(lake-query -c "SELECT 'AT (VERSION => 1)', count(*) FROM d.t at")" "$(printf 'AT (VERSION => 1)\t25')"
}

@test "AT (TIMESTAMP => '…') reads the last version committed at or before that time" {
  sleep 1.1 # a second of its own for the time asked, before the next commit
  local ts
  ts=$(date -u +%FT%TZ)
  sleep 1.1
  lake-query -q -c "DELETE FROM d.t WHERE k >= 20"
  assert_equal "$(lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => '$ts')")" 25
  # any RFC 3339 form of the same instant
  local local_form
  local_form=$(date -d "$ts" +%FT%T%:z)
  assert_equal "$(lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => '$local_form')")" 25
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 15
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => '2000-01-01T00:00:00Z')"
  assert_equal "exit $status" "exit 66"
  [[ $stderr == *"no version at or before 2000-01-01T00:00:00Z"* ]] || fail "$stderr"
}

@test "AT refused: a version that does not exist (66), a malformed clause (64), a change of an older version (64)" {
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (VERSION => 99)"
  assert_equal "exit $status: $stderr" "exit 66: lake-query: d.t: no version 99 (current is 4)"
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (VERSION => x)"
  assert_equal "exit $status" "exit 64"
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => 'yesterday')"
  assert_equal "exit $status" "exit 64"
  [[ $stderr == *"not an RFC 3339 time"* ]] || fail "$stderr"
  run --separate-stderr lake-query -c "DELETE FROM d.t AT (VERSION => 2) WHERE k = 11"
  assert_equal "exit $status" "exit 64"
  run --separate-stderr lake-query -c "INSERT INTO d.t AT (VERSION => 2) VALUES (1, 'a')"
  assert_equal "exit $status" "exit 64"
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 4
}

@test "rollback makes a new version of an older one's rows; the versions between stay readable; a DELETE after works" {
  run --separate-stderr lake-catalog rollback d.t --to-version 2
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_output "rolled back d.t to version 2: version 5"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(k) FROM d.t')" "$(printf '20\t190')"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t AT (VERSION => 4)')" 25
  # forward again, to the version after the DELETE: its rewritten segment
  # is live again, the same object
  lake-catalog rollback d.t --to-version 4 >/dev/null
  assert_equal "$(lake-query -c 'SELECT count(*), sum(k) FROM d.t')" "$(printf '25\t425')"
  assert_equal "$(lake-catalog resolve d.t | jq -c '[.segments[].location] | sort')" \
    "$(lake-catalog resolve d.t --version 4 | jq -c '[.segments[].location] | sort')"
  lake-query -q -c "DELETE FROM d.t WHERE k IN (5, 25)"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 23
  lake-catalog rollback d.t --to-version 0 >/dev/null
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 0
  assert_equal "$(lake-catalog history d.t | cut -f4 | tail -4 | paste -sd,)" "rollback,rollback,delete,rollback"
  run --separate-stderr lake-catalog rollback d.t --to-version 9
  assert_equal "exit $status" "exit 65"
  run --separate-stderr lake-catalog rollback d.t
  assert_equal "exit $status" "exit 64"
}
