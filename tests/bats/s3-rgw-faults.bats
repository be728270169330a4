#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Faults of the server, against a real S3 server: Ceph radosgw
# (helpers/rgw.bash), one throw-away cluster for the file, a bucket per
# test.  A failure while every part buffer of lake-put --jobs N is in use
# (parts in flight, held by a frozen osd): the upload aborted, no object,
# the original error.  radosgw SIGKILLed and restarted during a put, a get
# and gc; the osd frozen (SIGSTOP) or killed and restarted during them: a
# put fails cleanly or succeeds with the right bytes, a get resumes with
# Range and verifies or fails 69 with no file kept, gc fails and a second
# gc finishes the job.  gc pages through ListObjectsV2 (2,500 objects).
# What s3-rgw.bats proves already is not repeated here; the helpers for
# faults of the daemons (osd_stop, osd_kill...) are at the end of rgw.bash.

load helpers/common
load helpers/rgw

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  s3_start
  export LAKE_TRACE=1
  mkdir -p "$T/in" "$T/out"
  BG=
}

teardown() {
  # whatever a test froze or killed runs again for the next one
  osd_cont 2>/dev/null || true
  _rgw_alive "$(_rgw_osd_pid)" || osd_restart
  _rgw_alive "$(cat "$RGW_DIR/rgw.pid")" || s3_restart
  if [ -n "$BG" ]; then
    kill -CONT "$BG" 2>/dev/null || true
    kill -9 "$BG" 2>/dev/null || true
    wait "$BG" 2>/dev/null || true
  fi
  put_cleanup
  s3_stop
  common_teardown
}

# The waits below are for a state of the program (bytes read, connections,
# trace lines); their 60 s bound is only a guard against a hang, never what
# a test's result depends on.

# has_read PID BYTES: process PID has read BYTES bytes in all
# (/proc/PID/io rchar; its start-up reads are a few KiB).
has_read() {
  [ "$(sed -n 's/^rchar: //p' "/proc/$1/io")" -ge "$2" ]
}
wait_read() {
  poll_until has_read "$1" "$2" || fail "process $1 never read $2 bytes: $(cat "/proc/$1/io")"
}

# has_conns PID N: process PID has N connections to radosgw open.
has_conns() {
  [ "$(ss -tnpH state established "( dport = :$RGW_PORT )" | grep -c "pid=$1,")" -ge "$2" ]
}
wait_conns() {
  wait_until "process $1 never had $2 connections to radosgw" has_conns "$1" "$2"
}

# lines_wait FILE N RE: wait until FILE has N lines matching the extended
# regular expression RE (a trace, the fault proxy's log).
lines_wait() {
  poll_until lines_at_least "$@" || fail "$1 never had $2 lines matching '$3': $(cat "$1")"
}

# rgw_ended PID: process PID has ended.
rgw_ended() {
  ! _rgw_alive "$1"
}

# parts_cancelled_wait N...: wait until the put's trace shows parts N...
# cancelled ("interrupted"): only then may the frozen osd go on, or a part
# not yet cancelled would be stored.
parts_cancelled_wait() {
  local n
  for n in "$@"; do
    lines_wait "$T/put.err" 1 "partNumber=$n&[^ ]+ bytes=[0-9]+ -> interrupted"
  done
}

# --- abort with every part buffer in use -----------------------------------

# full_buffers FAULT...: lake-put --jobs 3 --part-size 5MiB --size 40MiB on
# the FIFO; part 1 stored, then the osd frozen, then 17 MiB more: parts 2-4
# in flight (held by radosgw, which waits on the osd), part 5 holding 3 MiB
# read, every one of the 4 buffers in use.
full_buffers() {
  put_until_parts $((6 * MIB)) 1 --part-size 5MiB --jobs 3 --size $((40 * MIB))
  osd_stop
  head -c $((17 * MIB)) /dev/urandom >&4
  wait_read "$PUT" $((23 * MIB))
  wait_conns "$PUT" 3
}

# The failure came while parts 2-4 were in flight: they were cancelled
# (their traces say "interrupted"), then the upload aborted (204).
assert_cancelled_then_aborted() {
  local n
  for n in 2 3 4; do
    assert_equal "$(count_requests PUT "\\?partNumber=$n&[^ ]+ bytes=[0-9]+ -> interrupted")" 1
  done
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_equal "$(count_requests POST '\?uploadId=')" 0
  assert_aborted
}

@test "rgw abort, full buffers: input short of --size while 3 parts are in flight and the 4th buffer fills: the original error, no upload, no object" {
  full_buffers
  exec 4>&-
  # the abort waits on the frozen osd too: let it go once lake-put has
  # cancelled the parts in flight
  parts_cancelled_wait 2 3 4
  osd_cont
  wait_put
  assert_traced_error lake-put 65 "stdin: $((23 * MIB)) bytes, not the stated $((40 * MIB))"
  [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
  assert_cancelled_then_aborted
}

@test "rgw abort, full buffers: SIGTERM while 3 parts are in flight and the 4th buffer fills: 'interrupted', no upload, no object" {
  full_buffers
  kill -TERM "$PUT"
  parts_cancelled_wait 2 3 4
  osd_cont
  wait_put
  exec 4>&-
  assert_traced_error lake-put 143 "lake-put: interrupted"
  assert_cancelled_then_aborted
}

@test "rgw abort, full buffers: a part answered 400 while the parts before it are in flight: the 400 reported, no upload, no object" {
  s3_fault "PUT?partNumber=4&:400:1"
  put_until_parts $((6 * MIB)) 1 --part-size 5MiB --jobs 3 --size $((40 * MIB))
  osd_stop
  # parts 2 and 3 go to radosgw and wait on the osd; the proxy refuses 4
  # (the writer in the background: lake-put stops reading at the refusal,
  # and its abort waits on the frozen osd)
  head -c $((17 * MIB)) /dev/urandom >&4 2>/dev/null &
  local writer=$!
  lines_wait "$T/put.err" 1 'partNumber=4&.* -> 400'
  parts_cancelled_wait 2 3
  osd_cont
  # lake-put learns of the failure without waiting for more input
  wait_put
  exec 4>&-
  wait "$writer" || true
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 InvalidArgument"
  [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
  local n
  for n in 2 3; do
    assert_equal "$(count_requests PUT "\\?partNumber=$n&[^ ]+ bytes=[0-9]+ -> interrupted")" 1
  done
  assert_equal "$(count_requests DELETE '\?uploadId=[^ ]* -> 204')" 1
  assert_aborted
}

# refused_while_waiting FILE ARGS...: lake-put ARGS (--part-size 5MiB)
# reads FILE's first 11 MiB from a FIFO whose writer then stalls, its end
# open: part 1 is stored, part 2 is refused (400) while lake-put waits for
# more input.  lake-put must stop at once with the 400, abort the upload
# and store nothing.
refused_while_waiting() {
  local file=$1
  shift
  s3_fault "PUT?partNumber=2&:400:1"
  put_until_parts 0 0 --part-size 5MiB "$@"
  head -c $((6 * MIB)) "$file" >&4
  wait_parts 1
  # (lake-put may stop before it has read all of it: a broken pipe here)
  tail -c +$((6 * MIB + 1)) "$file" | head -c $((5 * MIB)) >&4 2>/dev/null || true
  # (the FIFO's writer holds it open: lake-put can only end by seeing the
  # refusal; poll_until's 60 s bounds a hang)
  poll_until rgw_ended "$PUT" ||
    fail "lake-put still waits for input 60 s after its part was refused: $(cat "$T/put.err")"
  wait_put
  exec 4>&-
  assert_traced_error lake-put 1 "refused by the object store" "HTTP 400 InvalidArgument"
  [[ $(untraced_stderr) != *abort* ]] || fail "the abort's message, not the error's: $stderr"
  assert_aborted
}

@test "rgw abort: a part refused while lake-put waits for more input stops it at once: the 400 reported, no upload, no object" {
  head -c $((20 * MIB)) /dev/urandom >"$T/in/big"
  refused_while_waiting "$T/in/big"
}

@test "rgw abort: the same for an archive's entry (--archive): the 400 reported, not a damaged archive" {
  head -c $((20 * MIB)) /dev/urandom >"$T/in/big"
  tar -C "$T/in" -cf "$T/big.tar" big
  refused_while_waiting "$T/big.tar" --archive
}

# --- radosgw killed and restarted ------------------------------------------

# bg NAME CMD...: CMD in the background, stdout to $T/NAME.out, stderr to
# $T/NAME.err; BG its PID.
bg() {
  local name=$1
  shift
  "$@" >"$T/$name.out" 2>"$T/$name.err" 3>&- &
  BG=$!
}

# wait_bg NAME: wait for BG; sets status and stderr.
wait_bg() {
  status=0
  wait "$BG" || status=$?
  BG=
  stderr=$(cat "$T/$1.err")
}

# wait_connected PID: until process PID has a connection to radosgw.
wait_connected() {
  wait_conns "$1" 1
}

# assert_stored_sha V SHA [meta]: the stored object of FILE value V has
# bytes whose SHA-256 (asked of radosgw directly) is SHA, as has V; with
# "meta", its recorded x-amz-meta-sha256 too (a single PUT records it).
assert_stored_sha() {
  local loc
  loc=$(json_field location "$1")
  assert_equal "$(json_field sha256 "$1")" "$2"
  assert_equal "$(s3_curl "$S3_ENDPOINT$(s3_path "$loc")" | sha256sum | cut -c1-64)" "$2"
  if [ "${3:-}" = meta ]; then
    run s3_curl -I "$S3_ENDPOINT$(s3_path "$loc")"
    assert_output --partial "x-amz-meta-sha256: $2"
  fi
}

@test "rgw fault: radosgw killed during a single PUT and not back within the retries: 69, nothing stored" {
  head -c $((96 * MIB)) /dev/urandom >"$T/in/data"
  bg put lake-put --part-size 128MiB "$T/in/data"
  wait_connected "$BG"
  s3_kill
  wait_bg put
  assert_traced_error lake-put 69 "the object store is unreachable" "after 5 attempts"
  s3_restart
  assert_no_s3_objects
  assert_equal "$(s3_uploads)" ""
}

# put_through_rgw_restart CONNS ARGS...: lake-put ARGS $T/in/data in the
# background, stopped (SIGSTOP) once it has CONNS connections to radosgw,
# radosgw killed and restarted, lake-put continued: it succeeded, saying
# nothing.  Sets status, stderr and v (its FILE value).
put_through_rgw_restart() {
  local conns=$1
  shift
  bg put lake-put "$@" "$T/in/data"
  wait_conns "$BG" "$conns"
  kill -STOP "$BG"
  rgw_kill_restart
  kill -CONT "$BG"
  wait_bg put
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  v=$(cat "$T/put.out")
}

rgw_kill_restart() {
  s3_kill
  s3_restart
}

@test "rgw fault: radosgw killed and restarted during a single PUT: the PUT is sent again and the stored bytes are right" {
  head -c $((96 * MIB)) /dev/urandom >"$T/in/data"
  put_through_rgw_restart 1 --part-size 128MiB
  # the first attempt broke off, the second was stored
  [ "$(count_requests PUT ' bytes=[0-9]+ -> (curl|interrupted|[45])')" -ge 1 ] || fail "no failed attempt: $stderr"
  assert_equal "$(count_requests PUT ' bytes=[0-9]+ -> 200')" 1
  assert_stored_sha "$v" "$(sha_of "$T/in/data")" meta
  assert_equal "$(s3_keys | wc -l)" 1
}

@test "rgw fault: radosgw killed and restarted while parts are in flight (--jobs 2): the parts sent again, the object complete and right" {
  head -c $((26 * MIB)) /dev/urandom >"$T/in/data"
  put_through_rgw_restart 2 --part-size 5MiB --jobs 2
  assert_equal "$(count_requests POST '\?uploadId=[^ ]+ bytes=[0-9]+ -> 200')" 1
  assert_stored_sha "$v" "$(sha_of "$T/in/data")"
  assert_equal "$(s3_uploads)" ""
  assert_equal "$(s3_keys | wc -l)" 1
}

# put_big BYTES: a FILE value of BYTES random bytes put in the bucket, in
# $V; the bytes in $T/in/big.
put_big() {
  head -c "$1" /dev/urandom >"$T/in/big"
  V=$(LAKE_TRACE='' lake-put --jobs 2 "$T/in/big")
}

# in_pipe_write PID: a thread of process PID blocks writing to a full pipe
# or FIFO (wchan pipe_write, or anon_pipe_write on newer kernels).
in_pipe_write() {
  local t
  for t in /proc/"$1"/task/*/wchan; do
    [[ $(cat "$t" 2>/dev/null) == *pipe_write ]] && return 0
  done
  return 1
}

# get_through_fault V WHEN FAULT [OPTION...]: lake-get OPTION... V to a
# FIFO that is not read, so that it stalls mid-object (seen: it blocks
# writing to the full FIFO, its first bytes got); then FAULT (a command)
# runs, before the reading goes on (WHEN=stalled) or while it goes on
# (WHEN=reading: the reading resumes once FAULT says it has struck, and
# radosgw needs the osd for the next chunks).  The output in $T/get.out,
# the status and stderr set.
get_through_fault() {
  local v=$1 when=$2 fault=$3 reader=
  shift 3
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  lake-get "$@" "$v" >"$T/fifo" 2>"$T/get.err" 3>&- &
  BG=$!
  # opened, not read: lake-get stalls once the pipe is full, mid-object
  exec 5<"$T/fifo"
  state_wait "$BG" "$T/get.err" "stalled on the full FIFO" in_pipe_write "$BG"
  if [ "$when" = reading ]; then
    rm -f "$T/fault.struck"
    "$fault" &
    reader=$!
    fault_struck_wait "$reader"
  else
    "$fault"
  fi
  cat <&5 >"$T/get.out"
  exec 5<&-
  [ -z "$reader" ] || wait "$reader"
  wait_bg get
}

@test "rgw fault: radosgw killed and restarted during a get to stdout: resumed with Range, every byte once, verified" {
  put_big $((128 * MIB))
  # one GET (--jobs 1), so that a 206 is a resumption
  get_through_fault "$V" stalled rgw_kill_restart --jobs 1
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  # the first GET broke off, a later one (Range) answered 206
  [ "$(grep -cE '^trace: stage GET .* -> 206$' <<<"$stderr")" -ge 1 ] || fail "not resumed: $stderr"
  cmp "$T/in/big" "$T/get.out"
}

@test "rgw fault: radosgw killed during a get to -o DIR and not back within the retries: 69, no file kept" {
  put_big $((128 * MIB))
  bg get lake-get -o "$T/out" "$V"
  wait_connected "$BG"
  kill -STOP "$BG"
  s3_kill
  kill -CONT "$BG"
  wait_bg get
  assert_traced_error lake-get 69 "the object store is unreachable"
  assert_equal "$(find "$T/out" -mindepth 1)" ""
}

# --- parallel ranged gets in flight (lake-get --jobs) -----------------------

@test "rgw get --jobs 3: three ranged GETs at once; SIGTERM while they wait on the frozen osd, to -o DIR: 143, 'interrupted', nothing in DIR" {
  put_big $((40 * MIB))
  osd_stop
  bg get lake-get --jobs 3 --part-size 5MiB -o "$T/out" "$V"
  # one connection a part: three parts in flight, held by radosgw
  wait_conns "$BG" 3
  kill -TERM "$BG"
  wait_bg get
  osd_cont
  assert_traced_error lake-get 143 "lake-get: interrupted"
  assert_equal "$(find "$T/out" -mindepth 1)" ""
}

@test "rgw get --jobs 4: SIGINT while the writer is stalled mid-object (stdout a FIFO not read): 130, 'interrupted'; then the same get is right" {
  put_big $((64 * MIB))
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  # SIGINT at its default (a background job of a script starts with it ignored)
  perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' lake-get --jobs 4 --part-size 5MiB "$V" \
    >"$T/fifo" 2>"$T/get.err" 3>&- &
  BG=$!
  exec 5<"$T/fifo"
  wait_conns "$BG" 4
  kill -INT "$BG"
  wait_bg get
  exec 5<&-
  assert_traced_error lake-get 130 "lake-get: interrupted"
  run_to "$T/got" lake-get --jobs 4 --part-size 5MiB "$V"
  assert_equal "exit $status" "exit 0"
  cmp "$T/in/big" "$T/got"
}

# --- gc: paging, and faults during gc --------------------------------------

# stage_garbage REFS UNREFS: REFS small objects put with lake-put into the
# table docs.t (a FILE column f), their FILE values in $T/refs (one per
# line), and UNREFS put by lake-put alone (garbage), theirs in $T/unrefs.
# Four lake-put processes for each (in parallel; each referencing one is
# one append), not one per object.
stage_garbage() {
  local i k pids=
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'f FILE'
  for ((k = 0; k < 4; k++)); do mkdir -p "$T/in/ref$k" "$T/in/unref$k"; done
  for ((i = 0; i < $1; i++)); do printf 'referenced %d\n' "$i" >"$T/in/ref$((i % 4))/r$i"; done
  for ((i = 0; i < $2; i++)); do printf 'garbage %d\n' "$i" >"$T/in/unref$((i % 4))/u$i"; done
  for ((k = 0; k < 4; k++)); do
    if [ -n "$(ls "$T/in/ref$k")" ]; then
      LAKE_TRACE='' lake-put -q --table docs.t --column f "$T/in/ref$k"/* >"$T/refs$k" 2>"$T/refs$k.err" &
      pids="$pids $!"
    fi
    if [ -n "$(ls "$T/in/unref$k")" ]; then
      LAKE_TRACE='' lake-put -q "$T/in/unref$k"/* >"$T/unrefs$k" 2>"$T/unrefs$k.err" &
      pids="$pids $!"
    fi
  done
  for k in $pids; do wait "$k" || fail "a lake-put failed: $(cat "$T"/*refs*.err)"; done
  cat "$T"/refs? >"$T/refs" 2>/dev/null || : >"$T/refs"
  cat "$T"/unrefs? >"$T/unrefs" 2>/dev/null || : >"$T/unrefs"
  assert_equal "$(wc -l <"$T/refs")" "$1"
  assert_equal "$(wc -l <"$T/unrefs")" "$2"
}

# The objects under the stage's files/, "KEY MD5" per line (a single
# PUT's ETag is the MD5 of its bytes), sorted, every page of the listing
# (ListObjectsV2 with continuation tokens: s3_keys asks for one page).
stage_file_etags() {
  local tok='' page
  while :; do
    # curl signs the query as given: its parameters in sorted order
    page=$(s3_curl "$S3_ENDPOINT/$S3_BUCKET/?${tok:+continuation-token=$(jq -rn --arg t "$tok" '$t|@uri')&}list-type=2&prefix=stage%2Ffiles%2F")
    grep -oE '<Key>[^<]*</Key>.*?<ETag>[^<]*</ETag>' <<<"${page//<Contents>/$'\n'}" |
      sed -E 's|<Key>([^<]*)</Key>.*<ETag>(&quot;)?"?([0-9a-f-]*)"?(&quot;)?</ETag>|\1 \3|'
    tok=$(grep -oE '<NextContinuationToken>[^<]*' <<<"$page" | sed 's/<NextContinuationToken>//')
    [ -n "$tok" ] && grep -q '<IsTruncated>true' <<<"$page" || break
  done | sort
}

stage_file_keys() {
  stage_file_etags | cut -d' ' -f1
}

# Every referenced object is there and whole, and nothing else is under
# files/: the listing's keys and ETags are those of the FILE values in
# $T/refs and the MD5 of the files put (named by the FILE values); with
# "get", lake-get also verifies each one's SHA-256.
assert_refs_intact() {
  jq -r '"\(.name) \(.location)"' <"$T/refs" | sort >"$T/refs.byname"
  md5sum "$T"/in/ref?/* | sed -E 's|^([0-9a-f]{32}) +.*/([^/]+)$|\2 \1|' | sort >"$T/md5.byname"
  assert_equal "$(stage_file_etags)" "$(join "$T/refs.byname" "$T/md5.byname" |
    sed -E "s|^[^ ]+ s3://$S3_BUCKET/([^ ]+) |\\1 |" | sort)"
  assert_equal "$(stage_file_keys | wc -l)" "$(wc -l <"$T/refs")"
  if [ "${1:-}" = get ]; then
    mkdir -p "$T/got"
    run --separate-stderr lake-get -o "$T/got" <"$T/refs"
    assert_equal "exit $status: $(untraced_stderr)" "exit 0: "
    assert_equal "$(find "$T/got" -type f | wc -l)" "$(wc -l <"$T/refs")"
  fi
}

@test "rgw gc: 2,500 objects (three ListObjectsV2 pages), half referenced: gc removes exactly the other half and what else is under the stage; nothing outside the stage's prefix is touched" {
  stage_garbage 1250 1250
  # outside the stage's prefix: an object and an upload in the bucket; an
  # object under the stage but not under files/ or tables/ (where an
  # upload of an earlier release could land it: issue 41) is garbage too
  printf 'x' >"$T/x"
  s3_curl -T "$T/x" "$S3_ENDPOINT/$S3_BUCKET/elsewhere/obj" -o /dev/null
  s3_curl -T "$T/x" "$S3_ENDPOINT/$S3_BUCKET/stage/notes/obj" -o /dev/null
  s3_curl -X POST -o /dev/null "$S3_ENDPOINT/$S3_BUCKET/elsewhere/k?uploads="
  assert_equal "$(stage_file_keys | wc -l)" 2500

  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  # the listing of files/ took three pages: two answers said there was more
  [ "$(grep -cE '^trace: stage GET .*continuation-token=' <<<"$stderr")" -ge 2 ] ||
    fail "no second or third page asked for: $(grep '^trace: stage GET ' <<<"$stderr" | head)"
  # 1,250 keys: two DeleteObjects requests (1,000 keys at most), no DeleteObject
  assert_equal "$(count_requests POST '\?delete= bytes=[0-9]+ -> 200$')" 2
  assert_equal "$(count_requests DELETE)" 0
  [[ $(untraced_stderr) == *"gc: 1251 objects, "*" bytes removed; "* ]] || fail "summary: $(untraced_stderr)"
  assert_refs_intact
  s3_curl -I -o /dev/null "$S3_ENDPOINT/$S3_BUCKET/elsewhere/obj"
  run s3_curl -I -o /dev/null "$S3_ENDPOINT/$S3_BUCKET/stage/notes/obj"
  assert_failure
  assert_equal "$(s3_uploads | cut -d' ' -f1)" "elsewhere/k"
}

@test "rgw gc fault: radosgw killed during gc: gc fails 69; after the restart a second gc removes the rest, the referenced objects intact" {
  stage_garbage 20 1500
  # the first batch of 1,000 removed; the second held in flight by the
  # fault proxy while radosgw is killed, then let go to the dead server
  s3_fault "POST?delete:pass:1,POST?delete:hold:1" "$T/release"
  bg gc lake-catalog gc --grace 0
  lines_wait "$T/fault.err" 1 '^POST [^ ]*\?delete[^ ]* -> hold'
  s3_kill
  touch "$T/release"
  wait_bg gc
  assert_equal "exit $status" "exit 69"
  [[ $(untraced_stderr) == *"the object store is unreachable"* ]] || fail "message: $(untraced_stderr)"
  assert_equal "$(count_requests POST '\?delete= bytes=[0-9]+ -> 200$')" 1
  s3_restart
  local left
  left=$(stage_file_keys | wc -l)
  assert_equal "$left" 520
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  [[ $(untraced_stderr) == *"gc: $((left - 20)) objects, "*" bytes removed; "* ]] || fail "summary: $(untraced_stderr)"
  assert_refs_intact get
}

# --- the osd frozen, or killed and restarted --------------------------------

# fault_met: the background program ($BG) is still running while the
# fault holds (the osd stopped or dead): noted in $T/fault.hit, for
# assert_fault_met.  (A program that finished before the fault would be
# dead here: the test would prove nothing.)
fault_met() {
  ! _rgw_alive "$BG" || echo hit >>"$T/fault.hit"
}

# fault_struck: a fault says it has struck (the osd is stopped or dead);
# fault_struck_wait PID waits for that, failing if the fault (process PID)
# ended without it.  The test holds the program's input or output until
# then, so that the fault lands while the program is in flight, however
# long the fault takes to strike (osd_kill asks the mon first).
fault_struck() {
  : >"$T/fault.struck"
}

fault_struck_wait() {
  state_wait "$1" /dev/null "struck" test -e "$T/fault.struck"
  rm -f "$T/fault.struck"
}

assert_fault_met() {
  [ -s "$T/fault.hit" ] || fail "it was over before the fault: the fault hit nothing"
  rm -f "$T/fault.hit"
}

osd_freeze_2s() {
  osd_stop
  fault_struck
  sleep 2
  fault_met
  osd_cont
}

osd_kill_restart() {
  osd_kill
  fault_struck
  sleep 0.3
  fault_met
  osd_restart
}

# put_get_through FAULT: a 96 MiB multipart put (--jobs 2) from a FIFO: its first
# part stored, then FAULT (a command) in the background and, once it has
# struck, the rest of the input, so that the parts after the first meet the
# fault; then a get of its object with FAULT in the middle.  Each was
# still running while the fault held (fault_met), waited for it to pass
# and finished; the stored bytes and the bytes got are right.
put_get_through() {
  local v fault writer
  # big enough that the get outlasts what radosgw reads ahead of it (its
  # window is 16 MiB) and what the socket holds: the osd is needed again
  head -c $((96 * MIB)) /dev/urandom >"$T/in/data"
  put_until_parts 0 0 --part-size 5MiB --jobs 2
  BG=$PUT
  head -c $((6 * MIB)) "$T/in/data" >&4
  wait_parts 1
  rm -f "$T/fault.struck"
  "$1" &
  fault=$!
  fault_struck_wait "$fault"
  tail -c +$((6 * MIB + 1)) "$T/in/data" >&4 &
  writer=$!
  wait "$fault"
  wait "$writer"
  exec 4>&-
  wait_put
  BG=
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_fault_met
  v=$(cat "$T/put.out")
  assert_stored_sha "$v" "$(sha_of "$T/in/data")"
  assert_equal "$(s3_uploads)" ""
  # ranged GETs, 2 at once of 5 MiB: what lake-get and radosgw hold ahead
  # of the stalled writer (3 buffers, 2 parts) is far less than 96 MiB
  get_through_fault "$v" reading "$1" --jobs 2 --part-size 5MiB
  grep -qE '^trace: stage GET .* -> 206$' <<<"$stderr" || fail "no ranged GET: $stderr"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(untraced_stderr)" ""
  assert_fault_met
  cmp "$T/in/data" "$T/get.out"
}

@test "rgw osd fault: the osd frozen for 2 s during a multipart put, a get and gc: each waits and finishes, the bytes right" {
  put_get_through osd_freeze_2s
  # gc: the garbage (the object above among it) removed, the referenced kept
  stage_garbage 10 100
  # gc's one listing and one DeleteObjects take a few ms: the osd is
  # frozen before gc starts and thawed 2 s later, while gc waits on it
  osd_stop
  bg gc lake-catalog gc --grace 0
  # gc is at radosgw (connected), which waits on the osd
  wait_connected "$BG"
  sleep 2
  fault_met
  osd_cont
  wait_bg gc
  assert_equal "exit $status" "exit 0"
  assert_fault_met
  [[ $(untraced_stderr) == *"gc: 101 objects, "*" bytes removed; "* ]] || fail "summary: $(untraced_stderr)"
  assert_refs_intact get
}

@test "rgw osd fault: the osd killed and restarted during a put and a get: each waits for it and finishes, the bytes right" {
  put_get_through osd_kill_restart
}

# --- a PUT cut short keeps the older object --------------------------------

@test "rgw: a PUT cut short (the client killed while sending) stores nothing and keeps the older object under the key" {
  local i
  # lake-put never writes a key twice (each put has a new key): the older
  # object is put by curl, as is the PUT cut short, on the same key
  printf 'the older object\n' >"$T/in/old"
  s3_curl -T "$T/in/old" "$S3_ENDPOINT/$S3_BUCKET/stage/files/k" -o /dev/null
  head -c $((64 * MIB)) /dev/urandom >"$T/in/new"
  # curl itself in the background (not s3_curl, whose subshell would be
  # $BG): its connection is what wait_connected looks for
  curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_KEY:$S3_SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    --limit-rate 4M -T "$T/in/new" "$S3_ENDPOINT/$S3_BUCKET/stage/files/k" -o /dev/null 3>&- &
  BG=$!
  wait_connected "$BG"
  sleep 0.5
  kill -KILL "$BG"
  wait "$BG" || true
  BG=
  sleep 0.5
  s3_curl "$S3_ENDPOINT/$S3_BUCKET/stage/files/k" -o "$T/out/k"
  cmp "$T/in/old" "$T/out/k"
  assert_equal "$(s3_keys)" "stage/files/k"
  assert_equal "$(s3_uploads)" ""
}
