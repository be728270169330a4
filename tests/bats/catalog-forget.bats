#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# A host forgets what it can no longer serve (issue 41), run against the
# source LAKE_TEST_SOURCE names (helpers/source.bash).  Two client hosts
# are two cache directories on this machine: this test's own
# ($XDG_CACHE_HOME/lake, host A) and $T/hostB.  After an erasure (DELETE,
# expire) a host that asks the source about the table again keeps no
# registration of an expired version and no segment only they referenced:
# a byte scan of its cache finds no erased value.  A host cut off from the
# source serves no cached registration older than catalog_max_stale (69),
# --offline included; the segment cache evicts what went unused for
# segment_cache_max_age; `lake-catalog purge-cache [NS.T]` leaves nothing
# of a table's rows (or of every table's) in the cache.  Ages are set in
# the cache (cache_rewrite, touch), never waited for.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }
setup() {
  source_setup
  B=$T/hostB
  MARK=erase-me-7q4@example.com
}
teardown() { source_teardown; }

# crm.docs: version 1 holds the row to erase, version 2 another; crm.keep
# one row.  Host B reads every version of crm.docs and crm.keep.
two_tables_read_by_b() {
  lake-catalog create-namespace crm
  lake-catalog create crm.docs 'email TEXT, n INTEGER'
  lake-catalog create crm.keep 'email TEXT'
  lake-query -c "INSERT INTO crm.docs VALUES ('$MARK', 1)" -c "INSERT INTO crm.docs VALUES ('keep@example.com', 2)" \
    -c "INSERT INTO crm.keep VALUES ('other@example.com')"
  assert_equal "$(host_b lake-query -c "SELECT email FROM crm.docs AT (VERSION => 1)")" "$MARK"
  assert_equal "$(host_b lake-query -c "SELECT count(*) FROM crm.docs WHERE n > 0")" 2
  assert_equal "$(host_b lake-query -c "SELECT email FROM crm.keep")" other@example.com
  # the erased value is on B's disk: in a segment and in the statistics
  [ "$(marked_files "$B" | grep -c /segments/)" -ge 1 ] || fail "no cached segment holds $MARK"
  [ "$(marked_files "$B" | grep -c /registrations/)" -ge 1 ] || fail "no cached registration holds $MARK"
}

host_b() { LAKE_CACHE_DIR=$B "$@"; }

# assert_stale_refused PROG TEXT...: the run ended with exit 69 and, last
# on stderr (after the warnings that the cached directory and whoami are
# served), PROG's refusal mentioning each TEXT.
assert_stale_refused() {
  assert_equal "exit $status" "exit 69"
  local prog=$1 text
  shift
  for text in "$@"; do
    [[ ${stderr_lines[-1]} == "$prog: "*"$text"* ]] || fail "not refused for its age: $stderr"
  done
}

# The files under a cache directory whose bytes hold $MARK.
marked_files() {
  grep -rl --binary-files=text -- "$MARK" "$1" || true
}

# The versions of table id cached under a cache directory, sorted.
cached_versions() {
  find "$1" -path "*/registrations/$2/*.json" -printf '%f\n' | sed 's/\.json$//' | sort -n | paste -sd' '
}

# The segment files of a cache directory, sorted.
cached_segments() {
  find "$1/segments" -type f -name '????????????????????????????????????????????????????????????????' -printf '%f\n' | sort
}

@test "after an erasure and expire on host A, host B forgets the expired versions and their segments once it asks the source; A forgets at once" {
  two_tables_read_by_b
  local id
  id=$(table_id crm.docs)
  lake-query -c "DELETE FROM crm.docs WHERE email = '$MARK'" 2>/dev/null
  assert_equal "$(lake-catalog expire crm.docs --older-than 0)" "expired 3 versions of crm.docs"
  # host A, the engineer's own (its DELETE cached what it rewrote)
  assert_equal "$(marked_files "$XDG_CACHE_HOME/lake")" ""
  # B asks the source again (its TTL passed): the current version only
  assert_equal "$(host_b env LAKE_CATALOG_TTL=0 lake-query -c "SELECT email FROM crm.docs")" keep@example.com
  assert_equal "$(marked_files "$B")" ""
  assert_equal "$(cached_versions "$B" "$id")" 3
  # crm.keep's cache is untouched, and B still reads it
  [ -n "$(cached_versions "$B" "$(table_id crm.keep)")" ] || fail "crm.keep's registration was removed"
  assert_equal "$(host_b lake-query -c "SELECT email FROM crm.keep")" other@example.com
  run --separate-stderr host_b lake-catalog --offline resolve crm.docs --version 1
  assert_error lake-catalog 69 "not cached"
}

@test "a host that asks only for the current version learns of the expiry from the not_modified answer" {
  two_tables_read_by_b
  local id
  id=$(table_id crm.docs)
  # B holds the current version (2): expiring 0 and 1 leaves it current
  assert_equal "$(lake-catalog expire crm.docs --older-than 0)" "expired 2 versions of crm.docs"
  LAKE_CACHE_DIR=$B run_traced lake-catalog --max-age 0 resolve crm.docs
  assert_equal "$status" 0
  [[ $(trace_lines source) == *"-> not_modified"* ]] || fail "not a conditional resolve: $(trace_lines source)"
  assert_equal "$(cached_versions "$B" "$id")" 2
  run --separate-stderr host_b lake-catalog --offline resolve crm.docs --version 1
  assert_error lake-catalog 69 "not cached"
}

@test "a host cut off from the source serves no cached registration older than catalog_max_stale (69), --offline included; a fresh one is served with a warning" {
  two_tables_read_by_b
  local docs now snap
  docs=$(table_id crm.docs)
  host_b lake-catalog resolve crm.docs --version 1 >/dev/null
  # B resolved crm.docs (current and version 1) two hours ago; crm.keep now
  now=$(date +%s%3N)
  snap=$(find "$B" -name snapshot)
  cache_rewrite "$snap" '
for i, l in enumerate(lines):
    f = l.split(" ")
    if len(f) == 4 and f[0] == args[0]:
        lines[i] = " ".join(f[:3] + [str(int(args[1]) - 7200 * 1000)])' "$docs" "$now"
  touch -d '2 hours ago' "$B"/*/registrations/"$docs"/1.json
  source_break
  export LAKE_CATALOG_MAX_STALE=1h LAKE_CATALOG_TTL=0
  run --separate-stderr host_b lake-query -c "SELECT count(*) FROM crm.docs"
  assert_stale_refused lake-query \
    "crm.docs: the cached registration of version 2 is 720" "s old, older than catalog_max_stale (3600 s)"
  run --separate-stderr host_b lake-query -c "SELECT count(*) FROM crm.docs AT (VERSION => 1)"
  assert_stale_refused lake-query "version 1 is 720" "older than catalog_max_stale"
  run --separate-stderr host_b lake-catalog --offline resolve crm.docs --version 1
  assert_error lake-catalog 69 "version 1 is 72"
  run --separate-stderr host_b lake-catalog --offline resolve crm.docs
  assert_error lake-catalog 69 "older than catalog_max_stale"
  # crm.keep was resolved within the hour: served, with the stale warning
  run --separate-stderr host_b lake-query -c "SELECT email FROM crm.keep"
  assert_equal "exit $status" "exit 0"
  assert_output other@example.com
  [[ $stderr == *"serving crm.keep version"* ]] || fail "no stale warning: $stderr"
  run --separate-stderr host_b lake-catalog --offline resolve crm.keep
  assert_equal "exit $status" "exit 0"
  # the bound is a configuration: a bad one is 78
  LAKE_CATALOG_MAX_STALE=soon run --separate-stderr host_b lake-catalog --offline resolve crm.keep
  assert_error lake-catalog 78 "catalog_max_stale: 'soon' is not a duration"
}

@test "the segment cache evicts a segment unused for longer than segment_cache_max_age" {
  two_tables_read_by_b
  local before
  before=$(cached_segments "$B" | wc -l)
  [ "$before" -ge 2 ] || fail "expected segments of both tables, got $before"
  # every cached segment last used two days ago
  find "$B/segments" -type f -name '????????????????????????????????????????????????????????????????' \
    -exec touch -a -d '2 days ago' {} +
  # a week (the default) keeps them
  host_b lake-query -c "SELECT count(*) FROM crm.keep" >/dev/null
  assert_equal "$(cached_segments "$B" | wc -l)" "$before"
  # a day evicts them, and the query still reads what it needs
  assert_equal "$(host_b env LAKE_SEGMENT_CACHE_MAX_AGE=1d lake-query -c "SELECT email FROM crm.keep")" \
    other@example.com
  assert_equal "$(cached_segments "$B" | wc -l)" 1
  assert_equal "$(marked_files "$B" | grep -c /segments/)" 0
  LAKE_SEGMENT_CACHE_MAX_AGE=0 run --separate-stderr host_b lake-query -c "SELECT email FROM crm.keep"
  assert_error lake-query 78 "segment_cache_max_age: '0' is not a positive duration"
}

@test "purge-cache NS.T leaves nothing of the table's rows in the cache and other tables' intact; purge-cache alone empties it" {
  two_tables_read_by_b
  local keep_segs
  keep_segs=$(host_b lake-catalog resolve crm.keep | jq -r '.segments[].sha256')
  run --separate-stderr host_b lake-catalog purge-cache crm.docs
  assert_equal "exit $status" "exit 0"
  [[ $output =~ ^removed\ [0-9]+\ cached\ files$ ]] || fail "unexpected output: $output"
  assert_equal "$(marked_files "$B")" ""
  assert_equal "$(cached_versions "$B" "$(table_id crm.docs)")" ""
  [ -n "$(cached_versions "$B" "$(table_id crm.keep)")" ] || fail "crm.keep's registration was removed"
  assert_equal "$(cached_segments "$B" | grep -cx "$keep_segs")" 1
  # the source was not asked; B reads crm.docs again from the stage
  assert_equal "$(host_b lake-query -c "SELECT email FROM crm.docs AT (VERSION => 1)")" "$MARK"
  # nothing cached of a table: nothing to do; a bad name is 64
  assert_equal "$(host_b lake-catalog purge-cache crm.nope)" "removed 0 cached files"
  run --separate-stderr host_b lake-catalog purge-cache 'crm'
  assert_equal "exit $status" "exit 64"
  # everything: no registration, no segment left
  run --separate-stderr host_b lake-catalog purge-cache
  assert_equal "exit $status" "exit 0"
  assert_equal "$(find "$B" -path '*/registrations/*' -type f)" ""
  assert_equal "$(cached_segments "$B")" ""
  assert_equal "$(marked_files "$B")" ""
}
