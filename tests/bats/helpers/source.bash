# SPDX-License-Identifier: BSD-2-Clause
# The catalog suites' parameter: which CatalogSource they run against.
#   LAKE_TEST_SOURCE=local   (the default) the embedded registry under LAKE_HOME
#   LAKE_TEST_SOURCE=remote  a real lake-metasrv over TLS on a loopback port
#   LAKE_TEST_SOURCE=remote-s3  the same, advertising an S3 stage on a real
#                            S3 server, radosgw (helpers/rgw.bash; the query
#                            suites: segments and FILEs go to a bucket, the
#                            catalog to metasrv)
#   LAKE_TEST_SOURCE=remote-pg  a real lake-metasrv whose registry is a fresh
#                            database on a real PostgreSQL (helpers/pg.bash;
#                            tests/run starts the server, PG_DIR names it)
# Every catalog test runs the same way against either; what differs lives
# here: the set-up, the source's name in `status`, the registry file, and
# how to make the source fail.  Load after helpers/common; a suite calls
# source_setup_file in setup_file and source_teardown_file in teardown_file
# (they start and stop the radosgw cluster of remote-s3, or reuse the one
# tests/run started: RGW_CLUSTER), source_setup in setup and
# source_teardown in teardown.

# shellcheck source=rgw.bash
source "${BATS_TEST_DIRNAME}/helpers/rgw.bash"

source_setup_file() {
  [ "${LAKE_TEST_SOURCE:-local}" != remote-s3 ] || rgw_cluster_start
}

source_teardown_file() {
  rgw_cluster_stop
}

# A private lake for one test, talking to the chosen source.  Sets:
#   REGISTRY     the registry database behind the source
#   SOURCE_NAME  what `lake-catalog status` prints after "source="
# shellcheck disable=SC2034 # REGISTRY and SOURCE_NAME are the suites'
source_setup() {
  common_setup
  LAKE_TEST_SOURCE=${LAKE_TEST_SOURCE:-local}
  case $LAKE_TEST_SOURCE in
    local)
      REGISTRY="$LAKE_HOME/registry.db"
      SOURCE_NAME="local:$REGISTRY"
      ;;
    remote)
      load_metasrv
      metasrv_init "$T/srv"
      metasrv_start "$T/srv"
      metasrv_use "$T/srv"
      REGISTRY="$T/srv/registry.db"
      SOURCE_NAME="$METASRV_URL"
      ;;
    remote-pg)
      load_metasrv
      export LAKE_TEST_REGISTRY=pg
      metasrv_init "$T/srv"
      metasrv_start "$T/srv"
      metasrv_use "$T/srv"
      REGISTRY=$(cat "$T/srv/registry.url")
      SOURCE_NAME="$METASRV_URL"
      ;;
    remote-s3)
      load_metasrv
      s3_start
      metasrv_init "$T/srv" "$LAKE_STAGE"
      unset LAKE_STAGE # the clients learn the stage from whoami
      metasrv_start "$T/srv"
      metasrv_use "$T/srv"
      REGISTRY="$T/srv/registry.db"
      SOURCE_NAME="$METASRV_URL"
      ;;
    *)
      skip "unknown LAKE_TEST_SOURCE=$LAKE_TEST_SOURCE"
      ;;
  esac
}

# One SQL statement on the registry behind the source ($REGISTRY: a
# SQLite file, or a PostgreSQL URL), its rows as psql -At / sqlite3 print them.
registry_sql() {
  case $REGISTRY in
    postgres*) psql -X -q -At -v ON_ERROR_STOP=1 "$REGISTRY" -c "$1" ;;
    *) sqlite3 "$REGISTRY" "$1" ;;
  esac
}

# The directory of the file:// stage the source advertises (whoami).
source_stage_dir() {
  local url
  url=$(lake-catalog whoami | sed -n 's/^stage=//p')
  [[ $url == file://* ]] || fail "not a file:// stage: $url"
  printf '%s\n' "${url#file://}"
}

load_metasrv() {
  # shellcheck source=metasrv.bash
  source "${BATS_TEST_DIRNAME}/helpers/metasrv.bash"
}

source_teardown() {
  source_heal 2>/dev/null || true
  case ${LAKE_TEST_SOURCE:-local} in
    remote | remote-pg) metasrv_stop ;;
    remote-s3) metasrv_stop; s3_stop ;;
  esac
  common_teardown
}

# Tests of the embedded source itself (its registry file, its compatibility
# path) say so: local_only REASON.
local_only() {
  [ "$LAKE_TEST_SOURCE" = local ] || skip "local source only: $1"
}

# Make every call to the source fail the way an outage does (the cache
# serves its last good snapshot), until source_heal.  Local: a directory
# where SQLite keeps the registry's write-ahead log, so the registry (in WAL
# mode, and closed cleanly by every command, which removes the log) cannot
# be read: an I/O-class SQLite error, not "no such registry" (66) and not
# "not a lake registry" (78).  Root ignores permissions, so chmod would not
# do.
source_break() {
  case $LAKE_TEST_SOURCE in
    local)
      [ -f "$REGISTRY" ] || fail "source_break: no registry at $REGISTRY yet"
      [ ! -e "$REGISTRY-wal" ] || fail "source_break: $REGISTRY-wal exists (a command still open?)"
      mkdir "$REGISTRY-wal"
      ;;
    remote*)
      metasrv_stop
      ;;
  esac
}

source_heal() {
  case $LAKE_TEST_SOURCE in
    local) [ ! -d "$REGISTRY-wal" ] || rmdir "$REGISTRY-wal" ;;
    remote*) [ -n "${METASRV_PID:-}" ] || metasrv_start "$T/srv" "$METASRV_PORT" ;;
  esac
}

# --- helpers the catalog suites share --------------------------------------

# The source's generation now: a forced refresh asks the source, then status
# reads it back.  Fails the test if either command fails.
generation_now() {
  lake-catalog refresh --force >/dev/null
  lake-catalog status | sed -n 's/^generation=//p'
}

# The generation the cache holds, without asking the source.
cached_generation() {
  lake-catalog status | sed -n 's/^generation=//p'
}

# The one snapshot file of this test's cache ($XDG_CACHE_HOME/lake/<key>/).
snapshot_file() {
  cache_file snapshot
}

# stage_corrupt LOCATION: replace the object at a stage location with
# other bytes of the same size, whichever stage the source advertises.
stage_corrupt() {
  local loc=$1 tmp=$T/corrupt.$$
  case $loc in
    file://*)
      local path=${loc#file://}
      printf 'X' | dd of="$path" bs=1 seek=100 conv=notrunc status=none || fail "cannot corrupt $path"
      ;;
    s3://*)
      s3_curl -o "$tmp" "$S3_ENDPOINT$(s3_path "$loc")" || fail "cannot read $loc"
      printf 'X' | dd of="$tmp" bs=1 seek=100 conv=notrunc status=none
      stage_replace "$loc" "$tmp"
      ;;
    *) fail "stage_corrupt: $loc" ;;
  esac
}

# stage_replace LOCATION FILE: the object at a stage location replaced by
# the bytes of FILE, as another writer of the stage would: cp for file://,
# a PUT by an independent S3 client (s3_curl -T) for s3://.
stage_replace() {
  local loc=$1 file=$2
  case $loc in
    file://*) cp "$file" "${loc#file://}" || fail "cannot replace $loc" ;;
    s3://*) s3_curl -T "$file" "$S3_ENDPOINT$(s3_path "$loc")" -o /dev/null || fail "cannot replace $loc" ;;
    *) fail "stage_replace: $loc" ;;
  esac
}

# The id of a table, from its registration.
table_id() {
  lake-catalog resolve "$1" | jq -er .id
}

# A namespace "docs" with two tables, the usual starting point.
make_docs() {
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, year INTEGER, pdf FILE'
  lake-catalog create docs.notes 'body TEXT'
}

# What `list` prints for make_docs.
# shellcheck disable=SC2034 # for the suites
DOCS_LIST=$'docs\tnotes\ndocs\tpapers'

# both SQL: run the query with pushdown (traced into $T/trace) and row by
# row (LAKE_QUERY_NO_PUSHDOWN, the reference), as JSON Lines: the same
# rows, or the test fails; the rows in $output.
# shellcheck disable=SC2034 # output is bats' own, which the suites assert on
both() {
  LAKE_TRACE=1 lake-query -f jsonl -c "$1" >"$T/on" 2>"$T/trace" || fail "$1: $(tail -3 "$T/trace")"
  LAKE_QUERY_NO_PUSHDOWN=1 lake-query -f jsonl -c "$1" >"$T/off" || fail "$1: failed row by row"
  diff "$T/off" "$T/on" >&2 || fail "$1: the answers differ"
  output=$(cat "$T/on")
}
