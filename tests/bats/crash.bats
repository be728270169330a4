#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# A lake-put killed with SIGKILL in the middle of a slow pipe leaves no
# object under a final name (DESIGN §4: temp file, fsync, rename).
#
# The local stage writes an O_TMPFILE file, which has no name until it is
# linked at commit.  A ".tmp-*" name would be tolerated only on a filesystem
# without O_TMPFILE; the test first checks that the put really holds an
# unnamed file (so O_TMPFILE works here) and then asserts that no file at all,
# temporary names included, is left in the stage.

load helpers/common

setup() {
  common_setup
  WRITER='' PUT=''
}

teardown() {
  # Never leave the slow writer (a sleep) or the put behind, even on failure.
  local p
  for p in $PUT $WRITER; do kill -9 "$p" 2>/dev/null || true; done
  for p in $PUT $WRITER; do wait "$p" 2>/dev/null || true; done
  common_teardown
}

# kill_mid_put BYTES MIN: pipe BYTES of data into lake-put, then stall; once
# the put holds its temporary file with at least MIN bytes written to it,
# and the writer has written everything and stalls, SIGKILL lake-put itself
# (not the shell, not the writer) and check what is left.  (A put reads in
# large buffers, so a few bytes may still sit in its buffer: MIN is what
# must have reached the file.)
kill_mid_put() {
  local bytes=$1 min=$2 fd pos='' i
  # $! of a background pipeline is its last process: lake-put.  The writer
  # records its own pid, then becomes the sleep (exec), so that pid is the
  # sleep's; it sleeps until killed (a sleep of N s would end the input,
  # and the put with it, if the machine took longer to get here).  fd 3 is
  # closed so bats never waits on these processes.
  { echo "$BASHPID" >"$T/writer.pid"; head -c "$bytes" /dev/urandom; exec sleep infinity; } 3>&- |
    lake-put >"$T/put.out" 2>"$T/put.err" 3>&- &
  PUT=$!
  # wait until the process exists and holds its unnamed temporary file with
  # at least MIN bytes written (its file offset), i.e. it is in the middle,
  # and the writer is the sleep (all its bytes are in the pipe: head may
  # still be writing when the put has MIN bytes, or not yet have exec'd
  # after 1 byte); 60 s at most, a guard against a hang
  for ((i = 0; i < 1200; i++)); do
    [ -n "$WRITER" ] || WRITER=$(cat "$T/writer.pid" 2>/dev/null || true)
    fd=$(unnamed_stage_fd "$PUT")
    if [ -n "$fd" ] && [ -n "$WRITER" ] && [ "$(cat "/proc/$WRITER/comm" 2>/dev/null)" = sleep ]; then
      pos=$(fd_pos "$PUT" "$fd")
      [ -n "$pos" ] && [ "$pos" -ge "$min" ] && break
    fi
    # (ended, it is a zombie until waited for: kill -0 would not tell)
    [[ $(cut -d' ' -f3 "/proc/$PUT/stat" 2>/dev/null) == [^Z] ]] || fail "lake-put ended: $(cat "$T/put.err")"
    sleep 0.05
  done
  [ -n "$WRITER" ] || WRITER=$(cat "$T/writer.pid")
  [ -z "$fd" ] || pos=$(fd_pos "$PUT" "$fd")
  [ -n "$fd" ] || fail "lake-put never opened an unnamed (O_TMPFILE) file in the stage"
  [ -n "$pos" ] && [ "$pos" -ge "$min" ] || fail "only ${pos:-no} bytes reached the temporary file"
  assert_equal "$(cat "/proc/$PUT/comm")" lake-put
  assert_equal "$(cat "/proc/$WRITER/comm")" sleep

  kill -9 "$PUT"
  # wait on a pipeline's pid waits for the whole pipeline: end the sleep too
  kill "$WRITER"
  local rc=0
  wait "$PUT" || rc=$?
  assert_equal "$rc" 137 # 128 + SIGKILL
  ! kill -0 "$PUT" 2>/dev/null || fail "lake-put $PUT still running"
  ! kill -0 "$WRITER" 2>/dev/null || fail "writer/sleep $WRITER still running"
  PUT='' WRITER=''

  # nothing printed, nothing under a final name, no temporary name either
  assert_equal "$(stat -c %s "$T/put.out")" 0
  assert_equal "$(cat "$T/put.err")" ""
  assert_dir_exists "$STAGE/files"
  assert_no_objects
}

@test "SIGKILL in the middle of a slow pipe (1 byte) leaves no object" {
  kill_mid_put 1 0
}

@test "SIGKILL in the middle of a slow pipe (9 MiB, 8 MiB written) leaves no object" {
  kill_mid_put $((9 * 1024 * 1024)) $((8 * 1024 * 1024))
}

@test "after a killed put the stage still works and holds only the new object" {
  kill_mid_put 1 0
  printf 'after\n' >"$T/after"
  run --separate-stderr lake-put "$T/after"
  assert_clean_success
  local path
  path=$(loc_path "$(json_field location "$output")")
  assert_equal "$(files_under)" "$path"
  cmp "$T/after" "$path"
}
