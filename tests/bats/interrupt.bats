#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# SIGINT, SIGTERM and SIGHUP (issue 14, core/interrupt.h): lake-get,
# lake-put and lake-catalog erase a progress bar, remove their temporary
# files, say "PROG: interrupted" in one line and die of the signal (a
# shell sees 128 + its number).  lake-query's own cases are in
# query-cli.bats.

load helpers/common
load helpers/background

setup() {
  common_setup
  BG='' SRV=''
}

teardown() {
  bg_cleanup
  if [ -n "$SRV" ]; then kill -CONT "$METASRV_PID" 2>/dev/null || true; metasrv_stop; fi
  common_teardown
}

@test "lake-get interrupted erases its progress bar, says so and dies of the signal; -o DIR keeps no partial file" {
  head -c $((5 * 1024 * 1024)) /dev/urandom >"$T/big"
  local f
  f=$(lake-put -q "$T/big")
  # a reader that takes 1 MiB and then stops reading: lake-get blocks mid-object
  mkfifo "$T/pipe"
  { head -c $((1024 * 1024)) >/dev/null; exec sleep 60; } <"$T/pipe" &
  local reader=$!
  start_bg /dev/null "$T/pipe" "$T/err" lake-get --progress "$f"
  wait_for grep -q 'big' "$T/err"
  kill -INT "$BG"
  wait_bg
  kill "$reader" 2>/dev/null || true
  assert_equal "exit $status" "exit 130"
  # the bar, then "erase the line", then the message on the cleared line
  [[ $(cat "$T/err") == *$'\r\e[K'"lake-get: interrupted" ]] || fail "bar not erased: $(cat -v "$T/err")"
  assert_equal "$(tail -c 22 "$T/err")" "lake-get: interrupted"
  # -o DIR: REFs from a pipe; interrupted while waiting for the second
  mkdir "$T/dir"
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  start_bg "$T/fifo" "$T/out" "$T/err" lake-get -o "$T/dir"
  exec 5>"$T/fifo"
  printf '%s\n' "$f" >&5
  wait_for test -s "$T/dir/big"
  kill -TERM "$BG"
  wait_bg
  exec 5>&-
  assert_equal "exit $status" "exit 143"
  assert_equal "$(cat "$T/err")" "lake-get: interrupted"
  assert_equal "$(ls -A "$T/dir")" big
  cmp "$T/big" "$T/dir/big"
}

# put_interrupted SIG STATUS: send SIG to the lake-put in the background
# (its input the FIFO on fd 4), reap it, and check that it died of it
# (STATUS), said so in one line and printed nothing.
put_interrupted() {
  kill -"$1" "$BG"
  wait_bg
  exec 4>&-
  assert_equal "exit $status" "exit $2"
  assert_equal "$(cat "$T/err")" "lake-put: interrupted"
  assert_equal "$(wc -c <"$T/out")" 0
}

@test "lake-put interrupted says so in one line, keeps no temporary segment and dies of the signal" {
  lake-catalog create-namespace t
  lake-catalog create t.e 'id INTEGER, f FILE'
  mkdir "$T/tmp"
  mkfifo "$T/fifo"
  TMPDIR="$T/tmp" start_bg "$T/fifo" "$T/out" "$T/err" lake-put --table t.e --column f --set id=1
  exec 4>"$T/fifo"
  head -c 100000 /dev/urandom >&4
  # the segment writer's temporary directory is there before the signal
  wait_for sh -c 'ls -A "$1" | grep -q .' _ "$T/tmp"
  put_interrupted HUP 129
  assert_equal "$(find "$T/tmp" -mindepth 1 | wc -l)" 0
  run lake-query -c "SELECT count(*) FROM t.e"
  assert_output 0
}

# True once lake-put $1 has written at least $2 bytes to its unnamed
# temporary file in the stage.
put_wrote() {
  local fd pos
  fd=$(unnamed_stage_fd "$1")
  [ -n "$fd" ] || return 1
  pos=$(fd_pos "$1" "$fd")
  [ -n "$pos" ] && [ "$pos" -ge "$2" ]
}

@test "lake-put of a pipe interrupted while its writer thread runs leaves no object and no temporary file" {
  mkfifo "$T/fifo"
  start_bg "$T/fifo" "$T/out" "$T/err" lake-put
  exec 4>"$T/fifo"
  # 8 MiB, eight times the put's ring (lake-put(1)): once every byte has
  # reached the unnamed file, the put waits for more, its writer thread
  # beside it
  head -c $((8 * 1024 * 1024)) /dev/urandom >&4
  wait_for put_wrote "$BG" $((8 * 1024 * 1024))
  assert_equal "$(awk '$1 == "Threads:" { print $2 }' "/proc/$BG/status")" 2
  put_interrupted INT 130
  assert_no_objects
}

@test "lake-catalog interrupted while it waits for a hung server says so and dies of the signal" {
  source "${BATS_TEST_DIRNAME}/helpers/metasrv.bash"
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  SRV=1
  lake-catalog create-namespace m
  kill -STOP "$METASRV_PID" # accepts connections (the kernel does), answers nothing
  LAKE_CONNECT_TIMEOUT=60 start_bg /dev/null "$T/out" "$T/err" lake-catalog refresh --force
  sleep 0.5
  kill -TERM "$BG"
  wait_bg
  assert_equal "exit $status" "exit 143"
  assert_equal "$(cat "$T/err")" "lake-catalog: interrupted"
  kill -CONT "$METASRV_PID"
  run lake-catalog list
  assert_success
}

@test "at a terminal the line is erased before the message (no ^C left in front of it)" {
  command -v script >/dev/null || skip "script(1) is not installed"
  # lake-get waits for REFs on the terminal that script(1) gives it; script
  # runs its command with $SHELL -c, and dash (CI's /bin/sh) forks for it
  # where bash would exec, so the exec is spelled out
  sleep 60 | SHELL=/bin/sh script -qec "exec lake-get" /dev/null >"$T/tty" 2>&1 &
  local scr=$! pid=
  wait_for pgrep -P "$scr" -x lake-get
  pid=$(pgrep -P "$scr" -x lake-get)
  kill -TERM "$pid"
  wait "$scr" || true
  [[ $(cat "$T/tty") == $'\r\e[K'"lake-get: interrupted"* ]] || fail "not erased first: $(cat -v "$T/tty")"
}

@test "lake-put --table interrupted after storing an object says, in the same line, that nothing was appended" {
  lake-catalog create-namespace t
  lake-catalog create t.e 'id INTEGER, f FILE'
  printf 'first' >"$T/a"
  mkfifo "$T/fifo"
  start_bg /dev/null "$T/out" "$T/err" lake-put --table t.e --column f --set id=1 "$T/a" "$T/fifo"
  exec 4>"$T/fifo"
  printf 'second, partly' >&4
  wait_for test -s "$T/out" # the first FILE value is printed once stored
  sleep 0.2
  kill -TERM "$BG"
  wait_bg
  exec 4>&-
  assert_equal "exit $status" "exit 143"
  assert_equal "$(cat "$T/err")" \
    "lake-put: interrupted; nothing appended to t.e (the 1 object stored stays unreferenced; lake-catalog gc removes them)"
  run lake-query -c "SELECT count(*) FROM t.e"
  assert_output 0
}
