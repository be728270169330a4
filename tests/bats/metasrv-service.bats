#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# What running lake-metasrv as a service needs (issue 20), against a real
# server on an ephemeral loopback port (helpers/metasrv):
#  - SIGHUP reads the TLS certificate and key again: the next handshakes
#    get the new certificate, a connection that was up keeps working, the
#    server goes on; a pair it cannot read is logged and the old one kept;
#  - at start, a key that is not the certificate's, or not a key, is a
#    configuration error (78) naming the files, as a reload's is logged;
#  - tokens need no reload: one created or revoked while serving counts at
#    the next request;
#  - /v1/metrics carries the build's version and git revision.
# The unit file itself is checked in package.bats.

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  metasrv_init
  metasrv_start
}

teardown() {
  metasrv_stop
  common_teardown
}

# The SHA-256 fingerprint of the certificate a new handshake is given.
served_fingerprint() {
  timeout 10 openssl s_client -connect "127.0.0.1:$METASRV_PORT" </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256
}

file_fingerprint() {
  openssl x509 -noout -fingerprint -sha256 -in "$1"
}

# Wait (at most 2 s) until serve.log holds the line matching TEXT.
log_wait() {
  for _ in $(seq 100); do
    grep -q -- "$1" "$T/srv/serve.log" && return 0
    sleep 0.02
  done
  fail "no '$1' in serve.log: $(cat "$T/srv/serve.log")"
}

@test "SIGHUP: new handshakes get the new certificate, a connection that was up keeps working" {
  local old new
  old=$(file_fingerprint "$T/srv/cert.pem")
  assert_equal "$(served_fingerprint)" "$old"
  # a connection that is up before the reload: s_client fed from a FIFO
  mkfifo "$T/in"
  timeout 20 openssl s_client -quiet -connect "127.0.0.1:$METASRV_PORT" <"$T/in" >"$T/kept.out" 2>/dev/null &
  local kept=$!
  exec 4>"$T/in"
  printf 'GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n' >&4
  for _ in $(seq 100); do grep -q '"status"' "$T/kept.out" && break; sleep 0.02; done
  grep -q '"status"' "$T/kept.out" || fail "no first answer on the kept connection"
  # a new certificate and key, in place of the old
  metasrv_certs "$T/new"
  cp "$T/new/cert.pem" "$T/srv/cert.pem"
  cp "$T/new/key.pem" "$T/srv/key.pem"
  new=$(file_fingerprint "$T/srv/cert.pem")
  [ "$new" != "$old" ] || fail "the test certificate did not change"
  kill -HUP "$METASRV_PID"
  log_wait "SIGHUP: certificate and key read again"
  assert_equal "$(served_fingerprint)" "$new"
  kill -0 "$METASRV_PID" || fail "the server exited on SIGHUP"
  # the old connection answers its second request
  printf 'GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&4
  exec 4>&-
  wait "$kept" || true
  assert_equal "$(grep -c '"status":"ok"' "$T/kept.out")" 2
  # clients that trust the new certificate get their answers
  metasrv_post "$T/srv/admin.token" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
}

@test "SIGHUP with a key that does not load, or is not the certificate's: one line, the old pair served on" {
  local old
  old=$(file_fingerprint "$T/srv/cert.pem")
  cp "$T/srv/key.pem" "$T/key.saved"
  echo garbage >"$T/srv/key.pem"
  kill -HUP "$METASRV_PID"
  log_wait "lake-metasrv: SIGHUP: still serving the previous certificate: $T/srv/cert.pem, $T/srv/key.pem: "
  assert_equal "$(grep -c 'SIGHUP: ' "$T/srv/serve.log")" 1
  assert_equal "$(served_fingerprint)" "$old"
  # another certificate's key
  metasrv_certs "$T/other"
  cp "$T/other/key.pem" "$T/srv/key.pem"
  kill -HUP "$METASRV_PID"
  for _ in $(seq 100); do
    [ "$(grep -c 'still serving the previous certificate' "$T/srv/serve.log")" = 2 ] && break
    sleep 0.02
  done
  assert_equal "$(grep -c 'still serving the previous certificate' "$T/srv/serve.log")" 2
  assert_equal "$(served_fingerprint)" "$old"
  kill -0 "$METASRV_PID" || fail "the server exited on SIGHUP"
  metasrv_post "$T/srv/admin.token" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
}

@test "tokens need no reload: created and revoked while serving, they count at the next request" {
  local tok
  tok=$(metasrv_token user late)
  metasrv_post "$tok" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  metasrv_regopt
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name late
  metasrv_post "$tok" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 401"
  metasrv_expect_error 401 unauthenticated
  metasrv_check_errors
}

@test "/v1/metrics: lake_metasrv_build_info names the version and git revision of --version" {
  local v want
  v=$(lake-metasrv --version | head -1)
  # "lake-metasrv 0.1.0 (git abc1234)", the revision when the build knew it
  want="version=\"$(cut -d' ' -f2 <<<"$v")\",revision=\"$(sed -n 's/.*(git \(.*\))$/\1/p' <<<"$v")\""
  run metasrv_curl "$T/srv/admin.token" "$METASRV_URL/v1/metrics"
  assert_success
  assert_line "# TYPE lake_metasrv_build_info gauge"
  assert_line "lake_metasrv_build_info{$want} 1"
}

@test "serve with a key that is not the certificate's, or not PEM: 78, one line naming the files" {
  metasrv_stop
  metasrv_certs "$T/other"
  metasrv_regopt
  run --separate-stderr lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 \
    --tls-cert "$T/srv/cert.pem" --tls-key "$T/other/key.pem"
  assert_error lake-metasrv 78 "$T/srv/cert.pem, $T/other/key.pem: "
  assert_output ""
  echo garbage >"$T/bad.pem"
  run --separate-stderr lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 \
    --tls-cert "$T/bad.pem" --tls-key "$T/srv/key.pem"
  assert_error lake-metasrv 78 "$T/bad.pem"
  assert_output ""
}
