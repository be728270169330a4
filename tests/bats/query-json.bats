#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Strict JSON where lake reads it from users (issue 15, sections 1 and 2):
# --import --jsonl lines, lake-get REFs and to_file().  A \u0000 in a key
# or a TEXT value, a number outside RFC 8259, an invalid escape, a raw
# control character in a string, text after the value, a repeated key:
# 65 naming the line, nothing appended, never a shortened name or value.
# BLOBs travel through JSON as hex (lake-query(1)), so no BLOB needs
# \u0000.  Run embedded and remote (metasrv + radosgw) by tests/run.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace j
  lake-catalog create j.t 'k TEXT, i INTEGER, r REAL, s TEXT, b BLOB, foo TEXT'
}

teardown() {
  source_teardown
}

rows() { lake-query -c 'SELECT count(*) FROM j.t'; }
version() { lake-catalog resolve j.t | jq .version; }

# import_refused LINE: a good line, then LINE: 65 naming line 2, nothing
# appended (the table's version and rows unchanged)
import_refused() {
  local v
  v=$(version)
  printf '%s\n' '{"k":"good","i":1}' "$1" >"$T/in.jsonl"
  run --separate-stderr lake-query --import j.t --jsonl <"$T/in.jsonl"
  assert_error lake-query 65 "line 2" "${@:2}"
  assert_equal "$(rows) $(version)" "0 $v"
}

@test "--import --jsonl: \\u0000 in a key or a TEXT value is 65, never a shortened key or value" {
  # the issue's examples: "foo\u0000bar" was taken as column foo, "a\u0000b" stored as "a"
  import_refused '{"k":"x","foo\u0000bar":"v"}' '\u0000'
  import_refused '{"k":"x","s":"a\u0000b"}' '\u0000'
  import_refused '{"k":"a\u0000"}' '\u0000'
  import_refused '{"k":"x","b":"00\u0000ff"}' '\u0000'
  # a raw NUL byte in the line
  printf '{"k":"x","s":"a\0b"}\n' >"$T/nul.jsonl"
  run --separate-stderr lake-query --import j.t --jsonl <"$T/nul.jsonl"
  assert_error lake-query 65 "line 1" "raw control character"
  assert_equal "$(rows)" 0
  # a line of NUL bytes is not a blank line
  printf '{"k":"x"}\n\0\0\n' >"$T/nul.jsonl"
  run --separate-stderr lake-query --import j.t --jsonl <"$T/nul.jsonl"
  assert_error lake-query 65 "line 2" "not a JSON value"
  assert_equal "$(rows)" 0
  # an escaped backslash before u0000 is text, and a BLOB is hex
  printf '%s\n' '{"k":"\\u0000","b":"00ff00"}' | lake-query -q --import j.t
  run lake-query -c 'SELECT hex(k), hex(b) FROM j.t'
  assert_output $'5C7530303030\t00FF00'
}

@test "--import --jsonl: every number form RFC 8259 refuses is 65 naming the line" {
  local n
  for n in -01 012 00 1. -2. 0.e1 2.e3 -.123 +1 .5 0x1F 1e 1e+ - NaN Infinity -Infinity; do
    echo "# $n"
    import_refused "{\"k\":\"x\",\"r\":$n}" "malformed JSON"
    import_refused "{\"k\":\"x\",\"i\":$n}" "malformed JSON"
  done
  # the forms it allows
  printf '%s\n' '{"k":"a","i":-0,"r":0.5}' '{"k":"b","i":10,"r":1E+2}' '{"k":"c","i":0,"r":-1.5e-3}' |
    lake-query -q --import j.t
  run lake-query -c 'SELECT k, i, r FROM j.t ORDER BY k'
  assert_output $'a\t0\t0.5\nb\t10\t100.0\nc\t0\t-0.0015'
}

@test "--import --jsonl: invalid escapes, raw control characters, text after the object, repeated keys are 65" {
  import_refused '{"k":"\uqqqq"}' "invalid \\u escape"
  import_refused '{"k":"\x41"}' "invalid escape"
  import_refused '{"k":"\ud800"}' "lone surrogate"
  import_refused '{"k":"\udc00x"}' "lone surrogate"
  import_refused $'{"k":"a\tb"}' "raw control character"
  import_refused $'{"k":"a\x01b"}' "raw control character"
  import_refused $'{"k":"a\x1fb"}' "raw control character"
  import_refused '{"k":"x"} {"k":"y"}' "text after the value"
  import_refused '{"k":"x"}garbage' "text after the value"
  import_refused '{"k":"x",}' "malformed JSON"
  import_refused "{'k':'x'}" "malformed JSON"
  import_refused '{"k":"x","k":"y"}' "a key repeated"
  import_refused '{"k":"x","s":"1","s":"2"}' "a key repeated"
  import_refused '{"k":"x","K":"y"}' "twice"
  # valid escapes and a surrogate pair are text
  printf '%s\n' '{"k":"\t\"\\\/\b\f\n\r\u00e9\ud83d\ude00"}' | lake-query -q --import j.t
  run lake-query -c 'SELECT hex(k) FROM j.t'
  assert_output "$(printf '\t"\\/\b\f\n\ré😀' | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
}

@test "lake-get: a REF that is not strict JSON is 65 naming the line, nothing fetched" {
  printf 'hello\n' >"$T/a"
  local v loc
  v=$(lake-put --name a <"$T/a")
  loc=$(json_field location "$v")
  # the good REF works
  run --separate-stderr lake-get <<<"$v"
  assert_success
  assert_output hello
  local bad=(
    "{\"location\":\"$loc\\u0000x\"}"
    "{\"location\":\"$loc\",\"size\":06}"
    "{\"location\":\"$loc\",\"size\":6.}"
    "{\"location\":\"$loc\",\"size\":+6}"
    "{\"location\":\"$loc\",\"name\":\"\\uqqqq\"}"
    "{\"location\":\"$loc\",\"name\":\"a$(printf '\t')b\"}"
    "{\"location\":\"$loc\",\"name\":\"a$(printf '\001')b\"}"
    "{\"location\":\"$loc\"} x"
    "{\"location\":\"file:///etc/passwd\",\"location\":\"$loc\"}"
    "{\"f\":{\"location\":\"$loc\"},\"f\":null}"
  )
  local b
  for b in "${bad[@]}"; do
    echo "# $b"
    printf '%s\n%s\n' "$v" "$b" >"$T/refs"
    run_to "$T/got" lake-get <"$T/refs"
    assert_error lake-get 65 "stdin:2" "malformed JSON"
    assert_equal "$(cat "$T/got")" hello # the first REF, nothing of the second
    run --separate-stderr lake-get "$b"
    assert_equal "exit $status" "exit 65"
  done
  # a NUL byte in a line: the REF would be read only up to it
  printf '%s\0junk\n' "$v" >"$T/refs"
  run --separate-stderr lake-get <"$T/refs"
  assert_error lake-get 65 "stdin:1" "NUL byte"
  assert_output ""
}

@test "to_file() and a FILE column take strict JSON only" {
  lake-catalog create j.f 'f FILE'
  printf 'x\n' >"$T/x"
  local v loc
  v=$(lake-put <"$T/x")
  loc=$(json_field location "$v")
  local bad
  for bad in "{\"location\":\"$loc\",\"size\":2.}" "{\"location\":\"$loc\\u0000.evil\"}" \
             "{\"location\":\"$loc\",\"location\":\"$loc\"}" "{\"location\":\"$loc\"}x"; do
    echo "# $bad"
    # a FILE function given a bad value is bad input (65, lake-query(1))
    run --separate-stderr lake-query -c "SELECT to_file('$bad')"
    assert_error lake-query 65 "to_file: not a FILE value: malformed JSON"
    run --separate-stderr lake-query -c "INSERT INTO j.f VALUES ('$bad')"
    assert_error lake-query 65 "column f: not a FILE value: malformed JSON"
  done
  run --separate-stderr lake-query -c "SELECT to_file('$v' || char(0) || 'x')"
  assert_error lake-query 65 "to_file: not a FILE value: malformed JSON: text after the value"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM j.f')" 0
}
