#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Joins (issue 27): the inner table of an equi-join is looked up by the
# join's column in a temporary index of the rows its plan keeps, built
# once per statement, instead of scanned once per outer row.  Every
# answer is checked against the row-by-row path (LAKE_QUERY_NO_PUSHDOWN=1),
# which takes no term, on inner, left and self-joins, joins with
# subqueries, NULL keys and keys of different storage classes.  Embedded,
# and remote with the stage on S3 (tests/run).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace j
}

teardown() {
  source_teardown
}

# lookups NAME: how many lookup stores the traced statement built for NAME
lookups() {
  grep -c "^trace: query lookup $1 by " "$T/trace" || true
}

# facts: k 0..199 over 4 segments; dims: k 0..299 step 3 over 2 segments,
# with NULL keys and a name
facts_and_dims() {
  local j
  lake-catalog create j.facts 'k INTEGER, v INTEGER'
  for j in 0 1 2 3; do
    awk -v j="$j" 'BEGIN { for (k = 50 * j; k < 50 * j + 50; k++) printf "{\"k\":%d,\"v\":%d}\n", k, k * 10 }' |
      lake-query -q --import j.facts
  done
  lake-catalog create j.dims 'k INTEGER, name TEXT'
  awk 'BEGIN { for (k = 0; k < 150; k += 3) printf "{\"k\":%d,\"name\":\"d%d\"}\n", k, k
               print "{\"k\":null,\"name\":\"none1\"}" }' | lake-query -q --import j.dims
  awk 'BEGIN { for (k = 150; k < 300; k += 3) printf "{\"k\":%d,\"name\":\"d%d\"}\n", k, k
               print "{\"k\":null,\"name\":\"none2\"}" }' | lake-query -q --import j.dims
}

@test "an inner equi-join looks the inner table up in an index built once, with the row-by-row answer" {
  facts_and_dims
  both "SELECT count(*), sum(v), min(name), max(name) FROM j.facts JOIN j.dims USING (k)"
  assert_output '{"count(*)":67,"sum(v)":66330,"min(name)":"d0","max(name)":"d99"}'
  # one store for the statement, of every row of the inner table
  assert_equal "$(( $(lookups j.dims) + $(lookups j.facts) ))" 1
  grep -q "^trace: query lookup j.[a-z]* by k: a temporary index of [0-9]* rows built in memory$" "$T/trace" ||
    fail "no lookup traced: $(cat "$T/trace")"
  both "SELECT f.k, d.name FROM j.facts f, j.dims d WHERE d.k = f.k AND f.v < 100 ORDER BY f.k"
  assert_output $'{"k":0,"name":"d0"}\n{"k":3,"name":"d3"}\n{"k":6,"name":"d6"}\n{"k":9,"name":"d9"}'
}

@test "LEFT JOIN, NULL keys on either side, a self-join and joins with subqueries: the row-by-row answers" {
  facts_and_dims
  both "SELECT count(*), count(d.name), sum(f.v) FROM j.facts f LEFT JOIN j.dims d ON d.k = f.k"
  assert_output '{"count(*)":200,"count(d.name)":67,"sum(f.v)":199000}'
  # a NULL key matches nothing, whichever side it is on
  both "SELECT d.name, f.v FROM j.dims d LEFT JOIN j.facts f ON f.k = d.k WHERE d.k IS NULL ORDER BY d.name"
  assert_output $'{"name":"none1","v":null}\n{"name":"none2","v":null}'
  both "SELECT count(*) FROM j.dims a JOIN j.dims b ON b.k = a.k"
  assert_output '{"count(*)":100}'
  both "SELECT count(*), sum(a.v) FROM j.facts a JOIN j.facts b ON b.k = a.k + 1 WHERE b.v % 20 = 0"
  assert_output '{"count(*)":99,"sum(a.v)":98010}'
  both "SELECT count(*) FROM j.facts WHERE k IN (SELECT k FROM j.dims WHERE name LIKE 'd1%')"
  assert_output '{"count(*)":36}'
  both "SELECT x.name, f.v FROM (SELECT k, name FROM j.dims WHERE k > 290) x JOIN j.facts f ON f.k = x.k - 100 ORDER BY 1"
  assert_output $'{"name":"d291","v":1910}\n{"name":"d294","v":1940}\n{"name":"d297","v":1970}'
}

@test "keys of different storage classes match as SQLite matches them: TEXT '1' and INTEGER 1, REAL, blobs" {
  lake-catalog create j.t 'id INTEGER, s TEXT'
  printf '%s\n' '{"id":1,"s":"1"}' '{"id":2,"s":" 2"}' '{"id":3,"s":"3.0"}' '{"id":4,"s":"abc"}' \
    '{"id":5,"s":"5e0"}' '{"id":6,"s":null}' '{"id":7,"s":"007"}' | lake-query -q --import j.t
  lake-catalog create j.n 'i INTEGER, r REAL, x TEXT, b BLOB'
  printf '%s\n' '{"i":1,"r":1.0,"x":"1","b":"31"}' '{"i":2,"r":2.5,"x":"abc","b":null}' \
    '{"i":3,"r":3.0,"x":"3","b":null}' '{"i":5,"r":5.0,"x":"5","b":null}' '{"i":7,"r":7.0,"x":"007","b":null}' |
    lake-query -q --import j.n
  # and rows that match nothing, so that both tables are large enough to
  # be looked up (a table of 64 rows or fewer is scanned)
  awk 'BEGIN { for (n = 0; n < 100; n++) printf "{\"id\":%d,\"s\":\"zz%d\"}\n", 100 + n, n }' | lake-query -q --import j.t
  awk 'BEGIN { for (n = 0; n < 100; n++) printf "{\"i\":%d,\"r\":%d.5,\"x\":\"yy%d\",\"b\":\"ff%02x\"}\n", 1000 + n, 1000 + n, n, n }' |
    lake-query -q --import j.n
  local col q
  for col in i r x b; do
    q="SELECT t.id, n.$col FROM j.t t CROSS JOIN j.n n ON n.$col = t.s ORDER BY 1, 2"
    both "$q"
    assert_equal "$(lookups j.n)" 1
    cp "$T/on" "$T/$col.on"
    q="SELECT t.id FROM j.n n CROSS JOIN j.t t ON t.s = n.$col ORDER BY 1"
    both "$q"
    assert_equal "$(lookups j.t)" 1
  done
  # the integer column applies numeric affinity to the text: '1', ' 2' (spaces
  # around a number are allowed), '3.0', '5e0' and '007' are numbers, 'abc' not
  assert_equal "$(jq -c .id "$T/i.on" | paste -sd,)" 1,2,3,5,7
  assert_equal "$(jq -c .id "$T/x.on" | paste -sd,)" 1,4,7
  # and the join's key on an expression, which has no affinity
  both "SELECT t.id FROM j.t t CROSS JOIN j.n n ON n.i = t.s + 0 ORDER BY 1"
  assert_output $'{"id":1}\n{"id":2}\n{"id":3}\n{"id":5}\n{"id":7}'
}

@test "an inner table whose kept rows pass 16 MiB is indexed on disk, with the same matching of storage classes" {
  # 44,000 rows of about 400 bytes: past the 16 MiB a lookup keeps in
  # memory; keys are text, some of them numbers, in two segments
  lake-catalog create j.wide 'k TEXT, pad TEXT'
  local s
  for s in 0 1; do
    awk -v s="$s" 'BEGIN { pad = sprintf("%400s", ""); gsub(/ /, "x", pad)
      for (n = 0; n < 22000; n++) printf "{\"k\":\"w%d-%d\",\"pad\":\"%s\"}\n", s, n, pad
      if (s) printf "{\"k\":\"1\",\"pad\":\"one\"}\n{\"k\":\" 2\",\"pad\":\"two\"}\n{\"k\":\"3.0\",\"pad\":\"three\"}\n"
      else printf "{\"k\":\"abc\",\"pad\":\"text\"}\n{\"k\":null,\"pad\":\"none\"}\n{\"k\":\"w1-7\",\"pad\":\"again\"}\n" }' |
      lake-query -q --import j.wide
  done
  lake-catalog create j.probe 'i INTEGER, x TEXT'
  printf '%s\n' '{"i":1,"x":"1"}' '{"i":2,"x":"2"}' '{"i":3,"x":"abc"}' '{"i":null,"x":null}' '{"i":7,"x":"w1-7"}' |
    lake-query -q --import j.probe
  both "SELECT p.i, w.pad FROM j.probe p CROSS JOIN j.wide w ON w.k = p.i ORDER BY 1, 2"
  assert_output $'{"i":1,"pad":"one"}\n{"i":2,"pad":"two"}\n{"i":3,"pad":"three"}'
  grep -q "^trace: query lookup j.wide by k: a temporary index of 44006 rows built on disk$" "$T/trace" ||
    fail "not indexed on disk: $(grep lookup "$T/trace")"
  both "SELECT p.x, substr(w.pad, 1, 5) FROM j.probe p CROSS JOIN j.wide w ON w.k = p.x ORDER BY 1, 2"
  assert_output $'{"x":"1","substr(w.pad, 1, 5)":"one"}\n{"x":"abc","substr(w.pad, 1, 5)":"text"}\n{"x":"w1-7","substr(w.pad, 1, 5)":"again"}\n{"x":"w1-7","substr(w.pad, 1, 5)":"xxxxx"}'
  assert_equal "$(lookups j.wide)" 1
  # the same segments through a later schema (issue 28): attached to the
  # index's database, they read by column id, a renamed key and a new column
  lake-catalog alter j.wide rename-column k key
  lake-catalog alter j.wide add-column 'note TEXT'
  both "SELECT p.i, w.pad, w.note FROM j.probe p CROSS JOIN j.wide w ON w.key = p.i ORDER BY 1, 2"
  assert_output $'{"i":1,"pad":"one","note":null}\n{"i":2,"pad":"two","note":null}\n{"i":3,"pad":"three","note":null}'
  grep -q "^trace: query lookup j.wide by key: a temporary index of 44006 rows built on disk$" "$T/trace" ||
    fail "not indexed on disk: $(grep lookup "$T/trace")"
}

@test "a range on the inner table prunes its segments before the index is built: only the kept rows are indexed" {
  lake-catalog create j.big 'k INTEGER, v TEXT'
  local s
  for s in $(seq 0 19); do
    awk -v s="$s" 'BEGIN { for (k = 100 * s; k < 100 * s + 100; k++) printf "{\"k\":%d,\"v\":\"v%d\"}\n", k, k }' |
      lake-query -q --import j.big
  done
  lake-catalog create j.keys 'k INTEGER'
  printf '{"k":%d}\n' 150 1050 1099 1100 1999 5000 | lake-query -q --import j.keys
  # CROSS JOIN: j.big is the inner table (SQLite would rather index the
  # 6 keys)
  both "SELECT k.k, b.v FROM j.keys k CROSS JOIN j.big b ON b.k = k.k WHERE b.k BETWEEN 1000 AND 1199 ORDER BY 1"
  assert_output $'{"k":1050,"v":"v1050"}\n{"k":1099,"v":"v1099"}\n{"k":1100,"v":"v1100"}'
  assert_equal "$(lookups j.big)" 1
  grep -q "^trace: query lookup j.big by k: a temporary index of 200 rows built in memory$" "$T/trace" ||
    fail "not only the 2 kept segments indexed: $(grep lookup "$T/trace")"
  assert_equal "$(grep -c '^trace: query prune j.big' "$T/trace")" 18
}

@test "--explain names the table a join looks up and by which column, and reads nothing" {
  facts_and_dims
  rm -rf "${LAKE_CACHE_DIR:-$XDG_CACHE_HOME/lake}/segments"
  run --separate-stderr env LAKE_TRACE=1 lake-query --explain -c "SELECT count(*) FROM j.facts f JOIN j.dims d ON d.k = f.k"
  assert_success
  [[ $output == *"looked up by k (a join), in a temporary index of its kept rows built once"* ]] || fail "$output"
  [[ $stderr != *"stage GET"* ]] || fail "--explain fetched a segment: $stderr"
  [[ $stderr != *"query lookup"* ]] || fail "--explain built an index: $stderr"
}

@test "twenty tables of ten rows joined in a chain, and a star join: the row-by-row answers; tables that small are scanned, not indexed" {
  local i q from="j.c1 t1" where=""
  for i in $(seq 1 20); do
    lake-catalog create "j.c$i" 'a INTEGER, b INTEGER'
    # 10 rows: a = 0..9, b = (a * 3 + i) % 10, a permutation
    awk -v i="$i" 'BEGIN { for (a = 0; a < 10; a++) printf "{\"a\":%d,\"b\":%d}\n", a, (a * 3 + i) % 10 }' |
      lake-query -q --import "j.c$i"
    if [ "$i" -gt 1 ]; then
      from+=", j.c$i t$i"
      where+="${where:+ AND }t$i.a = t$((i - 1)).b"
    fi
  done
  q="SELECT count(*), sum(t1.a), sum(t20.b) FROM $from WHERE $where"
  both "$q"
  assert_output '{"count(*)":10,"sum(t1.a)":45,"sum(t20.b)":45}'
  assert_equal "$(grep -c '^trace: query lookup ' "$T/trace")" 0
  both "SELECT t2.b, count(*) FROM j.c1 t1 JOIN j.c2 t2 ON t2.a = t1.b JOIN j.c3 t3 ON t3.a = t1.a GROUP BY 1 ORDER BY 1"
  [ "$(wc -l <"$T/on")" -eq 10 ] || fail "$(cat "$T/on")"
}
