#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-query's values and bad input (issue 6): every column type through
# INSERT, --import and SELECT; CSV quoting, embedded newlines and a BOM;
# bad input of every kind leaves the table's version and rows unchanged;
# a segment whose bytes fail their SHA-256 is refused and not cached;
# constraints evaluated inside the segments give SQLite's own answers.
# Run embedded and remote (metasrv + radosgw) by tests/run.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
  lake-catalog create d.every 'i INTEGER, r REAL, t TEXT, b BLOB, o BOOLEAN, ts TIMESTAMP, f FILE'
}

teardown() {
  source_teardown
}

version() { lake-catalog resolve "$1" | jq .version; }

# Every segment of the table lies in the stage the source advertises.
segments_in_stage() {
  local stage
  stage=$(lake-catalog whoami --json | jq -er .stage)
  lake-catalog resolve "$1" | jq -e --arg s "$stage/tables/" \
    '.segments | length > 0 and all(.location | startswith($s))' >/dev/null ||
    fail "segments outside $stage: $(lake-catalog resolve "$1")"
}

@test "every column type round-trips through INSERT and SELECT, NULLs and a BLOB with NUL bytes included" {
  printf 'data\n' >"$T/a.bin"
  f=$(lake-put "$T/a.bin")
  run --separate-stderr lake-query -c "INSERT INTO d.every VALUES
      (-9223372036854775808, -1.5e-300, 'ünï, \"q\"', X'00ff000a', true, '2026-12-02 10:00:00.25+01:00', '$f'),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
  assert_success
  segments_in_stage d.every
  run lake-query -f jsonl -c "SELECT i, r, t, b, o, ts, fl_get_size(f) AS size, typeof(b) AS kind, length(b) AS n FROM d.every ORDER BY i IS NULL"
  assert_line --index 0 '{"i":-9223372036854775808,"r":-1.5e-300,"t":"ünï, \"q\"","b":"00ff000a","o":1,"ts":"2026-12-02T09:00:00.25Z","size":5,"kind":"blob","n":4}'
  assert_line --index 1 '{"i":null,"r":null,"t":null,"b":null,"o":null,"ts":null,"size":null,"kind":"null","n":null}'
  # tsv prints the BLOB in hex too: no raw NUL bytes on stdout
  run lake-query -c "SELECT b FROM d.every WHERE b IS NOT NULL"
  assert_output 00ff000a
  # the FILE value comes back as it went in
  run lake-query -f jsonl -c "SELECT f FROM d.every WHERE f IS NOT NULL"
  assert_equal "$(jq -cS .f <<<"$output")" "$(jq -cS . <<<"$f")"
}

@test "exported rows import back unchanged (JSON Lines and CSV, BLOBs as hex)" {
  printf 'data\n' >"$T/a.bin"
  f=$(lake-put "$T/a.bin")
  lake-query -c "INSERT INTO d.every VALUES (42, 0.1, 'x,y', X'0001fe', false, '2026-01-01T00:00:00Z', '$f'), (NULL, NULL, '', X'', NULL, NULL, NULL)"
  lake-catalog create d.copy 'i INTEGER, r REAL, t TEXT, b BLOB, o BOOLEAN, ts TIMESTAMP, f FILE'
  lake-catalog create d.csv 'i INTEGER, r REAL, t TEXT, b BLOB, o BOOLEAN, ts TIMESTAMP'
  lake-query -f jsonl -c "SELECT * FROM d.every" | lake-query -q --import d.copy
  lake-query -H -f csv -c "SELECT i, r, t, b, o, ts FROM d.every" | lake-query -q --import d.csv
  q="SELECT i, r, t, hex(b), o, ts FROM %s ORDER BY i"
  want=$(lake-query -f jsonl -c "$(printf "$q" d.every)")
  assert_equal "$(lake-query -f jsonl -c "$(printf "$q" d.copy)")" "$want"
  # in CSV an empty field is NULL and "" the empty string, both ways
  assert_equal "$(lake-query -f jsonl -c "$(printf "$q" d.csv)")" "$want"
  run lake-query -c "SELECT count(*) FROM d.copy a JOIN d.every b ON a.f = b.f"
  assert_output 1
}

@test "CSV import: quotes, embedded newlines, CRLF line ends and a UTF-8 BOM" {
  lake-catalog create d.p 'title TEXT, year INTEGER'
  printf '\xef\xbb\xbftitle,year\r\n"two\nlines, and ""quotes""",2026\r\nplain,2025\r\n"",\r\n' >"$T/in.csv"
  run --separate-stderr lake-query --import d.p <"$T/in.csv"
  assert_success
  [[ $stderr == *"3 rows appended"* ]] || fail "$stderr"
  run lake-query -f jsonl -c "SELECT title, year FROM d.p ORDER BY year DESC NULLS LAST"
  assert_output $'{"title":"two\\nlines, and \\"quotes\\"","year":2026}\n{"title":"plain","year":2025}\n{"title":"","year":null}'
  assert_equal "$(version d.p)" 1
}

@test "bad input of every kind: the documented status, a one-line error, the version and rows unchanged" {
  lake-catalog create d.p 'title TEXT, year INTEGER'
  printf 'title,year\nkeep,1\n' | lake-query -q --import d.p
  local v0
  v0=$(version d.p)
  check() { # STATUS PATTERN COMMAND...: fails as said, changes nothing
    local want=$1 pattern=$2
    shift 2
    run --separate-stderr "$@"
    [ "$status" -eq "$want" ] || fail "$* exited $status, not $want: $stderr"
    [ "${#stderr_lines[@]}" -eq 1 ] || fail "not one line: $stderr"
    [[ $stderr == lake-query:*$pattern* ]] || fail "no '$pattern' in: $stderr"
    assert_equal "$(version d.p)" "$v0"
    assert_equal "$(lake-query -c 'SELECT group_concat(title) FROM d.p')" keep
  }
  check 65 "column year" lake-query -c "INSERT INTO d.p VALUES ('x', 'abc')"
  check 65 "column year" lake-query -c "INSERT INTO d.p VALUES ('ok', 1), ('bad', 1.5)"
  check 65 "syntax error" lake-query -c "INSERT INTO d.p VALUES ('x' 1)"
  check 66 "no such table" lake-query -c "INSERT INTO d.nope VALUES ('x', 1)"
  check 65 "line 3" bash -c "printf 'title,year\nok,1\nx,2,3\n' | lake-query --import d.p"
  check 65 "line 2" bash -c "printf 'title,year\nx,\"2\n' | lake-query --import d.p"
  check 65 "line 3" bash -c "printf 'title,year\nok,1\n\xff\xfe,2\n' | lake-query --import d.p --csv"
  check 65 "line 2" bash -c "printf '{\"title\":\"ok\"}\n{\"title\": \n' | lake-query --import d.p"
  check 65 "line 1" bash -c "printf '{\"title\":\"ok\",\"nope\":1}\n' | lake-query --import d.p --jsonl"
  check 65 "column b" bash -c "printf '{\"b\":\"0g\"}\n' | lake-query --import d.every"
}

@test "a segment whose bytes fail their SHA-256: 65, not used, not cached" {
  lake-catalog create d.p 'title TEXT, year INTEGER'
  printf 'title,year\na,1\nb,2\n' | lake-query -q --import d.p
  loc=$(lake-catalog resolve d.p | jq -er '.segments[0].location')
  sha=$(lake-catalog resolve d.p | jq -er '.segments[0].sha256')
  stage_corrupt "$loc"
  rm -rf "$XDG_CACHE_HOME/lake/segments"
  run --separate-stderr lake-query -c "SELECT count(title) FROM d.p"
  assert_failure 65
  [[ $stderr == *SHA-256* ]] || fail "$stderr"
  assert_equal "$output" ""
  run find "$XDG_CACHE_HOME" -name "$sha*"
  assert_output ""
  assert_equal "$(version d.p)" 1
}

@test "constraints pushed into the segments give SQLite's own answers" {
  lake-catalog create d.p 'title TEXT, year INTEGER, score REAL'
  printf 'title,year,score\nA,2024,1.5\nb,2025,\na,2026,3\nB,,2.5\nc,2025,10\n,2027,-1\n' |
    lake-query -q --import d.p
  local w queries=()
  for w in "year = 2025" "year = '2025'" "year > 2024 AND year <= 2026" "year < 2025" "year >= 2026" \
           "title = 'a'" "title = 'a' COLLATE NOCASE" "title > 'B'" "score > 2" "score = 10" \
           "year IN (2024, 2026)" "year IS NULL" "year IS NOT NULL AND score < 3" "title LIKE 'a'" \
           "score > '2'" "year = 2025.0" "rowid > 2" "1" "year = (SELECT max(year) FROM d.p)"; do
    queries+=("SELECT title, year, score FROM %s WHERE $w ORDER BY 1, 2, 3;")
  done
  lake_sql='' peer_sql=''
  for w in "${queries[@]}"; do
    # shellcheck disable=SC2059 # $w is a query template whose %s is the table
    lake_sql+=$(printf "$w" d.p)
    # shellcheck disable=SC2059 # $w is a query template whose %s is the table
    peer_sql+=$(printf "$w" peer)
  done
  run lake-query -f jsonl -c "$lake_sql"
  assert_success
  lake_out=$output
  run lake-query -f jsonl -c "CREATE TEMP TABLE peer(title TEXT, year INTEGER, score REAL); INSERT INTO peer SELECT * FROM d.p; ${peer_sql//d.p/peer}"
  assert_success
  assert_equal "$lake_out" "$output"
  [ -n "$lake_out" ] || fail "no rows at all"
  # a join on another table's column is not pushed (one scan, not one per row)
  run lake-query -c "SELECT count(*) FROM d.p a JOIN d.p b ON a.year = b.year"
  assert_output 7
}
