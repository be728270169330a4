# SPDX-License-Identifier: BSD-2-Clause
# Helpers of the crash-safety suites (tests/bats/crash-*.bats): kill moments
# drawn from a seeded generator, logged so that a failure can be replayed.
# Load after helpers/common.
#
#   crash_seed              seed bash's RANDOM from LAKE_CRASH_SEED, else a
#                           fresh seed; logs "seed=N" (replay: LAKE_CRASH_SEED=N)
#   crash_log TEXT...       one line to $T/crash.log and to the TAP stream
#   crash_rand MAX          a number in [0, MAX] from the seeded generator
#   crash_sleep_ms MS       sleep MS milliseconds
#   crash_now_ms            the wall clock in milliseconds
#   crash_reap PID          wait for PID (a child); sets CRASH_RC (137: SIGKILL)
#   crash_sha_set FILE...   the SHA-256 of each FILE, one per line, sorted

crash_log() {
  printf '%s\n' "$*" >>"$T/crash.log"
  # fd 3 is bats' TAP stream: "# " lines show in the report of the run
  printf '# crash: %s\n' "$*" >&3 2>/dev/null || true
}

crash_seed() {
  CRASH_SEED=${LAKE_CRASH_SEED:-$(( $(date +%s%N) % 1000000007 ))}
  RANDOM=$CRASH_SEED
  crash_log "seed=$CRASH_SEED (replay with LAKE_CRASH_SEED=$CRASH_SEED)"
}

crash_rand() {
  printf '%s\n' $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) ))
}

crash_sleep_ms() {
  sleep "$(( $1 / 1000 )).$(printf '%03d' $(( $1 % 1000 )))"
}

crash_now_ms() {
  local t=${EPOCHREALTIME/./}
  printf '%s\n' $(( t / 1000 ))
}

# shellcheck disable=SC2034 # CRASH_RC is the suites'
crash_reap() {
  CRASH_RC=0
  wait "$1" || CRASH_RC=$?
}

crash_sha_set() {
  local f
  for f in "$@"; do sha_of "$f"; done | sort -u
}
