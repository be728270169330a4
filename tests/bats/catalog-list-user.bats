#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# A user's listing (issue 29): a principal denied the bulk snapshot (role
# user) lists the tables it may read through list_tables, against a real
# TLS lake-metasrv on a SQLite and a PostgreSQL registry (the remote and
# remote-pg runs; the embedded lake has no users, so the local run skips),
# counted with LAKE_TRACE=1:
#   - only the tables it holds read on: grants on the catalog, the
#     namespace or the table, to it, to role:user or to PUBLIC;
#   - pages (LAKE_TEST_LIST_PAGE) return every table once, in order, and
#     a generation that moves between two pages (LAKE_TEST_LIST_HOLD)
#     starts the listing again;
#   - the listing is cached as the snapshot is: zero calls while fresh,
#     one conditional list_tables when stale (not_modified, or the new
#     listing once a grant changed the generation);
#   - the source down: the last listing with a warning (exit 0), 69 with
#     --strict; --offline, show and TAB completion read it with no call.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  [ "$LAKE_TEST_SOURCE" != local ] || skip "the embedded lake has no user principals"
  # shellcheck disable=SC2034 # read by as_admin (helpers/metasrv.bash, loaded by source_setup)
  ADMIN=$T/srv/admin.token
  ALICE=$(metasrv_token user alice "$T/srv")
  BOB=$(metasrv_token user bob "$T/srv")
  lake-catalog create-namespace a
  lake-catalog create-namespace b
  lake-catalog create-namespace c
  local t
  for t in t1 t2 t3; do
    lake-catalog create "a.$t" 'x TEXT'
    lake-catalog create "b.$t" 'y INTEGER'
    lake-catalog create "c.$t" 'z REAL'
  done
  # from here on the client is alice, with a cache of her own
  export LAKE_TOKEN_FILE=$ALICE LAKE_CATALOG_TTL=3600
}

teardown() {
  source_teardown
}

# grant PRIVILEGE SCOPE GRANTEE, as the admin
grant() {
  as_admin lake-catalog grant "$1" ON "$2" TO "$3"
}

generation() {
  registry_sql 'SELECT generation FROM directory_marker'
}

@test "a user lists only the tables it may read: grants on a namespace, a table, to role:user and to PUBLIC" {
  grant read a alice
  grant read b.t2 role:user
  grant read c.t3 PUBLIC
  grant read b.t1 bob        # another principal's
  grant write b.t3 alice     # not a read
  # another role's, which grant refuses (it would change nothing): as an
  # older or hand-edited registry might hold one
  registry_sql "INSERT INTO grants VALUES ('c.t1', 'read', 'role:admin', '2026-01-01T00:00:00Z', 'test')"

  run_traced lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3\nb\tt2\nc\tt3'
  # the snapshot is refused (and remembered), then one page lists them
  assert_equal "$(trace_lines source)" "trace: source catalog_snapshot known=-1 -> error permission_denied
trace: source list_tables -> generation=$(generation) tables=5 more=no"
  assert_equal "$(untraced_stderr)" ""

  run --separate-stderr lake-catalog -H list b
  assert_clean_success
  assert_output $'namespace\tname\nb\tt2'
  run --separate-stderr lake-catalog --json list c
  assert_clean_success
  assert_output '[{"namespace":"c","name":"t3"}]'
  run --separate-stderr lake-catalog --json list
  assert_clean_success
  assert_equal "$(jq -r '.[] | .namespace + "." + .name' <<<"$output" | paste -sd' ')" "a.t1 a.t2 a.t3 b.t2 c.t3"

  # a namespace with nothing readable is answered as a missing one
  as_admin lake-catalog create-namespace d
  as_admin lake-catalog create d.t 'x TEXT'
  run --separate-stderr lake-catalog list d
  assert_error lake-catalog 66 "d: no such namespace"
  run --separate-stderr lake-catalog list nope
  assert_error lake-catalog 66 "nope: no such namespace"

  # bob sees his own, the role's and PUBLIC's; the admin every table
  run --separate-stderr env LAKE_TOKEN_FILE="$BOB" lake-catalog list
  assert_success
  assert_output $'b\tt1\nb\tt2\nc\tt3'
  run --separate-stderr as_admin lake-catalog list
  assert_clean_success
  assert_equal "$(wc -l <<<"$output")" 10

  # the action itself: a user's scope, a query-service's whole catalog
  metasrv_post "$ALICE" list_tables '{"namespace":"a"}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c '[.generation == '"$(generation)"', [.tables[] | [.namespace, .name, (.id | length > 0), .schema[0].name]], .more]' <<<"$HTTP_BODY")" \
    '[true,[["a","t1",true,"x"],["a","t2",true,"x"],["a","t3",true,"x"]],false]'
  ETL=$(metasrv_token query-service etl "$T/srv")
  metasrv_post "$ETL" list_tables '{}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq '.tables | length' <<<"$HTTP_BODY")" 10
}

@test "small pages return every table once, in order; the action is bounded and checked" {
  grant read '*' PUBLIC
  local want
  want=$(as_admin lake-catalog list)
  assert_equal "$(wc -l <<<"$want")" 9

  run_traced env LAKE_TEST_LIST_PAGE=2 lake-catalog list
  assert_success
  assert_output "$want"
  local g
  g=$(generation)
  assert_equal "$(trace_lines 'source list_tables')" "trace: source list_tables -> generation=$g tables=2 more=yes
trace: source list_tables after=a.t2 -> generation=$g tables=2 more=yes
trace: source list_tables after=b.t1 -> generation=$g tables=2 more=yes
trace: source list_tables after=b.t3 -> generation=$g tables=2 more=yes
trace: source list_tables after=c.t2 -> generation=$g tables=1 more=no"

  # by hand: after is exclusive, limit is capped by the server (1000)
  metasrv_post "$ALICE" list_tables '{"after":"b.t3","limit":5000}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c '[[.tables[] | .namespace + "." + .name], .more]' <<<"$HTTP_BODY")" '[["c.t1","c.t2","c.t3"],false]'
  metasrv_post "$ALICE" list_tables '{"after":"a.t1","limit":1,"namespace":"c"}'
  assert_equal "$(jq -c '[[.tables[] | .namespace + "." + .name], .more]' <<<"$HTTP_BODY")" '[["c.t1"],true]'
  metasrv_post "$ALICE" list_tables "{\"known_generation\":$g}"
  assert_equal "$(jq -c 'del(.authority)' <<<"$HTTP_BODY")" "{\"status\":\"not_modified\",\"generation\":$g}"

  local body
  for body in '{"after":"a"}' '{"after":"a.b.c"}' '{"after":7}' '{"limit":0}' '{"namespace":"no-such"}' \
              '{"known_generation":"1"}' '{"bogus":1}'; do
    metasrv_post "$ALICE" list_tables "$body"
    metasrv_expect_error 400 invalid_argument
  done
  metasrv_check_errors
}

@test "a grant between two pages starts the listing again: every table of one generation, none twice" {
  grant read a alice
  local g
  g=$(generation)
  LAKE_TEST_LIST_PAGE=2 LAKE_TEST_LIST_HOLD=$T/go LAKE_TRACE=1 lake-catalog list >"$T/list.out" 2>"$T/list.err" &
  local pid=$!
  held_wait "$T/go" "$pid" "$T/list.err"
  grant read b.t2 alice # the generation moves under the listing
  held_release "$T/go" "$pid"
  assert_equal "exit $HELD_STATUS" "exit 0"
  assert_equal "$(cat "$T/list.out")" $'a\tt1\na\tt2\na\tt3\nb\tt2'
  stderr=$(cat "$T/list.err")
  local g2=$((g + 1))
  assert_equal "$(trace_lines 'source list_tables')" "trace: source list_tables -> generation=$g tables=2 more=yes
trace: source list_tables after=a.t2 -> generation=$g2 tables=2 more=no
trace: source list_tables -> generation=$g2 tables=2 more=yes
trace: source list_tables after=a.t2 -> generation=$g2 tables=2 more=no"
  assert_equal "$(untraced_stderr)" ""
}

@test "a fresh listing costs zero calls; a stale one one conditional list_tables; a new grant is seen after the TTL" {
  grant read a alice
  run_traced lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'
  local g
  g=$(generation)

  # fresh: nothing asked, by list or status
  run_traced lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'
  assert_calls 0
  run_traced lake-catalog status
  assert_success
  assert_line "generation=$g"
  assert_line "stale=no"
  assert_calls 0

  # stale: one conditional call, answered not_modified
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'
  assert_calls 1
  assert_equal "$(trace_lines source)" "trace: source list_tables known=$g -> not_modified generation=$g"

  # a grant changes the generation: not seen while fresh, seen after the TTL
  grant read b.t3 role:user
  run_traced lake-catalog list
  assert_output $'a\tt1\na\tt2\na\tt3'
  assert_calls 0
  run_traced env LAKE_CATALOG_TTL=0 lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3\nb\tt3'
  assert_calls 1
  assert_equal "$(trace_lines source)" "trace: source list_tables known=$g -> generation=$((g + 1)) tables=4 more=no"

  # and so is a drop by the admin (a revoke too: it raises the generation)
  as_admin lake-catalog drop a.t1
  as_admin lake-catalog revoke read ON b.t3 FROM role:user
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output $'a\tt2\na\tt3'
  assert_calls 1

  # an explicit refresh asks at once: the snapshot (still refused), then the listing
  run_traced lake-catalog refresh
  assert_success
  assert_equal "$(trace_count 'source list_tables')" 1

  # the refusal of the snapshot forgotten (it is kept 10 minutes, or the
  # TTL when longer), a fresh listing still costs nothing
  rm "$(cache_file denied)"
  run_traced lake-catalog list
  assert_success
  assert_output $'a\tt2\na\tt3'
  assert_calls 0
}

@test "the source down: the last listing with a warning, --strict 69, --offline and TAB completion from the cache" {
  grant read a alice
  grant read c.t1 PUBLIC
  run --separate-stderr lake-catalog list
  assert_success
  local g
  g=$(generation)

  source_break
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3\nc\tt1'
  assert_equal "$(trace_count 'source list_tables')" 1
  [[ $(untraced_stderr) == "lake-catalog: $METASRV_URL unreachable"*"; serving generation $g fetched "*" s ago" ]] ||
    fail "not the outage warning: $(untraced_stderr)"
  # the failure is remembered: the next process skips the doomed call
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3\nc\tt1'
  assert_equal "$(trace_count source)" 0

  run --separate-stderr lake-catalog --max-age 0 --strict list
  assert_error lake-catalog 69

  run_traced lake-catalog --offline list c
  assert_success
  assert_output $'c\tt1'
  assert_calls 0
  run_traced lake-catalog --offline show c.t1
  assert_success
  assert_output $'z\tREAL'
  assert_calls 0

  # and so when the refusal of the snapshot is forgotten (after 10 minutes)
  rm "$(cache_file denied)"
  run_traced lake-catalog --offline list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3\nc\tt1'
  assert_calls 0
  run_traced lake-catalog --offline show a.t3
  assert_success
  assert_output $'x\tTEXT'
  assert_calls 0

  # TAB completion (it runs lake-catalog --offline): tables and columns
  run bash -c 'source "$1" || exit 1
               COMP_WORDS=(lake-catalog show a.); COMP_CWORD=2; COMPREPLY=()
               _lake_complete; printf "%s\n" "${COMPREPLY[@]}"' _ "$LAKE_SRC/completions/lake.bash"
  assert_success
  assert_output $'a.t1\na.t2\na.t3'
  run bash -c 'source "$1" || exit 1
               COMP_WORDS=(lake-query -c "SELECT * FROM c."); COMP_CWORD=2; COMPREPLY=()
               _lake_complete; printf "%s\n" "${COMPREPLY[@]}"' _ "$LAKE_SRC/completions/lake.bash"
  assert_success
  assert_output 'SELECT * FROM c.t1'

  # back: an explicit refresh asks at once, whatever the backoff
  source_heal
  run_traced lake-catalog refresh
  assert_success
  assert_equal "$(trace_lines 'source list_tables')" "trace: source list_tables known=$g -> not_modified generation=$g"
}

@test "a user's listing is its own: kept apart from another user's and the admin's cache, checksummed" {
  grant read a alice
  grant read b bob
  run --separate-stderr lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'
  run --separate-stderr env LAKE_TOKEN_FILE="$BOB" lake-catalog list
  assert_success
  assert_output $'b\tt1\nb\tt2\nb\tt3'
  run --separate-stderr lake-catalog --offline list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'

  # a corrupt listing is ignored and replaced, never trusted
  local f
  for f in "$XDG_CACHE_HOME"/lake/*/listing; do
    sed -i 's/\tt1\t/\tzz\t/' "$f"
  done
  run_traced lake-catalog list
  assert_success
  assert_output $'a\tt1\na\tt2\na\tt3'
  assert_equal "$(trace_count 'source list_tables')" 1
  [[ $(untraced_stderr) == *"is corrupt; ignoring it" ]] || fail "no warning: $(untraced_stderr)"
}
