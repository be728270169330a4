#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-query under concurrency (issue 6): 8 processes inserting into one
# table at once lose nothing and add versions one by one; a query that runs
# while another process appends sees one consistent version for its whole
# statement.  Run embedded and remote (metasrv + radosgw) by tests/run.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
  lake-catalog create d.t 'p INTEGER, n INTEGER'
}

teardown() {
  source_teardown
}

# Rows held by version V of d.t, from the registration alone.
rows_at() {
  lake-catalog resolve --version "$1" d.t | jq '[.segments[].rows] | add // 0'
}

@test "8 processes inserting at once: every row exactly once, one version per insert, strictly increasing" {
  local pids=() p
  for p in $(seq 8); do
    lake-query -c "INSERT INTO d.t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 50) SELECT $p, n FROM s" \
      2>"$T/err.$p" &
    pids+=($!)
  done
  for p in "${!pids[@]}"; do
    wait "${pids[$p]}" || fail "process $((p + 1)) failed: $(cat "$T/err.$((p + 1))")"
  done
  run lake-query -c "SELECT count(*), count(DISTINCT p * 1000 + n), min(c), max(c) FROM d.t, (SELECT p AS q, count(*) AS c FROM d.t GROUP BY p) WHERE p = q"
  assert_output $'400\t400\t50\t50'
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 8
  # each version added exactly one process's 50 rows to the one before it
  local v
  for v in $(seq 0 8); do
    assert_equal "$(rows_at "$v")" $((50 * v))
  done
}

@test "a query running while another process appends sees one version for the whole statement" {
  lake-query -c "INSERT INTO d.t VALUES (0, 0)"
  # the writer: batches of 100 rows, each batch one append with its own p
  (
    for b in $(seq 1 40); do
      lake-query -c "INSERT INTO d.t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) SELECT $b, n FROM s" ||
        exit 1
    done
  ) 2>"$T/writer.err" &
  local writer=$! seen=() i out
  for i in $(seq 30); do
    # three scans of d.t in one statement: they must agree with each other
    out=$(lake-query -c "SELECT (SELECT count(*) FROM d.t), (SELECT count(*) FROM d.t WHERE n >= 0), (SELECT count(DISTINCT p) FROM d.t)") ||
      fail "query $i failed"
    read -r a b c <<<"$out"
    [ "$a" = "$b" ] || fail "one statement saw two versions: $out"
    [ "$a" -eq $((1 + 100 * (c - 1))) ] || fail "a torn version: $out"
    seen+=("$a")
  done
  wait "$writer" || fail "the writer failed: $(cat "$T/writer.err")"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 4001
  # the queries really ran during the appends: they saw more than one version
  [ "$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)" -gt 1 ] ||
    fail "every query saw the same version (${seen[0]}): the test raced nothing"
}
