#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The whole day of a shell user (issue 7): a tree goes in through
# `lake-put --archive --table` as tar, zip, cpio, 7z and compressed tars, a
# query picks the rows, `lake-get --archive | tar -x` brings the tree back,
# and diff -r
# finds no difference; on the embedded lake and through an S3 stage
# advertised by a real lake-metasrv.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'path TEXT, f FILE'
  make_tree
}

teardown() {
  source_teardown
}

# $T/src: nested folders, empty files, names with spaces and UTF-8, a
# 12 MiB random file.  (Empty folders do not come back: they hold no object.)
make_tree() {
  local s="$T/src"
  mkdir -p "$s/2026/march" "$s/2025" "$s/with space"
  printf 'top\n' >"$s/readme.txt"
  : >"$s/2025/empty"
  printf 'deep\n' >"$s/2026/march/deep.txt"
  : >"$s/2026/march/empty two"
  printf 'naïve\n' >"$s/with space/ünïcödé — naïve.txt"
  head -c $((12 * 1024 * 1024)) /dev/urandom >"$s/2026/blob.bin"
}

# round_trip: put the archive on stdin into docs.scans, bring back the rows
# WHERE ($1) through lake-get --archive into $T/back, compare with $2.
round_trip() {
  local where=$1 want=$2
  rm -rf "$T/back"
  mkdir -p "$T/back"
  run bash -c "lake-query -f jsonl -c \"SELECT f FROM docs.scans WHERE $where\" | lake-get --archive | tar -C '$T/back' -x"
  assert_success
  run diff -r "$want" "$T/back"
  assert_success
}

@test "tar, zip, cpio, 7z, tar.zst, tar.xz, tar.bz2: in through --archive --table, out through --archive, diff -r clean" {
  local kind input
  for kind in tar zip cpio 7z tar.zst tar.xz tar.bz2; do
    lake-catalog drop docs.scans
    lake-catalog create docs.scans 'path TEXT, f FILE'
    case $kind in
      tar) tar -C "$T/src" -c . >"$T/in.$kind" ;;
      zip) (cd "$T/src" && zip -qr "$T/in.$kind" .) ;;
      cpio) (cd "$T/src" && find . -type f | cpio -o -H newc --quiet) >"$T/in.$kind" ;;
      7z) (cd "$T/src" && 7z a -bso0 -bsp0 "$T/in.$kind" . >/dev/null) ;;
      tar.zst) tar -C "$T/src" -c . | zstd -q >"$T/in.$kind" ;;
      tar.xz) tar -C "$T/src" -cJ . >"$T/in.$kind" ;;
      tar.bz2) tar -C "$T/src" -cj . >"$T/in.$kind" ;;
    esac
    # 7z keeps its index at its end: a named file; the others from a pipe
    if [ "$kind" = 7z ]; then input=("$T/in.$kind"); else input=(-); fi
    run --separate-stderr bash -c 'cat "$1" | lake-put --archive --table docs.scans "${@:2}"' _ "$T/in.$kind" "${input[@]}"
    assert_success
    assert_equal "${#lines[@]}" "$(find "$T/src" -type f | wc -l)"
    assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 1
    round_trip 1 "$T/src"
  done
  # a subtree by its path column: only 2026/ comes back
  mkdir -p "$T/want"
  cp -r "$T/src/2026" "$T/want/"
  round_trip "path LIKE '2026/%'" "$T/want"
  # the types detected for the entries (aside, in a batch) are those a
  # plain put of the same file gets
  local p t
  while IFS=$'\t' read -r p t; do
    assert_equal "$t" "$(lake-put -q "$T/src/$p" | jq -r .content_type)"
  done < <(lake-query -c "SELECT path, fl_get_content_type(f) FROM docs.scans")
  run lake-query -c "SELECT count(*), sum(fl_get_size(f)) FROM docs.scans"
  assert_output "6	$((12 * 1024 * 1024 + 4 + 5 + 7))"
}

@test "a 7z through a pipe is 65 saying so, before any entry is stored; standard input redirected from the file is read" {
  # 7z keeps its index at its end and libarchive reads it by seeking: a
  # pipe was 65 with libarchive's "Current client reader does not support
  # seeking a device", after the empty entries before it were stored
  mkdir -p "$T/small"
  : >"$T/small/empty"
  printf 'small\n' >"$T/small/a.txt"
  (cd "$T/small" && 7z a -bso0 -bsp0 "$T/small.7z" . >/dev/null)
  (cd "$T/src" && 7z a -bso0 -bsp0 "$T/in.7z" . >/dev/null)
  local z
  for z in small in; do
    run --separate-stderr bash -c 'cat "$1" | lake-put --archive --table docs.scans' _ "$T/$z.7z"
    assert_failure 65
    assert_output ""
    assert_equal "$stderr" "lake-put: stdin: a 7z archive cannot be read from a pipe (it is read by seeking to its index, at its end): name the file, or redirect standard input from it"
  done
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  run --separate-stderr lake-put --archive --table docs.scans - <"$T/in.7z"
  assert_success
  assert_equal "${#lines[@]}" "$(find "$T/src" -type f | wc -l)"
  round_trip 1 "$T/src"
}

@test "the objects live in the advertised stage, and gc keeps every one a table references" {
  tar -C "$T/src" -c . | lake-put -q --archive --table docs.scans >/dev/null
  stage=$(lake-catalog whoami --json | jq -er .stage)
  lake-query -f jsonl -c "SELECT f FROM docs.scans" | jq -e --arg s "$stage/files/" '.f.location | startswith($s)' >/dev/null ||
    fail "an object outside $stage"
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_output ""
  round_trip 1 "$T/src"
}
