# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# bench/lib.sh - the set-up every benchmark shares; sourced, not run.
#
#   bench_init NAME        a private work dir ($work) removed on exit (kept with
#                          BENCH_KEEP=1), with the processes started by
#                          bench_spawn killed first
#   bench_spawn CMD...     start CMD in the background, killed on exit ($!)
#   knob VAR DEFAULT QUICK the value of env VAR, else QUICK under BENCH_QUICK=1,
#                          else DEFAULT: every size is a knob, so the whole
#                          `make bench` can be smoke-tested in minutes
#   median [FILE]          the median of the numbers, one a line
#   ratio A B              A / B with two decimals
#   result NAME LAKE PEER GOAL UNIT
#                          one figure for the report (bench/report): a line
#                          RESULT<TAB>name<TAB>lake<TAB>peer<TAB>ratio<TAB>goal<TAB>unit
#                          appended to $BENCH_RESULTS when it is set; PEER
#                          "-" when a figure has no peer (then ratio is "-")
#   bench_certs            a P-256 test certificate for 127.0.0.1, $work/{cert,key}.pem
#   free_port              an unused loopback port
#   wait_line FILE REGEX   wait (10 s at most) until FILE holds a line matching REGEX
#   metasrv_serve DB OUT [serve options...]
#                          a TLS lake-metasrv on an ephemeral loopback port;
#                          sets srv_url and srv_pid; its log goes to OUT.log
#                          with BENCH_KEEP=1, else nowhere
#   alternate ...          timed rounds of commands: T[NAME], RSS[NAME], and
#                          with alternate_pids CPU[NAME], SRV[NAME] (below)
#   cpu_of PID...          the CPU seconds those processes have used
#   wall CMD...            the wall seconds of CMD (its stdout dropped), to
#                          the microsecond
#   sig V                  V to three significant digits
set -eu
: "${LAKE_BIN:?set LAKE_BIN (make bench does)}"
LAKE_BIN=$(cd "$LAKE_BIN" && pwd)

bench_pids=()
bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bench_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -z "${work:-}" ] || [ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}

wall() {
  local t0=$EPOCHREALTIME
  "$@" >/dev/null
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f\n", b - a }'
}

sig() { awk -v v="$1" 'BEGIN { printf "%.3g", v }'; }

bench_init() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/lake-bench-$1.XXXXXX")
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_spawn() {
  "$@" &
  bench_pids+=($!)
}

knob() {
  local v=${!1:-}
  if [ -n "$v" ]; then
    printf '%s\n' "$v"
  elif [ -n "${BENCH_QUICK:-}" ] && [ "$BENCH_QUICK" != 0 ]; then
    printf '%s\n' "$3"
  else
    printf '%s\n' "$2"
  fi
}

median() {
  sort -g ${1:+"$1"} | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

result() {
  local name=$1 lake=$2 peer=$3 goal=$4 unit=$5 r=-
  [ "$peer" = - ] || r=$(ratio "$lake" "$peer")
  [ -z "${BENCH_RESULTS:-}" ] ||
    printf 'RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$lake" "$peer" "$r" "$goal" "$unit" >>"$BENCH_RESULTS"
}

bench_certs() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" \
    -out "$work/cert.pem" -days 2 -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    shuf -i 20000-60000 -n 1
}

wait_line() {
  for _ in $(seq 200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: $1: no '$2'" >&2
  exit 1
}

metasrv_serve() {
  local db=$1 out=$2 log=/dev/null
  shift 2
  [ -z "${BENCH_KEEP:-}" ] || log=$out.log
  [ -f "$work/cert.pem" ] || bench_certs
  bench_spawn "$LAKE_BIN/lake-metasrv" serve --db "$db" --listen 127.0.0.1:0 --tls-cert "$work/cert.pem" \
    --tls-key "$work/key.pem" "$@" >"$out" 2>"$log"
  # shellcheck disable=SC2034 # srv_pid and srv_url are the caller's (bench/load, bench/metasrv)
  srv_pid=$!
  wait_line "$out" '^listening'
  # shellcheck disable=SC2034 # (the same)
  srv_url=$(sed -n 's/^listening on //p' "$out")
}

# The CPU seconds (user + system) the processes PID... have used so far.
cpu_of() {
  local p tck
  tck=$(getconf CLK_TCK)
  for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null || true; done |
    awk -v tck="$tck" '{ sub(/^.*\) /, ""); t += $12 + $13 } END { printf "%.2f\n", t / tck }'
}

# alternate [-p PREP] NAME CMD [NAME CMD]...: $runs rounds, each running
# every CMD once in turn (PREP, untimed, and sync before every run), so a
# noisy neighbour slows them alike; sets T[NAME] to the median wall seconds
# and RSS[NAME] to the largest peak RSS (KiB) of the measured process tree,
# and prints both.  With alternate_pids set (the PIDs of a server the
# commands talk to), also CPU[NAME], the median CPU seconds (user + system)
# of the measured process tree, and SRV[NAME], the median CPU seconds those
# PIDs used during the run, and prints them too.
declare -A T=() RSS=() CPU=() SRV=()
# shellcheck disable=SC2086 # alternate_pids is a list of PIDs, split on purpose
alternate() {
  local prep=true k t m u s s0 names=() cmds=()
  if [ "$1" = -p ]; then prep=$2; shift 2; fi
  while [ $# -ge 2 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
  for k in "${!names[@]}"; do
    : >"$work/${names[k]}.t"; : >"$work/${names[k]}.rss"; : >"$work/${names[k]}.cpu"; : >"$work/${names[k]}.srv"
  done
  for _ in $(seq "${runs:?alternate needs runs}"); do
    for k in "${!names[@]}"; do
      bash -c "$prep"
      sync
      s0=$(cpu_of ${alternate_pids:-})
      /usr/bin/time -f '%e %M %U %S' -o "$work/time" bash -c "${cmds[k]}" >/dev/null
      awk -v a="$s0" -v b="$(cpu_of ${alternate_pids:-})" 'BEGIN { printf "%.2f\n", b - a }' >>"$work/${names[k]}.srv"
      read -r t m u s <"$work/time"
      echo "$t" >>"$work/${names[k]}.t"
      echo "$m" >>"$work/${names[k]}.rss"
      awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f\n", u + s }' >>"$work/${names[k]}.cpu"
    done
  done
  for k in "${!names[@]}"; do
    T[${names[k]}]=$(median "$work/${names[k]}.t")
    RSS[${names[k]}]=$(sort -n "$work/${names[k]}.rss" | tail -1)
    CPU[${names[k]}]=$(median "$work/${names[k]}.cpu")
    SRV[${names[k]}]=$(median "$work/${names[k]}.srv")
    printf '%-22s %8.2f s   peak RSS %7d KiB' "${names[k]}" "${T[${names[k]}]}" "${RSS[${names[k]}]}"
    [ -z "${alternate_pids:-}" ] || printf '   CPU %6.2f s, server CPU %6.2f s' "${CPU[${names[k]}]}" "${SRV[${names[k]}]}"
    printf '\n'
  done
}
