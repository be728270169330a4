#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Segment statistics sent to a real TLS lake-metasrv's append (issue 18,
# part 1; lake-metasrv(8) ACTIONS, the format in lake-query(1)
# Statistics): statistics that break the format's rules are 400
# invalid_argument "append: malformed segment statistics" and change
# nothing; well-formed ones are stored in canonical form and come back
# from resolve; a segment without them has none; a retry of an append with
# them answers the version it committed.  tests/run runs this on a SQLite
# and on a PostgreSQL registry.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup nouse
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"i","type":"INTEGER"},{"name":"r","type":"REAL"},{"name":"s","type":"TEXT"},{"name":"b","type":"BLOB"}]}'
  [ "$HTTP_CODE" = 200 ] || fail "create_table: $HTTP_CODE $HTTP_BODY"
  SHA=2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881
}

teardown() {
  metasrv_stop
  common_teardown
}

# append_body LOCATION STATS [EXPECTED]: an append of one segment of 4 rows
# at LOCATION carrying STATS (raw JSON text; "" for none)
append_body() {
  printf '{"namespace":"m","name":"t","expected_version":%s,"segments":[{"location":"%s/tables/x/%s","size":1,"sha256":"%s","rows":4%s}],"files":[]}' \
    "${3:-0}" "$STAGE_URL" "$1" "$SHA" "${2:+,\"stats\":$2}"
}

# The table as the server has it: version and segments, one line.
table_state() {
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  [ "$HTTP_CODE" = 200 ] || fail "resolve: $HTTP_CODE $HTTP_BODY"
  jq -c '[.version, .segments]' <<<"$HTTP_BODY"
}

@test "malformed statistics in an append are 400 invalid_argument, and nothing changes" {
  local before n=0 stats x65
  x65=$(printf 'x%.0s' $(seq 65))
  before=$(table_state)
  local cases=(
    '{"nulls":0}'                                                        # not an array
    '[]'                                                                 # no entry per column
    '[{"nulls":0},{"nulls":0},{"nulls":0}]'                              # too few
    '[{"nulls":0},{"nulls":0},{"nulls":0},{"nulls":0},{"nulls":0}]'      # too many
    '[{"nulls":5},{"nulls":0},{"nulls":0},{"nulls":0}]'                  # more nulls than rows
    '[{"nulls":-1},{"nulls":0},{"nulls":0},{"nulls":0}]'
    '[{"nulls":1.5},{"nulls":0},{"nulls":0},{"nulls":0}]'
    '[{},{"nulls":0},{"nulls":0},{"nulls":0}]'                           # nulls missing
    '[1,{"nulls":0},{"nulls":0},{"nulls":0}]'                            # not an object
    '[{"nulls":0,"min":1},{"nulls":0},{"nulls":0},{"nulls":0}]'          # min without max
    '[{"nulls":0,"rows":4},{"nulls":0},{"nulls":0},{"nulls":0}]'         # an unknown key
    '[{"nulls":0,"min":1.5,"max":2},{"nulls":0},{"nulls":0},{"nulls":0}]'                   # INTEGER: a fraction
    '[{"nulls":0,"min":0,"max":9007199254740994},{"nulls":0},{"nulls":0},{"nulls":0}]'      # beyond 2^53
    '[{"nulls":0,"min":"1","max":"2"},{"nulls":0},{"nulls":0},{"nulls":0}]'                 # INTEGER: strings
    '[{"nulls":0},{"nulls":0,"min":"a","max":"b"},{"nulls":0},{"nulls":0}]'                 # REAL: strings
    '[{"nulls":0},{"nulls":0},{"nulls":0,"min":1,"max":2},{"nulls":0}]'                     # TEXT: numbers
    "[{\"nulls\":0},{\"nulls\":0},{\"nulls\":0,\"min\":\"a\",\"max\":\"$x65\"},{\"nulls\":0}]" # 65 bytes
    '[{"nulls":0},{"nulls":0},{"nulls":0,"min":"a","max":"b","max_cut":"yes"},{"nulls":0}]'  # max_cut not boolean
    '[{"nulls":0,"min":1,"max":2,"max_cut":true},{"nulls":0},{"nulls":0},{"nulls":0}]'       # max_cut on numbers
    '[{"nulls":0},{"nulls":0},{"nulls":0},{"nulls":0,"min":"00","max":"ff"}]'                # BLOB: bounds
    '[{"nulls":0,"min":null,"max":null},{"nulls":0},{"nulls":0},{"nulls":0}]'
  )
  for stats in "${cases[@]}"; do
    n=$((n + 1))
    metasrv_post "$ADMIN" append "$(append_body "seg$n" "$stats")"
    echo "# $stats -> $HTTP_CODE $HTTP_BODY"
    metasrv_assert_error 400 invalid_argument
    assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" "append: malformed segment statistics"
  done
  assert_equal "$(table_state)" "$before"
  # none of the refused segments is referenced
  metasrv_post "$ADMIN" references '{"limit":1000}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq '[.locations[] | select(contains("/tables/x/"))] | length' <<<"$HTTP_BODY")" 0
}

@test "well-formed statistics round-trip through resolve in canonical form; none stays none; a retry answers the same version" {
  local x64 body
  x64=$(printf 'x%.0s' $(seq 64))
  # keys in another order, max_cut false, a whole REAL written 2.0, 64
  # bytes of text, a BLOB with nulls alone
  body=$(append_body seg1 "[{\"max\":9007199254740990,\"nulls\":1,\"min\":-5},{\"nulls\":0,\"min\":2.0,\"max\":2.5e10},{\"nulls\":0,\"min\":\"\\u00e9\",\"max\":\"$x64\",\"max_cut\":false},{\"nulls\":4}]")
  metasrv_post "$ADMIN" append "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":1}'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c '.segments[0].stats' <<<"$HTTP_BODY")" \
    "[{\"nulls\":1,\"min\":-5,\"max\":9007199254740990},{\"nulls\":0,\"min\":2,\"max\":25000000000},{\"nulls\":0,\"min\":\"é\",\"max\":\"$x64\"},{\"nulls\":4}]"
  # the stored text is the canonical form: unformatted, keys in order
  if [ "${LAKE_TEST_REGISTRY:-sqlite}" != pg ]; then
    assert_equal "$(sqlite3 "$SRV/registry.db" 'SELECT stats FROM segments')" \
      "[{\"nulls\":1,\"min\":-5,\"max\":9.00719925474099e+15},{\"nulls\":0,\"min\":2,\"max\":25000000000},{\"nulls\":0,\"min\":\"é\",\"max\":\"$x64\"},{\"nulls\":4}]"
  fi

  # a lost answer: the same request again is the version that committed it
  metasrv_post "$ADMIN" append "$body"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":1}'

  # a segment without statistics has none in resolve
  metasrv_post "$ADMIN" append "$(append_body seg2 "" 1)"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":2}'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[] | has("stats")]]' <<<"$HTTP_BODY")" '[2,[true,false]]'
  # and a bound cJSON would print inexactly is stored moved outward
  metasrv_post "$ADMIN" append "$(append_body seg3 '[{"nulls":0},{"nulls":0,"min":0.30000000000000004,"max":0.30000000000000004},{"nulls":0},{"nulls":0}]' 2)"
  assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"version":3}'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '.segments[2].stats[1]' <<<"$HTTP_BODY")" '{"nulls":0,"min":0.3,"max":0.3000000000000001}'
}
