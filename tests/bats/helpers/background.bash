# SPDX-License-Identifier: BSD-2-Clause
# Background programs for the signal tests (interrupt.bats,
# query-cli.bats): start one, wait for a condition, reap it.  The caller's
# teardown kills $BG if it is still set.

# start_bg IN OUT ERR CMD...: CMD in the background, its stdin, stdout
# and stderr redirected there (a FIFO is opened by the background job, not
# by this shell), with SIGINT, SIGTERM and SIGHUP at their defaults (a
# non-interactive shell starts background jobs with SIGINT ignored, which
# the programs respect); its pid in BG.
start_bg() {
  local in=$1 out=$2 errf=$3
  shift 3
  perl -e '$SIG{$_} = "DEFAULT" for qw(INT TERM HUP); exec @ARGV or die' "$@" <"$in" >"$out" 2>"$errf" &
  BG=$!
}

# wait_bg: wait for it; its exit status in status.
# shellcheck disable=SC2034 # status is read by the suites, as bats' run sets it
wait_bg() {
  status=0
  wait "$BG" || status=$?
  BG=
}

# bg_cleanup: in teardown, a background program still running is killed
# and reaped, and the descriptors the suites write FIFOs through (4, 5)
# are closed.
bg_cleanup() {
  [ -z "${BG:-}" ] || { kill -KILL "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; } || true
  exec 4>&- 5>&- 2>/dev/null || true
}

# wait_for CMD...: until CMD succeeds (common.bash's wait_until).
wait_for() {
  wait_until "timed out waiting for: $*" "$@"
}

# run_together N CMD...: N copies of CMD started at the same moment (each
# waits on a FIFO, the starting gun, which is then fired for all at once),
# and waited for; copy I leaves its stdout in $T/out.I, its stderr in
# $T/err.I and its exit status in $T/rc.I.  Only these children are
# waited for (a test server may be a child too).
run_together() {
  local n=$1 gun=$T/gun gunfd i pids=()
  shift
  mkfifo "$gun"
  exec {gunfd}<>"$gun" # not fd 3: bats owns it
  for i in $(seq "$n"); do
    (
      read -r _ <"$gun"
      rc=0
      "$@" >"$T/out.$i" 2>"$T/err.$i" || rc=$?
      echo $rc >"$T/rc.$i"
    ) &
    pids+=($!)
  done
  sleep 0.3
  for i in $(seq "$n"); do echo go; done >&"$gunfd"
  wait "${pids[@]}"
  exec {gunfd}>&-
  rm -f "$gun"
}
