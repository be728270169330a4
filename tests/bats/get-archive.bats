#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-get --archive: one pax tar stream of the requested objects, read back
# with GNU tar: names, sizes and mtimes from the FILE values, unsafe and
# duplicate names, a corrupt object or a refused REF leaving a stream that
# tar reports as truncated, and the same round trip through an S3 stage.

load helpers/common
load helpers/rgw

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  mkdir -p "$T/in" "$T/out"
  export TZ=UTC
}

teardown() {
  s3_stop
  common_teardown
}

# Put the test objects; their FILE values go to $T/refs, in order.
put_objects() {
  printf 'nested\n' >"$T/in/a"
  : >"$T/in/empty"
  printf 'spaces and UTF-8: \xc3\xa4\xc3\xa9\n' >"$T/in/u"
  head -c 12M /dev/urandom >"$T/in/big"
  {
    lake-put --name dir/sub/a.txt <"$T/in/a"
    lake-put --name empty.bin <"$T/in/empty"
    lake-put --name 'my file ä é.txt' <"$T/in/u"
    lake-put --name big.bin <"$T/in/big"
  } >"$T/refs" || fail "lake-put failed"
  assert_equal "$(wc -l <"$T/refs")" 4
}

# Check $T/out.tar against the objects of put_objects, then extract it.
check_round_trip() {
  local i name size mtime v re='^-rw-r--r-- +[^ ]+ +([0-9]+) ([0-9-]+ [0-9:]+) (.*)$'
  run tar -tvf "$T/out.tar" --full-time
  assert_success
  assert_equal "${#lines[@]}" 4
  i=0
  while IFS= read -r v; do
    name=$(json_field name "$v")
    size=$(json_field size "$v")
    mtime=$(json_field last_modified "$v" | sed -E 's/T/ /; s/Z$//')
    # -rw-r--r-- 0/0 SIZE YYYY-MM-DD HH:MM:SS NAME
    [[ ${lines[$i]} =~ $re ]] ||
      fail "unexpected tar -tv line: ${lines[$i]}"
    assert_equal "${BASH_REMATCH[1]}" "$size"
    assert_equal "${BASH_REMATCH[2]}" "$mtime"
    assert_equal "$(printf '%b' "${BASH_REMATCH[3]}")" "$name"
    i=$((i + 1))
  done <"$T/refs"
  tar -xf "$T/out.tar" -C "$T/out" || fail "tar -x failed"
  cmp "$T/in/a" "$T/out/dir/sub/a.txt"
  cmp "$T/in/empty" "$T/out/empty.bin"
  cmp "$T/in/u" "$T/out/my file ä é.txt"
  cmp "$T/in/big" "$T/out/big.bin"
  assert_equal "$(find "$T/out" -type f | wc -l)" 4
}

@test "--archive: objects come back through tar -x byte for byte, with sizes and mtimes" {
  put_objects
  run_to "$T/out.tar" lake-get --archive <"$T/refs"
  assert_clean_success
  check_round_trip
  # a pax archive of whole 512-byte blocks, ending in two zero blocks
  assert_equal "$(($(stat -c %s "$T/out.tar") % 512))" 0
  assert_equal "$(tail -c 1024 "$T/out.tar" | tr -d '\0' | wc -c)" 0
}

@test "--archive: REFs as arguments and as lake-query -f jsonl rows" {
  put_objects
  mapfile -t refs <"$T/refs"
  run_to "$T/out.tar" lake-get --archive "${refs[@]}"
  assert_clean_success
  check_round_trip

  # rows with one FILE field each, as lake-query -f jsonl prints them
  rm -rf "$T/out" && mkdir "$T/out"
  jq -c '{id: 1, f: .}' <"$T/refs" >"$T/rows"
  run_to "$T/out.tar" lake-get --archive <"$T/rows"
  assert_clean_success
  check_round_trip
}

@test "--archive: a FILE value without last_modified gets the current time" {
  printf 'x\n' >"$T/in/x"
  local v before after m
  v=$(lake-put --name x.txt <"$T/in/x" | jq -c 'del(.last_modified)')
  before=$(date +%s)
  run_to "$T/out.tar" lake-get --archive "$v"
  after=$(date +%s)
  assert_clean_success
  m=$(tar -tvf "$T/out.tar" --full-time | awk '{print $4 " " $5}')
  m=$(date -d "$m" +%s)
  [ "$m" -ge "$before" ] && [ "$m" -le "$after" ] || fail "mtime $m not in [$before, $after]"
}

@test "--archive: duplicate names keep their extension: a.txt, a.1.txt, a.2.txt; README.1; d.1" {
  local i
  for i in 1 2 3; do printf 'a%d\n' "$i" >"$T/in/a$i"; done
  printf 'r\n' >"$T/in/r1"
  printf 'r2\n' >"$T/in/r2"
  {
    lake-put --name a.txt <"$T/in/a1"
    lake-put --name d/a.txt <"$T/in/a2"
    lake-put --name a.txt <"$T/in/a2"
    lake-put --name ./a.txt <"$T/in/a3"
    lake-put --name README <"$T/in/r1"
    lake-put --name README <"$T/in/r2"
    lake-put --name d <"$T/in/r1"
  } >"$T/refs"
  run_to "$T/out.tar" lake-get --archive <"$T/refs"
  assert_equal "exit $status" "exit 0"
  assert_equal "${stderr_lines[0]}" "lake-get: a.txt: name already in the archive; writing a.1.txt"
  assert_equal "${stderr_lines[1]}" "lake-get: ./a.txt: unsafe name in the archive; writing a.txt"
  assert_equal "${stderr_lines[2]}" "lake-get: a.txt: name already in the archive; writing a.2.txt"
  assert_equal "${stderr_lines[3]}" "lake-get: README: name already in the archive; writing README.1"
  assert_equal "${stderr_lines[4]}" "lake-get: d: name already in the archive; writing d.1"
  assert_equal "${#stderr_lines[@]}" 5
  run tar -tf "$T/out.tar"
  assert_success
  assert_output "$(printf '%s\n' a.txt d/a.txt a.1.txt a.2.txt README README.1 d.1)"
  tar -xf "$T/out.tar" -C "$T/out"
  cmp "$T/in/a1" "$T/out/a.txt"
  cmp "$T/in/a2" "$T/out/d/a.txt"
  cmp "$T/in/a2" "$T/out/a.1.txt"
  cmp "$T/in/a3" "$T/out/a.2.txt"
  cmp "$T/in/r1" "$T/out/README"
  cmp "$T/in/r2" "$T/out/README.1"
  cmp "$T/in/r1" "$T/out/d.1"
  # the same input gives the same names (deterministic), quietly with -q
  run_to "$T/again.tar" lake-get -q --archive <"$T/refs"
  assert_clean_success
  assert_equal "$(tar -tf "$T/again.tar")" "$(tar -tf "$T/out.tar")"
}

@test "--archive: unsafe names are made safe, with one warning each" {
  printf 'x\n' >"$T/in/x"
  printf 'y\n' >"$T/in/y"
  local key
  {
    lake-put --name ../../etc/x <"$T/in/x"
    lake-put --name /abs/y <"$T/in/y"
    lake-put --name '..' <"$T/in/y"
  } >"$T/refs"
  key=$(basename "$(sed -n 3p "$T/refs" | jq -r .location)")
  run_to "$T/out.tar" lake-get --archive <"$T/refs"
  assert_equal "exit $status" "exit 0"
  assert_equal "${#stderr_lines[@]}" 3
  assert_equal "${stderr_lines[0]}" "lake-get: ../../etc/x: unsafe name in the archive; writing etc/x"
  assert_equal "${stderr_lines[1]}" "lake-get: /abs/y: unsafe name in the archive; writing abs/y"
  assert_equal "${stderr_lines[2]}" "lake-get: ..: unsafe name in the archive; writing $key"
  run tar -tf "$T/out.tar"
  assert_success
  assert_output "$(printf '%s\n' etc/x abs/y "$key")"
  tar -xf "$T/out.tar" -C "$T/out"
  cmp "$T/in/x" "$T/out/etc/x"
  cmp "$T/in/y" "$T/out/abs/y"
  cmp "$T/in/y" "$T/out/$key"
  assert_equal "$(find "$T/out" -type f | wc -l)" 3
}

# Overwrite the first byte of the stage file of the FILE value $1 (same size).
# Change the object's first byte (to one it is not: flip_byte).
corrupt() {
  flip_byte "$(loc_path "$(json_field location "$1")")" 0
}

@test "--archive: a corrupt object aborts the stream (65) and tar reports it truncated" {
  put_objects
  corrupt "$(sed -n 3p "$T/refs")"
  run_to "$T/out.tar" lake-get --archive <"$T/refs"
  assert_error lake-get 65 "SHA-256 mismatch"
  run tar -tf "$T/out.tar"
  assert_failure
  assert_output --partial "Unexpected EOF"
  run tar -xf "$T/out.tar" -C "$T/out"
  assert_failure
  # the entries before it were complete
  cmp "$T/in/a" "$T/out/dir/sub/a.txt"
  [ ! -e "$T/out/big.bin" ] || fail "entries after the corrupt one were written"
}

@test "--archive: a corrupt first object whose size is a multiple of 512 still leaves tar failing" {
  head -c 4096 /dev/urandom >"$T/in/blk"
  local v
  v=$(lake-put --name blk <"$T/in/blk")
  corrupt "$v"
  run_to "$T/out.tar" lake-get --archive "$v"
  assert_error lake-get 65 "SHA-256 mismatch"
  run tar -xf "$T/out.tar" -C "$T/out"
  assert_failure
  # in a pipe, as a user runs it
  run bash -c 'lake-get --archive "$1" 2>/dev/null | tar -x -C "$2"' _ "$v" "$T/out"
  assert_failure
}

@test "--archive: a corrupt last object of a long stream: tar -x fails, lake-get exits 65" {
  put_objects
  corrupt "$(sed -n 4p "$T/refs")"
  run bash -c 'set -o pipefail; lake-get --archive <"$1" | tar -x -C "$2"; echo "status ${PIPESTATUS[*]}"' _ "$T/refs" "$T/out"
  assert_output --partial "status 65 2"
}

@test "--archive with --no-verify still checks the size the tar header states" {
  printf 'short\n' >"$T/in/s"
  local v
  v=$(lake-put --name s <"$T/in/s" | jq -c '.size = 100')
  run_to "$T/out.tar" lake-get --no-verify --archive "$v"
  assert_error lake-get 65 "6 bytes in the stage, not 100"
  run tar -tf "$T/out.tar"
  assert_failure
  v=$(lake-put --name s <"$T/in/s" | jq -c '.size = 2')
  run_to "$T/out.tar" lake-get --no-verify --archive "$v"
  assert_error lake-get 65 "more than the stated 2 bytes"
  run tar -tf "$T/out.tar"
  assert_failure
}

@test "--archive with -o is a usage error (64)" {
  run_to "$T/out.tar" lake-get --archive -o "$T/out" file:///x
  assert_error lake-get 64 "-o and --archive"
  assert_equal "$(stat -c %s "$T/out.tar")" 0
}

@test "--archive refuses to write to a terminal (64)" {
  printf 'x\n' >"$T/in/x"
  local v
  v=$(lake-put --name x <"$T/in/x")
  run script -qec "lake-get --archive '$v'; echo \"status \$?\"" /dev/null
  assert_output --partial "lake-get: refusing to write a tar stream to a terminal"
  assert_output --partial "status 64"
}

@test "--archive: a first REF outside the stage is 65 with nothing written" {
  printf 'x\n' >"$T/in/x"
  run_to "$T/out.tar" lake-get --archive "$(file_value_for file:///etc/passwd /etc/passwd)"
  assert_error lake-get 65 "outside the managed stage"
  assert_equal "$(stat -c %s "$T/out.tar")" 0
  run_to "$T/out.tar" lake-get --archive <<<"file://$STAGE/../etc/passwd"
  assert_error lake-get 65 "outside the managed stage"
  assert_equal "$(stat -c %s "$T/out.tar")" 0
}

@test "--archive: a bare location is refused (65) with nothing written" {
  printf 'x\n' >"$T/in/x"
  local v
  v=$(lake-put --name x <"$T/in/x")
  run_to "$T/out.tar" lake-get --archive "$(json_field location "$v")"
  assert_error lake-get 65 "bare location has no size"
  assert_equal "$(stat -c %s "$T/out.tar")" 0
}

@test "--archive: a REF outside the stage mid-stream ends the stream (65), tar reports it truncated" {
  put_objects
  sed -n 1p "$T/refs" >"$T/refs2"
  echo 'file:///etc/passwd' >>"$T/refs2"
  sed -n 2p "$T/refs" >>"$T/refs2"
  run_to "$T/out.tar" lake-get --archive <"$T/refs2"
  assert_error lake-get 65 "file:///etc/passwd: outside the managed stage"
  run tar -tf "$T/out.tar"
  assert_failure
  assert_output --partial "Unexpected EOF"
}

@test "--archive through an S3 stage: round trip, and a corrupt object aborts" {
  s3_start
  put_objects
  run_to "$T/out.tar" lake-get --archive <"$T/refs"
  assert_clean_success
  check_round_trip
  # a value whose digest does not match what the S3 object holds
  rm -rf "$T/out" && mkdir "$T/out"
  sed -n 1p "$T/refs" >"$T/refs2"
  sed -n 4p "$T/refs" | jq -c '.sha256 = ("0" * 64)' >>"$T/refs2"
  run_to "$T/out.tar" lake-get --archive <"$T/refs2"
  assert_error lake-get 65 "SHA-256 mismatch"
  run tar -xf "$T/out.tar" -C "$T/out"
  assert_failure
  cmp "$T/in/a" "$T/out/dir/sub/a.txt"
}
