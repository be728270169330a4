#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# valgrind memcheck over the programs as users run them (issue 8, part 4):
# lake-put (a pipe and a file), lake-get, lake-catalog list and refresh
# over HTTPS from a real lake-metasrv, lake-query with an INSERT and a
# SELECT, and a lake-metasrv serve session, the server itself under
# valgrind until SIGTERM ends it.  Every process must end with 0 errors
# and 0 bytes definitely lost: "still reachable" memory (libcurl's, loaded
# with dlopen, and OpenSSL's and GnuTLS's global state) is not a leak.
# tests/valgrind.supp holds the suppressions, each with its reason.
#
# valgrind cannot run ASan binaries: in the SANITIZE=1 pass (LAKE_BIN is
# build-san/bin) the suite skips; the plain pass, which CI runs first,
# ran it on the same code.

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  if grep -qa __asan_init "$LAKE_BIN/lake-put"; then
    skip "valgrind cannot run ASan/UBSan binaries ($LAKE_BIN); the plain build's pass runs memcheck"
  fi
  command -v valgrind >/dev/null || fail "valgrind is not installed (make deps installs it)"
  # every program found on PATH runs under memcheck, one log per process
  VG_LOGS=$T/vg
  mkdir -p "$T/vgbin" "$VG_LOGS"
  local p
  for p in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    cat >"$T/vgbin/$p" <<SH
#!/bin/sh
exec valgrind -q --tool=memcheck --leak-check=full --show-leak-kinds=definite \\
  --errors-for-leak-kinds=definite --error-exitcode=99 --num-callers=40 --fair-sched=yes \\
  --suppressions="$LAKE_SRC/tests/valgrind.supp" --log-file="$VG_LOGS/$p.%p.log" \\
  "$LAKE_BIN/$p" "\$@"
SH
    chmod +x "$T/vgbin/$p"
  done
  PATH=$T/vgbin:$PATH
  # under memcheck a client's TLS handshake is some 30 times slower, and it
  # counts in the connect timeout (default 2 s)
  export LAKE_CONNECT_TIMEOUT=60
}

teardown() {
  metasrv_stop
  # a failed command's report, shown with the failure
  local f
  for f in "${VG_LOGS:-/nonexistent}"/*.log; do
    [ -s "$f" ] && { echo "# $(basename "$f"):"; sed 's/^/#   /' "$f"; }
  done
  common_teardown
}

# Every process run so far reported nothing (-q: a clean run logs nothing);
# prints how many were checked.
assert_memcheck_clean() {
  local logs n bad=
  logs=$(find "$VG_LOGS" -name '*.log' | sort)
  n=$(grep -c . <<<"$logs") || true
  [ "$n" -ge "$1" ] || fail "expected at least $1 processes under valgrind, found $n"
  for f in $logs; do
    [ -s "$f" ] && bad+="$(basename "$f"):"$'\n'"$(cat "$f")"$'\n'
  done
  [ -z "$bad" ] || fail "valgrind found errors or definite leaks:"$'\n'"$bad"
  echo "# $n processes under memcheck, clean" >&3
}

# run CMD: exit 0 and nothing on stderr, else fail showing stderr
ok() {
  run --separate-stderr "$@"
  assert_equal "$* -> exit $status: $stderr" "$* -> exit 0: "
}

@test "memcheck: lake-put from a pipe and from a file, lake-get back; an error path too" {
  head -c 300000 /dev/urandom >"$T/blob"
  run_to "$T/put1.json" sh -c 'cat "$1" | lake-put --name blob -' sh "$T/blob"
  assert_equal "exit $status: $stderr" "exit 0: "
  run_to "$T/put2.json" lake-put "$T/blob"
  assert_equal "exit $status: $stderr" "exit 0: "
  run_to "$T/got" lake-get "$(cat "$T/put1.json")" "$(jq -r .location "$T/put2.json")"
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_equal "$(sha_of "$T/got")" "$( (cat "$T/blob" "$T/blob") | sha256sum | cut -c1-64)"
  # a failure frees what it allocated too: a SHA-256 mismatch (65)
  run_to "$T/put3.json" lake-put --sha256 "$(printf '%064d' 0)" "$T/blob"
  assert_equal "exit $status" "exit 65"
  assert_memcheck_clean 4
}

@test "memcheck: lake-query INSERT and SELECT on the embedded lake" {
  ok lake-catalog create-namespace docs
  ok lake-catalog create docs.notes 'title TEXT, n INTEGER'
  ok lake-query -c "INSERT INTO docs.notes VALUES ('a', 1), ('b', 2)"
  ok lake-query -f csv -c 'SELECT title, n FROM docs.notes ORDER BY n'
  assert_output $'a,1\nb,2'
  assert_memcheck_clean 4
}

@test "memcheck: a lake-metasrv session (server under valgrind, SIGTERM) with catalog list/refresh, query INSERT/SELECT, put and get over HTTPS" {
  metasrv_init
  METASRV_START_WAIT=60 metasrv_start
  metasrv_use
  ok lake-catalog create-namespace docs
  ok lake-catalog create docs.papers 'title TEXT, pdf FILE'
  ok lake-catalog list
  assert_output $'docs\tpapers'
  ok lake-catalog refresh --force
  printf 'a paper' >"$T/paper.pdf"
  ok lake-put --table docs.papers --column pdf --set title=one "$T/paper.pdf"
  ok lake-query -c "INSERT INTO docs.papers (title) VALUES ('two')"
  ok lake-query -f jsonl -c "SELECT pdf FROM docs.papers WHERE title = 'one'"
  run_to "$T/got" lake-get "$output"
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_equal "$(cat "$T/got")" "a paper"
  # an error answer on the way: 403 for a user creating a table
  local alice
  alice=$(metasrv_token user alice)
  run --separate-stderr env LAKE_TOKEN_FILE="$alice" lake-catalog create docs.nope 'a TEXT'
  assert_equal "exit $status" "exit 77"

  # SIGTERM: the server drains and exits 0, and valgrind reports on it
  local pid=$METASRV_PID rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  METASRV_PID=
  assert_equal "lake-metasrv exit $rc: $(tail -3 "$T/srv/serve.log")" "lake-metasrv exit 0: $(tail -3 "$T/srv/serve.log")"
  [ -e "$VG_LOGS/lake-metasrv.$pid.log" ] || fail "the server did not run under valgrind"
  assert_memcheck_clean 12
}
