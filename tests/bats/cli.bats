#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# --help and --version of the programs (DESIGN §1: every program).

load helpers/common

setup() {
  common_setup
}

teardown() {
  common_teardown
}

@test "lake-put --help and -h print usage on stdout and exit 0" {
  local opt
  for opt in --help -h; do
    run --separate-stderr lake-put "$opt"
    assert_clean_success
    assert_line --index 0 --regexp '^usage: lake-put '
    assert_output --partial "--sha256"
    assert_output --partial "--size"
    assert_output --partial "--name"
  done
  assert_no_objects
}

@test "lake-get --help and -h print usage on stdout and exit 0" {
  local opt
  for opt in --help -h; do
    run --separate-stderr lake-get "$opt"
    assert_clean_success
    assert_line --index 0 --regexp '^usage: lake-get '
    assert_output --partial "--no-verify"
    assert_output --partial "-o"
  done
}

@test "--help wins over other arguments and reads no stdin" {
  run --separate-stderr lake-put --help /nonexistent </dev/null
  assert_clean_success
  assert_line --index 0 --regexp '^usage: lake-put '
  assert_no_objects
}

@test "--version: the program's version and git revision, then the libraries it links" {
  local prog lib want
  for prog in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    run --separate-stderr "$prog" --version
    assert_clean_success
    assert_equal "${#lines[@]}" 2
    # "lake-put 0.1.0" and, built from a git checkout, " (git abc1234[-dirty])"
    assert_line --index 0 --regexp "^$prog [0-9]+\.[0-9]+\.[0-9]+( \(git [0-9a-f]{7,}(-dirty)?\))?\$"
    if git -C "$LAKE_SRC" rev-parse HEAD >/dev/null 2>&1; then
      assert_line --index 0 --partial "(git $(git -C "$LAKE_SRC" rev-parse --short HEAD)"
    fi
    # "Name/version" words, libcurl (loaded at run time) last
    assert_line --index 1 --regexp '^([A-Za-z]+/[0-9][0-9A-Za-z.-]* )+libcurl/[0-9][0-9.]*$'
    for lib in OpenSSL SQLite cJSON; do
      assert_line --index 1 --partial "$lib/"
    done
    # each program names only what it links
    for lib in libarchive libmicrohttpd GnuTLS libpq; do
      case $prog:$lib in
        lake-put:libarchive | lake-get:libarchive | lake-metasrv:lib[mp]* | lake-metasrv:GnuTLS)
          want=1 ;;
        *) want=0 ;;
      esac
      if [ "$want" = 1 ]; then assert_line --index 1 --partial " $lib/"
      else refute_line --index 1 --partial "$lib/"; fi
    done
  done
  # the versions are the libraries' own
  run lake-put --version
  assert_line --index 1 --partial "SQLite/$(sqlite3 --version | cut -d' ' -f1)"
  assert_line --index 1 --partial "OpenSSL/$(openssl version | cut -d' ' -f2)"
}

@test "start-up: a listing and a query load neither libcrypto nor libmagic, a get no libmagic, a put no libarchive" {
  # (they cost a short command most of its start-up: lib/core/dlib.h)
  lake-catalog create-namespace ns
  lake-catalog create ns.t 'a TEXT'
  lake-catalog refresh
  LD_DEBUG=files lake-catalog list 2>"$BATS_TEST_TMPDIR/list.ld" >/dev/null
  LD_DEBUG=files lake-query -c 'SELECT 1' 2>"$BATS_TEST_TMPDIR/query.ld" >/dev/null
  run grep -E 'file=lib(crypto|magic)\.' "$BATS_TEST_TMPDIR/list.ld" "$BATS_TEST_TMPDIR/query.ld"
  assert_failure 1
  # a get hashes, and never detects a type
  printf 'hi\n' >"$BATS_TEST_TMPDIR/g.txt"
  fv=$(lake-put "$BATS_TEST_TMPDIR/g.txt")
  LD_DEBUG=files lake-get "$fv" 2>"$BATS_TEST_TMPDIR/get.ld" >/dev/null
  grep -q 'file=libcrypto\.so\.3 .*dynamically loaded' "$BATS_TEST_TMPDIR/get.ld"
  run grep 'file=libmagic' "$BATS_TEST_TMPDIR/get.ld"
  assert_failure 1
  # and the commands that need them load them: a put hashes and detects
  printf 'hello\n' >"$BATS_TEST_TMPDIR/f.txt"
  LD_DEBUG=files lake-put "$BATS_TEST_TMPDIR/f.txt" 2>"$BATS_TEST_TMPDIR/put.ld" >/dev/null
  grep -q 'file=libcrypto\.so\.3 .*dynamically loaded' "$BATS_TEST_TMPDIR/put.ld"
  grep -q 'file=libmagic\.so\.1 .*dynamically loaded' "$BATS_TEST_TMPDIR/put.ld"
  # libarchive only for an archive
  run grep 'file=libarchive' "$BATS_TEST_TMPDIR/put.ld"
  assert_failure 1
  (cd "$BATS_TEST_TMPDIR" && tar cf a.tar f.txt)
  LD_DEBUG=files lake-put --archive "$BATS_TEST_TMPDIR/a.tar" 2>"$BATS_TEST_TMPDIR/archive.ld" >/dev/null
  grep -q 'file=libarchive\.so\.13 .*dynamically loaded' "$BATS_TEST_TMPDIR/archive.ld"
}

@test "a missing option argument is 64" {
  run --separate-stderr lake-put --name
  assert_error lake-put 64 "--name"
  assert_output ""
  run --separate-stderr lake-get -o
  assert_error lake-get 64
  assert_output ""
}

@test "--help, --version and data written to a full stdout (/dev/full) exit 1 with one line" {
  local prog opt
  for prog in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    for opt in --help --version; do
      run --separate-stderr "$prog" "$opt"
      assert_success
      run --separate-stderr bash -c "$prog $opt >/dev/full"
      assert_error "$prog" 1 "stdout: No space left on device"
    done
  done
  lake-catalog create-namespace t
  lake-catalog create t.a 'id INTEGER, f FILE'
  printf 'x\n' >"$T/x"
  run --separate-stderr bash -c 'lake-put "$0" >/dev/full' "$T/x"
  assert_error lake-put 1 "stdout"
  ref=$(lake-put --table t.a --set id=1 "$T/x")
  run --separate-stderr bash -c 'lake-get "$0" >/dev/full' "$ref"
  assert_error lake-get 1 "stdout"
  run --separate-stderr bash -c 'lake-get --archive "$0" >/dev/full' "$ref"
  assert_error lake-get 1 "stdout"
  local f
  for f in tsv csv jsonl table; do
    run --separate-stderr bash -c "lake-query -f $f -c 'SELECT * FROM t.a' >/dev/full"
    assert_error lake-query 1 "stdout"
  done
  for opt in list "list --json" "show t.a" "resolve t.a" status whoami; do
    run --separate-stderr bash -c "lake-catalog $opt >/dev/full"
    assert_error lake-catalog 1 "stdout"
  done
}
