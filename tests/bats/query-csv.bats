#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# CSV edges of lake-query --import (issue 15): each input is also read by
# the real sqlite3 command's `.import --csv` (into a new table, so its
# first line is the header), and the same SELECT of quote()s is compared.
# Where lake deliberately differs, lake-query(1) says so and the test
# expects lake's rule: an unquoted empty field is NULL in lake, '' in
# sqlite3; a blank line in a file of several columns is skipped by lake and
# a short record to sqlite3.  Also: --strict, CR-only line ends, records of
# another width, and an import of no rows (nothing appended, no version).
# Run embedded and remote (metasrv + radosgw) by tests/run.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
}

teardown() {
  source_teardown
}

version() { lake-catalog resolve "$1" | jq .version; }

# import_both NS.T COLS SQL-COLUMNS: $T/in.csv into the lake table NS.T
# (created with COLS) and into a new sqlite3 table t; LAKE and SQLITE are
# "SELECT SQL-COLUMNS" of each, tab-separated, one row per line.
import_both() {
  local table=$1 cols=$2 select=$3
  lake-catalog create "$table" "$cols"
  run --separate-stderr lake-query --import "$table" <"$T/in.csv"
  assert_success
  LAKE_STDERR=$stderr
  LAKE=$(lake-query -c "SELECT $select FROM $table")
  rm -f "$T/ref.db"
  sqlite3 "$T/ref.db" ".import --csv $T/in.csv t" 2>/dev/null
  SQLITE=$(sqlite3 -separator $'\t' "$T/ref.db" "SELECT $select FROM t")
}

# refused BYTES MESSAGE [OPTION...]: BYTES imported into d.p (with the
# options) exit 65 with exactly "lake-query: stdin: MESSAGE".
refused() {
  printf "$1" >"$T/in.csv"
  run --separate-stderr lake-query --import d.p "${@:3}" <"$T/in.csv"
  assert_failure 65
  assert_equal "$stderr" "lake-query: stdin: $2"
}

@test "a quote inside an unquoted field is data, as sqlite3 reads it; --strict refuses it naming the line" {
  printf 'place,note\n37°36'"'"'37.8"N 121°2'"'"'17.9"W,5" disk\nplain,"quoted ""x"""\n' >"$T/in.csv"
  import_both d.p 'place TEXT, note TEXT' 'quote(place), quote(note)'
  assert_equal "$LAKE_STDERR" "lake-query: d.p: 2 rows appended"
  assert_equal "$LAKE" $'\'37°36\'\'37.8"N 121°2\'\'17.9"W\'\t\'5" disk\'\n\'plain\'\t\'quoted "x"\''
  assert_equal "$LAKE" "$SQLITE"
  # --strict: RFC 4180 allows no quote there; 65, the line, nothing appended
  v0=$(version d.p)
  run --separate-stderr lake-query --import d.p --strict <"$T/in.csv"
  assert_failure 65
  assert_equal "$stderr" "lake-query: stdin: line 2: a quote inside an unquoted field"
  refused 'place,note\nok,1\n5" disk,2\n' "line 3: a quote inside an unquoted field" --csv --strict
  assert_equal "$(version d.p)" "$v0"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.p')" 2
  # well-formed CSV is the same under --strict
  printf 'place,note\n"a ""b""",c\n' | lake-query -q --import d.p --strict
  assert_equal "$(lake-query -c "SELECT note FROM d.p WHERE place = 'a \"b\"'")" c
}

@test "--strict goes with --import of CSV only (64)" {
  run --separate-stderr lake-query --strict -c 'SELECT 1'
  assert_failure 64
  [[ $stderr == *"--strict go with --import"* ]] || fail "$stderr"
  lake-catalog create d.p 'a TEXT'
  run --separate-stderr lake-query --import d.p --jsonl --strict </dev/null
  assert_failure 64
  [[ $stderr == *"--strict is for CSV"* ]] || fail "$stderr"
}

@test "a header and no newline: no rows, as sqlite3 reads it; nothing appended and no version" {
  printf 'a,b' >"$T/in.csv"
  import_both d.p 'a TEXT, b TEXT' 'quote(a), quote(b)'
  assert_equal "$LAKE_STDERR" "lake-query: d.p: no rows: nothing appended"
  assert_equal "$LAKE" ""
  assert_equal "$SQLITE" ""
  assert_equal "$(sqlite3 "$T/ref.db" "SELECT group_concat(name) FROM pragma_table_info('t')")" a,b
  assert_equal "$(version d.p)" 0
  assert_equal "$(lake-catalog resolve d.p | jq '.segments | length')" 0
}

@test "a one-column file whose only value is empty: one row, NULL in lake where sqlite3 reads ''" {
  for eol in '\n' '\r\n'; do
    printf "v${eol}${eol}" >"$T/in.csv"
    import_both d.one 'v TEXT' 'quote(v)'
    assert_equal "$LAKE_STDERR" "lake-query: d.one: 1 row appended"
    assert_equal "$LAKE" NULL
    assert_equal "$SQLITE" "''"
    lake-catalog drop d.one
  done
  # a quoted "" is the empty string in both
  printf 'v\n""\n' >"$T/in.csv"
  import_both d.one 'v TEXT' 'quote(v)'
  assert_equal "$LAKE" "''"
  assert_equal "$SQLITE" "''"
}

@test "an empty first record is a record, as sqlite3 reads it (its empty fields NULL in lake)" {
  printf 'a,b\n,\n1,2\n' >"$T/in.csv"
  import_both d.two 'a TEXT, b TEXT' 'quote(a), quote(b)'
  assert_equal "$LAKE" $'NULL\tNULL\n\'1\'\t\'2\''
  assert_equal "${LAKE//NULL/\'\'}" "$SQLITE"
  printf 'v\n\nx\n\n' >"$T/in.csv"
  import_both d.one 'v TEXT' 'quote(v)'
  assert_equal "$LAKE_STDERR" "lake-query: d.one: 3 rows appended"
  assert_equal "$LAKE" $'NULL\n\'x\'\nNULL'
  assert_equal "${LAKE//NULL/\'\'}" "$SQLITE"
}

@test "-f csv output of one column with NULL and '' first imports back unchanged" {
  lake-catalog create d.one 'v TEXT'
  lake-catalog create d.copy 'v TEXT'
  lake-query -c "INSERT INTO d.one VALUES (NULL), (''), ('x'), (NULL)"
  lake-query -H -f csv -c 'SELECT v FROM d.one' >"$T/out.csv"
  assert_equal "$(od -An -c "$T/out.csv" | tr -s ' ')" ' v \n \n " " \n x \n \n'
  lake-query -q --import d.copy <"$T/out.csv"
  assert_equal "$(lake-query -c 'SELECT quote(v) FROM d.copy')" "$(lake-query -c 'SELECT quote(v) FROM d.one')"
  assert_equal "$(lake-query -c 'SELECT quote(v) FROM d.copy')" $'NULL\n\'\'\n\'x\'\nNULL'
}

@test "quoted CRLF, a BOM header and a trailing empty line, beside sqlite3" {
  printf '\xef\xbb\xbfa,b\r\n"x\r\ny",2\r\n"lone\rcr",3\r\n' >"$T/in.csv"
  import_both d.p 'a TEXT, b TEXT' 'hex(a), quote(b)'
  assert_equal "$LAKE" $'780D0A79\t\'2\'\n6C6F6E650D6372\t\'3\''
  assert_equal "$LAKE" "$SQLITE"
  # a trailing empty line: skipped in a file of two columns (sqlite3 reads
  # it as a short record, '' and NULL, with a warning) ...
  printf 'a,b\n1,2\n\n' >"$T/in.csv"
  import_both d.q 'a TEXT, b TEXT' 'quote(a), quote(b)'
  assert_equal "$LAKE" $'\'1\'\t\'2\''
  assert_equal "$SQLITE" $'\'1\'\t\'2\'\n\'\'\tNULL'
  # ... a record in a file of one column, as in sqlite3
  printf 'v\r\nx\r\n\r\n' >"$T/in.csv"
  import_both d.r 'v TEXT' 'quote(v)'
  assert_equal "$LAKE" $'\'x\'\nNULL'
  assert_equal "${LAKE//NULL/\'\'}" "$SQLITE"
}

@test "CR-only line ends are 65 at the header, saying so; a lone CR in a field is data unless --strict" {
  lake-catalog create d.p 'a TEXT, b TEXT'
  refused 'a,b\r1,2\r' "line 1: header: a carriage return without a line feed (CR-only line ends are not read: end lines with LF or CRLF)"
  refused 'a,b\n1\r2,3\n' "line 2: a carriage return without a line feed outside quotes" --strict
  assert_equal "$(version d.p)" 0
  printf 'a,b\n1\r2,3\n' | lake-query -q --import d.p
  assert_equal "$(lake-query -c 'SELECT hex(a), b FROM d.p')" $'310D32\t3'
}

@test "a record with more or fewer fields than the header is 65 naming its line; nothing appended" {
  lake-catalog create d.p 'a TEXT, b TEXT'
  refused 'a,b\n1,2\n3,4,5\n' "line 3: 3 fields, but the header has 2"
  refused 'a,b\n1,2\n"two\nlines"\n' "line 3: 1 field, but the header has 2"
  assert_equal "$(version d.p)" 0
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.p')" 0
}

@test "an import or INSERT of no rows is not an error: exit 0, nothing appended, no version" {
  lake-catalog create d.p 'a TEXT, b INTEGER'
  printf 'a,b\nx,1\n' | lake-query -q --import d.p
  v0=$(version d.p)
  for cmd in "printf '' | lake-query --import d.p" \
    "printf 'a,b\n' | lake-query --import d.p --csv" \
    "printf 'a,b' | lake-query --import d.p" \
    "printf '\n\r\n' | lake-query --import d.p" \
    "printf '\n' | lake-query --import d.p --jsonl"; do
    run --separate-stderr bash -c "$cmd"
    assert_success
    assert_equal "$stderr" "lake-query: d.p: no rows: nothing appended"
    assert_equal "$(version d.p)" "$v0"
  done
  run --separate-stderr lake-query -q --import d.p </dev/null
  assert_success
  assert_equal "$stderr" ""
  run --separate-stderr lake-query -c "INSERT INTO d.p SELECT a, b FROM d.p WHERE b > 100"
  assert_success
  assert_equal "$(version d.p)" "$v0"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.p')" 1
}

@test "a NUL byte in a header name is 65 naming the line, quoted or not, never a shortened name; a NUL in a value is kept" {
  # the issue's example: h1<NUL>evil was taken as column h1, exit 0
  lake-catalog create d.p 'h1 TEXT, b TEXT'
  refused 'h1\0evil,b\nx,y\n' "line 1: header: a NUL byte in the name 'h1\\0evil'"
  refused '"h1\0evil",b\nx,y\n' "line 1: header: a NUL byte in the name 'h1\\0evil'"
  refused '\n\nb,h1\0\nx,y\n' "line 3: header: a NUL byte in the name 'h1\\0'"
  refused 'h1,\0\nx,y\n' "line 1: header: a NUL byte in the name '\\0'"
  assert_equal "$(version d.p)" 0
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.p')" 0
  # in a value a NUL byte is data, quoted or not, kept whole (lake-query(1))
  printf 'h1,b\nx\0y,"p\0q"\n' | lake-query -q --import d.p
  assert_equal "$(lake-query -c 'SELECT hex(h1), hex(b) FROM d.p')" $'780079\t700071'
}
