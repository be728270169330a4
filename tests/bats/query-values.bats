#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Every value comes back exactly as it was written (DESIGN §6): NULL, ''
# and x'' are three values; the INTEGER and REAL extremes, TEXT with NUL
# bytes and invalid UTF-8 as a BLOB survive INSERT, --import --csv,
# --import --jsonl (but TEXT with a NUL, which JSON refuses: issue 15)
# and lake-put --table --set, and every output format
# writes them as lake-query(1) FORMATS says.  The reference for "what was
# written" is SQLite itself: the same values in a plain SQLite table of the
# same column types, read by the same SELECT (-0.0 included: a REAL
# column stores it as 0.0 there too).  tests/run runs this locally and
# against a metasrv with an S3 stage.

load helpers/common
load helpers/source

COLS='k TEXT, i INTEGER, r REAL, s TEXT, b BLOB'
# the matrix, one row per k
VALUES="('n', NULL, NULL, NULL, NULL),
 ('e', 0, 0.0, '', x''),
 ('mz', 0, -0.0, 'NULL', x'00'),
 ('max', 9223372036854775807, 1.7976931348623157e308, 'x'||char(0)||'y', x'00ff'),
 ('min', -9223372036854775808, 5e-324, '日本語 😀', x'ff'),
 ('sub', 1, 4.9e-324, 'tab'||char(9)||'nl'||char(10)||'cr'||char(13)||'.', x'c328'),
 ('dmin', -1, 2.2250738585072014e-308, 'q\"''\\,', x'80'),
 ('p1', 2, 0.1, ' lead ', x'0a'),
 ('tiny', 3, 1e-300, char(0), x'')"
LISTING="SELECT k, typeof(i), quote(i), typeof(r), quote(r), typeof(s), hex(s), length(CAST(s AS BLOB)), typeof(b), quote(b)"

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace v
  lake-catalog create v.t "$COLS"
  lake-catalog create v.c "$COLS"
  lake-catalog create v.p "$COLS, f FILE"
  # the reference: the same rows in plain SQLite
  EXPECTED=$(sqlite3 -separator $'\t' :memory: \
    "CREATE TABLE t($COLS); INSERT INTO t VALUES $VALUES; $LISTING FROM t ORDER BY k")
  [ "$(wc -l <<<"$EXPECTED")" -eq 9 ]
}

teardown() {
  source_teardown
}

listing() { # listing TABLE [WHERE]: the table's rows as the reference prints them
  lake-query -f tsv -c "$LISTING FROM $1 ${2:-} ORDER BY k"
}

@test "INSERT: NULL, '', x'', the INTEGER and REAL extremes, NUL in TEXT, bytes in a BLOB come back as written" {
  run --separate-stderr lake-query -c "INSERT INTO v.t VALUES $VALUES"
  assert_success
  run --separate-stderr listing v.t
  assert_success
  assert_output "$EXPECTED"
  # the three that were one: NULL, '' and x''
  run lake-query -c "SELECT quote(s), quote(b) FROM v.t WHERE k IN ('n', 'e') ORDER BY k DESC"
  assert_output $'NULL\tNULL\n\'\'\tX\'\''
  # a REAL column keeps -0.0 as 0.0 (SQLite stores whole REALs as integers)
  run lake-query -c "SELECT r FROM v.t WHERE k = 'mz'"
  assert_output '0.0'
}

@test "-f csv then --import --csv gives back every value" {
  lake-query -q -c "INSERT INTO v.t VALUES $VALUES"
  run_to "$T/out.csv" lake-query -H -f csv -c "SELECT k, i, r, s, b FROM v.t"
  assert_equal "$status" 0
  run --separate-stderr lake-query --import v.c --csv <"$T/out.csv"
  assert_success
  [[ $stderr == *"9 rows appended"* ]]
  run listing v.c
  assert_output "$EXPECTED"
}

@test "-f jsonl then --import --jsonl gives back every value but TEXT with a NUL, which JSON refuses" {
  lake-query -q -c "INSERT INTO v.t VALUES $VALUES"
  run_to "$T/out.jsonl" lake-query -f jsonl -c "SELECT k, i, r, s, b FROM v.t ORDER BY k"
  assert_equal "$status" 0
  # TEXT with U+0000 is written as \u0000, which --import refuses (no
  # TEXT from JSON holds a NUL): the line is named, nothing appended
  local line
  line=$(grep -n 'u0000' "$T/out.jsonl" | head -1 | cut -d: -f1)
  [ -n "$line" ]
  run --separate-stderr lake-query --import v.c --jsonl <"$T/out.jsonl"
  assert_error lake-query 65 "line $line" '\u0000'
  assert_equal "$(lake-query -c 'SELECT count(*) FROM v.c')" 0
  # every other row comes back as written
  grep -v 'u0000' "$T/out.jsonl" >"$T/nonul.jsonl"
  run --separate-stderr lake-query --import v.c --jsonl <"$T/nonul.jsonl"
  assert_success
  run listing v.c
  assert_output "$(grep -Ev $'^(max|tiny)\t' <<<"$EXPECTED")"
  # integers are exact beyond 2^53, 2.0 and -0.0 stay REAL
  printf '%s\n' '{"k":"j","i":9007199254740993,"r":2.0,"s":"2.0"}' \
    '{"k":"m","i":-0,"r":-0.0,"s":"a\u0001b\u007f","b":""}' | lake-query -q --import v.c
  run lake-query -c "SELECT k, quote(i), typeof(r), quote(r), hex(s), quote(b) FROM v.c WHERE k IN ('j', 'm') ORDER BY k"
  assert_output $'j\t9007199254740993\treal\t2.0\t322E30\tNULL\nm\t0\treal\t0.0\t6101627F\tX\'\''
}

@test "hand-written CSV: an unquoted empty field is NULL, a quoted one '' or x''" {
  printf 'k,i,r,s,b\nq,,,,\nw,0,0,"",""\nz,-9223372036854775808,4.9e-324,"a\0b",00ff\n' >"$T/in.csv"
  run --separate-stderr lake-query --import v.c <"$T/in.csv"
  assert_success
  run lake-query -c "SELECT k, quote(i), quote(r), quote(s), hex(s), quote(b) FROM v.c ORDER BY k"
  assert_output $'q\tNULL\tNULL\tNULL\t\tNULL\nw\t0\t0.0\t\'\'\t\tX\'\'\nz\t-9223372036854775808\t4.94065645841247e-324\t\'a\'\t610062\tX\'00FF\''
}

@test "lake-put --table --set: '' and x'' are not NULL; a column no --set names is NULL" {
  printf 'x' >"$T/a"
  run --separate-stderr lake-put --table v.p --set k=e --set i=0 --set r=0.0 --set s= --set b= "$T/a"
  assert_success
  lake-put -q --table v.p --set k=max --set i=9223372036854775807 --set r=1.7976931348623157e308 \
    --set b=00ff "$T/a" >/dev/null
  lake-put -q --table v.p --set k=min --set i=-9223372036854775808 --set r=5e-324 \
    --set 's=日本語 😀' --set b=ff "$T/a" >/dev/null
  lake-put -q --table v.p --set k=n "$T/a" >/dev/null
  run lake-query -c "SELECT k, quote(i), quote(r), quote(s), quote(b) FROM v.p ORDER BY k"
  assert_output "$(sqlite3 -separator $'\t' :memory: "CREATE TABLE t($COLS);
    INSERT INTO t VALUES ('e', 0, 0.0, '', x''), ('max', 9223372036854775807, 1.7976931348623157e308, NULL, x'00ff'),
      ('min', -9223372036854775808, 5e-324, '日本語 😀', x'ff'), ('n', NULL, NULL, NULL, NULL);
    SELECT k, quote(i), quote(r), quote(s), quote(b) FROM t ORDER BY k")"
}

@test "every output format writes NULL, '', x'', NUL, bytes and REALs as documented" {
  lake-query -q -c "INSERT INTO v.t VALUES ('1', NULL, NULL, NULL, NULL), ('2', 0, -0.0, '', x''),
    ('3', 9223372036854775807, 1.7976931348623157e308, 'a'||char(0)||'b', x'ff00'), ('4', 1, 0.1, 'c,d'||char(10)||'e', x'')"
  local q="SELECT i, r, s, b FROM v.t ORDER BY k"
  run_to "$T/out" lake-query -f tsv -c "$q"
  assert_equal "$(cat -A "$T/out")" \
'^I^I^I$
0^I0.0^I^I$
9223372036854775807^I1.7976931348623157e+308^Ia\0b^Iff00$
1^I0.1^Ic,d\ne^I$'
  run_to "$T/out" lake-query -f csv -c "$q"
  assert_equal "$(cat -A "$T/out")" \
',,,$
0,0.0,"",""$
9223372036854775807,1.7976931348623157e+308,"a^@b",ff00$
1,0.1,"c,d$
e",""$'
  run lake-query -f jsonl -c "$q"
  assert_output '{"i":null,"r":null,"s":null,"b":null}
{"i":0,"r":0.0,"s":"","b":""}
{"i":9223372036854775807,"r":1.7976931348623157e+308,"s":"a\u0000b","b":"ff00"}
{"i":1,"r":0.1,"s":"c,d\ne","b":""}'
  run lake-query -f json -c "$q LIMIT 2"
  assert_output '[
{"i":null,"r":null,"s":null,"b":null},
{"i":0,"r":0.0,"s":"","b":""}
]'
  run lake-query -f table -c "$q"
  assert_output 'i                    r                        s       b
-------------------  -----------------------  ------  ----
                                                      
0                    0.0                              
9223372036854775807  1.7976931348623157e+308  a\0b    ff00
1                    0.1                      c,d\ne  '
  # an expression keeps the sign of zero; REALs show that they are REALs
  run lake-query -f jsonl -c "SELECT -0.0 AS z, 2.0 AS two, 5e-324 AS sub, 1e-300 AS tiny, x'' AS eb, '' AS e"
  assert_output '{"z":-0.0,"two":2.0,"sub":4.94065645841247e-324,"tiny":1e-300,"eb":"","e":""}'
  run lake-query -f csv -c "SELECT -0.0, 2.0, 2.2250738585072014e-308, NULL, ''"
  assert_output '-0.0,2.0,2.2250738585072014e-308,,""'
}

@test "-f table: widths count terminal columns (CJK, emoji); control characters are escaped" {
  run lake-query -f table -c "SELECT '日本語' AS w, 'x' AS n UNION ALL SELECT '😀a', 'y' UNION ALL SELECT 'abcdefg', 'z'"
  assert_output 'w        n
-------  -
日本語   x
😀a      y
abcdefg  z'
  run lake-query -f table -c "SELECT 'a'||char(10)||'b'||char(9)||'c' AS s, char(13)||char(27)||char(127)||char(133) AS k, 1 AS n"
  assert_output 's        k               n
-------  --------------  -
a\nb\tc  \r\x1b\x7f\x85  1'
}
