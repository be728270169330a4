# SPDX-License-Identifier: BSD-2-Clause
# Shared set-up for every bats suite: a fresh, private lake per test.
#   LAKE_BIN is the directory of the built programs (tests/run exports it).
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash
load /usr/lib/bats/bats-file/load.bash

common_setup() {
  : "${LAKE_BIN:?LAKE_BIN must point at the built programs}"
  PATH="$LAKE_BIN:$PATH"
  T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/lake-test.XXXXXX")
  export HOME="$T/home" XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data" \
         XDG_CACHE_HOME="$T/cache" LAKE_HOME="$T/lake"
  unset LAKE_CONFIG LAKE_STAGE LAKE_METASRV LAKE_TOKEN LAKE_TOKEN_FILE \
        LAKE_CACHE_DIR LAKE_TRACE LAKE_CATALOG_TTL LAKE_COMPACT_THRESHOLD LAKE_RETENTION
  mkdir -p "$HOME" "$XDG_CONFIG_HOME"
  STAGE="$LAKE_HOME/stage"
}

common_teardown() {
  [ -n "${T:-}" ] && rm -rf "$T"
}

# one field of a JSON object: json_field FIELD [JSON] (else JSON on stdin)
json_field() {
  if [ $# -gt 1 ]; then printf '%s' "$2" | jq -r ".$1"; else jq -r ".$1"; fi
}

# every regular file under the stage's files/ (final names only)
stage_objects() {
  find "$STAGE/files" -type f ! -name '.tmp-*' 2>/dev/null | sort
}

# run --separate-stderr (sets $stderr and $stderr_lines) needs bats >= 1.5.
bats_require_minimum_version 1.5.0

# Like bats' run --separate-stderr, but stdout goes to FILE so binary data
# (NUL bytes, MiBs) survives: run_to FILE CMD [ARG...]; the caller may
# redirect stdin.  Sets status, stderr and stderr_lines.
run_to() {
  local out=$1 errf
  shift
  errf=$(mktemp "$T/.stderr.XXXXXX")
  status=0
  "$@" >"$out" 2>"$errf" || status=$?
  stderr=$(cat "$errf")
  mapfile -t stderr_lines <"$errf"
  rm -f "$errf"
}

# The diagnostics contract of a failure: assert_error PROG CODE [TEXT...]
# exit status CODE, exactly one line on stderr, starting "PROG: " and
# containing each TEXT literally.
assert_error() {
  local prog=$1 code=$2 text
  shift 2
  assert_equal "exit $status" "exit $code"
  if [ "${#stderr_lines[@]}" -ne 1 ]; then
    fail "expected exactly one line on stderr, got ${#stderr_lines[@]}: $stderr"
  fi
  if [[ ${stderr_lines[0]} != "$prog: "* ]]; then
    fail "stderr does not start with '$prog: ': ${stderr_lines[0]}"
  fi
  for text in "$@"; do
    if [[ ${stderr_lines[0]} != *"$text"* ]]; then
      fail "stderr does not mention '$text': ${stderr_lines[0]}"
    fi
  done
}

# cache_rewrite FILE PY [ARG...]: a cache file of lines followed by
# "crc32 HEX" of them (the snapshot, the points) changed in place, its
# checksum made anew so that it stays valid: the Python statements PY edit
# `lines` (its lines as str, the checksum line left out; the ARGs in
# `args`).  How a test sets a time in the cache instead of waiting for it.
cache_rewrite() {
  python3 - "$@" <<'EOF'
import os, sys, zlib
path, code, args = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = open(path).read().split('\n')[:-2]
exec(code)
body = '\n'.join(lines) + '\n'
open(path + '.new', 'w').write(body + 'crc32 %08x\n' % zlib.crc32(body.encode()))
os.replace(path + '.new', path)
EOF
}

# Success with nothing on stderr (diagnostics only when something is wrong).
assert_clean_success() {
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" ""
}

# The path of a file:// location (tests use paths that need no escaping).
loc_path() {
  printf '%s\n' "${1#file://}"
}

# Every regular file below DIR (default: the stage), temporary ones too.
files_under() {
  find "${1:-$STAGE}" -type f 2>/dev/null | sort
}

# No object under any name below DIR (default: the stage).  Temporary names
# count too: the local stage writes O_TMPFILE files, which have no name at
# all, and this filesystem supports them (crash.bats checks that), so even a
# ".tmp-*" name would mean a leak.
assert_no_objects() {
  local left
  left=$(files_under "${1:-$STAGE}")
  if [ -n "$left" ]; then
    fail "expected no files under ${1:-$STAGE}, found: $left"
  fi
}

# The descriptor of lake-put (pid $1) open on an unnamed file in the stage
# (crash.bats, interrupt.bats), or nothing.  Linux shows an O_TMPFILE file
# as "DIR/#INODE (deleted)".
unnamed_stage_fd() {
  local fd target
  for fd in /proc/"$1"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    if [[ $target == "$STAGE/files/"*"/#"*" (deleted)" ]]; then
      printf '%s\n' "${fd##*/}"
      return 0
    fi
  done
}

# The file offset of descriptor $2 of process $1 (from /proc/PID/fdinfo).
fd_pos() {
  local k v
  while read -r k v; do
    if [ "$k" = pos: ]; then printf "%s\n" "$v"; return 0; fi
  done <"/proc/$1/fdinfo/$2" 2>/dev/null
}

# The SHA-256 of a file, as 64 lower-case hex digits.
sha_of() {
  sha256sum <"$1" | cut -c1-64
}

# A FILE value (JSON) for an arbitrary path, with its real size and digest,
# so that only containment can refuse it: file_value_for LOCATION PATH
file_value_for() {
  jq -cn --arg l "$1" --argjson s "$(stat -c %s "$2")" --arg h "$(sha_of "$2")" \
    '{location: $l, size: $s, sha256: $h, name: "x"}'
}

# Trace lines (LAKE_TRACE=1, DESIGN §10) in $stderr after run --separate-stderr.
# trace_lines KIND: the lines starting "trace: KIND " (KIND: source, stage).
trace_lines() {
  grep "^trace: $1 " <<<"$stderr" || true
}

# How many calls of KIND the command made: trace_count KIND
trace_count() {
  local n
  n=$(grep -c "^trace: $1 " <<<"$stderr") || true
  printf '%s\n' "${n:-0}"
}

# $stderr without its trace lines (the diagnostics proper).
untraced_stderr() {
  grep -v '^trace: ' <<<"$stderr" || true
}

# cache_file NAME: the one file NAME (snapshot, points) of this test's
# catalog cache ($XDG_CACHE_HOME/lake/<key>/NAME); fails unless exactly one.
cache_file() {
  local f
  f=("$XDG_CACHE_HOME"/lake/*/"$1")
  [[ ${#f[@]} -eq 1 && -f ${f[0]} ]] || fail "expected one $1 file, found: ${f[*]}"
  printf '%s\n' "${f[0]}"
}

# run --separate-stderr with LAKE_TRACE=1 for this command only.
run_traced() {
  run --separate-stderr env LAKE_TRACE=1 "$@"
}

# Exactly N calls to the source, and nothing else on stderr.
assert_calls() {
  assert_equal "source calls: $(trace_count source)" "source calls: $1"
  assert_equal "$(untraced_stderr)" ""
}

# The LAKE_TEST_*_HOLD knobs (interrupt.h's testHold): held_wait PATH PID
# ERRFILE waits until the process PID holds at PATH (PATH.held exists),
# failing with ERRFILE's text if PID ended first; held_release PATH PID
# lets it go on and waits for it, leaving its exit status in $HELD_STATUS.
held_wait() {
  while [ ! -e "$1.held" ]; do
    kill -0 "$2" 2>/dev/null || fail "the held command ended: $(cat "$3")"
    sleep 0.05
  done
}
# state_wait PID ERRFILE WHAT CMD...: wait until CMD... succeeds, failing
# with ERRFILE's text if process PID ended first (a state, not a time:
# bounded only so that a hung program cannot hang the suite; then PID is
# killed and the failure says it never WHAT).
state_wait() {
  local pid=$1 err=$2 what=$3 i
  shift 3
  for ((i = 0; i < 1200; i++)); do
    ! "$@" || return 0
    kill -0 "$pid" 2>/dev/null || fail "the command ended: $(cat "$err")"
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  fail "process $pid never $what: $(cat "$err")"
}
# poll_until CMD...: 0 once CMD... succeeds, 1 when it has not within
# 60 s (a guard against a hang, never a time a result depends on).
poll_until() {
  for _ in $(seq 1200); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}
# wait_until WHY CMD...: poll_until CMD..., else fail saying WHY (a WHY
# that shows a file as it is at the failure: poll_until ... || fail ...).
wait_until() {
  local why=$1
  shift
  poll_until "$@" || fail "$why"
}
# lines_at_least FILE N [ERE]: FILE has N lines (matching the extended
# regular expression ERE) or more.
lines_at_least() {
  [ "$(grep -cE -- "${3:-}" "$1" 2>/dev/null)" -ge "$2" ]
}
# has_open PID PATH: process PID has PATH open.
has_open() { [ "$(find "/proc/$1/fd" -lname "$2" 2>/dev/null)" != "" ]; }
# in_input_wait PID [TID]: thread TID (default: the main one) of process
# PID waits for input: in a read of a pipe or FIFO, or in poll(2), where
# liblake waits on a descriptor and lake_interrupt's wake-up together.
in_input_wait() {
  local w
  w=$(cat "/proc/$1/task/${2:-$1}/wchan" 2>/dev/null) || true
  [[ $w == *pipe_read || $w == *poll* ]]
}
# fd_open_wait PID PATH ERRFILE, read_wait PID ERRFILE: state_wait for
# those two states.
fd_open_wait() { state_wait "$1" "$3" "opened $2" has_open "$1" "$2"; }
read_wait() { state_wait "$1" "$2" "waited for input" in_input_wait "$1"; }
# shellcheck disable=SC2034 # HELD_STATUS is the suites' to read
held_release() {
  touch "$1"
  HELD_STATUS=0
  wait "$2" || HELD_STATUS=$?
}

# unit_exposure UNITFILE MAX: systemd-analyze security --offline rates the
# unit at most MAX (its level to fd 3, as a measured figure).
unit_exposure() {
  local unit=$1 max=$2 level out
  out=$(systemd-analyze security --offline=yes "$unit" 2>&1) || true
  level=$(sed -n "s/.*Overall exposure level for $(basename "$unit"): \([0-9.]*\).*/\1/p" <<<"$out")
  [ -n "$level" ] || fail "no exposure level: $out"
  echo "# exposure of $(basename "$unit") $level" >&3
  awk -v l="$level" -v m="$max" 'BEGIN { exit !(l <= m) }' || fail "exposure $level > $max: $out"
}

# flip_byte FILE OFFSET: change the byte at OFFSET to one it is not (a
# fixed byte written over random data changes nothing one time in 256).
flip_byte() {
  local byte
  byte=$(dd if="$1" bs=1 skip="$2" count=1 status=none | od -An -tu1 | tr -d ' ')
  printf '%b' "\\0$(printf '%03o' $(((byte + 1) % 256)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
