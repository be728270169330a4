#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The embedded source's registry file: created on first use; a file that is
# not a lake registry, or one from a newer schema version, is refused (78)
# and left byte for byte as it was; a registry without a directory marker is
# still read (the development compatibility path of DESIGN §5) with a
# one-line warning; a registry of schema version 1, 2 or 3 is upgraded to 5
# by the next command, its data intact.  These are about the local source itself: a remote
# source runs its own registry (lake-metasrv init/serve, which fails closed
# on a registry without a marker), so they skip there.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  local_only "the registry file is the embedded source's"
}

teardown() {
  source_teardown
}

# Everything under LAKE_HOME: names, sizes and digests.
home_state() {
  (cd "$LAKE_HOME" && find . -print0 | sort -z | xargs -0 -r stat -c '%n %F %s' &&
    find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# Each command is refused with 78 on one line naming the file, and leaves
# LAKE_HOME as it was.
assert_refused_untouched() {
  local before cmd
  before=$(home_state)
  for cmd in "list" "refresh --force" "create-namespace docs" "show docs.t" "resolve docs.t"; do
    echo "# lake-catalog $cmd"
    rm -rf "$XDG_CACHE_HOME" # a host with nothing cached must ask the source
    # shellcheck disable=SC2086 # $cmd is split into the words of a command line
    run --separate-stderr lake-catalog $cmd
    assert_error lake-catalog 78 "$REGISTRY"
    assert_output ""
    assert_equal "$(home_state)" "$before"
  done
}

@test "the registry is created on first use, with a marker at generation 0" {
  [ ! -e "$REGISTRY" ] || fail "registry before first use"
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output ""
  assert_file_exists "$REGISTRY"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'format'")" lake-registry
  assert_equal "$(sqlite3 "$REGISTRY" 'SELECT generation FROM directory_marker')" 0
  assert_equal "$(sqlite3 "$REGISTRY" 'PRAGMA journal_mode')" wal
  run --separate-stderr lake-catalog status
  assert_line --index 1 "generation=0"
}

@test "a text file in place of the registry is refused (78) and left untouched" {
  mkdir -p "$LAKE_HOME"
  printf 'name,role\nalice,admin\n' >"$REGISTRY"
  local sum
  sum=$(sha_of "$REGISTRY")
  assert_refused_untouched
  assert_equal "$(sha_of "$REGISTRY")" "$sum"
}

@test "another program's SQLite database is refused (78) and left untouched" {
  mkdir -p "$LAKE_HOME"
  sqlite3 "$REGISTRY" "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);
                       INSERT INTO customers(name) VALUES ('alice'), ('bob');"
  local sum
  sum=$(sha_of "$REGISTRY")
  assert_refused_untouched
  assert_equal "$(sha_of "$REGISTRY")" "$sum"
  assert_equal "$(sqlite3 "$REGISTRY" 'SELECT group_concat(name) FROM customers')" "alice,bob"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT group_concat(name) FROM sqlite_master WHERE type = 'table'")" customers
}

@test "a database with a lake_meta table of another format is refused (78) and left untouched" {
  mkdir -p "$LAKE_HOME"
  sqlite3 "$REGISTRY" "CREATE TABLE lake_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                       INSERT INTO lake_meta VALUES ('format', 'something-else'), ('schema_version', '1');"
  local sum
  sum=$(sha_of "$REGISTRY")
  assert_refused_untouched
  assert_equal "$(sha_of "$REGISTRY")" "$sum"
}

@test "a registry of a newer schema version (99) is refused (78) and left untouched" {
  make_docs
  sqlite3 "$REGISTRY" "UPDATE lake_meta SET value = '99' WHERE key = 'schema_version'"
  [ ! -e "$REGISTRY-wal" ] || fail "sqlite3 left a write-ahead log"
  local sum
  sum=$(sha_of "$REGISTRY")
  assert_refused_untouched
  assert_equal "$(sha_of "$REGISTRY")" "$sum"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 99
  # the message says why
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr lake-catalog list
  assert_error lake-catalog 78 99
}

@test "a refused registry is not served from a stale snapshot either" {
  make_docs
  sqlite3 "$REGISTRY" "UPDATE lake_meta SET value = '99' WHERE key = 'schema_version'"
  local sum
  sum=$(sha_of "$REGISTRY")
  # a snapshot is cached, but a configuration error is not an outage
  run --separate-stderr lake-catalog --max-age 0 list
  assert_error lake-catalog 78 "$REGISTRY"
  assert_output ""
  run --separate-stderr lake-catalog refresh
  assert_error lake-catalog 78
  assert_equal "$(sha_of "$REGISTRY")" "$sum"
}

@test "a registry without a directory marker is still read locally, with a one-line warning" {
  make_docs
  sqlite3 "$REGISTRY" 'DELETE FROM directory_marker'
  assert_equal "$(sqlite3 "$REGISTRY" 'SELECT count(*) FROM directory_marker')" 0

  # the cached snapshot came from the marked registry: the client also
  # warns, once, that the authority changed (its id went with the marker)
  run --separate-stderr lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "${#stderr_lines[@]}" 2
  [[ ${stderr_lines[0]} == "lake-catalog: "*"no directory marker"* ]] || fail "warning does not say why: $stderr"
  [[ ${stderr_lines[1]} == "lake-catalog: "*"authority changed"* ]] || fail "no authority warning: $stderr"
  run --separate-stderr lake-catalog --max-age 0 list
  assert_success
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "lake-catalog: "*"no directory marker"* ]] || fail "warning does not say why: $stderr"

  # its generation reads as 0 and a conditional call is never not_modified
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  assert_success
  assert_output "$DOCS_LIST"
  assert_equal "$(trace_count source)" 1
  [[ $(trace_lines source) == "trace: source catalog_snapshot known=0 -> snapshot generation=0"* ]] ||
    fail "not a full scan: $(trace_lines source)"
  run --separate-stderr lake-catalog -q --max-age 0 list
  assert_clean_success
  assert_output "$DOCS_LIST"

  # a host with nothing cached reads it too, all of it
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr lake-catalog show docs.papers
  assert_success
  assert_output $'title\tTEXT\nyear\tINTEGER\npdf\tFILE'
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "lake-catalog: "*"no directory marker"* ]] || fail "no warning: $stderr"

  run --separate-stderr lake-catalog resolve docs.notes
  assert_success
  assert_equal "$(jq -c '[.version, .schema, .segments]' <<<"$output")" '[0,[{"name":"body","type":"TEXT"}],[]]'

  # served from the cache while fresh: no scan, no warning
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output "$DOCS_LIST"
}

@test "a replaced registry at the same generation is not mistaken for the cached one" {
  lake-catalog create-namespace docs
  lake-catalog create docs.old 'a TEXT'
  assert_equal "$(cached_generation)" 2
  rm -f "$REGISTRY" "$REGISTRY-wal" "$REGISTRY-shm"
  # a new registry, as a restore from the wrong backup would give: same
  # generation, other tables, another authority id
  LAKE_CACHE_DIR="$T/elsewhere" lake-catalog create-namespace docs
  LAKE_CACHE_DIR="$T/elsewhere" lake-catalog create docs.new 'a TEXT'
  run --separate-stderr env LAKE_TRACE=1 lake-catalog --max-age 0 list
  echo "stderr: $stderr"
  assert_success
  assert_output "$(printf 'docs\tnew')"
  [[ $stderr == *"authority changed"* ]] || fail "no warning: $stderr"
  # not_modified from the new authority was not trusted: a full fetch followed
  [ "$(grep -c '^trace: source catalog_snapshot' <<<"$stderr")" -eq 2 ]
  [[ $stderr == *"known=-1 -> snapshot generation=2"* ]]
}

@test "a registry of schema version 1 is upgraded to 5 by the next command, its data intact" {
  make_docs
  printf 'title,year\nA lake,2026\nB,2025\n' | lake-query -q --import docs.papers
  local before
  before=$(lake-catalog resolve docs.papers | jq -c '[.id, .version, .schema, [.segments[] | del(.stats)]]')
  # back to schema 1, as a registry written before issue 18 is
  sqlite3 "$REGISTRY" "ALTER TABLE segments DROP COLUMN stats; ALTER TABLE segments DROP COLUMN removed_in;
                       ALTER TABLE versions DROP COLUMN operation; ALTER TABLE versions DROP COLUMN schema;
                       ALTER TABLE versions DROP COLUMN expired_at; ALTER TABLE segments DROP COLUMN columns;
                       DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit; ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at; UPDATE lake_meta SET value = '1' WHERE key = 'schema_version'"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT count(*) FROM pragma_table_info('segments') WHERE name IN ('stats', 'removed_in')")" 0
  rm -rf "$XDG_CACHE_HOME"

  run --separate-stderr lake-catalog resolve docs.papers
  assert_clean_success
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('segments') WHERE name IN ('stats', 'removed_in')")" \
    "stats TEXT, removed_in INTEGER"
  # the same table, version and segments; those written before have no stats
  assert_equal "$(jq -c '[.id, .version, .schema, .segments]' <<<"$output")" "$before"
  run lake-query -c "SELECT title, year FROM docs.papers ORDER BY year"
  assert_output $'B\t2025\nA lake\t2026'
  run lake-catalog list
  assert_output "$DOCS_LIST"
  # the next append records its statistics
  lake-query -q -c "INSERT INTO docs.papers(title, year) VALUES ('C', 2024)"
  assert_equal "$(lake-catalog resolve docs.papers | jq -c '[.segments[] | .stats[1] // "none"]')" \
    '["none",{"nulls":0,"min":2024,"max":2024}]'
}

@test "a registry of schema version 2 is upgraded to 5 by the next command: versions made before have no operation; DELETE works" {
  make_docs
  printf 'title,year\nA lake,2026\nB,2025\n' | lake-query -q --import docs.papers
  local before
  before=$(lake-catalog resolve docs.papers)
  # back to schema 2, as a registry written before issue 28 is
  sqlite3 "$REGISTRY" "ALTER TABLE versions DROP COLUMN operation; ALTER TABLE versions DROP COLUMN schema;
                       ALTER TABLE versions DROP COLUMN expired_at; ALTER TABLE segments DROP COLUMN columns;
                       DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit; ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at; UPDATE lake_meta SET value = '2' WHERE key = 'schema_version'"
  rm -rf "$XDG_CACHE_HOME"

  run --separate-stderr lake-catalog resolve docs.papers
  assert_clean_success
  assert_equal "$output" "$before"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  local papers="table_id = (SELECT id FROM tables WHERE name = 'papers' AND dropped = 0)"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT count(*) FROM versions WHERE $papers AND operation IS NULL")" 2
  run --separate-stderr lake-query -c "DELETE FROM docs.papers WHERE year = 2025"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: docs.papers: 1 row deleted"
  assert_equal "$(lake-query -c 'SELECT title FROM docs.papers')" "A lake"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT version || ' ' || ifnull(operation, '-') FROM versions WHERE $papers ORDER BY version")" \
    "$(printf '0 -\n1 -\n2 delete')"
}

@test "a registry of schema version 3 is upgraded to 5 by the next command: each version reads with its table's schema, none expired" {
  make_docs
  printf 'title,year\nA lake,2026\nB,2025\n' | lake-query -q --import docs.papers
  local before
  before=$(lake-catalog resolve docs.papers)
  # back to schema 3, as a registry written before schema evolution and expiry
  sqlite3 "$REGISTRY" "ALTER TABLE versions DROP COLUMN schema; ALTER TABLE versions DROP COLUMN expired_at;
                       ALTER TABLE segments DROP COLUMN columns;
                       DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit; ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at; UPDATE lake_meta SET value = '3' WHERE key = 'schema_version'"
  rm -rf "$XDG_CACHE_HOME"

  run --separate-stderr lake-catalog resolve docs.papers
  assert_clean_success
  assert_equal "$output" "$before"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  local papers="table_id = (SELECT id FROM tables WHERE name = 'papers' AND dropped = 0)"
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT count(*) FROM versions WHERE $papers AND expired_at IS NULL
                                       AND schema = (SELECT schema FROM tables WHERE name = 'papers')")" 2
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT count(*) FROM segments WHERE columns IS NOT NULL")" 0
  run lake-query -c "SELECT title, year FROM docs.papers ORDER BY year"
  assert_output $'B\t2025\nA lake\t2026'
}

@test "a registry of schema version 4 is upgraded to 5 by the next command: users keep their access through grants to PUBLIC on the whole catalog, which grants shows" {
  make_docs
  # back to schema 4, as a registry written before grants is
  sqlite3 "$REGISTRY" "DROP TABLE grants; DROP TABLE uploads; DROP TABLE audit;
                       ALTER TABLE principals DROP COLUMN expires_at; ALTER TABLE principals DROP COLUMN last_used_at;
                       UPDATE lake_meta SET value = '4' WHERE key = 'schema_version'"
  rm -rf "$XDG_CACHE_HOME"

  run --separate-stderr lake-catalog grants
  assert_clean_success
  assert_equal "$(sqlite3 "$REGISTRY" "SELECT value FROM lake_meta WHERE key = 'schema_version'")" 5
  assert_equal "$(cut -f1-3,5 <<<"$output")" $'*\tread\tPUBLIC\tupgrade\n*\twrite\tPUBLIC\tupgrade'
  # a new registry grants nobody anything
  LAKE_HOME=$T/fresh run --separate-stderr lake-catalog grants
  assert_clean_success
  assert_output ""
}
