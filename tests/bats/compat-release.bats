#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The upgrade path of the conditional resolve (issue 25) and of gc's expire
# (issue 28: an older server has none, and gc goes on): the lake-metasrv
# of the release before it (OLD_REV, built here from this checkout's git
# history) and today's clients, on a registry that release wrote.
#   - today's client meets the old server: its conditional resolve
#     (known_id, known_version) is refused as unknown fields (400), and it
#     resolves plainly instead, with the same answer;
#   - the registry the old release wrote is served by today's server, and
#     the user's cache filled through the old server is revalidated with a
#     not_modified;
#   - a user's list meets a server with no list_tables (issue 29): that
#     release's refusal, and the tables it resolved listed offline;
#   - segments the old release's lake-query wrote have no row ranges
#     (issue 30): today's lake-query reads them whole, with the answers of
#     LAKE_QUERY_NO_PUSHDOWN, beside new segments that have them;
#   - its resolve answers name no oldest unexpired version (issue 41):
#     today's client then forgets nothing and serves them as before.

load helpers/common
load helpers/metasrv

# The last revision whose resolve took no known_id / known_version.
OLD_REV=2c8809a

setup_file() {
  local src=$BATS_FILE_TMPDIR/old-src
  git -C "$LAKE_SRC" cat-file -e "$OLD_REV^{commit}" 2>/dev/null ||
    skip "not a git checkout with $OLD_REV (the release this suite runs against)"
  mkdir -p "$src"
  git -C "$LAKE_SRC" archive "$OLD_REV" | tar -x -C "$src"
  # the old release's server, built as that release builds it (plainly:
  # not with the SANITIZE=1 that make check SANITIZE=1 passes down)
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$src" -j2 SANITIZE= GIT_REV="$OLD_REV" build/bin/lake-metasrv build/bin/lake-query \
    >"$BATS_FILE_TMPDIR/old-build.log" 2>&1 ||
    { cat "$BATS_FILE_TMPDIR/old-build.log" >&3; return 1; }
  export OLD_METASRV=$src/build/bin/lake-metasrv OLD_QUERY=$src/build/bin/lake-query
}

setup() {
  [ -x "${OLD_METASRV:-}" ] || skip "no lake-metasrv of $OLD_REV"
  common_setup
  SRV=$T/srv
  mkdir -p "$SRV"
  metasrv_certs "$SRV"
  umask 077
  # the registry and the tokens, written by the old release
  "$OLD_METASRV" init --db "$SRV/registry.db" --stage "file://$SRV/stage" >"$SRV/admin.token"
  "$OLD_METASRV" token create --db "$SRV/registry.db" --role user --name alice >"$SRV/alice.token"
  ALICE=$SRV/alice.token
}

teardown() {
  metasrv_stop
  common_teardown
}

# Start the old release's lake-metasrv on $SRV (metasrv_start's way).
old_start() {
  mkdir -p "$T/oldbin"
  ln -sf "$OLD_METASRV" "$T/oldbin/lake-metasrv"
  PATH=$T/oldbin:$PATH metasrv_start "$SRV" 0
  # the server answering is the old release's
  assert_equal "$(readlink "/proc/$METASRV_PID/exe")" "$(readlink -f "$OLD_METASRV")"
}

@test "today's client and the previous release's server: the conditional resolve falls back to a plain one" {
  old_start
  metasrv_use "$SRV"
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER'
  lake-query -c 'INSERT INTO m.t VALUES (1)'

  export LAKE_TOKEN_FILE=$ALICE LAKE_CATALOG_TTL=3600
  run --separate-stderr lake-catalog resolve m.t
  assert_clean_success
  local reg=$output
  assert_equal "$(jq .version <<<"$reg")" 1
  # that release names no oldest version (issue 41): today's client
  # forgets nothing on its answers, and serves them as before
  assert_equal "$(jq 'has("oldest")' <<<"$reg")" false

  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=1 -> error invalid_argument
trace: source resolve m.t -> version=1"
  assert_equal "$(untraced_stderr)" ""
  run --separate-stderr env LAKE_CATALOG_TTL=0 lake-query -c 'SELECT count(*) FROM m.t'
  assert_clean_success
  assert_output 1

  # the same registry under today's server: revalidated, not_modified
  local port=$METASRV_PORT
  metasrv_stop
  metasrv_start "$SRV" "$port"
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=1 -> not_modified version=1"
  run --separate-stderr lake-query -c "INSERT INTO m.t VALUES (2)"
  assert_clean_success
  run --separate-stderr lake-query -c 'SELECT count(*) FROM m.t'
  assert_clean_success
  assert_output 2

  # alice kept her access through the upgrade's grants to PUBLIC (issue
  # 29), which the server said once and an admin sees, and may revoke
  grep -qF "upgraded to registry schema 5: granted read, write ON * TO PUBLIC" "$SRV/serve.log" ||
    fail "the upgrade did not say so: $(cat "$SRV/serve.log")"
  assert_equal "$(LAKE_TOKEN_FILE=$SRV/admin.token lake-catalog grants | cut -f1-3,5)" \
    $'*\tread\tPUBLIC\tupgrade\n*\twrite\tPUBLIC\tupgrade'
  LAKE_TOKEN_FILE=$SRV/admin.token lake-catalog revoke write ON '*' FROM PUBLIC
  run --separate-stderr lake-query -c "INSERT INTO m.t VALUES (3)"
  assert_error lake-query 77 "alice holds no write privilege on m.t"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM m.t')" 2
}

@test "a registry and segments the previous release wrote: today's server migrates them, alters the table, and reads the old rows by column id" {
  old_start
  metasrv_use "$SRV"
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER, s TEXT'
  lake-query -c "INSERT INTO m.t VALUES (1, 'one'), (2, 'two')"
  local before
  before=$(lake-catalog --max-age 0 resolve m.t | jq -c '[.version, [.segments[].location]]')
  local port=$METASRV_PORT
  metasrv_stop
  metasrv_start "$SRV" "$port"
  assert_equal "$(sqlite3 "$SRV/registry.db" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  run --separate-stderr lake-catalog alter m.t rename-column s label
  assert_clean_success
  run --separate-stderr lake-catalog alter m.t drop-column id
  assert_clean_success
  run --separate-stderr lake-catalog alter m.t add-column 'id INTEGER'
  assert_clean_success
  # the old segment, not rewritten, read through the new columns by id
  assert_equal "$(lake-catalog --max-age 0 resolve m.t | jq -c '[.segments[].location]')" "$(jq -c '.[1]' <<<"$before")"
  run --separate-stderr lake-query -c "SELECT label, id FROM m.t ORDER BY label"
  assert_clean_success
  assert_output $'one\t\ntwo\t'
  # and the version the old release wrote, with its own columns
  run --separate-stderr lake-query -c "SELECT id, s FROM m.t AT (VERSION => 1) ORDER BY id"
  assert_clean_success
  assert_output $'1\tone\n2\ttwo'
}

@test "today's gc and the previous release's server, which has no expire: a warning, and what is unreferenced goes as before" {
  old_start
  metasrv_use "$SRV"
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER'
  lake-query -c 'INSERT INTO m.t VALUES (1)'
  local loose
  loose=$(echo loose | lake-put | json_field location)
  run --separate-stderr env LAKE_TRACE=1 lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  assert_output "$(printf '%s\t6' "$loose")"
  trace_lines source | grep -qx "trace: source expire -> error not_found" || fail "no expire asked: $stderr"
  assert_equal "$(untraced_stderr)" "lake-catalog: gc: the metadata server expires no versions (it is older than expiry)
lake-catalog: gc: 1 object, 6 bytes removed; 1 kept (referenced), 0 kept (younger than the grace)"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM m.t')" 1
}

@test "a user's list against the previous release's server, which has no list_tables: that release's refusal, one line, 77" {
  old_start
  metasrv_use "$SRV"
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER'
  export LAKE_TOKEN_FILE=$ALICE
  run --separate-stderr env LAKE_TRACE=1 lake-catalog list
  assert_equal "exit $status" "exit 77"
  assert_equal "$(trace_lines source)" "trace: source catalog_snapshot known=-1 -> error permission_denied
trace: source list_tables -> error not_found"
  assert_equal "$(untraced_stderr)" "lake-catalog: role user may not list the whole catalog: name a table (lake-catalog show NS.T, lake-query), or see the tables resolved on this host with lake-catalog --offline list"
  # what it resolved is still listed from this host's cache
  lake-catalog resolve m.t >/dev/null
  run --separate-stderr lake-catalog --offline list
  assert_success
  assert_output $'m\tt'
  assert_equal "$stderr" "lake-catalog: this principal may not list the whole catalog; these are the tables it resolved on this host"
}

@test "segments the previous release wrote, without row ranges: read whole, the same answers as with pushdown off" {
  old_start
  metasrv_use "$SRV"
  lake-catalog create-namespace m
  lake-catalog create m.r 'k INTEGER, s TEXT'
  # 100000 rows in one segment, written by the old release's lake-query
  awk 'BEGIN { print "k,s"; for (k = 1; k <= 100000; k++) printf "%d,s%d\n", k, k }' | "$OLD_QUERY" -q --import m.r --csv
  local seg
  seg=$(lake-catalog --max-age 0 resolve m.r | jq -r '.segments[0].location' | sed 's|^file://||')
  run sqlite3 "$seg" "SELECT count(*) FROM sqlite_master WHERE name = 'lake_ranges'"
  assert_output 0
  run --separate-stderr lake-query --explain -c "SELECT * FROM m.r WHERE k BETWEEN 70000 AND 70010"
  assert_clean_success
  assert_line --index 2 --regexp '^  kept +0  .+  100000 rows, no row ranges \(read whole\)$'
  local q
  for q in "SELECT count(*), sum(k), min(s) FROM m.r WHERE k BETWEEN 70000 AND 70010" \
    "SELECT k, s FROM m.r WHERE k IN (3, 65537, 99999) ORDER BY k"; do
    run --separate-stderr lake-query -c "$q"
    assert_clean_success
    local pushed=$output
    run --separate-stderr env LAKE_QUERY_NO_PUSHDOWN=1 lake-query -c "$q"
    assert_clean_success
    assert_equal "$pushed" "$output"
  done
  run lake-query -c "SELECT count(*), sum(k), min(s) FROM m.r WHERE k BETWEEN 70000 AND 70010"
  assert_output $'11\t770055\ts70000'
  # today's writes to the same table carry row ranges beside the old segment
  awk 'BEGIN { print "k,s"; for (k = 100001; k <= 100010; k++) printf "%d,s%d\n", k, k }' |
    LAKE_COMPACT_THRESHOLD=0 lake-query -q --import m.r --csv
  run --separate-stderr lake-query --explain -c "SELECT * FROM m.r WHERE k >= 50000"
  assert_line --index 2 --regexp '^  kept +0  .+  100000 rows, no row ranges \(read whole\)$'
  assert_line --index 3 --regexp '^  kept +1  .+  10 rows, row ranges: 1 of 1 kept \(rowids 1-10\)$'
}
