#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The catalog cache's promises for a principal that may not take the bulk
# snapshot (role user; issue 25, DESIGN §5), against a real TLS
# lake-metasrv on a SQLite and a PostgreSQL registry (tests/run runs every
# metasrv-*.bats on both), counted with LAKE_TRACE=1 as catalog-cache.bats
# counts them for the other roles:
#   - a fresh registration costs zero calls: resolve, show, SELECT, and a
#     fixed version while fresh (past the TTL it is asked again: it may
#     have expired), in any later process;
#   - an expired one costs one conditional resolve (known_id,
#     known_version), answered not_modified, or the new registration;
#   - many processes on one expired registration make one call in all;
#   - the source down: the last registration is served at once with a
#     warning (exit 0), --strict is 69, and the next processes skip the
#     doomed call for the backoff; --offline answers from the cache;
#   - after this host's INSERT the next read sees it (read-your-writes);
#   - a corrupt file of the cache is ignored and replaced;
#   - `lake-catalog list` lists what a user may read (list_tables:
#     catalog-list-user.bats), and `--offline list` (so TAB completion)
#     adds the tables it resolved here;
#   - a not_modified answer names the oldest unexpired version: the
#     expired ones cached are forgotten; no registration older than
#     catalog_max_stale is served without the source (issue 41).

load helpers/common
load helpers/metasrv
load helpers/background

setup() {
  metasrv_setup
  ALICE=$(metasrv_token user alice)
  # alice reads and writes every table, as every user did before grants (issue 29)
  lake-catalog grant read ON '*' TO alice
  lake-catalog grant write ON '*' TO alice
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER, note TEXT'
  lake-catalog create m.u 'x TEXT'
  lake-query -c "INSERT INTO m.t VALUES (1, 'one')"
  # from here on the client is alice, with a cache of her own
  export LAKE_TOKEN_FILE=$ALICE LAKE_CATALOG_TTL=3600
}

teardown() {
  metasrv_stop
  common_teardown
}

# Make every registration in the points file old (resolved at 1 ms after
# the epoch), with a valid checksum: expired for any TTL, without waiting.
age_points() {
  cache_rewrite "$(cache_file points)" '
n = int(lines[4].split()[1])
for i in range(5, 5 + n):
    f = lines[i].split("\t")
    if f[5] != "0":
        f[5] = "1"
    lines[i] = "\t".join(f)'
}

@test "a user's fresh registration costs zero calls: resolve, show, SELECT, and a fixed version while fresh" {
  run_traced lake-catalog resolve m.t
  assert_success
  local reg=$output
  assert_equal "$(jq -c '[.version, (.segments | length)]' <<<"$reg")" "[1,1]"
  # the first asks: the refused snapshot (remembered), then the table
  assert_equal "$(trace_count 'source catalog_snapshot')" 1
  assert_equal "$(trace_count 'source resolve')" 1

  run_traced lake-catalog resolve m.t
  assert_success
  assert_output "$reg"
  assert_calls 0
  run_traced lake-catalog resolve m.t
  assert_success
  assert_output "$reg"
  assert_calls 0

  run_traced lake-catalog show m.t
  assert_success
  assert_output $'id\tINTEGER\nnote\tTEXT'
  assert_calls 0

  # a version already resolved: 0 while the cache is fresh; past the TTL
  # it is asked again, as it may have expired since (issue 28)
  run_traced lake-catalog resolve m.t --version 1
  assert_success
  assert_output "$reg"
  assert_calls 0
  run_traced lake-catalog --max-age 0 resolve m.t --version 1
  assert_success
  assert_output "$reg"
  assert_calls 1
  # an older one is asked once, then cached too
  run_traced lake-catalog resolve m.t --version 0
  assert_success
  assert_equal "$(jq -c '[.version, (.segments | length)]' <<<"$output")" "[0,0]"
  assert_calls 1
  run_traced lake-catalog resolve m.t --version 0
  assert_success
  assert_calls 0

  # a query: the first also learns the stage (whoami), the next asks nothing
  run --separate-stderr lake-query -c 'SELECT note FROM m.t'
  assert_clean_success
  assert_output one
  run_traced lake-query -c 'SELECT count(*) FROM m.t'
  assert_success
  assert_output 1
  assert_calls 0
}

@test "a user's expired registration costs one conditional resolve: not_modified, or the new version" {
  lake-catalog resolve m.t >/dev/null
  run_traced lake-catalog --max-age 0 resolve m.t
  assert_success
  assert_equal "$(jq .version <<<"$output")" 1
  assert_calls 1
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=1 -> not_modified version=1"
  # not_modified renewed it: fresh again
  run_traced lake-catalog resolve m.t
  assert_success
  assert_calls 0

  # the same through the TTL of the environment
  LAKE_CATALOG_TTL=0 run_traced lake-catalog show m.t
  assert_success
  assert_output $'id\tINTEGER\nnote\tTEXT'
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=1 -> not_modified version=1"

  # appended elsewhere: the expired registration is answered whole
  as_admin lake-query -c "INSERT INTO m.t VALUES (2, 'two')"
  run_traced lake-catalog resolve m.t
  assert_success
  assert_equal "$(jq .version <<<"$output")" 1 # fresh: not asked yet
  assert_calls 0
  run_traced lake-catalog --max-age 0 resolve m.t
  assert_success
  assert_equal "$(jq -c '[.version, (.segments | length)]' <<<"$output")" "[2,2]"
  assert_calls 1
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=1 -> version=2"
  run_traced lake-query -c 'SELECT count(*) FROM m.t'
  assert_success
  assert_output 2
  assert_equal "$(trace_count 'source resolve')" 0

  # dropped and created again under the name: another table, answered whole
  as_admin lake-catalog drop m.t
  as_admin lake-catalog create m.t 'other TEXT'
  run_traced lake-catalog --max-age 0 show m.t
  assert_success
  assert_output $'other\tTEXT'
  assert_equal "$(trace_lines source)" "trace: source resolve m.t known=2 -> version=0"

  # dropped: 66, and no longer among the tables resolved here
  as_admin lake-catalog drop m.t
  run --separate-stderr lake-catalog --max-age 0 show m.t
  assert_error lake-catalog 66 m.t
  run --separate-stderr lake-catalog --offline list
  assert_success
  assert_output ""
}

@test "30 user processes on one expired registration make one resolve in all" {
  lake-catalog resolve m.t >/dev/null
  age_points
  local i n=30
  run_together $n env LAKE_TRACE=1 lake-catalog show m.t
  for i in $(seq $n); do
    assert_equal "process $i: exit $(cat "$T/rc.$i")" "process $i: exit 0"
    assert_equal "process $i: $(cat "$T/out.$i")" "process $i: "$'id\tINTEGER\nnote\tTEXT'
    assert_equal "process $i: $(grep -v '^trace: ' "$T/err.$i")" "process $i: "
  done
  local calls
  calls=$(cat "$T"/err.* | grep '^trace: source ' || true)
  assert_equal "$calls" "trace: source resolve m.t known=1 -> not_modified version=1"
}

@test "the source down: a user is served the last registration at once, with a warning; --strict is 69" {
  run --separate-stderr lake-catalog resolve m.t
  assert_success
  local reg=$output
  lake-query -c 'SELECT count(*) FROM m.t' >/dev/null # whoami, the stage
  metasrv_stop

  local failed_at=$SECONDS
  run_traced lake-catalog --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_equal "$(trace_count source)" 1
  local warn
  warn=$(untraced_stderr)
  assert_equal "warning lines: $(grep -c . <<<"$warn")" "warning lines: 1"
  [[ $warn == "lake-catalog: $METASRV_URL"*"; serving m.t version 1 resolved "*" s ago" ]] ||
    fail "not the stale warning: $warn"

  # the next processes skip the doomed call for the backoff
  run_traced lake-catalog --max-age 0 show m.t
  assert_success
  assert_output $'id\tINTEGER\nnote\tTEXT'
  # (only inside the backoff's 5 s: a slow machine may be past them)
  [ $((SECONDS - failed_at)) -ge 4 ] || assert_equal "$(trace_count source)" 0
  [[ $(untraced_stderr) == "lake-catalog: "*"serving m.t version 1 resolved "*" s ago" ]] ||
    fail "no stale warning: $stderr"
  # (the stage it learnt from whoami has expired too: served the same way)
  run --separate-stderr env LAKE_CATALOG_TTL=0 lake-query -c 'SELECT note FROM m.t'
  assert_success
  assert_output one
  assert_equal "${#stderr_lines[@]}" 2
  [[ ${stderr_lines[0]} == "lake-query: "*"using the cached whoami" ]] || fail "no whoami warning: $stderr"
  [[ ${stderr_lines[1]} == "lake-query: "*"serving m.t version 1 resolved "*" s ago" ]] ||
    fail "no stale warning: $stderr"
  # -q: the answer, without the warning
  run --separate-stderr lake-catalog -q --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_equal "$stderr" ""

  # --strict refuses a stale registration, not a fresh one
  run --separate-stderr lake-catalog --strict --max-age 0 resolve m.t
  assert_error lake-catalog 69
  assert_output ""
  run --separate-stderr lake-catalog --strict resolve m.t
  assert_clean_success
  assert_output "$reg"

  # --offline: what is cached, whatever its age, and 69 for the rest
  run_traced lake-catalog --offline --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_calls 0
  run_traced lake-catalog --offline resolve m.t --version 1
  assert_success
  assert_output "$reg"
  assert_calls 0
  run --separate-stderr lake-catalog --offline --strict --max-age 0 resolve m.t
  assert_error lake-catalog 69
  run_traced lake-catalog --offline resolve m.u
  assert_equal "exit $status" "exit 69"
  assert_equal "$(trace_count source)" 0
  assert_equal "$(untraced_stderr)" "lake-catalog: m.u: registration not cached (offline)"
  # a table never resolved here cannot be served
  run --separate-stderr lake-catalog --max-age 0 resolve m.u
  assert_error lake-catalog 69

  # back up: asked again, and fresh again
  metasrv_start "$SRV" "$METASRV_PORT"
  run_traced lake-catalog --strict --max-age 0 resolve m.t
  assert_success
  assert_output "$reg"
  assert_equal "$(trace_count source)" 1
}

@test "after a user's INSERT the next read on this host sees it, fresh cache or not" {
  run --separate-stderr lake-query -c 'SELECT count(*) FROM m.t'
  assert_clean_success
  assert_output 1
  # (no compaction after the append: it would resolve the table itself)
  export LAKE_COMPACT_THRESHOLD=0
  run_traced lake-query -c "INSERT INTO m.t VALUES (2, 'two')"
  assert_success
  assert_equal "$(trace_lines source)" "trace: source append m.t expected=1 -> version=2"
  run_traced lake-query -c 'SELECT count(*) FROM m.t'
  assert_success
  assert_output 2
  assert_equal "$(trace_lines source)" "trace: source resolve m.t -> version=2"
  # and from then on it is fresh again
  run_traced lake-catalog resolve m.t
  assert_success
  assert_equal "$(jq .version <<<"$output")" 2
  assert_calls 0
}

@test "a corrupt points file is ignored, with a warning, and replaced" {
  lake-catalog resolve m.t >/dev/null
  local f
  f=$(cache_file points)
  printf 'X' | dd of="$f" bs=1 seek=30 conv=notrunc status=none
  run_traced lake-catalog show m.t
  assert_success
  assert_output $'id\tINTEGER\nnote\tTEXT'
  assert_equal "$(trace_lines source)" "trace: source resolve m.t -> version=1"
  [[ $(untraced_stderr) == "lake-catalog: "*"points: the cache of resolved tables is corrupt; ignoring it" ]] ||
    fail "no warning: $stderr"
  run_traced lake-catalog show m.t
  assert_success
  assert_calls 0

  : >"$f"
  run_traced lake-catalog resolve m.t
  assert_success
  assert_equal "$(trace_count 'source resolve')" 1
}

@test "--offline list names the tables a user resolved here, without a listing and beside one" {
  # nothing cached: --offline knows nothing
  run --separate-stderr lake-catalog --offline list
  assert_error lake-catalog 69

  # the refusal of the snapshot known, no listing: the tables resolved here
  lake-catalog show m.u >/dev/null
  run_traced lake-catalog --offline list
  assert_success
  assert_output $'m\tu'
  assert_equal "$(trace_count source)" 0
  assert_equal "$(untraced_stderr)" "lake-catalog: this principal may not list the whole catalog; these are the tables it resolved on this host"

  # a listing (alice may read every table: setup's grants), and the
  # tables resolved since beside it
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'m\tt\nm\tu'
  lake-query -c 'SELECT count(*) FROM m.t' >/dev/null
  run_traced lake-catalog --offline list
  assert_success
  assert_output $'m\tt\nm\tu'
  assert_calls 0
  run --separate-stderr lake-catalog -q --offline --json list m
  assert_clean_success
  assert_output '[{"namespace":"m","name":"t"},{"namespace":"m","name":"u"}]'

  # TAB completion offers them (zero calls: the completion runs --offline)
  run bash -c 'source "$1" || exit 1
               COMP_WORDS=(lake-catalog show m.); COMP_CWORD=2; COMPREPLY=()
               _lake_complete; printf "%s\n" "${COMPREPLY[@]}"' _ "$LAKE_SRC/completions/lake.bash"
  assert_success
  assert_output $'m.t\nm.u'
}

@test "a user's host forgets expired versions from a not_modified answer, and refuses a registration older than catalog_max_stale in an outage and --offline (69; issue 41)" {
  lake-query -c "INSERT INTO m.t VALUES (2, 'two')" 2>/dev/null
  lake-catalog resolve m.t --version 1 >/dev/null
  local id dir
  id=$(lake-catalog resolve m.t | jq -r .id)
  dir=$(dirname "$(cache_file points)")/registrations/$id
  [ -f "$dir/1.json" ] || fail "version 1 is not cached"
  LAKE_TOKEN_FILE=$ADMIN lake-catalog expire m.t --older-than 0 >/dev/null
  age_points
  run_traced lake-catalog resolve m.t
  assert_success
  [[ $(trace_lines source) == *"-> not_modified"* ]] || fail "not a conditional resolve: $(trace_lines source)"
  [ ! -e "$dir/1.json" ] || fail "the expired version 1 is still cached: $(ls "$dir")"
  [ -f "$dir/2.json" ] || fail "the current version 2 is gone"
  # resolved 1 ms after the epoch: far older than the default bound
  age_points
  metasrv_stop
  run --separate-stderr lake-catalog resolve m.t
  assert_equal "exit $status" "exit 69"
  [[ ${stderr_lines[-1]} == "lake-catalog: m.t: the cached registration of version 2 is "*" s old, older than catalog_max_stale (604800 s)"* ]] ||
    fail "not refused for its age: $stderr"
  run --separate-stderr lake-catalog --offline resolve m.t
  assert_error lake-catalog 69 "older than catalog_max_stale"
  # a bound that covers it: served, with the stale warning
  LAKE_CATALOG_MAX_STALE=36500d run --separate-stderr lake-catalog --offline resolve m.t
  assert_success
}
