# SPDX-License-Identifier: BSD-2-Clause
# A real S3 peer for the bats suites: Ceph radosgw (the Debian packages
# radosgw ceph-mon ceph-osd, make deps installs them), as a throw-away
# single-node cluster under a temporary directory: one mon, one osd on a
# sparse bluestore file, radosgw with the beast frontend, every daemon in
# the foreground, bound to 127.0.0.1 on free ports, its PID recorded.  The
# facts it is written from are in /work/shared/PEERS.md.
#
# One cluster per bats file: call rgw_cluster_start in setup_file and
# rgw_cluster_stop in teardown_file.  When RGW_CLUSTER names the directory
# of a running cluster (one started by rgw_cluster_start, e.g. once for a
# whole run), rgw_cluster_start reuses it and rgw_cluster_stop leaves it be.
# Each test gets its own bucket.  tests/run starts one cluster for the
# whole run and exports RGW_CLUSTER.  The functions:
#
#   rgw_cluster_start   start a cluster (or reuse $RGW_CLUSTER), export RGW_CLUSTER
#   rgw_cluster_stop    stop by the recorded PIDs, remove the directory
#                       (only a cluster started by this file)
#   s3_start            a fresh bucket $S3_BUCKET, and point lake at it:
#                       AWS_* and LAKE_STAGE=s3://$S3_BUCKET/stage
#   s3_stop             stop the fault proxy, if any (the cluster stays;
#                       radosgw starts again if the test left it killed)
#   s3_kill             stop radosgw abruptly (SIGKILL); mon and osd keep running
#   s3_restart          start radosgw again on the same port, wait until ready
#   s3_fault RULES      put the fault proxy (s3fault.js) in front of radosgw
#   s3_curl ARGS...     curl --aws-sigv4 with the test credentials
#   s3_uploads [KEY]    the unfinished multipart uploads in $S3_BUCKET
#                       (ListMultipartUploads), "KEY UPLOADID" per line
#   and the helpers of helpers/s3common.bash (s3_keys, count_requests, ...)

# shellcheck source=s3common.bash
source "$LAKE_SRC/tests/bats/helpers/s3common.bash"
# shellcheck source=ports.bash
source "$LAKE_SRC/tests/bats/helpers/ports.bash"

RGW_NAME=lake
RGW_ACCESS_KEY=LAKETESTACCESSKEY
RGW_SECRET_KEY=lake-test-secret-key-0123456789abcdef
S3_PIDS=

# Process PID runs (a zombie, dead but not yet reaped by its parent, does not).
_rgw_alive() {
  kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# _rgw_wait SECONDS WHAT CMD...: run CMD every 0.1 s until it succeeds;
# fail with WHAT and the end of the cluster's log when SECONDS pass or a
# recorded daemon has died.
_rgw_wait() {
  local secs=$1 what=$2 i p
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    while read -r p; do
      _rgw_alive "$p" || { _rgw_why "$what: a daemon (pid $p) died"; return 1; }
    done <"$RGW_DIR/pids"
    sleep 0.1
  done
  _rgw_why "$what: not within $secs s"
  return 1
}

# Say why the start failed, with the end of every log, on stderr.
_rgw_why() {
  local f
  echo "rgw: $1" >&2
  for f in "$RGW_DIR"/*.log "$RGW_DIR"/*.out; do
    [ -s "$f" ] || continue
    echo "--- $f" >&2
    tail -n 15 "$f" >&2
  done
}

# _rgw_daemon NAME CMD...: start CMD in the background, output to
# NAME.out, every other descriptor closed (bats must not wait for it: a
# daemon restarted inside a test of a shared cluster outlives the file,
# and would hold the pipes of bats open), its PID recorded (in pids and
# NAME.pid).  Disowned: a daemon killed on purpose is no news ("Killed" in
# the middle of the TAP); it is stopped by its PID.
_rgw_daemon() {
  local name=$1
  shift
  (
    close_inherited_fds
    exec "$@"
  ) </dev/null >>"$RGW_DIR/$name.out" 2>&1 &
  echo $! >>"$RGW_DIR/pids"
  echo $! >"$RGW_DIR/$name.pid"
  disown $!
}

_rgw_ceph() {
  timeout 20 ceph -c "$RGW_DIR/ceph.conf" "$@"
}

_rgw_osd_up() {
  _rgw_ceph osd dump 2>/dev/null | grep -qE '^osd\.0 up +in '
}

# A signed ListBuckets answered 200.
_rgw_ready() {
  curl -sS --fail -o /dev/null --max-time 5 --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    "http://127.0.0.1:$RGW_PORT/"
}

# Write ceph.conf for the ports $RGW_MON_PORT and $RGW_PORT.
_rgw_conf() {
  local d=$RGW_DIR
  cat >"$d/ceph.conf" <<EOF
[global]
fsid = $(uuidgen)
mon host = [v2:127.0.0.1:$RGW_MON_PORT]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $d/run
crash dir = $d/crash
tmp dir = $d/tmp
log file = $d/\$name.log
admin socket = $d/run/\$name.asok
keyring = $d/keyring
mon data = $d/mon.\$id
osd data = $d/osd.\$id
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail crit = 0
paxos propose interval = 0.05
paxos min wait = 0.01

[osd.0]
osd objectstore = bluestore
bluestore block path = $d/osd.0.block
bluestore block size = 21474836480
bluestore block create = true
bluestore fsck on mount = false
osd memory target = 1073741824
osd crush update on start = false
osd class load list = *
osd class default list = *
# a killed radosgw's watches (s3_kill) hold every notify, a bucket create
# among them, until they time out: 30 s by default
osd client watch timeout = 5

[client.rgw.$RGW_NAME]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $d/rgw
rgw enable usage log = false
EOF
}

# Start radosgw and wait until its port answers; fail saying WHAT.
_rgw_radosgw() {
  # radosgw's own defaults (cephx, a secure mon connection) win over the
  # [global] of ceph.conf: say it on the command line
  _rgw_daemon rgw radosgw -c "$RGW_DIR/ceph.conf" -n "client.rgw.$RGW_NAME" -f \
    --auth-client-required none --ms-mon-client-mode crc
  _rgw_wait 60 "$1" curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$RGW_PORT/"
}

# One attempt at starting the cluster in the empty directory $RGW_DIR.
_rgw_try_start() {
  local d=$RGW_DIR conf=$RGW_DIR/ceph.conf uuid
  read -r RGW_MON_PORT RGW_PORT < <(free_port 2) && [ -n "$RGW_PORT" ] || return 1
  mkdir -p "$d/run" "$d/crash" "$d/tmp" "$d/mon.a" "$d/osd.0" "$d/rgw" && : >"$d/pids"
  _rgw_conf
  # shellcheck disable=SC2015 # the || branch is for a failure of any step, as meant
  monmaptool --create --fsid "$(sed -n 's/^fsid = //p' "$conf")" \
    --addv a "[v2:127.0.0.1:$RGW_MON_PORT]" "$d/monmap" >"$d/mkfs.out" 2>&1 &&
    ceph-mon -c "$conf" -i a --mkfs --monmap "$d/monmap" --keyring /dev/null >>"$d/mkfs.out" 2>&1 ||
    { _rgw_why "the mon's mkfs failed"; return 1; }
  _rgw_daemon mon ceph-mon -c "$conf" -i a -f
  _rgw_wait 30 "the mon did not answer" _rgw_ceph mon stat || return 1
  uuid=$(uuidgen)
  # shellcheck disable=SC2015 # the || branch is for a failure of any step, as meant
  [ "$(_rgw_ceph osd new "$uuid" 2>>"$d/mkfs.out")" = 0 ] &&
    ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$uuid" >>"$d/mkfs.out" 2>&1 &&
    _rgw_ceph osd crush add osd.0 1 root=default host=localhost >>"$d/mkfs.out" 2>&1 ||
    { _rgw_why "the osd's mkfs failed"; return 1; }
  _rgw_daemon osd ceph-osd -c "$conf" -i 0 -f
  _rgw_wait 60 "the osd did not come up" _rgw_osd_up || return 1
  # radosgw's own defaults (cephx, a secure mon connection) win over the
  # [global] of ceph.conf: say it on the command line
  _rgw_radosgw "radosgw did not listen" || return 1
  _rgw_wait 30 "radosgw-admin could not create the test user" \
    timeout 20 radosgw-admin -c "$conf" -n "client.rgw.$RGW_NAME" user create --uid lake --display-name lake \
    --access-key "$RGW_ACCESS_KEY" --secret-key "$RGW_SECRET_KEY" || return 1
  _rgw_wait 30 "a signed ListBuckets was not answered 200" _rgw_ready || return 1
  printf 'RGW_PORT=%s\nRGW_MON_PORT=%s\n' "$RGW_PORT" "$RGW_MON_PORT" >"$d/env"
}

# Stop every daemon recorded in $RGW_DIR/pids: SIGTERM, SIGKILL to those
# still running 2 s later (the cluster is thrown away: nothing to keep).
_rgw_kill_all() {
  local p i left
  [ -f "$RGW_DIR/pids" ] || return 0
  while read -r p; do kill "$p" 2>/dev/null || true; done <"$RGW_DIR/pids"
  for ((i = 0; i < 20; i++)); do
    left=
    while read -r p; do
      _rgw_alive "$p" && left=1
    done <"$RGW_DIR/pids"
    [ -z "$left" ] && break
    sleep 0.1
  done
  while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$RGW_DIR/pids"
  : >"$RGW_DIR/pids"
}

# Start a cluster, or reuse the running one in $RGW_CLUSTER.  A start that
# fails is cleaned up and tried once more on new ports (a port taken
# between its choice and its bind); the second failure says why, with the
# end of the logs, and fails.
rgw_cluster_start() {
  local attempt
  RGW_OWNED=
  if [ -n "${RGW_CLUSTER:-}" ]; then
    [ -f "$RGW_CLUSTER/env" ] || { echo "rgw: RGW_CLUSTER=$RGW_CLUSTER is not a running cluster" >&2; return 1; }
    RGW_DIR=$RGW_CLUSTER
  else
    local b
    for b in radosgw ceph-mon ceph-osd monmaptool radosgw-admin ceph; do
      command -v "$b" >/dev/null || { echo "rgw: $b is not installed (make deps)" >&2; return 1; }
    done
    for attempt in 1 2; do
      RGW_DIR=$(mktemp -d "${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/lake-rgw.XXXXXX") || return 1
      _rgw_try_start && break
      _rgw_kill_all
      rm -rf "$RGW_DIR"
      RGW_DIR=
      [ "$attempt" = 2 ] && { echo "rgw: the cluster did not start (twice)" >&2; return 1; }
    done
    RGW_OWNED=1
    export RGW_CLUSTER=$RGW_DIR
  fi
  # shellcheck source=/dev/null
  source "$RGW_DIR/env"
  export RGW_DIR RGW_PORT RGW_MON_PORT RGW_OWNED
}

rgw_cluster_stop() {
  [ -n "${RGW_OWNED:-}" ] && [ -n "${RGW_DIR:-}" ] || return 0
  _rgw_kill_all
  rm -rf "$RGW_DIR"
  unset RGW_CLUSTER
  RGW_DIR='' RGW_OWNED=''
}

# A fresh bucket for this test, and lake pointed at it.
s3_start() {
  [ -n "${RGW_PORT:-}" ] || fail "no radosgw: call rgw_cluster_start in setup_file"
  S3_PORT=$RGW_PORT
  S3_ENDPOINT=http://127.0.0.1:$S3_PORT
  S3_KEY=$RGW_ACCESS_KEY S3_SECRET=$RGW_SECRET_KEY
  S3_BUCKET=lake-test-$(printf '%s' "${BATS_TEST_NUMBER:-0}-$$-$RANDOM" | tr -c 'a-z0-9-' -)
  s3_use_bucket
}

s3_stop() {
  s3_stop_pids
  # a test that failed between s3_kill and s3_restart: radosgw back for
  # the tests after it (the cluster may serve the whole run)
  [ -z "${RGW_DIR:-}" ] || _rgw_alive "$(cat "$RGW_DIR/rgw.pid")" || s3_restart
}

# radosgw killed (SIGKILL) and gone from the recorded PIDs; the mon and the
# osd, and what radosgw stored, stay.
s3_kill() {
  _rgw_kill9 rgw
}

# radosgw started again on the same port, ready when ListBuckets answers.
s3_restart() {
  # shellcheck disable=SC2015 # the || branch is for a failure of either step, as meant
  _rgw_radosgw "radosgw did not restart" && _rgw_wait 30 "radosgw did not answer after its restart" _rgw_ready ||
    fail "radosgw did not restart"
}

# The unfinished multipart uploads in the bucket, optionally under the key
# prefix KEY: "KEY UPLOADID" per line (ListMultipartUploads).
s3_uploads() {
  local prefix=${1:-} page
  page=$(s3_list "$S3_ENDPOINT/$S3_BUCKET/?prefix=${prefix//\//%2F}&uploads=")
  [[ $page != "LISTING FAILED"* ]] || { echo "$page"; return 1; }
  grep -oE '<Key>[^<]*</Key><UploadId>[^<]*</UploadId>' <<<"$page" |
    sed -E 's|<Key>([^<]*)</Key><UploadId>([^<]*)</UploadId>|\1 \2|'
}

# --- faults of the daemons (s3-rgw-faults.bats) ----------------------------
#
#   assert_aborted      after a failed put (its trace in $stderr): no
#                       unfinished upload in the bucket (ListMultipartUploads),
#                       no object under its key, none at all
#
#   osd_stop            freeze the osd (SIGSTOP): radosgw's I/O waits on it
#   osd_cont            let it run again (SIGCONT)
#   osd_kill            kill it (SIGKILL); radosgw, the mon and the data stay
#   osd_restart         start it again on its data, wait until it has booted
#                       anew (its up_from epoch changed) and S3 answers

assert_aborted() {
  assert_nothing_stored
  assert_equal "$(s3_uploads '')" ""
}

# _rgw_kill9 NAME: the daemon NAME (rgw, osd) killed (SIGKILL), gone from
# the recorded PIDs.
_rgw_kill9() {
  local p i
  p=$(cat "$RGW_DIR/$1.pid")
  kill -9 "$p" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    _rgw_alive "$p" || break
    sleep 0.05
  done
  sed -i "/^$p\$/d" "$RGW_DIR/pids"
}

_rgw_osd_pid() {
  cat "$RGW_DIR/osd.pid"
}

# The epoch osd.0 came up in, as the mon says ("" when down).
_rgw_osd_up_from() {
  _rgw_ceph osd dump 2>/dev/null | sed -nE 's/^osd\.0 up +in .* up_from ([0-9]+) .*/\1/p'
}

osd_stop() {
  kill -STOP "$(_rgw_osd_pid)"
}

osd_cont() {
  kill -CONT "$(_rgw_osd_pid)"
}

osd_kill() {
  RGW_OSD_UP_FROM=$(_rgw_osd_up_from)
  _rgw_kill9 osd
}

# _rgw_osd_rebooted: osd.0 is up again, from a later epoch than before osd_kill.
_rgw_osd_rebooted() {
  local e
  e=$(_rgw_osd_up_from)
  [ -n "$e" ] && [ "$e" != "${RGW_OSD_UP_FROM:-}" ]
}

osd_restart() {
  _rgw_daemon osd ceph-osd -c "$RGW_DIR/ceph.conf" -i 0 -f
  # shellcheck disable=SC2015 # the || branch is for a failure of either step, as meant
  _rgw_wait 60 "the osd did not come up again" _rgw_osd_rebooted &&
    _rgw_wait 30 "radosgw did not answer after the osd's restart" _rgw_ready ||
    fail "the osd did not restart"
}
