#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Segment statistics in registrations (issue 18, part 1; the format is
# query/segment.h's, lake-query(1) Statistics): every writer (lake-query
# --import, INSERT, lake-put --table) records per column the null count
# and min and max with each segment it appends, and lake-catalog resolve
# shows them, from the source and from the registration cache alike.  The
# source is a parameter: tests/run runs this against the embedded registry,
# a real lake-metasrv on SQLite and one on PostgreSQL.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace docs
  lake-catalog create docs.m 'i INTEGER, r REAL, s TEXT, b BLOB, ok BOOLEAN, ts TIMESTAMP, f FILE'
}

teardown() {
  source_teardown
}

# 70 x's: a TEXT value longer than a bound keeps (64 bytes)
X70=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
X64=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx

@test "--import, INSERT and lake-put --table each append a segment with the statistics of every column" {
  printf 'i,r,s,b,ok,ts\n3,2.5,pear,00ff,true,2026-12-02T13:08:02+01:00\n-7,,apple,,false,1999-01-01T00:00:00Z\n,-1e300,%s,,,\n' \
    "$X70" | lake-query -q --import docs.m
  lake-query -q -c "INSERT INTO docs.m(i, s) VALUES (10, 'zz')"
  printf 'hello\n' >"$T/a.txt"
  local f
  f=$(lake-put -q --table docs.m --column f --set s=put "$T/a.txt") # the FILE value, canonical

  run --separate-stderr lake-catalog resolve docs.m
  assert_clean_success
  assert_equal "$(jq '.segments | length' <<<"$output")" 3
  assert_equal "$(jq -c '.segments[0].stats' <<<"$output")" \
    '[{"nulls":1,"min":-7,"max":3},{"nulls":1,"min":-1e+300,"max":2.5},{"nulls":0,"min":"apple","max":"'"$X64"'","max_cut":true},{"nulls":2},{"nulls":1,"min":0,"max":1},{"nulls":1,"min":"1999-01-01T00:00:00Z","max":"2026-12-02T12:08:02Z"},{"nulls":3}]'
  assert_equal "$(jq -c '.segments[1].stats' <<<"$output")" \
    '[{"nulls":0,"min":10,"max":10},{"nulls":1},{"nulls":0,"min":"zz","max":"zz"},{"nulls":1},{"nulls":1},{"nulls":1},{"nulls":1}]'
  # the FILE column's bounds: the canonical FILE JSON's first 64 bytes
  assert_equal "$(jq -c '.segments[2].stats[:6]' <<<"$output")" \
    '[{"nulls":1},{"nulls":1},{"nulls":0,"min":"put","max":"put"},{"nulls":1},{"nulls":1},{"nulls":1}]'
  assert_equal "$(jq -c --arg p "${f:0:64}" '.segments[2].stats[6] == {nulls: 0, min: $p, max: $p, max_cut: true}' <<<"$output")" true
}

@test "a registration served from the cache, current or pinned, still carries its statistics" {
  # fresh for the whole test, however slow the machine (the default TTL is
  # 5 s: a second resolve after it would ask the source again)
  export LAKE_CATALOG_TTL=3600
  printf 'i,s\n1,a\n2,b\n' | lake-query -q --import docs.m
  local want='[{"nulls":0,"min":1,"max":2},{"nulls":2},{"nulls":0,"min":"a","max":"b"},{"nulls":2},{"nulls":2},{"nulls":2},{"nulls":2}]'
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr env LAKE_TRACE=1 lake-catalog resolve docs.m
  assert_success
  [ "$(trace_lines source | grep -c ' resolve ')" -eq 1 ] || fail "not resolved by the source: $stderr"
  assert_equal "$(jq -c '.segments[0].stats' <<<"$output")" "$want"
  # fresh: from the cache, no call at all
  run --separate-stderr env LAKE_TRACE=1 lake-catalog resolve docs.m
  assert_success
  assert_equal "$(trace_count source)" 0
  assert_equal "$(jq -c '.segments[0].stats' <<<"$output")" "$want"
  # a pinned version comes from the registration cache on disk while it
  # is fresh, stats and all; after the TTL it is asked again (it may have
  # expired), stats and all
  run --separate-stderr env LAKE_TRACE=1 lake-catalog resolve docs.m --version 1
  assert_success
  run --separate-stderr env LAKE_TRACE=1 lake-catalog resolve docs.m --version 1
  assert_success
  if trace_lines source | grep -q ' resolve '; then fail "version 1 resolved again while fresh: $stderr"; fi
  assert_equal "$(jq -c '.segments[0].stats' <<<"$output")" "$want"
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 resolve docs.m --version 1
  assert_success
  assert_equal "$(trace_lines source | grep -c ' resolve docs.m version=1 ')" 1
  assert_equal "$(jq -c '.segments[0].stats' <<<"$output")" "$want"
  # and the rows read back as written
  run lake-query -c "SELECT i, s FROM docs.m ORDER BY i"
  assert_output $'1\ta\n2\tb'
}
