#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# liblake (issue 31): the public C library, as a program uses it.
# examples/roundtrip.c is built by make next to the library (build/ or,
# SANITIZE=1, build-san/, where ASan and UBSan watch the library too);
# the last tests install the tree into a DESTDIR and build programs
# against it with pkg-config, as a user would.

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  BUILD=${LAKE_BIN%/bin}
  RT=$BUILD/examples/roundtrip
  [ -x "$RT" ] || fail "$RT is not built (make)"
  SAN=
  if [[ $BUILD == */build-san ]]; then SAN=1; fi
}
teardown() {
  metasrv_stop
  common_teardown
}

# any_task_waits PID: a thread of PID other than its main one waits for
# input (in_input_wait).
any_task_waits() {
  local t
  for t in /proc/"$1"/task/*; do
    [ "${t##*/}" != "$1" ] || continue
    ! in_input_wait "$1" "${t##*/}" || return 0
  done
  return 1
}

@test "liblake.so.0: its soname, and it exports exactly the functions lake.h declares" {
  so=$BUILD/liblake.so.0
  assert_file_exist "$so"
  run objdump -p "$so"
  assert_success
  assert_line --regexp '^ +SONAME +liblake\.so\.0$'
  nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/exported"
  grep -oE '\blake_[a-z0-9_]+\(' "$LAKE_SRC/include/lake.h" | tr -d '(' | sort -u >"$T/declared"
  [ "$(wc -l <"$T/declared")" -ge 19 ] || fail "too few functions in lake.h: $(cat "$T/declared")"
  run diff "$T/declared" "$T/exported"
  assert_success
  # nothing else is defined for the dynamic linker but the version node
  run bash -c "nm -D --defined-only '$so' | awk '\$2 != \"T\" && \$3 != \"LIBLAKE_0\"'"
  assert_output ""
  # the header names nothing but lake_ and LIBLAKE_ (and its guard)
  run bash -c "grep -oE '^#define [A-Za-z_]+|typedef [^;]*\\b[a-z_]+;' '$LAKE_SRC/include/lake.h' | grep -vE 'LIBLAKE_|LAKE_H|lake_'"
  assert_output ""
  # what it links: no libpq (the registry's PostgreSQL driver is
  # lake-metasrv's), and what the commands link besides
  objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }' | sort >"$T/needed"
  objdump -p "$LAKE_BIN/lake-put" | awk '$1 == "NEEDED" { print $2 }' | sort >"$T/needed-put"
  run diff "$T/needed-put" "$T/needed"
  assert_success
  run grep -c libpq "$T/needed"
  assert_output 0
}

@test "lake_version is the header's and the Makefile's version" {
  run "$RT" version
  assert_success
  v=$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")
  assert_output "$v $v"
}

@test "round trip: a few MiB put with lake_put_fd read back verified; lake-get reads the same object" {
  head -c 5000000 /dev/urandom >"$T/scan.bin"
  run --separate-stderr "$RT" "$T/scan.bin"
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 1 "read back 5000000 bytes: the same"
  fv=${lines[0]}
  assert_equal "$(json_field size "$fv")" 5000000
  assert_equal "$(json_field name "$fv")" scan.bin
  assert_equal "$(json_field sha256 "$fv")" "$(sha256sum <"$T/scan.bin" | cut -d' ' -f1)"
  assert_equal "$(stage_objects | wc -l)" 1
  lake-get "$fv" >"$T/back"
  cmp "$T/scan.bin" "$T/back"
  # and the library reads what lake-put stored
  fv2=$(lake-put "$T/scan.bin")
  run_to "$T/back2" "$RT" get "$fv2"
  assert_equal "$status" 0
  cmp "$T/scan.bin" "$T/back2"
}

@test "lake_put_opt and lake_open_file_opt: lake-put's and lake-get's options, checked as the commands check them" {
  head -c 3000 /dev/urandom >"$T/in"
  run --separate-stderr "$RT" options "$T/in"
  assert_success
  assert_equal "$stderr" ""
  sha=$(sha256sum <"$T/in" | cut -d' ' -f1)
  assert_output "put(unknown key): 64 usage: lake_put_opt: unknown option 'no_such_key'
put(jobs 0): 64 usage: lake_put_opt: jobs: '0' is not a number from 1 to 64
put(size 1): 65 data: LBL: more than the stated 1 bytes
put(size -1): 64 usage: lake_put_opt: size: '-1' is not a number of bytes
put(sha256 zeros): 65 data: opt: SHA-256 is $sha, not the stated 0000000000000000000000000000000000000000000000000000000000000000
put(sha256 xyz): 64 usage: lake_put_opt: sha256: 'xyz' is not 64 hex digits
put(content_type, jobs, part_size): 0 ok
content type text/x-test
open(unknown key): 64 usage: lake_open_file_opt: unknown option 'no_such_key'
open(verify 2): 64 usage: lake_open_file_opt: verify: '2' is not 0 or 1
open(jobs 0): 64 usage: lake_open_file_opt: jobs: '0' is not a number from 1 to 64
open(part_size 1KiB): 64 usage: lake_open_file_opt: part_size: '1KiB' is outside 5MiB..5GiB
open(verify 0): 0 ok"
  # the refused puts left nothing: one object, the good one
  assert_equal "$(stage_objects | wc -l)" 1
  run find "$STAGE" -name '.tmp-*'
  assert_output ""
  # verify 0 reads a tampered object to its end, as lake-get --no-verify
  fv=$(lake-put "$T/in")
  obj=$(json_field location "$fv")
  obj=${obj#file://}
  assert_file_exist "$obj"
  flip_byte "$obj" 100
  run_to "$T/out" "$RT" get "$fv"
  assert_error roundtrip 65 "SHA-256 mismatch" "(data)"
  run_to "$T/raw" "$RT" get-raw "$fv"
  assert_equal "$status" 0
  cmp "$obj" "$T/raw"
  lake-get --no-verify "$fv" >"$T/raw2"
  cmp "$obj" "$T/raw2"
}

@test "a tampered object is 65 at the end of the read, as lake-get; outside the stage is 65 before any read" {
  head -c 3000000 /dev/urandom >"$T/in"
  fv=$(lake-put "$T/in")
  obj=$(stage_objects)
  flip_byte "$obj" 1000
  run_to "$T/out" "$RT" get "$fv"
  assert_error roundtrip 65 "SHA-256 mismatch" "(data)"
  run --separate-stderr lake-get "$fv"
  assert_failure 65
  run --separate-stderr "$RT" get '{"location":"file:///etc/passwd","size":1,"sha256":"0000000000000000000000000000000000000000000000000000000000000000"}'
  assert_error roundtrip 65 "outside the managed stage" "(data)"
  assert_equal "$output" ""
  # a truncated object: the size is wrong
  fv=$(printf 'hello world' | lake-put)
  truncate -s 5 "$(stage_objects | grep -v "$obj")"
  run --separate-stderr "$RT" get "$fv"
  assert_error roundtrip 65 "(data)"
}

@test "lake_put_cb reports progress; a progress callback that stops the put leaves no object, code interrupted" {
  head -c 2000000 /dev/urandom >"$T/in"
  run --separate-stderr "$RT" cb "$T/in"
  assert_success
  assert_line --index 1 "progress called yes"
  assert_equal "$(json_field sha256 "${lines[0]}")" "$(sha256sum <"$T/in" | cut -d' ' -f1)"
  assert_equal "$(stage_objects | wc -l)" 1
  run --separate-stderr "$RT" stop "$T/in"
  assert_error roundtrip 1 "cb: interrupted" "(interrupted)"
  assert_equal "$(stage_objects | wc -l)" 1
  run find "$STAGE" -name '.tmp-*'
  assert_output ""
}

@test "NULL handles and misuse are errors with a status and a code, never a crash; handles free in any order (queries too)" {
  run --separate-stderr "$RT" misuse
  assert_success
  assert_equal "$stderr" ""
  assert_output "lake_open(NULL): 64 usage
lake_open(unknown key): 64 usage
lake_open(key without value): 64 usage
lake_open_v2(catalog_offline yes): 64 usage
lake_open_v2(NULL): 64 usage
lake_put_fd(NULL client): 64 usage
lake_put_cb(NULL read): 64 usage
lake_file_from_json(NULL): 64 usage
lake_file_from_json(not JSON): 65 data
lake_file_from_json(null): 65 data
lake_open_file(NULL client): 64 usage
lake_reader_read(NULL): -1 usage
lake_catalog_list(NULL client): 64 usage
lake_resolve(NULL table): 64 usage
lake_set_warn(NULL): 64
lake_put_fd(NULL error): 64
NULL accessors: (null) (null) -1
lake_query(NULL client): 64 usage
lake_rows_next(NULL): -1 usage
lake_rows_bind_text(NULL): 64 usage
lake_catalog_create(NULL client): 64 usage
lake_catalog_drop(NULL client): 64 usage
lake_catalog_show(NULL json): 64 usage
lake_catalog_alter(NULL client): 64 usage
lake_catalog_rollback(NULL client): 64 usage
lake_catalog_history(NULL json): 64 usage
lake_catalog_expire(NULL client): 64 usage
lake_catalog_compact(NULL client): 64 usage
lake_import(NULL client): 64 usage
NULL rows: -1 -1 -1 (null) (null) 0 0 (null)
lake_query(NULL SQL): 64 usage
lake_query(NULL out): 64 usage
lake_query(two statements): 64 usage
lake_query(no statement): 64 usage
lake_query(syntax): 65 data
lake_query(another open): 64 usage
lake_import(rows open): 64 usage
lake_rows_bind_int64(0): 64 usage
lake_rows_bind_int64(2): 64 usage
lake_rows_bind_blob(NULL bytes): 64 usage
before the first step: type -1, text (null), columns 2, name(2) (null)
lake_rows_bind_int64(1): 0 ok
lake_rows_next: 100 ok
row: 7 2.5, out of range: -1 (null) 0
bind after a step: 64 usage
lake_rows_next: 101 ok
next after done: 101 ok
after done: type -1
lake_rows_next(overflow): -1 data
next after failure: -1 data
lake_rows_next: 100 ok
lake_rows_next(interrupted): -1 interrupted
next after lake_close: 100 ok
row after lake_close: kept
lake_catalog_create(bad columns): 64 usage
lake_catalog_create(not NS.T): 64 usage
lake_catalog_drop(NULL table): 64 usage
lake_catalog_alter(NULL table): 64 usage
lake_catalog_alter(NULL action): 64 usage
lake_catalog_alter(NULL column): 64 usage
lake_catalog_alter(rename, no NEW): 64 usage
lake_catalog_alter(unknown action): 64 usage
lake_catalog_rollback(NULL table): 64 usage
lake_catalog_rollback(-1): 64 usage
lake_catalog_history(not NS.T): 64 usage
lake_catalog_expire(not NS.T): 64 usage
lake_catalog_expire(bad duration): 64 usage
lake_catalog_compact(NULL table): 64 usage
lake_catalog_compact(size 1): 64 usage
lake_import(NULL table): 64 usage
lake_import(bad fd): 64 usage
lake_import(unknown format): 64 usage
lake_import(not NS.T): 64 usage
lake_catalog_create_namespace(bad): 64 usage
lake_catalog_create_namespace_v2(flags 2): 64 usage
lake_catalog_create_v2(flags 2): 64 usage
lake_catalog_alter_v2(NULL table): 64 usage
its version: -1
lake_catalog_rollback_v2(-1): 64 usage
lake_catalog_expire_v2(bad duration): 64 usage
lake_catalog_compact_v2(NULL client): 64 usage
their results: -1 0 0
lake_presign(NULL url): 64 usage
lake_presign(0 seconds): 64 usage
lake_presign(not JSON): 65 data
lake_put_fd(bad fd): 64 usage
lake_catalog_list(bad namespace): 64 usage
lake_resolve(not NS.T): 64 usage
lake_open_file(outside the stage): 65 data
read after lake_close: 0 ok
read a little, then close: 16 ok"
}

@test "lake_query: each row, through the typed accessors, is what lake-query -f jsonl prints; bound parameters; FILE columns decoded" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'name TEXT, n INTEGER, x REAL, b BLOB, f FILE'
  fv=$(printf 'hello\n' | lake-put)
  lake-query -c "INSERT INTO docs.t VALUES ('a\"b	c', 42, 1.5, x'00ff', '$fv'), (NULL, -7, 3, NULL, NULL), ('z', 9223372036854775807, 1e300, x'', NULL)"
  run --separate-stderr "$RT" query "SELECT * FROM docs.t"
  assert_success
  assert_equal "$stderr" ""
  assert_output "$(lake-query -f jsonl -c "SELECT * FROM docs.t")"
  assert_equal "${#lines[@]}" 3
  run "$RT" types "SELECT * FROM docs.t"
  assert_output "TEXT	INTEGER	FLOAT	BLOB	FILE
NULL	INTEGER	FLOAT	NULL	NULL
TEXT	INTEGER	FLOAT	BLOB	NULL"
  # parameters of each type, and FILE functions over a bound FILE value
  run "$RT" query "SELECT name, n FROM docs.t WHERE n = ? OR name = ? OR x = ?" i:-7 'a"b	c' d:1e300
  assert_output "$(lake-query -f jsonl -c "SELECT name, n FROM docs.t WHERE n = -7 OR name = 'a\"b	c' OR x = 1e300")"
  assert_equal "${#lines[@]}" 3
  run "$RT" query "SELECT fl_get_size(?) AS size, ? IS NULL AS none, hex(?) AS h" "$fv" n: x:0a0b
  assert_output '{"size":6,"none":1,"h":"0A0B"}'
  run "$RT" types "SELECT f FROM docs.t WHERE f = ?" "$fv"
  assert_output "FILE"
  # a FILE column's text is the object lake-put printed
  run "$RT" query "SELECT f FROM docs.t WHERE f IS NOT NULL"
  assert_equal "$(jq -c .f <<<"$output")" "$(jq -c . <<<"$fv")"
  # SQL needs no lake table, and an aggregate split by segment answers the same
  run "$RT" query "SELECT 1 AS one, 0.1 + 0.2 AS r, 'x' || char(10) AS t"
  assert_output "$(lake-query -f jsonl -c "SELECT 1 AS one, 0.1 + 0.2 AS r, 'x' || char(10) AS t")"
  run "$RT" query "SELECT count(*), min(n), max(name), sum(x) FROM docs.t"
  assert_output "$(lake-query -f jsonl -c "SELECT count(*), min(n), max(name), sum(x) FROM docs.t")"
}

@test "lake_query fails as lake-query does: 65 for SQL errors, 66 for an unknown table, 64 for DDL on lake tables and for two statements" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'name TEXT'
  for sql in "SELEC 1" "SELECT * FROM docs.nope" "DROP TABLE docs.t" "SELECT nope FROM docs.t" \
             "INSERT INTO docs.t VALUES (1, 2)"; do
    run --separate-stderr lake-query -c "$sql"
    want=$status
    msg=${stderr#lake-query: }
    run --separate-stderr "$RT" query "$sql"
    assert_error roundtrip "$want" "$msg"
  done
  run --separate-stderr "$RT" query "SELECT 1; SELECT 2"
  assert_error roundtrip 64 "more than one statement" "(usage)"
  run --separate-stderr "$RT" query "SELECT 1;  -- done"
  assert_success
  run --separate-stderr "$RT" query "SELECT ?" i:1 i:2
  assert_error roundtrip 64 "parameter 2 out of range" "(usage)"
  # SQL's FILE functions are lake-query's: a local stage presigns nothing (78)
  fv=$(printf 'x' | lake-put)
  run --separate-stderr lake-query -c "SELECT fl_get_presigned_url('$fv', 60)"
  want=$status
  msg=${stderr#lake-query: }
  [ "$want" -eq 78 ] || fail "lake-query presigned on a local stage: $want $stderr"
  run --separate-stderr "$RT" query "SELECT fl_get_presigned_url(?, 60)" "$fv"
  assert_error roundtrip 78 "$msg" "(config)"
  # and lake_presign as lake-get --presign
  run --separate-stderr lake-get --presign 1m "$fv"
  msg=${stderr#lake-get: }
  run --separate-stderr "$RT" presign "$fv" 60
  assert_error roundtrip 78 "$msg" "presigned URLs need an S3 stage" "(config)"
  assert_output ""
}

@test "INSERT through lake_query appends exactly one version, which lake-catalog resolve shows and lake-query reads; an abandoned or failed INSERT appends nothing; DELETE and UPDATE one version each" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'name TEXT, n INTEGER'
  run --separate-stderr "$RT" query "INSERT INTO docs.t VALUES (?, ?), (?, ?)" t:one i:1 t:two i:2
  assert_success
  assert_output ""
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 1
  run "$RT" resolve docs.t
  assert_output "$(lake-catalog resolve docs.t)"
  run lake-query -f csv -c "SELECT name, n FROM docs.t ORDER BY n"
  assert_output "one,1
two,2"
  # compiled and bound, closed before the first step: nothing
  run "$RT" abandon "INSERT INTO docs.t VALUES (?, ?)" t:three i:3
  assert_success
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 1
  # a row the table refuses (a FILE outside the stage): nothing either
  lake-catalog create docs.f 'f FILE'
  run --separate-stderr "$RT" query "INSERT INTO docs.f VALUES (?)" \
    '{"location":"file:///etc/passwd","size":1,"sha256":"0000000000000000000000000000000000000000000000000000000000000000"}'
  assert_error roundtrip 65 "outside the managed stage" "(data)"
  assert_equal "$(lake-catalog resolve docs.f | jq .version)" 0
  assert_equal "$(lake-query -c "SELECT count(*) FROM docs.t")" 2
  # DELETE and UPDATE with parameters: one version each, as lake-query makes them
  run --separate-stderr "$RT" query "DELETE FROM docs.t WHERE n = ?" i:1
  assert_success
  assert_equal "$stderr" ""
  run --separate-stderr "$RT" query "UPDATE docs.t SET name = ? WHERE n = ?" t:deux i:2
  assert_success
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 3
  run lake-query -f csv -c "SELECT name, n FROM docs.t"
  assert_output "deux,2"
}

# stopped_at KNOB ARG...: roundtrip ARG... held at the test-only hold
# KNOB (LAKE_TEST_PLAN_HOLD: the statement's tables declared, nothing
# planned yet; LAKE_TEST_REWRITE_HOLD: a DELETE's new segments uploaded,
# not committed; LAKE_TEST_COMPACT_HOLD: a compaction's new segments
# uploaded, not committed), stopped there by lake_interrupt (roundtrip's
# SIGUSR1), then let go: its stdout and stderr in $T/out and $T/err, its
# exit status in $HELD_STATUS.
stopped_at() {
  local knob=$1
  shift
  env LAKE_TRACE=1 LAKE_QUERY_THREADS=3 "$knob=$T/hold" "$RT" "$@" >"$T/out" 2>"$T/err" &
  local pid=$!
  held_wait "$T/hold" "$pid" "$T/err"
  kill -USR1 "$pid"
  held_release "$T/hold" "$pid"
  rm -f "$T/hold" "$T/hold.held"
}

# interrupted_at KNOB SQL [PARAM...]: stopped_at KNOB query SQL [PARAM...].
interrupted_at() {
  local knob=$1
  shift
  stopped_at "$knob" query "$@"
}

# docs.t (n INTEGER): 3 segments of 100 rows, n 1..100 each.
three_segments() {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'n INTEGER'
  for _ in 1 2 3; do seq 1 100 | sed 's/^/{"n":/; s/$/}/' | lake-query -q --import docs.t; done
}

@test "lake_interrupt while a statement is planned stops it in lake_query, status 1 and code interrupted: a split aggregate reads no segment, an INSERT appends nothing" {
  three_segments
  sql="SELECT n % 2 AS odd, count(*) AS c FROM docs.t GROUP BY 1 ORDER BY 1"
  # not stopped: split by segment, its partials read while planning
  LAKE_TRACE=1 LAKE_QUERY_THREADS=3 run --separate-stderr "$RT" query "$sql"
  assert_success
  assert_output '{"odd":0,"c":150}
{"odd":1,"c":150}'
  [[ $stderr == *"trace: query aggregate docs.t: 3 segments read on "* ]] || fail "not split: $stderr"
  # stopped while planned: no segment read, no row
  interrupted_at LAKE_TEST_PLAN_HOLD "$sql"
  assert_equal "exit $HELD_STATUS" "exit 1"
  assert_equal "$(grep -v '^trace: ' "$T/err")" "roundtrip: interrupted (interrupted)"
  if grep -q "trace: query aggregate docs.t: 3 segments read" "$T/err"; then fail "read on: $(cat "$T/err")"; fi
  assert_equal "$(cat "$T/out")" ""
  # an INSERT stopped while planned appends nothing
  interrupted_at LAKE_TEST_PLAN_HOLD "INSERT INTO docs.t VALUES (?)" i:7
  assert_equal "exit $HELD_STATUS" "exit 1"
  assert_equal "$(grep -v '^trace: ' "$T/err")" "roundtrip: interrupted (interrupted)"
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 3
  assert_equal "$(lake-query -c "SELECT count(*) FROM docs.t")" 300
}

@test "lake_interrupt while a DELETE runs, its new segments uploaded and not yet committed, stops it: status 1, code interrupted, nothing committed" {
  three_segments
  interrupted_at LAKE_TEST_REWRITE_HOLD "DELETE FROM docs.t WHERE n = ?" i:5
  assert_equal "exit $HELD_STATUS" "exit 1"
  assert_equal "$(grep -v '^trace: ' "$T/err")" "roundtrip: interrupted (interrupted)"
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 3
  assert_equal "$(lake-query -c "SELECT count(*) FROM docs.t WHERE n = 5")" 3
}

# shape_of NS.T: its version and segment locations, one line of JSON.
shape_of() {
  lake-catalog resolve "$1" | jq -c '[.version, [.segments[].location]]'
}

@test "lake_interrupt while lake_catalog_compact runs, its new segments uploaded and not yet committed, stops it: status 1, code interrupted, nothing committed; the table compacts afterwards" {
  three_segments
  local before
  before=$(shape_of docs.t)
  stopped_at LAKE_TEST_COMPACT_HOLD compact docs.t
  assert_equal "exit $HELD_STATUS" "exit 1"
  assert_equal "$(grep -v '^trace: ' "$T/err")" "roundtrip: docs.t: interrupted; nothing committed (interrupted)"
  if grep -q '^trace: source compact' "$T/err"; then fail "a compact was sent: $(cat "$T/err")"; fi
  assert_equal "$(cat "$T/out")" ""
  assert_equal "$(shape_of docs.t)" "$before"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(n) FROM docs.t')" $'300\t15150'
  # nothing torn: the table compacts, and takes appends, as before
  run --separate-stderr "$RT" compact docs.t
  assert_success
  assert_equal "$stderr" ""
  assert_equal "$(lake-catalog resolve docs.t | jq -c '[.version, (.segments | length)]')" "[4,1]"
  run "$RT" query "INSERT INTO docs.t VALUES (?)" i:7
  assert_success
  assert_equal "$(lake-query -c 'SELECT count(*), sum(n) FROM docs.t')" $'301\t15157'
}

@test "lake_interrupt while the compaction after an append runs (at lake_close) stops it: the append stands, nothing is compacted, no warning; the next append compacts" {
  three_segments
  export LAKE_COMPACT_THRESHOLD=2
  stopped_at LAKE_TEST_COMPACT_HOLD query "INSERT INTO docs.t VALUES (?)" i:7
  assert_equal "exit $HELD_STATUS" "exit 0"
  assert_equal "$(grep -v '^trace: ' "$T/err")" ""
  grep -q '^trace: compact docs.t: 4 small segments, threshold 2: compacting$' "$T/err" ||
    fail "no compaction started: $(cat "$T/err")"
  if grep -q '^trace: source compact' "$T/err"; then fail "a compact was sent: $(cat "$T/err")"; fi
  assert_equal "$(lake-catalog resolve docs.t | jq -c '[.version, (.segments | length)]')" "[4,4]"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(n) FROM docs.t')" $'301\t15157'
  run --separate-stderr "$RT" query "INSERT INTO docs.t VALUES (?)" i:8
  assert_success
  assert_equal "$stderr" ""
  assert_equal "$(lake-catalog resolve docs.t | jq -c '[.version, (.segments | length)]')" "[6,1]"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(n) FROM docs.t')" $'302\t15165'
}

@test "lake_catalog_create, _drop and _show change and show tables as lake-catalog does, with its exit statuses" {
  run --separate-stderr "$RT" create-namespace docs
  assert_success
  run --separate-stderr "$RT" create docs.scans 'path TEXT, year INTEGER, f FILE'
  assert_success
  run lake-catalog --json list
  assert_output '[{"namespace":"docs","name":"scans"}]'
  run --separate-stderr "$RT" show docs.scans
  assert_success
  assert_output "$(lake-catalog --json show docs.scans)"
  assert_equal "$(jq -c 'map(.type)' <<<"$output")" '["TEXT","INTEGER","FILE"]'
  # the statuses and messages lake-catalog gives
  for args in "create|docs.scans|x TEXT" "create|docs.bad|x" "create|nodot|x TEXT" "create|nons.t|x TEXT" \
              "drop|docs.nope" "show|docs.nope" "create-namespace|docs"; do
    IFS='|' read -r -a a <<<"$args"
    run --separate-stderr lake-catalog "${a[@]}"
    want=$status
    msg=${stderr#lake-catalog: }
    msg=${msg% (see *}
    run --separate-stderr "$RT" "${a[@]}"
    assert_error roundtrip "$want" "$msg"
  done
  # created through the library, queried through the library at once
  run "$RT" query "INSERT INTO docs.scans (path, year) VALUES (?, ?)" t:a i:2024
  assert_success
  run "$RT" query "SELECT path, year FROM docs.scans"
  assert_output '{"path":"a","year":2024}'
  run --separate-stderr "$RT" drop docs.scans
  assert_success
  run lake-catalog list
  assert_output ""
  run --separate-stderr "$RT" query "SELECT * FROM docs.scans"
  assert_error roundtrip 66 "no such table" "(no_input)"
}

@test "lake_catalog_create_v2 and _create_namespace_v2 with LIBLAKE_IF_NOT_EXISTS are lake-catalog's --if-not-exists: what exists is success, other columns are refused (code exists)" {
  run --separate-stderr "$RT" create-namespace docs if-not-exists
  assert_clean_success
  run --separate-stderr "$RT" create-namespace docs if-not-exists
  assert_clean_success
  run --separate-stderr "$RT" create-namespace docs
  assert_error roundtrip 1 "docs: namespace exists" "(exists)"
  run --separate-stderr "$RT" create docs.t 'a TEXT, b INTEGER' if-not-exists
  assert_clean_success
  # the same columns in other words, and after alters gave them ids
  run --separate-stderr "$RT" create docs.t 'a text,b   INTEGER' if-not-exists
  assert_clean_success
  lake-catalog alter docs.t rename-column b c >/dev/null
  lake-catalog alter docs.t rename-column c b >/dev/null
  run --separate-stderr "$RT" create docs.t 'a TEXT, b INTEGER' if-not-exists
  assert_clean_success
  run --separate-stderr "$RT" create docs.t 'a TEXT, b INTEGER'
  assert_error roundtrip 1 "docs.t: table exists" "(exists)"
  # other columns: the command's refusal, word for word
  run --separate-stderr lake-catalog create docs.t 'a TEXT' --if-not-exists
  assert_equal "exit $status" "exit 1"
  local msg=${stderr#lake-catalog: }
  assert_equal "$msg" "docs.t exists with another schema ('a TEXT, b INTEGER'); --if-not-exists changes nothing"
  run --separate-stderr "$RT" create docs.t 'a TEXT' if-not-exists
  assert_error roundtrip 1 "$msg (exists)"
  # an unknown namespace is no "exists"
  run --separate-stderr "$RT" create nons.t 'a TEXT' if-not-exists
  assert_error roundtrip 66 "(no_input)"
  # nothing but the two alters made a version
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 2
}

@test "seed: put, insert a row holding its FILE value, query it back by parameters, decode, read and compare, through the library alone" {
  head -c 3000000 /dev/urandom >"$T/scan.bin"
  sum=$(sha256sum <"$T/scan.bin" | cut -d' ' -f1)
  run --separate-stderr "$RT" seed docs.seed "$T/scan.bin"
  assert_success
  assert_equal "$stderr" ""
  assert_line "read back 3000000 bytes: the same"
  assert_line "seed: OK 3000000 $sum"
  # the table was created (and its namespace); a second seed appends a second version
  run --separate-stderr "$RT" seed docs.seed "$T/scan.bin"
  assert_success
  assert_equal "$(lake-catalog resolve docs.seed | jq .version)" 2
  run lake-query -f csv -c "SELECT fl_get_size(f), fl_get_etag(f) FROM docs.seed"
  assert_output "3000000,$sum
3000000,$sum"
  # what the row names, lake-get reads
  lake-query -f jsonl -c "SELECT f FROM docs.seed LIMIT 1" | lake-get >"$T/back"
  cmp "$T/scan.bin" "$T/back"
}

@test "a long-lived client's lake_catalog_list sees a table another process created since its first, empty, list (issue 42)" {
  CLIENT=$BUILD/examples/client
  run --separate-stderr "$CLIENT" list-twice \
    "lake-catalog create-namespace docs && lake-catalog create docs.t 'a TEXT'"
  assert_success
  assert_equal "$stderr" ""
  assert_output '[]
[{"namespace":"docs","name":"t"}]'
  # and a table dropped elsewhere is gone from the next list
  run --separate-stderr "$CLIENT" list-twice "lake-catalog drop docs.t"
  assert_success
  assert_output '[{"namespace":"docs","name":"t"}]
[]'
}

@test "lake_catalog_list and lake_resolve answer what lake-catalog --json list and resolve print" {
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'path TEXT, f FILE'
  lake-catalog create-namespace other
  lake-catalog create other.t 'x INTEGER'
  run --separate-stderr "$RT" list
  assert_success
  assert_equal "$stderr" ""
  assert_output "$(lake-catalog --json list)"
  assert_equal "$(jq -c 'map(.namespace + "." + .name)' <<<"$output")" '["docs.scans","other.t"]'
  run "$RT" list docs
  assert_output '[{"namespace":"docs","name":"scans"}]'
  run --separate-stderr "$RT" list nope
  assert_error roundtrip 66 "nope: no such namespace" "(no_input)"
  lake-put --table docs.scans "$BATS_TEST_FILENAME" >/dev/null
  run "$RT" resolve docs.scans
  assert_success
  assert_output "$(lake-catalog resolve docs.scans)"
  assert_equal "$(jq .version <<<"$output")" 1
  run "$RT" resolve docs.scans 0
  assert_output "$(lake-catalog resolve --version 0 docs.scans)"
  run --separate-stderr "$RT" resolve docs.nope
  assert_error roundtrip 66 "docs.nope: no such table" "(no_input)"
  run --separate-stderr "$RT" resolve docs.scans 9
  assert_error roundtrip 66 "no version 9" "(no_input)"
}

@test "remote: the same round trip through lake-metasrv's stage and catalog; an outage serves the cached catalog with a warning through lake_set_warn" {
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'path TEXT, f FILE'
  head -c 3000000 /dev/urandom >"$T/in"
  run --separate-stderr "$RT" "$T/in"
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 1 "read back 3000000 bytes: the same"
  [[ ${lines[0]} == *"\"location\":\"file://$T/srv/stage/files/"* ]] || fail "not in the server's stage: ${lines[0]}"
  run "$RT" list
  assert_output '[{"namespace":"docs","name":"scans"}]'
  run "$RT" resolve docs.scans
  assert_output "$(lake-catalog resolve docs.scans)"
  metasrv_stop
  LAKE_CATALOG_TTL=0 run --separate-stderr "$RT" list
  assert_success
  assert_output '[{"namespace":"docs","name":"scans"}]'
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "roundtrip: warning: "*"serving generation "*" fetched "*" s ago"* ]] ||
    fail "no stale warning: $stderr"
  # lake_open_v2's keys: catalog_ttl as the environment's, catalog_strict
  # refuses the stale snapshot (lake-catalog --strict), catalog_offline
  # asks no source at all (--offline)
  run --separate-stderr "$RT" -o catalog_ttl=0 list
  assert_success
  assert_output '[{"namespace":"docs","name":"scans"}]'
  [[ $stderr == "roundtrip: warning: "*"serving generation "* ]] || fail "no stale warning: $stderr"
  run --separate-stderr "$RT" -o catalog_ttl=0 -o catalog_strict=1 list
  assert_equal "exit $status" "exit 69"
  [[ $stderr == "roundtrip: "*"(unavailable)" ]] || fail "not refused: $stderr"
  LAKE_TRACE=1 run --separate-stderr "$RT" -o catalog_ttl=0 -o catalog_offline=1 list
  assert_success
  assert_output '[{"namespace":"docs","name":"scans"}]'
  [[ $stderr != *"trace: source"* ]] || fail "the source was asked: $stderr"
  run --separate-stderr "$RT" -o catalog_offline=yes list
  assert_error roundtrip 64 "catalog_offline: 'yes' is neither 0 nor 1" "(usage)"
  # catalog_max_age (lake-catalog --max-age) in place of catalog_ttl,
  # which is still checked
  run --separate-stderr "$RT" -o catalog_max_age=0 list
  assert_success
  [[ $stderr == "roundtrip: warning: "*"serving generation "* ]] || fail "no stale warning: $stderr"
  LAKE_CATALOG_TTL=0 run --separate-stderr "$RT" -o catalog_max_age=100000 list
  assert_clean_success
  assert_output '[{"namespace":"docs","name":"scans"}]'
  LAKE_CATALOG_TTL=soon run --separate-stderr "$RT" -o catalog_max_age=100000 list
  assert_error roundtrip 78 "catalog_ttl: 'soon' is not a number of seconds" "(config)"
  run --separate-stderr "$RT" -o catalog_max_age=-1 list
  assert_error roundtrip 64 "catalog_max_age: '-1' is not a number of seconds" "(usage)"
  # the stage lake-metasrv advertises is asked for when first needed: with
  # the server down and no cache, a query of no table still answers (as
  # lake-query's), and a put says what it could not reach
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr "$RT" query "SELECT 1 AS one"
  assert_success
  assert_output '{"one":1}'
  run --separate-stderr "$RT" "$T/in"
  assert_equal "exit $status" "exit 69"
  [[ $stderr == "roundtrip: "*"(unavailable)" ]] || fail "not the outage: $stderr"
}

@test "remote: lake_query, INSERT, create, drop, show and the seed round trip against lake-metasrv" {
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  head -c 2000000 /dev/urandom >"$T/in"
  run --separate-stderr "$RT" seed docs.seed "$T/in"
  assert_success
  assert_equal "$stderr" ""
  assert_line "seed: OK 2000000 $(sha256sum <"$T/in" | cut -d' ' -f1)"
  run lake-query -c "SELECT fl_get_stage(f) FROM docs.seed"
  assert_output "file://$T/srv/stage"
  run --separate-stderr "$RT" create docs.t 'name TEXT, n INTEGER'
  assert_success
  run "$RT" show docs.t
  assert_output "$(lake-catalog --json show docs.t)"
  run --separate-stderr "$RT" query "INSERT INTO docs.t VALUES (?, ?)" t:a i:1
  assert_success
  assert_equal "$(lake-catalog resolve docs.t | jq .version)" 1
  run "$RT" query "SELECT * FROM docs.t"
  assert_output "$(lake-query -f jsonl -c "SELECT * FROM docs.t")"
  run --separate-stderr "$RT" create docs.t 'x TEXT'
  assert_error roundtrip 1 "table exists"
  run --separate-stderr "$RT" drop docs.t
  assert_success
  run lake-catalog list
  assert_output "docs	seed"
}

# import_twins: docs.lib and docs.cmd, the same columns, for lake_import
# and lake-query --import of the same input.
import_twins() {
  lake-catalog create-namespace docs
  lake-catalog create docs.lib 'name TEXT, n INTEGER, x REAL, b BLOB'
  lake-catalog create docs.cmd 'name TEXT, n INTEGER, x REAL, b BLOB'
  printf 'name,n,x,b\none,1,1.5,00ff\n"two, ""quoted""",2,,\n,3,2e3,""\n' >"$T/in.csv"
  printf '{"name":"a","n":10}\n\n{"name":"b","x":2.5,"b":"abcd"}\n' >"$T/in.jsonl"
}

# check_import_twins: both tables at version V with the same rows.
check_import_twins() {
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" "$1"
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" "$1"
  run lake-query -f jsonl -c "SELECT name, n, x, hex(b) FROM docs.cmd ORDER BY n, name"
  local want=$output
  run lake-query -f jsonl -c "SELECT name, n, x, hex(b) FROM docs.lib ORDER BY n, name"
  assert_output "$want"
  assert_equal "${#lines[@]}" "$2"
}

# import_failures_as_the_command: each bad input is the command's status
# and message through lake_import (on stdin, and from a file as "input"),
# and appends nothing to either table.
import_failures_as_the_command() {
  local v
  v=$(lake-catalog resolve docs.lib | jq .version)
  printf 'name,n\n"open,1\n' >"$T/bad-quote.csv"
  printf 'name,zz\na,1\n' >"$T/bad-column.csv"
  printf 'name,n\na,1,2\n' >"$T/bad-fields.csv"
  printf 'name,n\na,1\nb,abc\n' >"$T/bad-type.csv"
  printf 'name,n\na"b,1\n' >"$T/bad-strict.csv"
  printf '{"name":"a"}\n{"name":\n' >"$T/bad.jsonl"
  printf '{"name":"a","n":[1]}\n' >"$T/bad-nested.jsonl"
  for c in "docs.nope|auto||in.csv" "docs.lib|csv|--csv|bad-quote.csv" "docs.lib|auto||bad-column.csv" \
           "docs.lib|csv|--csv|bad-fields.csv" "docs.lib|auto||bad-type.csv" \
           "docs.lib|csv-strict|--csv --strict|bad-strict.csv" "docs.lib|jsonl|--jsonl|bad.jsonl" \
           "docs.lib|auto||bad-nested.jsonl" "nodot|auto||in.csv"; do
    IFS='|' read -r table fmt opts file <<<"$c"
    # shellcheck disable=SC2086 # opts is zero or more options
    run --separate-stderr lake-query --import "${table/lib/cmd}" $opts <"$T/$file"
    local want=$status msg=${stderr#lake-query: }
    msg=${msg% (see *}
    [ "$want" -ne 0 ] || fail "lake-query --import of $file succeeded"
    msg=${msg/docs.cmd/docs.lib}
    run --separate-stderr "$RT" import "$table" "$fmt" - <"$T/$file"
    assert_equal "exit $status" "exit $want"
    assert_equal "$stderr" "roundtrip: $msg ($(code_of "$want"))"
    run --separate-stderr "$RT" import "$table" "$fmt" "$T/$file"
    assert_equal "exit $status" "exit $want"
    assert_equal "$stderr" "roundtrip: ${msg/#stdin:/input:} ($(code_of "$want"))"
  done
  # stopped by lake_interrupt: nothing appended either
  run --separate-stderr "$RT" import-stopped docs.lib csv "$T/in.csv"
  assert_error roundtrip 1 "docs.lib: interrupted" "(interrupted)"
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" "$v"
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" "$v"
}

code_of() {
  case $1 in
    64) echo usage ;;
    65) echo data ;;
    66) echo no_input ;;
    67) echo expired ;;
    *) echo failed ;;
  esac
}

@test "lake_import appends a file's rows as one version each, the rows lake-query --import appends of the same input; its failures are the command's and append nothing" {
  import_twins
  run --separate-stderr "$RT" import docs.lib csv "$T/in.csv"
  assert_success
  assert_equal "$stderr" "roundtrip: warning: docs.lib: 3 rows appended"
  run --separate-stderr lake-query --import docs.cmd --csv <"$T/in.csv"
  assert_equal "$stderr" "lake-query: docs.cmd: 3 rows appended"
  check_import_twins 1 3
  # the command's default (JSON Lines by its first byte), from stdin
  run --separate-stderr "$RT" import docs.lib auto - <"$T/in.jsonl"
  assert_success
  lake-query -q --import docs.cmd <"$T/in.jsonl"
  check_import_twins 2 5
  # no rows: no version, as the command
  printf 'name,n\n' >"$T/empty.csv"
  run --separate-stderr "$RT" import docs.lib csv "$T/empty.csv"
  assert_success
  assert_equal "$stderr" "roundtrip: warning: docs.lib: no rows: nothing appended"
  lake-query -q --import docs.cmd --csv <"$T/empty.csv"
  check_import_twins 2 5
  import_failures_as_the_command
  check_import_twins 2 5
}

@test "lake_interrupt while lake_import waits for more input on a FIFO stops it: status 1, code interrupted, nothing appended; the client imports the next input" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'name TEXT, n INTEGER'
  printf 'name,n\nb,2\n' >"$T/next.csv"
  mkfifo "$T/fifo"
  # held open here (read-write: no wait for a reader) so that the import
  # sees no end after the rows written (fd 7: bats's own is 3)
  exec 7<>"$T/fifo"
  printf 'name,n\na,1\n' >&7
  "$RT" import docs.t csv "$T/fifo" "$T/next.csv" >"$T/out" 2>"$T/err" &
  local pid=$! rc=0
  # the FIFO open: roundtrip's SIGUSR1 handler is installed; then its rows
  # read and the import waiting for more (in poll(2), with lake_interrupt's wake-up)
  fd_open_wait "$pid" "$T/fifo" "$T/err"
  read_wait "$pid" "$T/err"
  kill -USR1 "$pid"
  wait "$pid" || rc=$?
  exec 7>&-
  assert_equal "exit $rc" "exit 1"
  assert_equal "$(cat "$T/err")" "roundtrip: docs.t: interrupted (interrupted)
roundtrip: warning: docs.t: 1 row appended"
  assert_equal "$(cat "$T/out")" ""
  # one version: the next import's, none of the interrupted one
  assert_equal "$(lake-catalog --json history docs.t | jq -c 'map(.version)')" "[0,1]"
  run lake-query -f csv -c "SELECT name, n FROM docs.t"
  assert_output "b,2"
}

@test "lake_interrupt from another thread stops lake_import blocked on an empty pipe, no signal reaching the import's thread (issue 42)" {
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'name TEXT, n INTEGER'
  mkfifo "$T/fifo"
  exec 7<>"$T/fifo"
  printf 'name,n\na,1\n' >&7
  "$BUILD/examples/client" import-interrupt docs.t "$T/fifo" >"$T/out" 2>"$T/err" &
  local pid=$! rc=0
  fd_open_wait "$pid" "$T/fifo" "$T/err"
  # the import's thread waits for more input (in read(2), or in poll(2)
  # on the FIFO and lake_interrupt's wake-up together)
  state_wait "$pid" "$T/err" "waited for input" any_task_waits "$pid"
  kill -USR1 "$pid"
  wait "$pid" || rc=$?
  exec 7>&-
  assert_equal "exit $rc" "exit 0"
  assert_equal "$(cat "$T/out")" "lake_import: 1 interrupted"
  assert_equal "$(lake-catalog --json history docs.t | jq -c 'map(.version)')" "[0]"
}

@test "a closed or write-only descriptor is 64; an existing namespace or table is code exists; a bare location's FILE value is text lake_file_from_json takes again (issue 42)" {
  run --separate-stderr "$BUILD/examples/client" edges docs
  assert_success
  assert_equal "$stderr" ""
  assert_output "lake_put_fd(closed): 64 usage
lake_put_fd(write-only): 64 usage
lake_import(closed): 64 usage
lake_import(write-only): 64 usage
lake_catalog_create_namespace: 0 ok
lake_catalog_create_namespace(again): 1 exists
lake_catalog_create: 0 ok
lake_catalog_create(again): 1 exists
lake_file_from_json(file:///x/y): 0 ok
its JSON: file:///x/y
lake_file_from_json(its JSON): 0 ok
its location: file:///x/y"
}

@test "misuse the handles can know is 64, never a crash or a hang: rows and a reader closed twice or used after their close, lake_close twice, a closed client used (issue 42)" {
  run --separate-stderr "$BUILD/examples/client" misuse
  assert_success
  assert_equal "$stderr" ""
  assert_output "lake_rows_next: 100 ok
lake_rows_close(twice): returned
lake_rows_next(after close): -1 usage
lake_rows_bind_int64(after close): 64 usage
accessors after close: -1 -1 (null)
lake_reader_read: 6 ok
lake_reader_close(twice): returned
lake_reader_read(after close): -1 usage
lake_close(twice): returned
lake_query(closed client): 64 usage
lake_catalog_list(closed client): 64 usage
lake_stage_url(closed client): (null)"
}

@test "lake_import streams: a CSV file several times larger than the memory the import uses, the same rows as lake-query --import" {
  command -v /usr/bin/time >/dev/null || skip "no /usr/bin/time"
  lake-catalog create-namespace docs
  lake-catalog create docs.lib 'name TEXT, n INTEGER'
  lake-catalog create docs.cmd 'name TEXT, n INTEGER'
  # some 42 MB: 200000 rows of a 200-byte name
  awk 'BEGIN { print "name,n"; s = sprintf("%0200d", 0); for (i = 0; i < 200000; i++) print s i "," i }' >"$T/big.csv"
  /usr/bin/time -f %M -o "$T/lib.kib" "$RT" import docs.lib csv "$T/big.csv" 2>/dev/null
  /usr/bin/time -f %M -o "$T/cmd.kib" lake-query -q --import docs.cmd --csv <"$T/big.csv"
  local lib cmd
  lib=$(tail -n 1 "$T/lib.kib")
  cmd=$(tail -n 1 "$T/cmd.kib")
  # under ASan the shadow memory counts too: only the plain build is measured
  if [ -z "$SAN" ]; then
    [ "$lib" -lt 32768 ] || fail "lake_import peaked at $lib KiB for a 42 MB input (lake-query: $cmd KiB)"
  fi
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" 1
  run lake-query -c "SELECT count(*), sum(n), max(length(name)) FROM docs.lib"
  assert_output "$(lake-query -c "SELECT count(*), sum(n), max(length(name)) FROM docs.cmd")"
  assert_output "200000	19999900000	206"
}

# alter_as_the_command ARGS...: lake-catalog alter docs.cmd ARGS and
# roundtrip alter docs.lib ARGS give the same status and message, and
# the same line (lake_catalog_alter_v2's version).
alter_as_the_command() {
  run --separate-stderr lake-catalog alter docs.cmd "$@"
  local want=$status msg=${stderr#lake-catalog: } out=$output
  msg=${msg% (see *}
  run --separate-stderr "$RT" alter docs.lib "$@"
  assert_equal "exit $status" "exit $want"
  if [ "$want" -eq 0 ]; then
    assert_equal "$stderr" ""
    assert_equal "$output" "${out/docs.cmd/docs.lib}"
    [[ $output == "altered docs.lib: version "[0-9]* ]] || fail "no version: $output"
    assert_equal "$(lake-catalog --json show docs.lib)" "$(lake-catalog --json show docs.cmd)"
  else
    assert_equal "$stderr" "roundtrip: ${msg/docs.cmd/docs.lib} ($(code_of "$want"))"
  fi
}

# alter_both: the changes and the failures of lake-catalog alter, through
# lake_catalog_alter too; each change one version, rows read through it.
alter_both() {
  if ! lake-catalog list docs >/dev/null 2>&1; then lake-catalog create-namespace docs; fi
  lake-catalog create docs.lib 'name TEXT, n INTEGER'
  lake-catalog create docs.cmd 'name TEXT, n INTEGER'
  lake-query -c "INSERT INTO docs.lib VALUES ('a', 1)" -c "INSERT INTO docs.cmd VALUES ('a', 1)"
  alter_as_the_command add-column 'note TEXT'
  alter_as_the_command rename-column n count
  alter_as_the_command drop-column name
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" 4
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" 4
  run lake-query -f csv -H -c "SELECT * FROM docs.lib"
  assert_output "count,note
1,"
  # the failures: each the command's status and message, no version made
  alter_as_the_command add-column 'note TEXT'
  alter_as_the_command add-column 'x'
  alter_as_the_command add-column 'x TEXT, y TEXT'
  alter_as_the_command rename-column nope other
  alter_as_the_command rename-column count 'bad name'
  alter_as_the_command drop-column nope
  alter_as_the_command truncate count
  alter_as_the_command drop-column count
  run --separate-stderr "$RT" alter docs.nope drop-column n
  assert_error roundtrip 66 "(no_input)"
  run --separate-stderr lake-catalog alter docs.nope drop-column n
  assert_equal "$status" 66
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" 5
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" 5
}

@test "lake_catalog_alter adds, renames and drops columns as lake-catalog alter does, one version each, with its statuses and messages" {
  alter_both
}

# versions_as_the_command CMD [ARGS...]: lake-catalog CMD on docs.cmd
# and roundtrip CMD on docs.lib (ARGS the library's, with --to-version N
# and --older-than D for the command) give the same status and message,
# and the same line (what the _v2 calls return).
versions_as_the_command() {
  local cmd=$1 table=${2:-} msg want
  shift 2
  local -a cargs=()
  case $cmd in
    rollback) cargs=(--to-version "$1") ;;
    expire) if [ $# -gt 0 ]; then cargs=(--older-than "$1"); fi ;;
    compact) if [ $# -gt 0 ]; then cargs=(--target-size "$1"); fi ;;
  esac
  run --separate-stderr lake-catalog "$cmd" "${table/lib/cmd}" "${cargs[@]}"
  want=$status
  msg=${stderr#lake-catalog: }
  msg=${msg% (see *}
  local out=$output
  run --separate-stderr "$RT" "$cmd" "$table" "$@"
  assert_equal "exit $status" "exit $want"
  if [ "$want" -eq 0 ]; then
    assert_equal "$stderr" ""
    assert_equal "$output" "${out/docs.cmd/docs.lib}"
    [ -n "$output" ] || fail "$cmd printed nothing"
  else
    # a version expired is named with the instant its twin's expired (the
    # two expired in two runs, maybe a second apart): that is not compared
    local when='s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g'
    assert_equal "$(sed -E "$when" <<<"$stderr")" \
      "$(sed -E "$when" <<<"roundtrip: ${msg/docs.cmd/docs.lib} ($(code_of "$want"))")"
  fi
}

# history_of NS.T: its history, but when each version was committed or
# expired (whether it did kept).
history_of() {
  jq -c 'map(del(.committed_at) | .expired_at |= (. != null))'
}

# versions_both: lake_catalog_rollback, _history, _compact and _expire
# on docs.lib, lake-catalog's rollback, history, compact and expire on
# docs.cmd: the same versions, rows and history; the same failures.
versions_both() {
  if ! lake-catalog list docs >/dev/null 2>&1; then lake-catalog create-namespace docs; fi
  lake-catalog create docs.lib 'name TEXT, n INTEGER'
  lake-catalog create docs.cmd 'name TEXT, n INTEGER'
  local i
  for i in 1 2 3; do
    lake-query -c "INSERT INTO docs.lib VALUES ('r$i', $i)" -c "INSERT INTO docs.cmd VALUES ('r$i', $i)"
  done
  # the library's history is the command's JSON, byte for byte but the times
  run --separate-stderr "$RT" history docs.lib
  assert_success
  assert_equal "$(history_of <<<"$output")" "$(lake-catalog --json history docs.cmd | history_of)"
  assert_equal "$(jq length <<<"$output")" 4
  versions_as_the_command rollback docs.lib 1
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" 4
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" 4
  run lake-query -f csv -c "SELECT * FROM docs.lib"
  assert_output "r1,1"
  for i in 4 5; do
    lake-query -c "INSERT INTO docs.lib VALUES ('r$i', $i)" -c "INSERT INTO docs.cmd VALUES ('r$i', $i)"
  done
  versions_as_the_command compact docs.lib
  assert_equal "$(lake-catalog resolve docs.lib | jq '[.version, (.segments | length)]' -c)" "[7,1]"
  assert_equal "$(lake-catalog resolve docs.cmd | jq '[.version, (.segments | length)]' -c)" "[7,1]"
  run lake-query -f csv -c "SELECT * FROM docs.lib ORDER BY n"
  assert_output "r1,1
r4,4
r5,5"
  # nothing to compact: 0, and the command's warning
  run --separate-stderr lake-catalog compact docs.cmd
  assert_success
  local warned=${stderr#lake-catalog: }
  run --separate-stderr "$RT" compact docs.lib 67108864
  assert_success
  assert_equal "$stderr" "roundtrip: warning: ${warned/docs.cmd/docs.lib}"
  versions_as_the_command expire docs.lib 0
  assert_equal "$("$RT" history docs.lib | history_of)" "$(lake-catalog --json history docs.cmd | history_of)"
  assert_equal "$(lake-catalog --json history docs.lib | jq -c 'map(.expired_at != null)')" \
    "[true,true,true,true,true,true,true,false]"
  run lake-query -f csv -c "SELECT count(*) FROM docs.lib"
  assert_output 3
  # the failures: the command's statuses and messages, no version made
  versions_as_the_command rollback docs.lib 9
  versions_as_the_command rollback docs.lib 2
  versions_as_the_command rollback docs.nope 1
  versions_as_the_command rollback nodot 1
  versions_as_the_command history docs.nope
  versions_as_the_command history nodot
  versions_as_the_command compact docs.nope
  versions_as_the_command compact nodot
  versions_as_the_command expire docs.nope
  versions_as_the_command expire nodot.
  run --separate-stderr lake-catalog expire docs.cmd --older-than 7x
  assert_equal "$status" 64
  local msg=${stderr#lake-catalog: --older-than: }
  run --separate-stderr "$RT" expire docs.lib 7x
  assert_equal "$stderr" "roundtrip: older_than: ${msg% (see *} (usage)"
  run --separate-stderr "$RT" compact docs.lib 1
  assert_error roundtrip 64 "target_size 1 is not a size in bytes" "(usage)"
  run --separate-stderr "$RT" rollback docs.lib -1
  assert_error roundtrip 64 "to_version -1 is negative" "(usage)"
  # the whole catalog, at the retention: nothing is old enough
  run --separate-stderr "$RT" expire
  assert_success
  assert_equal "$(lake-catalog resolve docs.lib | jq .version)" 7
  assert_equal "$(lake-catalog resolve docs.cmd | jq .version)" 7
}

@test "lake_catalog_rollback, _history, _compact and _expire do what lake-catalog rollback, history, compact and expire do, with their statuses and messages" {
  versions_both
}

@test "remote: lake_catalog_rollback, _history, _compact and _expire against lake-metasrv, as lake-catalog's" {
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  versions_both
}

@test "remote: lake_import and lake_catalog_alter against lake-metasrv, as lake-query --import and lake-catalog alter" {
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  import_twins
  run --separate-stderr "$RT" import docs.lib csv "$T/in.csv"
  assert_success
  lake-query -q --import docs.cmd --csv <"$T/in.csv"
  run --separate-stderr "$RT" import docs.lib auto - <"$T/in.jsonl"
  assert_success
  lake-query -q --import docs.cmd <"$T/in.jsonl"
  check_import_twins 2 5
  import_failures_as_the_command
  # a principal that may read but not change: 77, the commands' message,
  # nothing stored or appended
  local peer files
  peer=$(metasrv_token metadata-peer peer "$T/srv")
  files=$(find "$T/srv/stage" -type f | sort)
  run --separate-stderr env LAKE_TOKEN_FILE="$peer" lake-query --import docs.cmd --csv <"$T/in.csv"
  assert_equal "$status" 77
  local msg=${stderr#lake-query: }
  run --separate-stderr env LAKE_TOKEN_FILE="$peer" "$RT" import docs.lib csv - <"$T/in.csv"
  assert_equal "exit $status" "exit 77"
  assert_equal "$stderr" "roundtrip: ${msg/docs.cmd/docs.lib} (permission)"
  run --separate-stderr env LAKE_TOKEN_FILE="$peer" lake-catalog alter docs.cmd drop-column x
  assert_equal "$status" 77
  msg=${stderr#lake-catalog: }
  run --separate-stderr env LAKE_TOKEN_FILE="$peer" "$RT" alter docs.lib drop-column x
  assert_equal "exit $status" "exit 77"
  assert_equal "$stderr" "roundtrip: ${msg/docs.cmd/docs.lib} (permission)"
  assert_equal "$(find "$T/srv/stage" -type f | sort)" "$files"
  check_import_twins 2 5
  lake-catalog drop docs.lib
  lake-catalog drop docs.cmd
  alter_both
}

@test "lake_open reads lake.conf(5) and the environment as the commands do: a bad stage is 78" {
  LAKE_STAGE=ftp://nowhere run --separate-stderr "$RT" "$BATS_TEST_FILENAME"
  assert_error roundtrip 78 "(config)"
  LAKE_STAGE=ftp://nowhere run --separate-stderr lake-put "$BATS_TEST_FILENAME"
  assert_failure 78
  mkdir -p "$XDG_CONFIG_HOME/lake"
  echo "stage = file://$T/other" >"$XDG_CONFIG_HOME/lake/config"
  mkdir "$T/other"
  run --separate-stderr "$RT" "$BATS_TEST_FILENAME"
  assert_success
  [[ ${lines[0]} == *"\"location\":\"file://$T/other/files/"* ]] || fail "not in lake.conf's stage: ${lines[0]}"
}

@test "a run-time library that cannot be bound is the error (status 1) of the call that needs it, never an exit inside the program; the commands exit 1 with the same line" {
  # A fault the real libraries cannot produce: an empty libmagic.so.1 and
  # libcurl.so.4 found first through LD_LIBRARY_PATH, as an old or broken
  # install would offer them.
  mkdir "$T/fake"
  cc -shared -fPIC -o "$T/fake/libmagic.so.1" -x c /dev/null
  cc -shared -fPIC -o "$T/fake/libcurl.so.4" -x c /dev/null
  fv=$(lake-put --content-type text/plain "$BATS_TEST_FILENAME")
  # libmagic is bound by the first put that detects a type: the put fails,
  # leaving nothing
  LD_LIBRARY_PATH=$T/fake run --separate-stderr "$RT" "$BATS_TEST_FILENAME"
  assert_error roundtrip 1 "libmagic.so.1 has no magic_open (libmagic 5 is needed) (failed)"
  LD_LIBRARY_PATH=$T/fake run --separate-stderr lake-put "$BATS_TEST_FILENAME"
  assert_error lake-put 1 "libmagic.so.1 has no magic_open (libmagic 5 is needed)"
  tar cf "$T/a.tar" -C "$(dirname "$BATS_TEST_FILENAME")" liblake.bats
  LD_LIBRARY_PATH=$T/fake run --separate-stderr lake-put --archive "$T/a.tar"
  assert_error lake-put 1 "libmagic.so.1 has no magic_open (libmagic 5 is needed)"
  assert_equal "$(find "$LAKE_HOME/stage" -type f | wc -l)" 1
  # and nothing else needs it: a get, a put with its type stated
  LD_LIBRARY_PATH=$T/fake run --separate-stderr lake-get "$fv"
  assert_success
  assert_output "$(cat "$BATS_TEST_FILENAME")"
  LD_LIBRARY_PATH=$T/fake run --separate-stderr lake-put --content-type text/x-bats "$BATS_TEST_FILENAME"
  assert_success
  [[ $output == *'"content_type":"text/x-bats"'* ]] || fail "$output"
  assert_equal "$(find "$LAKE_HOME/stage" -type f | wc -l)" 2
  # nor an empty input, which has no type to detect
  LD_LIBRARY_PATH=$T/fake run --separate-stderr lake-put </dev/null
  assert_success
  [[ $output == *'"content_type":"application/octet-stream"'* ]] || fail "$output"
  # libcurl only matters to a remote lake or an S3 stage
  mkdir "$T/fake2"
  cp "$T/fake/libcurl.so.4" "$T/fake2/"
  LD_LIBRARY_PATH=$T/fake2 run --separate-stderr "$RT" "$BATS_TEST_FILENAME"
  assert_success
  LAKE_STAGE=s3://bucket/prefix LD_LIBRARY_PATH=$T/fake2 run --separate-stderr "$RT" "$BATS_TEST_FILENAME"
  assert_error roundtrip 1 "libcurl.so.4 has no curl_global_init (libcurl 7.81 or later is needed) (failed)"
  # a remote lake: the first call that talks to lake-metasrv binds it; a
  # query of no table needs none
  export LAKE_METASRV=https://127.0.0.1:9 LAKE_TOKEN=lake_0123456789abcdef
  LD_LIBRARY_PATH=$T/fake2 run --separate-stderr "$RT" list
  assert_error roundtrip 1 "libcurl.so.4 has no curl_global_init (libcurl 7.81 or later is needed) (failed)"
  LD_LIBRARY_PATH=$T/fake2 run --separate-stderr "$RT" query "SELECT 2 AS two"
  assert_success
  assert_output '{"two":2}'
}

@test "installed with make install: lake.h, liblake.so.0, lake.pc; programs built with pkg-config, the liblake(3) example among them" {
  root="$T/root"
  run make -s -C "$LAKE_SRC" ${SAN:+SANITIZE=1} install DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  lib=$root/opt/lake/lib
  assert_file_exist "$root/opt/lake/include/lake.h"
  assert_file_exist "$lib/liblake.a"
  assert_file_exist "$lib/liblake.so.0.1.0"
  assert_equal "$(readlink "$lib/liblake.so.0")" liblake.so.0.1.0
  assert_equal "$(readlink "$lib/liblake.so")" liblake.so.0
  assert_file_exist "$lib/pkgconfig/lake.pc"
  assert_file_exist "$root/opt/lake/share/man/man3/liblake.3"
  assert_file_exist "$root/opt/lake/share/man/man3/lake_open.3"
  export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  run pkg-config --modversion lake
  assert_output "$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")"
  run pkg-config --cflags --libs lake
  assert_equal "${output% }" "-I$root/opt/lake/include -L$lib -llake"
  # the page's example, as printed, and the tree's example
  awk '/^\.Sh EXAMPLES/ { f = 1 } f == 1 && /^\.Bd -literal/ { f = 2; next }
       f == 2 && /^\.Ed/ { exit } f == 2 { print }' "$LAKE_SRC/man/man3/liblake.3" |
    sed -e 's/\\e/\\/g' -e 's/\\&//g' >"$T/example.c"
  grep -q 'lake_put_fd' "$T/example.c" || fail "no example in liblake(3): $(cat "$T/example.c")"
  local san=()
  [ -z "$SAN" ] || san=("-fsanitize=address,undefined")
  # shellcheck disable=SC2046 # pkg-config's words are meant to split
  cc -Wall -Wextra -Werror "${san[@]}" -o "$T/example" "$T/example.c" $(pkg-config --cflags --libs lake)
  # shellcheck disable=SC2046 # as above
  cc -Wall -Wextra -Werror "${san[@]}" -o "$T/roundtrip" "$LAKE_SRC/examples/roundtrip.c" $(pkg-config --cflags --libs lake)
  head -c 1500000 /dev/urandom >"$T/in"
  LD_LIBRARY_PATH=$lib run_to "$T/out" "$T/example" <"$T/in"
  assert_equal "$status" 0
  cmp "$T/in" "$T/out"
  assert_equal "$(json_field size "$stderr")" 1500000
  LD_LIBRARY_PATH=$lib run "$T/roundtrip" "$T/in"
  assert_success
  assert_line --index 1 "read back 1500000 bytes: the same"
  LD_LIBRARY_PATH=$lib run ldd "$T/roundtrip"
  assert_line --partial "liblake.so.0 => $lib/liblake.so.0"
}

@test "liblake.a, installed, defines only lake_ names: a program of its own configFree and bytesParse links with pkg-config --static and runs; Libs.private is what the library needs (issue 42)" {
  root="$T/root"
  run make -s -C "$LAKE_SRC" ${SAN:+SANITIZE=1} install DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  lib=$root/opt/lake/lib
  run bash -c "nm -g --defined-only '$lib/liblake.a' | awk 'NF == 3 && \$3 !~ /^lake_/'"
  assert_output ""
  # the same names as liblake.so.0
  nm -g --defined-only "$lib/liblake.a" | awk 'NF == 3 { print $3 }' | sort >"$T/static"
  nm -D --defined-only "$lib/liblake.so.0" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/shared"
  run diff "$T/shared" "$T/static"
  assert_success
  # Libs.private: the libraries liblake.so.0 needs, no other (no libpq:
  # the registry's PostgreSQL driver is lake-metasrv's, in neither); the
  # sanitizers' run-times of a SANITIZE=1 build come with -fsanitize
  objdump -p "$lib/liblake.so.0" | awk '$1 == "NEEDED" { print $2 }' |
    sed -n 's/^lib\([^.]*\)\.so.*/-l\1/p' | grep -vxE -- '-l(c|ld-linux-x86-64|ld-linux-aarch64|asan|ubsan)' |
    sort >"$T/needed"
  sed -n 's/^Libs.private: *//p' "$lib/pkgconfig/lake.pc" | tr ' ' '\n' | sed '/^$/d' | sort >"$T/private"
  run diff "$T/needed" "$T/private"
  assert_success
  # a static link: only the archive to link with
  rm "$lib/liblake.so"
  export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  printf '%s\n' '#include <stddef.h>' 'void configFree(void *p);' 'void configFree(void *p) { (void)p; }' \
    'int bytesParse(const char *s);' 'int bytesParse(const char *s) { return s != NULL; }' >"$T/clash.c"
  local san=()
  [ -z "$SAN" ] || san=("-fsanitize=address,undefined")
  # shellcheck disable=SC2046 # pkg-config's words are meant to split
  run cc -Wall -Wextra -Werror "${san[@]}" -o "$T/roundtrip" "$LAKE_SRC/examples/roundtrip.c" "$T/clash.c" \
    $(pkg-config --static --cflags --libs lake)
  assert_success
  run ldd "$T/roundtrip"
  refute_output --partial liblake
  head -c 1500000 /dev/urandom >"$T/in"
  run "$T/roundtrip" "$T/in"
  assert_success
  assert_line --index 1 "read back 1500000 bytes: the same"
}

@test "two clients commit on two threads under ThreadSanitizer: no report (issue 42)" {
  local tsan=${LAKE_TSAN:-}
  if [ -z "$tsan" ]; then
    run make -s -C "$LAKE_SRC" SANITIZE=thread tsan-bins
    assert_success
    tsan=$LAKE_SRC/build-tsan
  fi
  TSAN_OPTIONS="halt_on_error=1 exitcode=66" run --separate-stderr "$tsan/examples/client" commit docs
  assert_equal "$stderr" ""
  assert_success
  assert_output "docs.t1: 20 rows
docs.t2: 20 rows"
  run lake-query -f csv -c "SELECT (SELECT count(*) FROM docs.t1), (SELECT count(*) FROM docs.t2)"
  assert_output "20,20"
}
