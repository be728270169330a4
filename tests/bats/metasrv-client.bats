#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The remote CatalogSource against a real lake-metasrv (issue 4), beyond
# the catalog suites' parity runs: what a command costs, counted at the
# server (/v1/metrics); an outage answered at once from the last good
# generation; read-your-writes through sourceOpen (the C unit test against
# this server); TLS verification; --insecure-listen on loopback (refused
# off it: security.bats); and
# remote-mode configuration errors (78) that never fall back to, or even
# read, the embedded registry.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  PLAIN_PID=
}

teardown() {
  [ -z "${METASRV_PID:-}" ] || kill -CONT "$METASRV_PID" 2>/dev/null || true
  if [ -n "${PLAIN_PID:-}" ]; then
    kill -TERM "$PLAIN_PID" 2>/dev/null || true
    wait "$PLAIN_PID" 2>/dev/null || true
  fi
  metasrv_stop
  common_teardown
}

# A second server over the same registry, plain http:// on loopback
# (--insecure-listen): sets PLAIN_PID and PLAIN_URL.
plain_start() {
  lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 --insecure-listen \
    >"$T/plain.out" 2>"$T/plain.log" 3>&- &
  PLAIN_PID=$!
  local _
  for _ in $(seq 200); do
    grep -q '^listening on ' "$T/plain.out" && break
    sleep 0.025
  done
  PLAIN_URL=$(sed -n 's/^listening on //p' "$T/plain.out")
}

now_ms() {
  echo $(($(date +%s%N) / 1000000))
}

# Every request the server counted, whatever the action, but metrics.
requests_counted() {
  metasrv_curl "$ADMIN" "$METASRV_URL/v1/metrics" |
    awk '/^lake_requests_total/ && !/action="metrics"/ { n += $2 } END { print n + 0 }'
}

@test "a fresh cache costs zero server requests, counted at the server; an expired one costs one, answered not_modified" {
  export LAKE_CATALOG_TTL=60
  lake-catalog create-namespace m
  lake-catalog create m.t 'a TEXT, n INTEGER'
  local before
  before=$(metasrv_count catalog_snapshot)

  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'m\tt'
  run --separate-stderr lake-catalog show m.t
  assert_clean_success
  run --separate-stderr lake-catalog status
  assert_clean_success
  assert_equal "snapshots: $(metasrv_count catalog_snapshot)" "snapshots: $before"

  # expired: one conditional call, not_modified, 200 at the server
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  assert_success
  assert_output $'m\tt'
  assert_equal "$stderr" "trace: source catalog_snapshot known=2 -> not_modified generation=2"
  assert_equal "snapshots: $(metasrv_count catalog_snapshot 200)" "snapshots: $((before + 1))"
  assert_equal "snapshots: $(metasrv_count catalog_snapshot)" "snapshots: $((before + 1))"
  # and not_modified renewed it: fresh again
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_equal "snapshots: $(metasrv_count catalog_snapshot)" "snapshots: $((before + 1))"

  # resolve: one call, then none while fresh; an old version: none, ever
  local resolves
  resolves=$(metasrv_count resolve)
  run --separate-stderr lake-catalog resolve m.t
  assert_clean_success
  run --separate-stderr lake-catalog resolve m.t
  assert_clean_success
  run --separate-stderr lake-catalog resolve m.t --version 0
  assert_clean_success
  assert_equal "resolves: $(metasrv_count resolve)" "resolves: $((resolves + 1))"
}

@test "outage: the last good generation at once (< 1 s) with one warning, exit 0; --strict 69; nothing cached 69" {
  lake-catalog create-namespace m
  lake-catalog create m.t 'a TEXT'
  lake-catalog create m.u 'a TEXT'
  local url=$METASRV_URL
  metasrv_stop

  local t0 t1
  t0=$(now_ms)
  run --separate-stderr lake-catalog --max-age 0 list
  t1=$(now_ms)
  assert_success
  assert_output $'m\tt\nm\tu'
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} =~ ^lake-catalog:\ $url\ unreachable\ \(Connection\ refused\)\;\ serving\ generation\ 3\ fetched\ [0-9]+\ s\ ago$ ]] ||
    fail "not the outage warning: $stderr"
  echo "# outage answered in $((t1 - t0)) ms"
  [ $((t1 - t0)) -lt 1000 ] || fail "took $((t1 - t0)) ms"

  t0=$(now_ms)
  run --separate-stderr lake-catalog --max-age 0 --strict list
  t1=$(now_ms)
  assert_error lake-catalog 69 "$url"
  assert_output ""
  [ $((t1 - t0)) -lt 1000 ] || fail "--strict took $((t1 - t0)) ms"

  rm -rf "$XDG_CACHE_HOME"
  t0=$(now_ms)
  run --separate-stderr lake-catalog list
  t1=$(now_ms)
  assert_error lake-catalog 69 "$url"
  assert_output ""
  [ $((t1 - t0)) -lt 1000 ] || fail "took $((t1 - t0)) ms"
}

@test "a hung server costs one connect timeout; the recorded failure answers the next process at once" {
  lake-catalog create-namespace m
  lake-catalog create m.t 'a TEXT'
  kill -STOP "$METASRV_PID" # accepts connections (the kernel does), answers nothing

  local t0 t1
  t0=$(now_ms)
  run --separate-stderr lake-catalog --max-age 0 list
  t1=$(now_ms)
  assert_success
  assert_output $'m\tt'
  assert_equal "${#stderr_lines[@]}" 1
  echo "# first process: $((t1 - t0)) ms"
  [ $((t1 - t0)) -lt 10000 ] || fail "waited $((t1 - t0)) ms"

  t0=$(now_ms)
  run --separate-stderr lake-catalog --max-age 0 list
  t1=$(now_ms)
  assert_success
  assert_output $'m\tt'
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "lake-catalog: "*"serving generation 2 fetched"* ]] || fail "$stderr"
  echo "# next process: $((t1 - t0)) ms"
  [ $((t1 - t0)) -lt 1000 ] || fail "the next process waited too: $((t1 - t0)) ms"
  kill -CONT "$METASRV_PID"
}

@test "connect_timeout (LAKE_CONNECT_TIMEOUT): a hung server costs that many seconds; 0, 3601 or words are 78" {
  kill -STOP "$METASRV_PID"
  local t0 t1
  t0=$(now_ms)
  run --separate-stderr env LAKE_CONNECT_TIMEOUT=3 lake-catalog --max-age 0 list
  t1=$(now_ms)
  kill -CONT "$METASRV_PID"
  assert_error lake-catalog 69 "$METASRV_URL"
  echo "# waited $((t1 - t0)) ms"
  [ $((t1 - t0)) -ge 2900 ] && [ $((t1 - t0)) -lt 8000 ] || fail "waited $((t1 - t0)) ms, not about 3 s"
  local bad
  for bad in 0 3601 soon; do
    run --separate-stderr env LAKE_CONNECT_TIMEOUT=$bad lake-catalog list
    assert_error lake-catalog 78 connect_timeout "'$bad'"
  done
}

@test "appends and read-your-writes through the remote source: tests/unit/test_catalog against this server" {
  [ -n "${LAKE_UNIT:-}" ] || skip "LAKE_UNIT is not set (make unit-bins; tests/run exports it)"
  [ -x "$LAKE_UNIT/test_catalog" ] || fail "no $LAKE_UNIT/test_catalog (make unit-bins)"
  run --separate-stderr env LAKE_TEST_SOURCE=remote LAKE_TEST_STAGE="file://$SRV/stage" "$LAKE_UNIT/test_catalog"
  assert_success
  local n
  n=$(grep -c '^ok ' <<<"$output")
  [ "$n" -ge 20 ] || fail "only $n tests ran: $output"
  assert_equal "$(grep -v -e '^ok [0-9]* - ' -e "^1\.\.$n\$" <<<"$output" || true)" ""
  assert_equal "$(tail -n 1 <<<"$output")" "1..$n"
  # it really went through this server
  [ "$(metasrv_count append 200)" -ge 4 ] || fail "appends not counted at the server"
  [ "$(metasrv_count append 409)" -ge 1 ] || fail "the conflict was not the server's"
  [ "$(metasrv_count resolve 200)" -ge 3 ] || fail "resolves not counted at the server"
}

@test "TLS: a client without LAKE_CA_FILE (the system store) refuses the self-signed server: 78 on one line" {
  unset LAKE_CA_FILE
  local cmd
  for cmd in "--max-age 0 list" "whoami" "create-namespace m"; do
    # shellcheck disable=SC2086 # $cmd is split into the words of a command line
    run --separate-stderr lake-catalog $cmd
    assert_error lake-catalog 78 "$METASRV_URL"
    assert_output ""
  done
  # a CA that did not sign it, likewise
  mkdir "$T/other"
  metasrv_certs "$T/other"
  run --separate-stderr env LAKE_CA_FILE="$T/other/cert.pem" lake-catalog whoami
  assert_error lake-catalog 78
  # no request reached the server
  assert_equal "requests: $(requests_counted)" "requests: 0"
}

# (off loopback it is refused: security.bats)
@test "--insecure-listen: with TLS files, or without either, 64; on 127.0.0.1 plain http://, which clients accept only for loopback" {
  run --separate-stderr lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 --insecure-listen \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem"
  assert_error lake-metasrv 64
  run --separate-stderr lake-metasrv serve --db "$SRV/registry.db" --listen 127.0.0.1:0
  assert_error lake-metasrv 64

  plain_start
  local url=$PLAIN_URL
  [[ $url =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || fail "not a plain loopback URL: $(cat "$T/plain.out" "$T/plain.log")"
  run curl -sS "$url/v1/health"
  assert_success
  assert_output '{"status":"ok","registry":"ok"}'

  run --separate-stderr env LAKE_METASRV="$url" lake-catalog whoami
  assert_clean_success
  assert_line --index 0 principal=admin
  run --separate-stderr env LAKE_METASRV="http://localhost:${url##*:}" lake-catalog whoami
  assert_clean_success

  local bad
  for bad in http://example.com:80 http://10.1.2.3:7700 http://127.example.com:7700 http://localhost.example.com:7700; do
    run --separate-stderr timeout 5 env LAKE_METASRV="$bad" lake-catalog whoami
    assert_error lake-catalog 78 "$bad"
    assert_output ""
  done

  kill -TERM "$PLAIN_PID"
  local rc=0
  wait "$PLAIN_PID" || rc=$?
  PLAIN_PID=
  assert_equal "exit $rc" "exit 0"
}

@test "remote mode without a token exits 78 on one line and never reads the local registry" {
  mkdir -p "$LAKE_HOME"
  mkfifo "$LAKE_HOME/registry.db" # reading it would block: timeout would answer 124
  unset LAKE_TOKEN_FILE
  local cmd
  for cmd in "list" "show m.t" "resolve m.t" "refresh --force" "status" "create-namespace m" "drop m.t" "whoami" "actions"; do
    echo "# lake-catalog $cmd"
    # shellcheck disable=SC2086 # $cmd is split into the words of a command line
    run --separate-stderr timeout 5 lake-catalog $cmd
    assert_error lake-catalog 78 "token"
    assert_output ""
  done
  run --separate-stderr env LAKE_TOKEN= timeout 5 lake-catalog list
  assert_error lake-catalog 78 "token"
  run --separate-stderr timeout 5 lake-put <<<"x"
  assert_error lake-put 78 "token"
  assert_output ""
  run --separate-stderr timeout 5 lake-get "file://$SRV/stage/files/x"
  assert_error lake-get 78 "token"
  [ -p "$LAKE_HOME/registry.db" ] || fail "the FIFO was replaced"
  assert_equal "requests: $(requests_counted)" "requests: 0"
}

@test "remote mode: a missing token file, an unreadable CA file, a malformed URL: 78 on one line, before any request" {
  mkdir -p "$LAKE_HOME"
  mkfifo "$LAKE_HOME/registry.db"
  : >"$T/empty.token"
  echo 'not a certificate' >"$T/bad-ca.pem"

  # VARIABLE=VALUE, then what the one line names
  local cases=(
    "LAKE_TOKEN_FILE=$T/nope.token|$T/nope.token"
    "LAKE_TOKEN_FILE=$T/empty.token|$T/empty.token"
    "LAKE_TOKEN_FILE=$T|token"
    "LAKE_CA_FILE=$T/nope.pem|$T/nope.pem"
    "LAKE_CA_FILE=$ADMIN/ca.pem|ca.pem"
    "LAKE_CA_FILE=$T/bad-ca.pem|"
    "LAKE_CA_FILE=$SRV|"
    "LAKE_METASRV=lake.example:7700|lake.example:7700"
    "LAKE_METASRV=ftp://127.0.0.1:21|ftp://127.0.0.1:21"
    "LAKE_METASRV=https://|https://"
    "LAKE_METASRV=$METASRV_URL/v1|$METASRV_URL/v1"
    "LAKE_METASRV=$METASRV_URL?x=1|$METASRV_URL?x=1"
    "LAKE_METASRV=https://admin@127.0.0.1:${METASRV_PORT}|admin@"
    "LAKE_METASRV=https://127.0.0.1:notaport|notaport"
    "LAKE_METASRV=https://127.0.0.1:99999|99999"
    "LAKE_METASRV=https://exa mple:7700|exa mple"
  )
  if [ "$(id -u)" != 0 ]; then # root reads a file whatever its mode
    cp "$SRV/cert.pem" "$T/locked.pem"
    chmod 000 "$T/locked.pem"
    cases+=("LAKE_CA_FILE=$T/locked.pem|$T/locked.pem")
  fi
  # every case is tried; the failures are reported together
  local c setting names wrong=()
  for c in "${cases[@]}"; do
    setting=${c%%|*} names=${c#*|}
    rm -rf "$XDG_CACHE_HOME"
    run --separate-stderr timeout 5 env "$setting" lake-catalog list
    if [ "$status" != 78 ] || [ -n "$output" ] || [ "${#stderr_lines[@]}" != 1 ] ||
      [[ $stderr != "lake-catalog: "*"$names"* ]]; then
      wrong+=("$setting: exit $status: $stderr")
    fi
  done
  [ -p "$LAKE_HOME/registry.db" ] || fail "the FIFO was replaced"
  assert_equal "requests: $(requests_counted)" "requests: 0"
  [ "${#wrong[@]}" = 0 ] || fail "$(printf 'not 78 on one line naming it: %s\n' "${wrong[@]}")"
}

@test "why a server is unreachable: refused, TLS to a plain server, plain to a TLS server, a timeout; a CA that does not verify names LAKE_CA_FILE" {
  # a closed port: a port that was bound and is closed again
  local closed
  closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  run --separate-stderr env LAKE_METASRV="http://127.0.0.1:$closed" lake-catalog whoami
  assert_error lake-catalog 69 "http://127.0.0.1:$closed unreachable (Connection refused)"

  # the TLS server addressed as http://
  run --separate-stderr env LAKE_METASRV="http://127.0.0.1:$METASRV_PORT" lake-catalog whoami
  assert_error lake-catalog 69 "unreachable (the server closed the connection without an answer; if it serves TLS, the URL must start https://)"

  # a plain server addressed as https://
  plain_start
  local url=$PLAIN_URL
  run --separate-stderr env LAKE_METASRV="https://${url#http://}" lake-catalog whoami
  assert_error lake-catalog 69 "https://${url#http://} unreachable (TLS handshake failed (" "is it a plain http:// server?"

  # a server that accepts and never answers the handshake: the connect timeout
  python3 -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
time.sleep(30)
' >"$T/hung.port" &
  local hung=$!
  for _ in $(seq 100); do [ -s "$T/hung.port" ] && break; sleep 0.05; done
  run --separate-stderr env LAKE_CONNECT_TIMEOUT=1 LAKE_METASRV="https://127.0.0.1:$(cat "$T/hung.port")" lake-catalog whoami
  kill "$hung" 2>/dev/null || true
  wait "$hung" 2>/dev/null || true
  assert_error lake-catalog 69 "unreachable (no connection within 1000 ms; LAKE_CONNECT_TIMEOUT sets the limit)"

  # the certificate does not verify: the message says what to set
  run --separate-stderr env -u LAKE_CA_FILE lake-catalog whoami
  assert_error lake-catalog 78 "$METASRV_URL: TLS verification failed (" "set LAKE_CA_FILE"
  mkdir "$T/other"
  metasrv_certs "$T/other"
  run --separate-stderr env LAKE_CA_FILE="$T/other/cert.pem" lake-catalog whoami
  assert_error lake-catalog 78 "TLS verification failed (" "LAKE_CA_FILE $T/other/cert.pem did not sign the server's certificate"
}
