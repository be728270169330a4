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
#  - /v1/metrics carries the build's version and git revision;
#  - the maintenance job (issue 41, lake-metasrv(8) MAINTENANCE): its
#    units verify clean, and debian/lake-maintenance, run as its unit
#    runs it, compacts every table, expires and collects as an admin
#    principal of its own; a principal that may not is refused (77).
# The server's unit file itself is checked in package.bats.

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

# debian/lake-metasrv.lake-maintenance.UNIT (service, timer) as installed,
# ExecStart the tree's script, in $T/units.
maintenance_units() {
  mkdir -p "$T/units"
  sed "s|^ExecStart=/usr/libexec/lake/lake-maintenance$|ExecStart=$LAKE_SRC/debian/lake-maintenance|" \
    "$LAKE_SRC/debian/lake-metasrv.lake-maintenance.service" >"$T/units/lake-maintenance.service"
  cp "$LAKE_SRC/debian/lake-metasrv.lake-maintenance.timer" "$T/units/lake-maintenance.timer"
}

# The maintenance job as lake-maintenance.service runs it: a clean
# environment, the configuration file's KEY=value lines (EnvironmentFile),
# the unit's Environment, the script.
maintenance_run() {
  run --separate-stderr env -i PATH="$LAKE_BIN:/usr/bin:/bin" HOME="$T" LAKE_CACHE_DIR="$T/mcache" \
    sh -c 'set -a; . "$1"; set +a; shift; exec "$@"' sh "$T/maintenance.conf" "$LAKE_SRC/debian/lake-maintenance" "$@"
}

@test "lake-maintenance.service and .timer: systemd-analyze verify is clean, the service's exposure at most 2.0; the timer is installed, not enabled" {
  command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
  maintenance_units
  run systemd-analyze verify --man=no "$T/units/lake-maintenance.service" "$T/units/lake-maintenance.timer"
  assert_success
  assert_output ""
  unit_exposure "$T/units/lake-maintenance.service" 2.0
  # debian/rules installs both, enabling and starting neither, stopping
  # neither on upgrade (package.bats runs the maintainer scripts)
  grep -qx $'\tdh_installsystemd --no-enable --no-start --no-stop-on-upgrade --name=lake-maintenance' "$LAKE_SRC/debian/rules" ||
    fail "debian/rules does not install the maintenance units unenabled"
}

@test "the maintenance job against a real server, as a maintenance admin: every table compacted (a writer's too), old versions expired, unreferenced objects collected, rows unchanged" {
  metasrv_use
  local maint alice
  maint=$(metasrv_token admin maintenance)
  alice=$(metasrv_token user alice)
  lake-catalog create-namespace m
  lake-catalog create m.a 'v INTEGER'
  lake-catalog create m.b 'v INTEGER'
  lake-catalog create m.empty 'v INTEGER'
  lake-catalog grant read ON m.a TO alice
  lake-catalog grant write ON m.a TO alice
  local i
  for i in 1 2 3; do
    LAKE_COMPACT_THRESHOLD=0 lake-query -q -c "INSERT INTO m.b VALUES ($i)"
    # a writer that may not compact: its small segments stay
    LAKE_TOKEN_FILE=$alice LAKE_COMPACT_THRESHOLD=1 lake-query -q -c "INSERT INTO m.a VALUES ($i)"
  done
  assert_equal "$(lake-catalog --max-age 0 resolve m.a | jq '.segments | length')" 3
  # an object no table refers to
  printf 'garbage\n' >"$T/g.txt"
  local garbage
  garbage=$(lake-put "$T/g.txt" | jq -r .location)
  assert_file_exists "$(loc_path "$garbage")"
  cat >"$T/maintenance.conf" <<CONF
# as /etc/lake/maintenance.conf
LAKE_METASRV=$METASRV_URL
LAKE_CA_FILE=$T/srv/cert.pem
LAKE_TOKEN_FILE=$maint
EXPIRE_OLDER_THAN=0s
GC_GRACE=0s
CONF
  maintenance_run
  assert_equal "exit $status" "exit 0"
  [[ $stderr$output == *"compacted m.a: 3 segments -> 1"* ]] || fail "m.a not compacted: $output $stderr"
  [[ $stderr$output == *"compacted m.b: 3 segments -> 1"* ]] || fail "m.b not compacted: $output $stderr"
  local t
  for t in m.a m.b; do
    assert_equal "$t: $(lake-catalog --max-age 0 resolve "$t" | jq '.segments | length')" "$t: 1"
    assert_equal "$t: $(lake-query -c "SELECT group_concat(v) FROM $t")" "$t: 1,2,3"
    # every version but the current expired
    assert_equal "$t: $(lake-catalog --json history "$t" | jq '[.[] | select(.expired_at == null)] | length')" "$t: 1"
  done
  # the garbage and the replaced segments are gone: one segment a table left
  assert_not_exist "$(loc_path "$garbage")"
  assert_equal "$(find "$T/srv/stage/tables" -type f | wc -l)" 2
  # -q, as the cron line runs it: nothing to say when all goes well
  maintenance_run -q
  assert_equal "exit $status: $output$stderr" "exit 0: "
  maintenance_run -x
  assert_error lake-maintenance 64 "-x: not an option; usage: lake-maintenance [-q]"
  # the job is the maintenance principal's: the audit trail says so
  metasrv_regopt
  lake-metasrv audit "${METASRV_REGOPT[@]}" --principal maintenance >"$T/trail"
  grep -q $'\tcompact\t' "$T/trail" || fail "no compact by maintenance in the trail: $(cat "$T/trail")"
}

@test "the maintenance job: a principal that may not list or compact is refused with lake-catalog's status and words; nothing changes" {
  metasrv_use
  local alice
  alice=$(metasrv_token user alice)
  lake-catalog create-namespace m
  lake-catalog create m.a 'v INTEGER'
  lake-catalog grant read ON m.a TO alice
  for i in 1 2; do LAKE_COMPACT_THRESHOLD=0 lake-query -q -c "INSERT INTO m.a VALUES ($i)"; done
  printf 'LAKE_METASRV=%s\nLAKE_CA_FILE=%s\nLAKE_TOKEN_FILE=%s\n' "$METASRV_URL" "$T/srv/cert.pem" "$alice" \
    >"$T/maintenance.conf"
  maintenance_run
  assert_equal "exit $status" "exit 77"
  assert_equal "$(lake-catalog --max-age 0 resolve m.a | jq -c '[.version, (.segments | length)]')" "[2,2]"
}
