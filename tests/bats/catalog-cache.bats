#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The on-disk snapshot cache of DESIGN §5, seen through lake-catalog with
# LAKE_TRACE=1 (one "trace: source ACTION" line per call to the source):
# zero calls while fresh; one conditional catalog_snapshot when expired
# (not_modified); refresh and refresh --force; a change made elsewhere;
# thirty processes on an expired cache make one call between them; a
# corrupt snapshot file is ignored and replaced; an outage serves the last
# good snapshot with a warning (exit 0), or 69 with --strict; --offline;
# the registrations kept, a table's 8 newest versions.

load helpers/common
load helpers/source
load helpers/background

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
}

teardown() {
  source_teardown
}

# --- fresh, expired, refresh --------------------------------------------------

@test "an expired cache costs one conditional catalog_snapshot, answered not_modified" {
  make_docs
  local g
  g=$(cached_generation)

  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a not_modified call: $(trace_lines source)"

  # the same through the environment
  LAKE_CATALOG_TTL=0 run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a not_modified call: $(trace_lines source)"

  # not_modified renews the snapshot: it is fresh again
  run --separate-stderr lake-catalog status
  assert_line --index 1 "generation=$g"
  assert_line --index 2 "age_s=0"
  assert_line --index 3 "stale=no"
  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0
}

@test "refresh asks once with the cached generation, even when fresh; --force fetches it all" {
  make_docs
  local g
  g=$(cached_generation)

  run_traced lake-catalog refresh
  assert_success
  assert_output ""
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a not_modified call: $(trace_lines source)"

  run_traced lake-catalog --max-age 0 refresh
  assert_success
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a not_modified call: $(trace_lines source)"

  run_traced lake-catalog refresh --force
  assert_success
  assert_output ""
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=-1 -> snapshot"* ]] ||
    fail "not a full snapshot: $(trace_lines source)"

  # what it fetched is what is served
  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0
  assert_equal "$(cached_generation)" "$g"
}

@test "a fresh cache answers list, show, status and a cached resolve with zero calls" {
  export LAKE_CATALOG_TTL=3600
  make_docs

  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0

  run_traced lake-catalog list docs
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0

  run_traced lake-catalog --json -H list
  assert_success
  assert_calls 0

  run_traced lake-catalog show docs.papers
  assert_success
  assert_output $'title\tTEXT\nyear\tINTEGER\npdf\tFILE'
  assert_calls 0

  run_traced lake-catalog --json show docs.notes
  assert_success
  assert_calls 0

  run_traced lake-catalog status
  assert_success
  assert_calls 0

  # a registration at a version is immutable: asked once, then cached
  run_traced lake-catalog resolve docs.papers --version 0
  assert_success
  local reg=$output
  [ "$(trace_count source)" -le 1 ] || fail "first resolve made $(trace_count source) calls"
  run_traced lake-catalog resolve docs.papers --version 0
  assert_success
  assert_equal "$output" "$reg"
  assert_calls 0

  # the current version is cached while the snapshot is fresh
  run_traced lake-catalog resolve docs.notes
  assert_success
  local cur=$output
  run_traced lake-catalog resolve docs.notes
  assert_success
  assert_equal "$output" "$cur"
  assert_calls 0
}

@test "a change made through another host's cache is seen once the snapshot expires" {
  export LAKE_CATALOG_TTL=3600
  make_docs
  local g mine=$XDG_CACHE_HOME
  g=$(cached_generation)

  # another host: same source, its own cache
  XDG_CACHE_HOME=$T/other-host lake-catalog create docs.new 'x INTEGER'

  # still fresh here: served as cached, no call
  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0

  # expired: one conditional call, which finds the new generation
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output $'docs\tnew\n'"$DOCS_LIST"
  assert_calls 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> snapshot generation=$((g + 1))"* ]] ||
    fail "not a changed snapshot: $(trace_lines source)"
  assert_equal "$(XDG_CACHE_HOME=$mine cached_generation)" $((g + 1))

  # a table this cache does not know yet is asked for once, not refused
  XDG_CACHE_HOME=$T/other-host lake-catalog create docs.newer 'y TEXT'
  run_traced lake-catalog show docs.newer
  assert_success
  assert_output $'y\tTEXT'
  assert_calls 1
  run_traced lake-catalog list
  assert_success
  assert_line $'docs\tnewer'
  assert_calls 0
}

@test "a TTL too long to count in milliseconds still means fresh, or is refused" {
  make_docs
  local age
  # "serve while younger than S seconds": a huge S is "always"; refusing it
  # as a usage error would do too; treating it as expired would not
  for age in 9223372036854775 9999999999999999 9223372036854775807; do
    echo "# --max-age $age"
    run_traced lake-catalog --max-age "$age" list
    if [ "$status" -eq 64 ]; then
      assert_error lake-catalog 64 --max-age
    else
      assert_success
      assert_output "$DOCS_LIST"
      assert_calls 0
    fi
    run_traced lake-catalog --max-age "$age" show docs.notes
    if [ "$status" -eq 64 ]; then
      assert_error lake-catalog 64 --max-age
    else
      assert_success
      assert_output $'body\tTEXT'
      assert_calls 0
    fi
    echo "# LAKE_CATALOG_TTL=$age"
    LAKE_CATALOG_TTL=$age run_traced lake-catalog list
    if [ "$status" -eq 78 ]; then
      assert_error lake-catalog 78 catalog_ttl
    else
      assert_success
      assert_output "$DOCS_LIST"
      assert_calls 0
    fi
  done
  # --max-age wins over catalog_ttl, which is still checked: through the
  # library (history is lake_catalog_history, --max-age its
  # catalog_max_age) as without it (list)
  LAKE_CATALOG_TTL=soon run --separate-stderr lake-catalog --max-age 5 history docs.notes
  assert_error lake-catalog 78 "catalog_ttl: 'soon' is not a number of seconds"
  LAKE_CATALOG_TTL=soon run --separate-stderr lake-catalog --max-age 5 list
  assert_error lake-catalog 78 "catalog_ttl: 'soon' is not a number of seconds"
}

@test "a table missing from a fresh snapshot is asked for once before 66" {
  export LAKE_CATALOG_TTL=3600
  make_docs
  local g
  g=$(cached_generation)
  run_traced lake-catalog show docs.nope
  assert_equal "exit $status" "exit 66"
  assert_output ""
  assert_equal "source calls: $(trace_count source)" "source calls: 1"
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a conditional call: $(trace_lines source)"
  assert_equal "$(untraced_stderr)" "lake-catalog: docs.nope: no such table"
}

# snapshot_set KEY VALUE: the snapshot file's header line "KEY ..." made
# "KEY VALUE", the file still valid: a time in it set explicitly, instead
# of waiting for one to pass.
snapshot_set() {
  cache_rewrite "$(snapshot_file)" '
hits = [i for i, l in enumerate(lines) if l.startswith(args[0] + " ")]
if len(hits) != 1:
    sys.exit("snapshot_set: %d lines %s in %s" % (len(hits), args[0], path))
lines[hits[0]] = args[0] + " " + args[1]' "$1" "$2"
}

# The snapshot file's header value KEY.
snapshot_get() {
  sed -n "s/^$1 //p" "$(snapshot_file)"
}

# --- coalescing ---------------------------------------------------------------

@test "30 processes started together on an expired cache make one catalog_snapshot call in all" {
  make_docs
  local g i n=30
  g=$(cached_generation)
  # expired by its fetch time (1 ms after the epoch), not by waiting out a
  # short TTL: the one refresh then renews it for longer than the last of
  # the 30 can take to start (a 2 s TTL could run out again before it, on
  # a loaded machine: a second call)
  export LAKE_CATALOG_TTL=3600 LAKE_TRACE=1
  snapshot_set fetched_ms 1
  run_together $n lake-catalog list

  for i in $(seq $n); do
    assert_equal "process $i: exit $(cat "$T/rc.$i")" "process $i: exit 0"
    assert_equal "process $i: $(cat "$T/out.$i")" "process $i: $DOCS_LIST"
    assert_equal "process $i: $(grep -v '^trace: ' "$T/err.$i")" "process $i: "
  done
  local calls
  calls=$(cat "$T"/err.* | grep '^trace: source ' || true)
  assert_equal "$(grep -c . <<<"$calls")" 1
  [[ $calls == "trace: source catalog_snapshot known=$g -> not_modified"* ]] ||
    fail "not a not_modified call: $calls"
}

# --- a corrupt snapshot file --------------------------------------------------

# Corrupt the snapshot with CMD (a function of the file's path), then check
# that it is not trusted: the answer is right, the source is asked for the
# whole directory, the file is replaced by a valid one; the program warns
# on one line (lake-catalog(1): "ignored with a warning"), or, with a
# second argument "maybe", warns at most once.
check_corrupt_snapshot_replaced() {
  local corrupt=$1 warning=${2:-yes} snap
  export LAKE_CATALOG_TTL=3600
  make_docs
  lake-catalog create-namespace zz
  lake-catalog create zz.t 'a TEXT, b REAL'
  snap=$(snapshot_file)
  "$corrupt" "$snap"
  cp "$snap" "$T/corrupt"

  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"$'\nzz\tt'
  # asked the source for everything: nothing of the file was trusted
  assert_equal "source calls: $(trace_count source)" "source calls: 1"
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=-1 -> snapshot"* ]] ||
    fail "not a full snapshot: $(trace_lines source)"
  # a one-line warning
  local warn
  warn=$(untraced_stderr)
  if [ -n "$warn" ] || [ "$warning" = yes ]; then
    assert_equal "warning lines: $(grep -c . <<<"$warn")" "warning lines: 1"
    [[ $warn == "lake-catalog: "* ]] || fail "warning without the program's name: $warn"
  fi

  # -q silences the warning, not the repair
  "$corrupt" "$snap"
  run --separate-stderr lake-catalog -q list
  assert_clean_success
  assert_output "$DOCS_LIST"$'\nzz\tt'

  # replaced: a different file, valid again (the next reads cost nothing)
  snap=$(snapshot_file)
  ! cmp -s "$snap" "$T/corrupt" || fail "the corrupt snapshot is still there"
  run_traced lake-catalog list
  assert_success
  assert_output "$DOCS_LIST"$'\nzz\tt'
  assert_calls 0
  run_traced lake-catalog show zz.t
  assert_success
  assert_output $'a\tTEXT\nb\tREAL'
  assert_calls 0
}

garbage() {
  { printf 'this is not a snapshot\n'; head -c 2000 /dev/urandom; printf '\n'; } >"$1"
}

truncated() {
  local size
  size=$(stat -c %s "$1")
  truncate -s $((size / 2)) "$1"
}

truncated_at_line() { # whole lines, but not all of them
  local n
  n=$(wc -l <"$1")
  head -n $((n - 2)) "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

flip_middle_byte() {
  local size mid byte
  size=$(stat -c %s "$1")
  mid=$((size / 2))
  byte=$(od -An -tu1 -j "$mid" -N1 "$1" | tr -d ' ')
  printf "\\$(printf '%03o' $((byte ^ 1)))" |
    dd of="$1" bs=1 seek="$mid" count=1 conv=notrunc status=none
  [ "$(od -An -tu1 -j "$mid" -N1 "$1" | tr -d ' ')" -ne "$byte" ] || fail "byte not flipped"
}

empty_file() {
  : >"$1"
}

@test "a snapshot file of garbage is ignored and replaced" {
  check_corrupt_snapshot_replaced garbage
}

@test "a truncated snapshot file is ignored and replaced" {
  check_corrupt_snapshot_replaced truncated
}

@test "a snapshot file missing its last lines is ignored and replaced" {
  check_corrupt_snapshot_replaced truncated_at_line
}

@test "a snapshot file with one byte flipped in the middle is ignored and replaced" {
  check_corrupt_snapshot_replaced flip_middle_byte
}

@test "an empty snapshot file is ignored and replaced" {
  # an empty file is no snapshot at all: a warning is optional
  check_corrupt_snapshot_replaced empty_file maybe
}

# --- an outage -------------------------------------------------------------------

@test "when the source fails, the last good snapshot is served with a warning; --strict is 69" {
  make_docs
  local g
  g=$(cached_generation)
  source_break

  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  # it tried, once
  assert_equal "source calls: $(trace_count source)" "source calls: 1"
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=$g -> error "* ]] ||
    fail "not a failed call: $(trace_lines source)"
  # and said so, on one line
  local warn
  warn=$(untraced_stderr)
  assert_equal "warning lines: $(grep -c . <<<"$warn")" "warning lines: 1"
  [[ $warn == "lake-catalog: "* ]] || fail "warning without the program's name: $warn"
  [[ $warn =~ serving\ generation\ $g\ fetched\ [0-9]+\ s\ ago ]] ||
    fail "warning does not say what it serves: $warn"

  # the failure is recorded
  run --separate-stderr lake-catalog --max-age 0 status
  assert_success
  assert_line --index 1 "generation=$g"
  assert_line --index 3 "stale=yes"
  assert_line --regexp '^last_error=.+'

  # --strict refuses the stale catalog
  run --separate-stderr lake-catalog --strict --max-age 0 list
  assert_error lake-catalog 69
  assert_output ""

  # the other reads are served the same way
  run --separate-stderr lake-catalog --max-age 0 show docs.papers
  assert_success
  assert_output $'title\tTEXT\nyear\tINTEGER\npdf\tFILE'
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "lake-catalog: "*"serving generation $g fetched "*" s ago"* ]] ||
    fail "no stale warning: $stderr"

  # -q silences the warning, not the answer
  run --separate-stderr lake-catalog -q --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "$stderr" ""

  # a change cannot be served from a cache: it fails, on one line
  run --separate-stderr lake-catalog create docs.more 'x TEXT'
  assert_failure
  assert_equal "stderr lines: ${#stderr_lines[@]}" "stderr lines: 1"
  [[ ${stderr_lines[0]} == "lake-catalog: "* ]] || fail "not the program's diagnostic: $stderr"
  assert_output ""

  # back up: a forced refresh asks at once, and all is well again
  source_heal
  run_traced lake-catalog refresh --force
  assert_success
  assert_calls 1
  run --separate-stderr lake-catalog status
  assert_line --index 3 "stale=no"
  assert_line --index 4 "last_error="
  run_traced lake-catalog --strict --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 1
}

@test "after a failure the next processes skip the doomed attempt for a short backoff" {
  make_docs
  source_break
  local t0 t1 failed
  t0=$(date +%s%3N)
  run_traced lake-catalog --max-age 0 list
  t1=$(date +%s%3N)
  assert_success
  assert_equal "source calls: $(trace_count source)" "source calls: 1"
  # the failure's time recorded, in ms, by that command
  failed=$(snapshot_get failed_ms)
  [ "$failed" -ge "$t0" ] && [ "$failed" -le "$t1" ] ||
    fail "failed_ms $failed is not the time of the failure (between $t0 and $t1)"
  # then set to now: the next command is inside the 5 s backoff however
  # long the steps since the failure took on a loaded machine
  snapshot_set failed_ms "$(date +%s%3N)"

  # straight after: no call, the same stale answer and warning
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "source calls: $(trace_count source)" "source calls: 0"
  [[ $(untraced_stderr) == "lake-catalog: "*"serving generation "*" fetched "*" s ago"* ]] ||
    fail "no stale warning: $stderr"
  source_heal
}

# --- --offline -------------------------------------------------------------------

@test "--offline answers from the cache, expired or not, and is 69 with nothing cached" {
  make_docs
  run_traced lake-catalog --offline --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_calls 0

  run_traced lake-catalog --offline --max-age 0 show docs.notes
  assert_success
  assert_output $'body\tTEXT'
  assert_calls 0

  # refresh asks the source, which --offline forbids: a usage error
  run_traced lake-catalog --offline refresh --force
  assert_failure 64
  assert_output ""
  assert_equal "source calls: $(trace_count source)" "source calls: 0"

  # --strict: an expired snapshot is not good enough
  run --separate-stderr lake-catalog --offline --strict --max-age 0 list
  assert_error lake-catalog 69
  assert_output ""
  run --separate-stderr lake-catalog --offline --strict list
  assert_clean_success
  assert_output "$DOCS_LIST"

  rm -rf "$XDG_CACHE_HOME"
  run_traced lake-catalog --offline list
  assert_equal "exit $status" "exit 69"
  assert_equal "source calls: $(trace_count source)" "source calls: 0"
  assert_output ""
  run --separate-stderr lake-catalog --offline list
  assert_error lake-catalog 69
}

@test "refresh reports a failing source instead of serving the stale snapshot" {
  make_docs
  source_break
  run --separate-stderr lake-catalog refresh
  assert_failure
  [ "$status" -ne 64 ]
  assert_equal "stderr lines: ${#stderr_lines[@]}" "stderr lines: 1"
  [[ ${stderr_lines[0]} == "lake-catalog: "* ]] || fail "not the program's diagnostic: $stderr"
  # the failure was recorded, so plain reads skip the attempt and serve stale
  run_traced lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "source calls: $(trace_count source)" "source calls: 0"
  source_heal
}

@test "resolve serves the last registration this host resolved when the source fails" {
  make_docs
  run --separate-stderr lake-catalog resolve docs.papers
  assert_success
  local before=$output
  source_break
  run_traced lake-catalog --max-age 0 resolve docs.papers
  assert_success
  assert_output "$before"
  [[ $(untraced_stderr) == *"serving docs.papers version 0 resolved "*" s ago"* ]] ||
    fail "no stale warning: $stderr"
  run --separate-stderr lake-catalog --strict --max-age 0 resolve docs.papers
  assert_error lake-catalog 69
  source_heal
}

@test "a reader with a stale snapshot waits at most 2 s for another process's refresh" {
  make_docs
  local lock
  lock="$(dirname "$(snapshot_file)")/lock"
  # a real process holds the exclusive lock, as a refresh stuck on a slow
  # source would
  flock -x "$lock" sleep 20 3>&- &
  local holder=$!
  sleep 0.3
  kill -0 "$holder" || fail "the lock holder did not start"
  local t0=$SECONDS
  run_traced lake-catalog --max-age 0 list
  local took=$((SECONDS - t0))
  kill "$holder" || true
  wait "$holder" 2>/dev/null || true
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "source calls: $(trace_count source)" "source calls: 0"
  [[ $(untraced_stderr) == *"another process is still refreshing; serving generation"* ]] ||
    fail "no warning: $stderr"
  [ "$took" -le 5 ] || fail "waited $took s"
}

@test "the registration cache keeps a table's 8 newest versions; an older one is asked for again, and answered" {
  export LAKE_COMPACT_THRESHOLD=0 # a version per INSERT
  lake-catalog create-namespace r
  lake-catalog create r.t 'k INTEGER'
  local i
  for i in $(seq 12); do lake-query -q -c "INSERT INTO r.t VALUES ($i)"; done
  lake-catalog resolve r.t >/dev/null
  cached() { (cd "$XDG_CACHE_HOME"/lake/*/registrations/*/ && ls | sort -n | paste -sd' '); }
  # every version from 0 to 12 was resolved here; the 8 newest are kept
  assert_equal "$(cached)" "5.json 6.json 7.json 8.json 9.json 10.json 11.json 12.json"
  run_traced lake-query -c 'SELECT count(*) FROM r.t AT (VERSION => 2)'
  assert_success
  assert_output 2
  [[ $(trace_lines 'source resolve') == *"resolve r.t version=2 -> version=2"* ]] ||
    fail "version 2 not asked for: $(trace_lines source)"
  assert_equal "$(cached)" "5.json 6.json 7.json 8.json 9.json 10.json 11.json 12.json"
}
