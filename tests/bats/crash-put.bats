#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-put SIGKILLed at random moments (issue 8): 15 kills into a local stage
# and 15 into an S3 stage (radosgw, helpers/rgw.bash), each at a delay
# drawn over the whole lifetime of the put, from before its first byte to
# after its last, with inputs of several sizes (up to multipart-sized on
# S3) and kinds (a pipe, a file, a tar archive on stdin), half of them
# with --table.
#
# After every kill: every object under a final name holds exactly the bytes
# of one of the inputs, and every FILE value the put printed before dying
# names such an object.  After all kills, `lake-catalog gc --grace 0`
# leaves exactly the objects the table references (files and segments),
# each with the size and SHA-256 its FILE value or segment record claims,
# no temporary file and no unfinished multipart upload.
#
# The seed and the delays are logged ("# ..." lines of the TAP output and
# $T/crash.log); LAKE_CRASH_SEED=N replays a run's delays.

load helpers/common
load helpers/crash
load helpers/rgw

KILLS=15

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  # a killed put may have appended without learning it: the checks must
  # see the registry as it is, not a snapshot cached within the TTL
  export LAKE_CATALOG_TTL=0
  PUT=
  crash_seed
}

teardown() {
  [ -z "$PUT" ] || { kill -9 "$PUT" 2>/dev/null; wait "$PUT" 2>/dev/null; } || true
  s3_stop
  common_teardown
}

# The inputs and the set of digests an object may have ($T/valid).
make_inputs() {
  local big=$1
  mkdir -p "$T/in" "$T/tree"
  head -c 1 /dev/urandom >"$T/in/tiny"
  head -c 70000 /dev/urandom >"$T/in/small"
  head -c $((3 * 1024 * 1024 + 17)) /dev/urandom >"$T/in/mid"
  head -c "$big" /dev/urandom >"$T/in/big"
  head -c 5000 /dev/urandom >"$T/tree/a"
  head -c $((2 * 1024 * 1024)) /dev/urandom >"$T/tree/b"
  head -c 300 /dev/urandom >"$T/tree/c"
  tar -C "$T/tree" -cf "$T/in/tree.tar" a b c
  crash_sha_set "$T"/in/tiny "$T"/in/small "$T"/in/mid "$T"/in/big "$T"/tree/* >"$T/valid"
  lake-catalog create-namespace k
  lake-catalog create k.t 'n INTEGER, f FILE'
}

# put_start I DELAY KIND INPUT [OPTIONS...]: start one lake-put in the
# background, as KIND (pipe, file, archive), under timeout(1), which sends
# it SIGKILL DELAY ms after its own start (before lake-put's first byte,
# for small delays), or only after 60 s (a hang) if DELAY is "-".  The pid in PUT (timeout's,
# which exits 137 when it killed lake-put, else lake-put's own status),
# lake-put's stdout in $T/put.out.  Odd rounds add a row to k.t.
put_start() {
  local i=$1 delay=$2 kind=$3 in=$4
  shift 4
  local opts=("$@") run
  [ $((i % 2)) -eq 1 ] && opts+=(--table k.t --set "n=$i")
  # a put that hangs is killed at 60 s and fails its round (exit 137
  # with no kill asked for is caught by the caller's checks)
  run=(timeout -s KILL 60 lake-put)
  [ "$delay" = - ] || run=(timeout -s KILL "$(( delay / 1000 )).$(printf '%03d' $(( delay % 1000 )))s" lake-put)
  case $kind in
    pipe) cat "$in" 2>/dev/null | "${run[@]}" "${opts[@]}" >"$T/put.out" 2>"$T/put.err" 3>&- & ;;
    file) "${run[@]}" "${opts[@]}" "$in" >"$T/put.out" 2>"$T/put.err" 3>&- & ;;
    archive) "${run[@]}" --archive "${opts[@]}" <"$in" >"$T/put.out" 2>"$T/put.err" 3>&- & ;;
  esac
  PUT=$! # of a pipeline, its last process
}

# The rounds: KIND INPUT, cycling over kinds and sizes.
round_case() {
  local kinds=(pipe file archive pipe file) inputs=(tiny mid big small big)
  local kind=${kinds[$(($1 % 5))]} in=${inputs[$(($1 % 5))]}
  [ "$kind" = archive ] && in=tree.tar
  printf '%s %s\n' "$kind" "$T/in/$in"
}

# How long a whole put of each case takes (ms): the shorter of two full
# runs (the machine is shared, so one run may be slowed); those puts are
# complete, add rows to k.t, and their objects stay, correct.
calibrate() {
  local c kind in t0 t1
  for c in 0 1 2 3 4; do
    read -r kind in <<<"$(round_case "$c")"
    LIFETIME[$c]=
    for _ in 1 2; do
      t0=$(crash_now_ms)
      put_start 1 - "$kind" "$in" "$@"
      crash_reap "$PUT"
      PUT=
      t1=$(crash_now_ms)
      [ "$CRASH_RC" -eq 0 ] || fail "calibration put ($kind $in) failed: $(cat "$T/put.err")"
      [ -n "${LIFETIME[$c]}" ] && [ "${LIFETIME[$c]}" -le $((t1 - t0)) ] || LIFETIME[$c]=$((t1 - t0))
    done
  done
  crash_log "lifetimes (ms) of the cases: ${LIFETIME[*]}"
}

# kill_rounds CHECK [PUT OPTIONS...]: KILLS rounds; each starts a put,
# SIGKILLs it after a random delay in [0, 1.5 x its case's lifetime],
# then runs CHECK (which sees CRASH_RC and $T/put.out).  A put that
# finished before its kill shows its case's lifetime was measured long (a
# machine busier then than now): the lifetime is cut to 2/3 of that delay,
# and rounds go on (3 x KILLS at most) until KILLS / 5 puts were killed in
# flight, so the kills land inside the puts however the load changes.
kill_rounds() {
  local check=$1 i=0 kind in delay
  shift
  calibrate "$@"
  KILLED=0
  while [ "$i" -lt "$KILLS" ] || { [ "$KILLED" -lt $((KILLS / 5)) ] && [ "$i" -lt $((KILLS * 3)) ]; }; do
    i=$((i + 1))
    read -r kind in <<<"$(round_case "$i")"
    # at least 1 ms: timeout(1) takes a duration of 0 as "never"
    delay=$(( $(crash_rand $((LIFETIME[i % 5] * 3 / 2 + 5))) + 1 ))
    crash_log "round $i: $kind ${in##*/} killed after ${delay} ms"
    put_start "$i" "$delay" "$kind" "$in" "$@"
    crash_reap "$PUT"
    PUT=
    case $CRASH_RC in
      137) KILLED=$((KILLED + 1)) ;;
      0)
        crash_log "round $i: the put had finished"
        [ "${LIFETIME[i % 5]}" -le $((delay * 2 / 3)) ] || LIFETIME[i % 5]=$((delay * 2 / 3))
        ;;
      *) fail "round $i: lake-put exited $CRASH_RC, not killed: $(cat "$T/put.err")" ;;
    esac
    "$check" "$i"
  done
  crash_log "$KILLED of $i puts were killed before they finished"
  # the delays reach from before the first byte to past the last: most
  # kills land inside; nearly all finishing would mean the moments are wrong
  [ "$KILLED" -ge $((KILLS / 5)) ] || fail "only $KILLED of $i puts were killed in flight"
}

# Every FILE value a put printed names an object with its digest: $1 is
# the function that hashes an object by location.
check_printed() {
  local hash=$1 line loc sha
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    loc=$(json_field location "$line")
    sha=$(json_field sha256 "$line")
    grep -qx "$sha" "$T/valid" || fail "a printed FILE value claims a digest of no input: $line"
    assert_equal "$("$hash" "$loc")" "$sha"
  done <"$T/put.out"
}

# --- local stage ------------------------------------------------------------

local_sha() {
  sha_of "$(loc_path "$1")"
}

# After a kill: no temporary name (O_TMPFILE, see crash.bats), and every
# object not seen before holds the bytes of an input (objects under final
# names never change, so each is hashed once).
check_local() {
  local f
  touch "$T/seen"
  check_printed local_sha
  while IFS= read -r f; do
    [[ ${f##*/} != .tmp-* ]] || fail "round $1: a temporary file is left: $f"
    grep -qxF "$f" "$T/seen" && continue
    grep -qx "$(sha_of "$f")" "$T/valid" ||
      fail "round $1: $f ($(stat -c %s "$f") bytes) holds bytes of no input"
    printf '%s\n' "$f" >>"$T/seen"
  done < <(files_under "$STAGE/files")
}

# After gc: exactly the referenced objects, each as its record claims.
check_after_gc_local() {
  local want got
  want=$( {
    lake-query -f jsonl -c 'SELECT f FROM k.t' | jq -r '.f | fromjson? // . | .location'
    lake-catalog resolve k.t | jq -r '.segments[].location'
  } | sed 's|^file://||' | sort)
  got=$(files_under "$STAGE")
  assert_equal "$got" "$want"
  lake-query -f jsonl -c 'SELECT f FROM k.t' | jq -c '.f | fromjson? // .' >"$T/refs"
  local line
  while IFS= read -r line; do
    assert_equal "$(stat -c %s "$(loc_path "$(json_field location "$line")")")" "$(json_field size "$line")"
    assert_equal "$(local_sha "$(json_field location "$line")")" "$(json_field sha256 "$line")"
  done <"$T/refs"
  lake-catalog resolve k.t | jq -r '.segments[] | "\(.location) \(.size) \(.sha256)"' |
    while read -r loc size sha; do
      assert_equal "$(stat -c %s "$(loc_path "$loc")") $(local_sha "$loc")" "$size $sha"
    done
}

@test "SIGKILL of lake-put at 15 random moments, local stage: never wrong bytes under a final name; gc leaves only the referenced objects" {
  make_inputs $((6 * 1024 * 1024))
  kill_rounds check_local
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  crash_log "gc: $stderr"
  check_after_gc_local
  # the table's rows are those of the puts that finished, each once
  [ "$(lake-query -c 'SELECT count(*) = count(DISTINCT f) FROM k.t')" = 1 ] ||
    fail "a FILE value is referenced twice"
}

# --- S3 stage ---------------------------------------------------------------

s3_sha() {
  s3_curl "$S3_ENDPOINT$(s3_path "$1")" | sha256sum | cut -c1-64
}

# A key's bytes are those of an input, always: a PUT cut off by its killed
# client is stored by no S3 server (radosgw answers it 404 and keeps
# nothing), a multipart upload is an object only once completed.
check_s3_key() {
  local key=$1 round=$2 tmp=$T/obj
  s3_curl -o "$tmp" "$S3_ENDPOINT/$S3_BUCKET/$key" || fail "round $round: cannot read $key"
  grep -qx "$(sha_of "$tmp")" "$T/valid" ||
    fail "round $round: $key ($(stat -c %s "$tmp") bytes) holds bytes of no input"
}

check_s3() {
  local key
  touch "$T/seen"
  check_printed s3_sha
  while IFS= read -r key; do
    grep -qxF "$key" "$T/seen" && continue
    check_s3_key "$key" "$1"
    printf '%s\n' "$key" >>"$T/seen"
  done < <(s3_keys | grep '^stage/files/')
}

@test "SIGKILL of lake-put at 15 random moments, S3 stage (multipart too): never wrong bytes under a final key; gc removes every leftover object" {
  s3_start
  make_inputs $((11 * 1024 * 1024)) # 3 parts of 5 MiB
  kill_rounds check_s3 --part-size 5MiB --jobs 2
  crash_log "unfinished multipart uploads before gc: $(s3_uploads | grep -c .)"

  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  crash_log "gc: $stderr"
  # gc aborts every unfinished upload (ListMultipartUploads is empty)
  assert_equal "uploads left: $(s3_uploads)" "uploads left: "
  # exactly the referenced objects remain, each as its record claims
  local want
  want=$( {
    lake-query -f jsonl -c 'SELECT f FROM k.t' | jq -r '.f | fromjson? // . | .location'
    lake-catalog resolve k.t | jq -r '.segments[].location'
  } | sed "s|^s3://$S3_BUCKET/||" | sort)
  assert_equal "$(s3_keys)" "$want"
  lake-query -f jsonl -c 'SELECT f FROM k.t' | jq -c '.f | fromjson? // .' >"$T/refs"
  local line
  while IFS= read -r line; do
    assert_equal "$(s3_sha "$(json_field location "$line")")" "$(json_field sha256 "$line")"
  done <"$T/refs"
}
