#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# What each role can do with the shipped programs against a real TLS
# lake-metasrv (issue 14, DESIGN §5):
#   - a `user` token (may resolve and append, may not take the bulk
#     snapshot) runs lake-put --table, lake-query --import, INSERT and
#     SELECT by resolving the tables it names (cached per table:
#     metasrv-user-cache.bats); `lake-catalog list` lists only the tables
#     it may read (catalog-list-user.bats), and the refusal of the
#     snapshot is remembered, not asked again by every command;
#   - a principal that may resolve but not append (metadata-peer) is
#     refused (77) before any object or segment is stored;
#   - the snapshot cache is keyed by endpoint and principal (a hash of the
#     token): a bad token is not served from a cache another token filled,
#     nor does a user's list come from it, and no token text is on disk.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  ALICE=$(metasrv_token user alice)
  # alice reads and writes every table, as every user did before grants (issue 29)
  lake-catalog grant read ON '*' TO alice
  lake-catalog grant write ON '*' TO alice
  PEER=$(metasrv_token metadata-peer peer)
  lake-catalog create-namespace m
  lake-catalog create m.t 'id INTEGER, note TEXT, doc FILE'
  # the stage lake-metasrv advertises (file://…/srv/stage), as a user sees it
  SRVSTAGE=$SRV/stage
}

teardown() {
  metasrv_stop
  common_teardown
}

# the regular files below the server's stage
stage_files() {
  find "$SRVSTAGE" -type f 2>/dev/null | sort
}

@test "a user token appends with lake-put --table, --import and INSERT, and reads with SELECT; list shows only what it may read" {
  export LAKE_TOKEN_FILE=$ALICE
  rm -rf "$XDG_CACHE_HOME" # nothing another principal cached
  echo hello >"$T/a.txt"
  run --separate-stderr lake-put --table m.t --set id=1 --set note=put "$T/a.txt"
  assert_clean_success
  assert_equal "$(json_field name <<<"$output")" a.txt

  run --separate-stderr lake-query --import m.t <<<$'id,note\n2,import'
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-query: m.t: 1 row appended"

  run --separate-stderr lake-query -c "INSERT INTO m.t (id, note) VALUES (3, 'insert')"
  assert_clean_success

  run --separate-stderr lake-query -c 'SELECT id, note, fl_get_file_name(doc) FROM m.t ORDER BY id'
  assert_clean_success
  assert_output $'1\tput\ta.txt\n2\timport\t\n3\tinsert\t'

  run --separate-stderr lake-catalog show m.t
  assert_clean_success
  assert_output $'id\tINTEGER\nnote\tTEXT\ndoc\tFILE'

  # the tables alice may read (every one: granted in setup)
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'m\tt'

  # the admin sees the three appends
  run --separate-stderr env LAKE_TOKEN_FILE="$ADMIN" lake-catalog resolve m.t
  assert_clean_success
  assert_equal "$(jq .version <<<"$output")" 3
}

@test "a user: an unknown table is 66, and the refused snapshot is asked for once, not by every command" {
  export LAKE_TOKEN_FILE=$ALICE
  run --separate-stderr env LAKE_TRACE=1 lake-query -c 'SELECT count(*) FROM m.t'
  assert_equal "exit $status" "exit 0"
  assert_output 0
  assert_equal "$(trace_count 'source catalog_snapshot')" 1

  # later commands resolve by name without asking for the snapshot again,
  # and once the table is resolved on this host, not even for the table
  # while it is fresh (metasrv-user-cache.bats has the rest)
  run --separate-stderr env LAKE_TRACE=1 LAKE_CATALOG_TTL=0 lake-query -c 'SELECT count(*) FROM m.t'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(trace_count 'source catalog_snapshot')" 0
  assert_equal "$(trace_count 'source resolve')" 1
  run --separate-stderr env LAKE_TRACE=1 LAKE_CATALOG_TTL=3600 lake-query -c 'SELECT count(*) FROM m.t'
  assert_equal "exit $status" "exit 0"
  assert_equal "$(trace_count 'source')" 0
  run --separate-stderr env LAKE_TRACE=1 lake-catalog list
  assert_equal "exit $status" "exit 0"
  assert_equal "$(trace_count 'source catalog_snapshot')" 0
  assert_equal "$(trace_count 'source list_tables')" 1

  run --separate-stderr lake-query -c 'SELECT * FROM m.nope'
  assert_equal "exit $status" "exit 66"
  run --separate-stderr lake-put --table m.nope /dev/null
  assert_error lake-put 66 m.nope
  assert_output ""
  run --separate-stderr lake-catalog show m.nope
  assert_error lake-catalog 66 m.nope
  assert_equal "$(stage_files)" ""
}

@test "a principal that may resolve but not append: refused (77) before any object or segment is stored" {
  export LAKE_TOKEN_FILE=$PEER
  echo hello >"$T/a.txt"
  run --separate-stderr lake-put --table m.t --set id=1 "$T/a.txt"
  assert_error lake-put 77 peer metadata-peer append
  assert_output ""
  assert_equal "$(stage_files)" ""

  run --separate-stderr lake-query --import m.t <<<$'id,note\n2,import'
  assert_error lake-query 77 append
  assert_equal "$(stage_files)" ""

  run --separate-stderr lake-query -c "INSERT INTO m.t (id, note) VALUES (3, 'insert')"
  assert_equal "exit $status" "exit 77"
  assert_equal "$(stage_files)" ""

  # reading is allowed
  run --separate-stderr lake-query -c 'SELECT count(*) FROM m.t'
  assert_clean_success
  assert_output 0
}

@test "the snapshot cache is per principal: a bad token is not served from another token's fresh cache" {
  export LAKE_CATALOG_TTL=3600
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'m\tt'

  # a wrong secret for the admin's name, while the admin's cache is fresh
  local tok
  tok=$(cat "$ADMIN")
  if [ "${tok: -1}" = 0 ]; then printf '%s1\n' "${tok%?}"; else printf '%s0\n' "${tok%?}"; fi >"$SRV/wrong.token"
  run --separate-stderr env LAKE_TOKEN_FILE="$SRV/wrong.token" lake-catalog list
  assert_error lake-catalog 77
  assert_output ""
  run --separate-stderr env LAKE_TOKEN_FILE="$SRV/wrong.token" lake-catalog show m.t
  assert_error lake-catalog 77

  # nor is a user's list taken from it: alice's own listing
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog list
  assert_clean_success
  assert_output $'m\tt'

  # whoami is the caller's, not the cached one of another principal
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-put --table m.t /dev/null
  assert_clean_success
  run --separate-stderr env LAKE_TOKEN_FILE="$PEER" lake-put --table m.t /dev/null
  assert_error lake-put 77 peer

  # the admin is still served from its own fresh cache
  run --separate-stderr env LAKE_TRACE=1 lake-catalog list
  assert_equal "$(trace_count source)" 0
  assert_equal "$(grep -v '^trace: ' <<<"$output")" $'m\tt'

  # no token material under the cache directory: neither in names nor in files
  local t secret
  for t in "$ADMIN" "$ALICE" "$PEER" "$SRV/wrong.token"; do
    secret=$(cat "$t")
    secret=${secret##*_}
    run grep -rl -- "$secret" "$XDG_CACHE_HOME"
    assert_failure
    run bash -c "find '$XDG_CACHE_HOME' | grep -F -- '$secret'"
    assert_failure
  done
}
