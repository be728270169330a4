#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Round trips through the embedded (file://) stage: lake-put then lake-get,
# to stdout and into -o DIR, compared with sha256sum and cmp; the fields of
# the FILE value; REFs as JSON rows; concurrent puts.

load helpers/common

setup() {
  common_setup
  mkdir -p "$T/in" "$T/out"
}

teardown() {
  common_teardown
}

# Check the FILE value in "$T/value" against the input file:
# check_value INPUT NAME (NAME "" means the value has no name field).
check_value() {
  local input=$1 name=$2 v loc path re
  v=$(cat "$T/value")
  # one JSON object on one line, nothing else on stdout
  assert_equal "$(wc -l <"$T/value")" 1
  jq -e 'type == "object"' <<<"$v" >/dev/null || fail "not a JSON object: $v"
  assert_equal "$(json_field size "$v")" "$(stat -c %s "$input")"
  assert_equal "$(json_field sha256 "$v")" "$(sha_of "$input")"
  if [ -n "$name" ]; then
    assert_equal "$(json_field name "$v")" "$name"
  else
    assert_equal "$(jq -r 'has("name")' <<<"$v")" false
  fi
  [[ $(json_field last_modified "$v") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] ||
    fail "last_modified is not an RFC 3339 UTC time: $v"
  # file://$LAKE_HOME/stage/files/YYYY/MM/<26 Crockford base-32 chars>,
  # YYYY/MM the UTC month of the put (taken before and after it)
  loc=$(json_field location "$v")
  re="^file://$STAGE/files/([0-9]{4}/[0-9]{2})/[0-9A-HJKMNP-TV-Z]{26}\$"
  [[ $loc =~ $re ]] || fail "location not of the form file://\$STAGE/files/YYYY/MM/<id>: $loc"
  [[ ${BASH_REMATCH[1]} == "$YM_BEFORE" || ${BASH_REMATCH[1]} == "$(date -u +%Y/%m)" ]] ||
    fail "location month ${BASH_REMATCH[1]} is not the month of the put: $loc"
  # the object is there under that name, byte for byte
  path=$(loc_path "$loc")
  assert_file_exists "$path"
  cmp "$input" "$path"
  assert_equal "$(files_under)" "$path"
}

# put INPUT from stdin with --name NAME, read it back every way, compare.
round_trip() {
  local input=$1 name=$2 v
  YM_BEFORE=$(date -u +%Y/%m)
  run_to "$T/value" lake-put --name "$name" <"$input"
  assert_clean_success
  check_value "$input" "$name"
  v=$(cat "$T/value")

  # to stdout, the FILE value as an argument
  run_to "$T/got" lake-get "$v"
  assert_clean_success
  cmp "$input" "$T/got"
  assert_equal "$(sha_of "$T/got")" "$(sha256sum <"$input" | cut -c1-64)"

  # to stdout, the bare location as an argument
  run_to "$T/got" lake-get "$(json_field location "$v")"
  assert_clean_success
  cmp "$input" "$T/got"

  # to stdout, the FILE value on stdin
  run_to "$T/got" lake-get <"$T/value"
  assert_clean_success
  cmp "$input" "$T/got"

  # into -o DIR: the file is named by the FILE value, nothing else appears
  run_to "$T/got" lake-get -o "$T/out" "$v"
  assert_clean_success
  assert_equal "$(stat -c %s "$T/got")" 0
  assert_equal "$(ls -A "$T/out")" "$name"
  cmp "$input" "$T/out/$name"
  assert_equal "$(sha_of "$T/out/$name")" "$(json_field sha256 "$v")"
}

@test "round trip: 0 bytes" {
  : >"$T/in/empty"
  round_trip "$T/in/empty" empty.bin
  assert_equal "$(json_field sha256 "$(cat "$T/value")")" \
    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
}

@test "round trip: 1 byte" {
  printf 'x' >"$T/in/one"
  round_trip "$T/in/one" one.txt
}

@test "round trip: binary with NUL bytes (all 256 byte values)" {
  for i in $(seq 0 255); do printf '%02x' "$i"; done | xxd -r -p >"$T/in/bin"
  printf '\0\0\0\0' >>"$T/in/bin"
  assert_equal "$(stat -c %s "$T/in/bin")" 260
  round_trip "$T/in/bin" data.bin
}

@test "round trip: 20 MiB of random data" {
  head -c 20M /dev/urandom >"$T/in/big"
  round_trip "$T/in/big" big.bin
  assert_equal "$(json_field size "$(cat "$T/value")")" 20971520
}

@test "put of a file argument: name is the base name, text is text/plain" {
  printf 'hello\n' >"$T/in/hello.txt"
  YM_BEFORE=$(date -u +%Y/%m)
  run_to "$T/value" lake-put "$T/in/hello.txt"
  assert_clean_success
  check_value "$T/in/hello.txt" hello.txt
  assert_equal "$(json_field content_type <"$T/value")" text/plain
  assert_equal "$(json_field sha256 <"$T/value")" \
    5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03
  run_to "$T/got" lake-get "$(cat "$T/value")"
  assert_clean_success
  cmp "$T/in/hello.txt" "$T/got"
}

@test "put from stdin without --name: no name field; -o DIR names the file by its key" {
  printf 'hello\n' >"$T/in/h"
  YM_BEFORE=$(date -u +%Y/%m)
  run_to "$T/value" lake-put <"$T/in/h"
  assert_clean_success
  check_value "$T/in/h" ""
  assert_equal "$(json_field content_type <"$T/value")" text/plain
  run_to "$T/got" lake-get -o "$T/out" <"$T/value"
  assert_clean_success
  local key
  key=$(basename "$(json_field location <"$T/value")")
  assert_equal "$(ls -A "$T/out")" "$key"
  cmp "$T/in/h" "$T/out/$key"
}

@test "--content-type is used as given" {
  printf 'hello\n' >"$T/in/h"
  run_to "$T/value" lake-put --content-type application/x-test <"$T/in/h"
  assert_clean_success
  assert_equal "$(json_field content_type <"$T/value")" application/x-test
}

@test "--size and --sha256 that match the input are accepted" {
  head -c 3000 /dev/urandom >"$T/in/r"
  run_to "$T/value" lake-put --size 3000 --sha256 "$(sha_of "$T/in/r")" <"$T/in/r"
  assert_clean_success
  assert_equal "$(json_field sha256 <"$T/value")" "$(sha_of "$T/in/r")"
  cmp "$T/in/r" "$(loc_path "$(json_field location <"$T/value")")"
}

@test "lake-put a b | lake-get -o out/ writes out/a and out/b, verified" {
  head -c 70000 /dev/urandom >"$T/in/a"
  printf 'second file\n' >"$T/in/b"
  cd "$T/in"
  run --separate-stderr bash -o pipefail -c 'lake-put a b | lake-get -o "$1/"' _ "$T/out"
  assert_clean_success
  assert_output ""
  assert_equal "$(ls -A "$T/out" | tr '\n' ' ')" "a b "
  cmp "$T/in/a" "$T/out/a"
  cmp "$T/in/b" "$T/out/b"
  assert_equal "$(files_under | wc -l)" 2
}

@test "lake-put a b prints one FILE value per input, in input order" {
  printf 'first\n' >"$T/in/a"
  head -c 5000 /dev/urandom >"$T/in/b"
  run --separate-stderr lake-put "$T/in/a" "$T/in/b"
  assert_clean_success
  assert_equal "${#lines[@]}" 2
  assert_equal "$(json_field name "${lines[0]}")" a
  assert_equal "$(json_field name "${lines[1]}")" b
  assert_equal "$(json_field sha256 "${lines[0]}")" "$(sha_of "$T/in/a")"
  assert_equal "$(json_field sha256 "${lines[1]}")" "$(sha_of "$T/in/b")"
  assert_not_equal "$(json_field location "${lines[0]}")" "$(json_field location "${lines[1]}")"
}

@test "a JSON row with one FILE field (an object) is a REF" {
  printf 'row payload\n' >"$T/in/p"
  local v
  v=$(lake-put --name p.txt <"$T/in/p")
  jq -cn --argjson d "$v" '{id: 7, title: "x", doc: $d}' >"$T/row"

  run_to "$T/got" lake-get "$(cat "$T/row")"
  assert_clean_success
  cmp "$T/in/p" "$T/got"

  run_to "$T/got" lake-get -o "$T/out" <"$T/row"
  assert_clean_success
  assert_equal "$(ls -A "$T/out")" p.txt
  cmp "$T/in/p" "$T/out/p.txt"
}

@test "a JSON row with one FILE field (JSON text, as a FILE column holds it) is a REF" {
  printf 'row payload as text\n' >"$T/in/p"
  local v
  v=$(lake-put --name p.txt <"$T/in/p")
  jq -cn --arg d "$v" '{id: 7, doc: $d, note: "not a file"}' >"$T/row"
  assert_equal "$(jq -r '.doc | type' <"$T/row")" string

  run_to "$T/got" lake-get "$(cat "$T/row")"
  assert_clean_success
  cmp "$T/in/p" "$T/got"

  run_to "$T/got" lake-get -o "$T/out" <"$T/row"
  assert_clean_success
  assert_equal "$(ls -A "$T/out")" p.txt
  cmp "$T/in/p" "$T/out/p.txt"
}

@test "a JSON row with two FILE fields is refused (65)" {
  printf 'one\n' >"$T/in/a"
  local v
  v=$(lake-put --name a <"$T/in/a")
  jq -cn --argjson d "$v" --arg t "$v" '{a: $d, b: $t}' >"$T/row"

  run --separate-stderr lake-get "$(cat "$T/row")"
  assert_error lake-get 65 "FILE values"
  assert_output ""

  run_to "$T/got" lake-get -o "$T/out" <"$T/row"
  assert_error lake-get 65 "stdin:1"
  assert_equal "$(ls -A "$T/out")" ""
}

@test "8 concurrent lake-puts get 8 distinct locations and all read back" {
  local i pids=()
  for i in 1 2 3 4 5 6 7 8; do
    { printf 'object %d\n' "$i"; head -c $((i * 100000)) /dev/urandom; } >"$T/in/$i"
  done
  for i in 1 2 3 4 5 6 7 8; do
    lake-put --name "n$i" <"$T/in/$i" >"$T/v.$i" 2>"$T/e.$i" 3>&- &
    pids+=($!)
  done
  for i in 1 2 3 4 5 6 7 8; do
    wait "${pids[$((i - 1))]}" || fail "lake-put $i failed: $(cat "$T/e.$i")"
    assert_equal "$(cat "$T/e.$i")" ""
  done
  assert_equal "$(cat "$T"/v.* | jq -r .location | sort -u | wc -l)" 8
  assert_equal "$(files_under | wc -l)" 8
  for i in 1 2 3 4 5 6 7 8; do
    assert_equal "$(json_field sha256 <"$T/v.$i")" "$(sha_of "$T/in/$i")"
    run_to "$T/got" lake-get "$(cat "$T/v.$i")"
    assert_clean_success
    cmp "$T/in/$i" "$T/got"
  done
  # and all at once, from stdin, into one directory
  cat "$T"/v.* | lake-get -o "$T/out"
  for i in 1 2 3 4 5 6 7 8; do cmp "$T/in/$i" "$T/out/n$i"; done
}

@test "a NULL FILE column is skipped, counted in one warning, on stdout, -o and --archive" {
  # lake(7)'s EXAMPLES: SELECT pdf ... | lake-get with some rows NULL
  lake-catalog create-namespace t
  lake-catalog create t.p 'id INTEGER, pdf FILE'
  printf 'one\n' >"$T/in/a"
  printf 'two\n' >"$T/in/b"
  lake-put --name a.txt --table t.p --set id=1 <"$T/in/a" >/dev/null
  lake-query -c "INSERT INTO t.p VALUES (2, NULL), (3, NULL)"
  lake-put --name b.txt --table t.p --set id=4 <"$T/in/b" >/dev/null
  lake-query -f jsonl -c "SELECT pdf FROM t.p ORDER BY id" >"$T/rows"
  assert_equal "$(sed -n 2p "$T/rows")" '{"pdf":null}'

  run_to "$T/got" lake-get <"$T/rows"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-get: 2 rows had no FILE (null): skipped"
  assert_equal "$(cat "$T/got")" "$(printf 'one\ntwo')"

  run_to "$T/got" lake-get -o "$T/out" <"$T/rows"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-get: 2 rows had no FILE (null): skipped"
  assert_equal "$(ls "$T/out")" "$(printf 'a.txt\nb.txt')"

  run_to "$T/got.tar" lake-get --archive <"$T/rows"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-get: 2 rows had no FILE (null): skipped"
  assert_equal "$(tar -tf "$T/got.tar")" "$(printf 'a.txt\nb.txt')"

  # one row, other columns beside it, a bare null; -q silences the count
  lake-query -f jsonl -c "SELECT id, pdf FROM t.p WHERE id = 2" >"$T/one"
  run_to "$T/got" lake-get "$(cat "$T/one")" null
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-get: 2 rows had no FILE (null): skipped"
  run_to "$T/got" lake-get "$(cat "$T/one")"
  assert_equal "$stderr" "lake-get: 1 row had no FILE (null): skipped"
  run_to "$T/got" lake-get -q <"$T/rows"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" ""

  # a row with no FILE and no null stays an error
  run --separate-stderr lake-get '{"id":2}'
  assert_error lake-get 65 "no FILE value in the row"
}

@test "-o DIR: duplicate names follow --archive's rule: a.txt, a.1.txt, a.2.txt; README.1" {
  local i
  for i in 1 2 3; do printf 'a%d\n' "$i" >"$T/in/a$i"; done
  {
    lake-put --name a.txt <"$T/in/a1"
    lake-put --name d/a.txt <"$T/in/a2"
    lake-put --name a.txt <"$T/in/a3"
    lake-put --name README <"$T/in/a1"
    lake-put --name README <"$T/in/a2"
  } >"$T/refs"
  run_to "$T/got" lake-get -o "$T/out" <"$T/refs"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "$(printf '%s\n' \
    "lake-get: a.txt: name already written; writing a.1.txt" \
    "lake-get: a.txt: name already written; writing a.2.txt" \
    "lake-get: README: name already written; writing README.1")"
  assert_equal "$(ls "$T/out" | LC_ALL=C sort)" "$(printf '%s\n' README README.1 a.1.txt a.2.txt a.txt)"
  cmp "$T/in/a1" "$T/out/a.txt"
  cmp "$T/in/a2" "$T/out/a.1.txt"
  cmp "$T/in/a3" "$T/out/a.2.txt"
  cmp "$T/in/a2" "$T/out/README.1"
}

# run_tty OUT CMD [ARG...]: CMD with stdout on a pseudo-terminal (its bytes
# to OUT), stdin from /dev/null, stderr captured; sets status, stderr,
# stderr_lines like run_to.
run_tty() {
  local out=$1 errf
  shift
  errf=$(mktemp "$T/.stderr.XXXXXX")
  status=0
  python3 - "$out" "$@" 2>"$errf" <<'PY' || status=$?
import os, pty, select, subprocess, sys
m, s = pty.openpty()
tty = os.ttyname(s)
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=s)
os.close(s)
got = b""
while True:
    r, _, _ = select.select([m], [], [], 0.2)
    if r:
        try:
            d = os.read(m, 65536)
        except OSError:
            d = b""
        if d:
            got += d
            continue
    if p.poll() is not None and not r:
        break
    if r and not d:
        break
open(sys.argv[1], "wb").write(got.replace(b"\r\n", b"\n"))
sys.exit(p.wait())
PY
  stderr=$(cat "$errf")
  mapfile -t stderr_lines <"$errf"
  rm -f "$errf"
}

@test "stdout a terminal: text is written, binary refused (64) unless -o -; a redirection takes anything" {
  printf 'hello terminal\n' >"$T/in/t.txt"
  printf 'PK\003\004\000\000bin\000ary' >"$T/in/b.zip"
  printf '%s\n' '{"a":1}' >"$T/in/j.json"
  local vt vb vj vx
  vt=$(lake-put "$T/in/t.txt")
  vb=$(lake-put "$T/in/b.zip")
  vj=$(lake-put "$T/in/j.json")
  vx=$(lake-put --content-type text/plain <"$T/in/b.zip")   # says text, holds a NUL

  run_tty "$T/got" lake-get "$vt"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(cat "$T/got")" "hello terminal"
  run_tty "$T/got" lake-get "$vj"
  assert_equal "exit $status" "exit 0"

  # the content type says binary: refused before any byte
  run_tty "$T/got" lake-get "$vb"
  assert_error lake-get 64 "refusing to write" "to a terminal" "-o DIR" "-o -"
  assert_equal "$(stat -c %s "$T/got")" 0
  # no content type to go by (a bare location), or a wrong one: the bytes decide
  run_tty "$T/got" lake-get "$(json_field location "$vb")"
  assert_error lake-get 64 "refusing to write binary data to a terminal"
  run_tty "$T/got" lake-get "$vx"
  assert_error lake-get 64 "refusing to write binary data to a terminal"
  # the first refusal stops the run, as any failure does
  run_tty "$T/got" lake-get "$vt" "$vb" "$vt"
  assert_error lake-get 64
  assert_equal "$(cat "$T/got")" "hello terminal"

  # -o - forces it, as curl's --output - does
  run_tty "$T/got" lake-get -o - "$vb"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" ""
  [ "$(stat -c %s "$T/got")" -ge 10 ]
  run --separate-stderr lake-get -o - --archive "$vb"
  assert_error lake-get 64 "-o and --archive"
  # not a terminal: no check at all
  run_to "$T/got" lake-get "$vb"
  assert_clean_success
  cmp "$T/in/b.zip" "$T/got"
}

# The modes of everything under DIR, "MODE PATH-BELOW-DIR" per line, sorted.
modes_under() {
  (cd "$1" && find . -mindepth 1 -printf '%m %p\n' | sort -k2)
}

@test "the embedded lake is its owner's alone whatever the umask: objects, segments and registry 0600 in 0700 directories (issue 41)" {
  local mask
  printf 'customer document\n' >"$T/in/doc"
  for mask in 022 000; do
    rm -rf "$LAKE_HOME"
    (
      umask "$mask"
      lake-put "$T/in/doc" >/dev/null
      lake-catalog create-namespace crm
      lake-catalog create crm.docs 'email TEXT'
      lake-query -c "INSERT INTO crm.docs VALUES ('ann@example.com')"
    )
    # something of each kind was made: objects, a segment, the registry
    [ -n "$(stage_objects)" ] && [ -n "$(find "$STAGE/tables" -type f)" ] && [ -f "$LAKE_HOME/registry.db" ] ||
      fail "umask $mask: not everything was made: $(modes_under "$LAKE_HOME")"
    assert_equal "umask $mask: $(find "$LAKE_HOME" -mindepth 1 \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \) | sort)" \
      "umask $mask: "
    assert_equal "$(stat -c %a "$LAKE_HOME")" 700
  done
}

@test "a stage directory made shared stays shared: a put's directories and objects take the root's modes, narrowed by the umask, never widened" {
  local root=$T/shared v
  mkdir -p "$root"
  chmod 2775 "$root"
  printf 'team file\n' >"$T/in/f"
  v=$( umask 002; LAKE_STAGE=file://$root lake-put "$T/in/f" )
  assert_equal "$(stat -c %a "$(loc_path "$(json_field location "$v")")")" 664
  assert_equal "$(stat -c %a "$root/files")" 2775
  # a umask narrows what the root allows
  v=$( umask 027; LAKE_STAGE=file://$root lake-put "$T/in/f" )
  assert_equal "$(stat -c %a "$(loc_path "$(json_field location "$v")")")" 640
}
