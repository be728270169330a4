#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-metasrv's authentication and roles (DESIGN §5, issue 4): every
# action × every kind of caller over HTTPS with curl (200, 401, 403, and
# what each call changed), GET /v1/actions filtered by role, health without
# a token, metrics for admin and metadata-peer only, revocation that takes
# effect on the very next request, and lake-catalog's exit 77 for 401/403.
# A real server over TLS on an ephemeral loopback port (helpers/metasrv).

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  ETL=$(metasrv_token query-service etl)
  PEER=$(metasrv_token metadata-peer peer)
  ALICE=$(metasrv_token user alice)
  # right name, wrong secret: the admin token with its last digit changed
  local tok
  tok=$(cat "$ADMIN")
  if [ "${tok: -1}" = 0 ]; then printf '%s1\n' "${tok%?}"; else printf '%s0\n' "${tok%?}"; fi >"$SRV/wrong.token"
  # a well-formed token of a principal that does not exist
  printf 'lk_nobody_%s\n' "${tok##*_}" >"$SRV/unknown.token"
  # a token revoked before it is used
  REVOKED=$(metasrv_token admin gone)
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name gone
}

teardown() {
  metasrv_stop
  common_teardown
}

# the role matrix below: the actions of vended access need an S3 stage
# and have theirs in s3-vend-actions.bats
ACTIONS=$(tr ' ' '\n' <<<"$METASRV_ACTIONS" | grep -vxF -f <(tr ' ' '\n' <<<"$METASRV_VEND_ACTIONS") | paste -sd' ')

# name:tokenfile:role for every kind of caller; no role: not authenticated.
callers() {
  printf '%s\n' "admin:$ADMIN:admin" "etl:$ETL:query-service" "peer:$PEER:metadata-peer" \
    "alice:$ALICE:user" "none:-:" "wrong:$SRV/wrong.token:" "unknown:$SRV/unknown.token:" \
    "revoked:$REVOKED:"
}

# The actions a role may run, sorted, as a JSON array.
allowed_list() {
  local a list=()
  for a in $METASRV_ACTIONS; do metasrv_allowed "$a" "$1" && list+=("$a"); done
  printf '%s\n' "${list[@]}" | jq -R . | jq -cs 'sort'
}

# A valid request for ACTION by caller NAME: each caller's changes have
# their own names, so what was done can be told apart afterwards.
body_for() {
  case $1 in
    catalog_snapshot) echo '{"known_generation":-1}' ;;
    resolve) echo '{"namespace":"m","name":"t"}' ;;
    history) echo '{"namespace":"m","name":"t","limit":2}' ;;
    rollback) # to the current version: a new version of the same segments
      printf '{"namespace":"m","name":"t","expected_version":%d,"version":%d}\n' "$VERSION" "$VERSION" ;;
    expire) echo '{"namespace":"m","name":"t","older_than":86400}' ;; # (nothing is that old: no change)
    append)
      printf '{"namespace":"m","name":"t","expected_version":%d,"segments":[%s],"files":[]}\n' \
        "$VERSION" "$(metasrv_segment "$STAGE_URL/tables/m/seg_$2")" ;;
    compact) # the caller's own segment, appended above, rewritten
      printf '{"namespace":"m","name":"t","expected_version":%d,"replace":["%s"],"segments":[%s],"files":[]}\n' \
        "$VERSION" "$STAGE_URL/tables/m/seg_$2" "$(metasrv_segment "$STAGE_URL/tables/m/seg_c_$2")" ;;
    rewrite) # a DELETE of the caller's compacted segment: it is replaced by none
      printf '{"namespace":"m","name":"t","expected_version":%d,"operation":"delete","replace":["%s"],"segments":[],"files":[]}\n' \
        "$VERSION" "$STAGE_URL/tables/m/seg_c_$2" ;;
    alter) echo "{\"namespace\":\"m\",\"name\":\"t\",\"operation\":\"add-column\",\"column\":\"c_$2 TEXT\"}" ;;
    create_namespace) echo "{\"namespace\":\"ns_$2\"}" ;;
    create_table) echo "{\"namespace\":\"m\",\"name\":\"t_$2\",\"schema\":[{\"name\":\"a\",\"type\":\"TEXT\"}]}" ;;
    drop_table) echo "{\"namespace\":\"m\",\"name\":\"d_$2\"}" ;;
    grant) echo '{"privilege":"read","on":"m.t","grantee":"PUBLIC"}' ;;
    revoke) echo '{"privilege":"read","on":"m.t","grantee":"PUBLIC"}' ;;
    grants) echo '{"on":"m"}' ;;
    whoami) echo '{}' ;;
    list_tables) echo '{"namespace":"m","limit":5}' ;;
    references) echo '{"limit":5}' ;;
    gc) echo '{"dry_run":true,"grace":0}' ;; # (a dry run: nothing changes)
  esac
}

# What a successful answer of ACTION for caller NAME with ROLE must hold.
assert_answer() {
  local action=$1 name=$2 role=$3 check
  case $action in
    catalog_snapshot) check='.status == "snapshot" and (.generation | type == "number") and (.entries | type == "array")' ;;
    resolve) check='.namespace == "m" and .name == "t" and (.version | type == "number")' ;;
    append | compact | rewrite | rollback) check=".version == $VERSION" ;;
    alter) check=".version == $VERSION and (.schema | map(.name) | index(\"c_$name\") != null) and (.generation | type == \"number\")" ;;
    history) check='(.versions[0] | .version == 0 and .operation == "create") and (.more | type == "boolean")' ;;
    create_namespace | create_table | drop_table) check='.generation | type == "number"' ;;
    grant | revoke) check='.changed == true and (.generation | type == "number")' ;;
    # admin sees every grant; any other principal only those to it, its
    # role or PUBLIC (alice: make_matrix_tables' three)
    grants) case $role in
        admin) check='[.grants[].grantee] == ["alice","alice","alice"]' ;;
        user) check='[.grants[] | .grantee + " " + .privilege] == ["alice modify","alice read","alice write"]' ;;
        *) check='.grants == []' ;;
      esac ;;
    whoami) check=".principal == \"$name\" and .role == \"$role\" and .stage == \"$STAGE_URL\"" ;;
    references) check='(.locations | type == "array") and (.more | type == "boolean")' ;;
    gc) check='(.objects | type == "array") and (.removed | type == "number") and (has("next") | not)' ;;
    # a user's: the tables it holds read on (alice: all of m, granted above)
    list_tables) check='(.tables | length == 5 and all(.namespace == "m")) and .more == true' ;;
    expire) check='.expired == 0 and (.cutoff | type == "string")' ;;
  esac
  jq -se "length == 1 and (.[0] | type == \"object\" and (has(\"error\") | not) and ($check))" \
    <<<"$HTTP_BODY" >/dev/null ||
    fail "$action as $name: unexpected answer: $HTTP_BODY"
}

# m.t (appended to), and one table per caller for drop_table to drop.
make_matrix_tables() {
  local n
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  assert_equal "$HTTP_CODE" 200
  for n in t d_admin d_etl d_peer d_alice d_none d_wrong d_unknown d_revoked; do
    metasrv_post "$ADMIN" create_table "{\"namespace\":\"m\",\"name\":\"$n\",\"schema\":[{\"name\":\"a\",\"type\":\"TEXT\"}]}"
    assert_equal "$HTTP_CODE" 200
  done
  # the user is scoped by grants (issue 29): alice may do all a user can on m
  for n in read write modify; do
    metasrv_post "$ADMIN" grant "{\"privilege\":\"$n\",\"on\":\"m\",\"grantee\":\"alice\"}"
    assert_equal "$HTTP_CODE" 200
  done
}

@test "the role table: every action x admin, query-service, metadata-peer, user, no token, wrong and revoked tokens" {
  # four failing callers x every action, all from 127.0.0.1: more failed
  # authentications than an address may make by default (metasrv-flood.bats)
  metasrv_stop
  metasrv_start "$SRV" 0 --auth-failures 1000
  metasrv_use "$SRV"
  make_matrix_tables
  VERSION=0
  local action name tok role
  for action in $ACTIONS; do
    while IFS=: read -r name tok role; do
      echo "# $action as $name (${role:-not authenticated})"
      metasrv_post "$tok" "$action" "$(body_for "$action" "$name")"
      if [ -z "$role" ]; then
        metasrv_expect_error 401 unauthenticated
      elif metasrv_allowed "$action" "$role"; then
        assert_equal "$action as $name: HTTP $HTTP_CODE" "$action as $name: HTTP 200"
        case $action in append | compact | rewrite | rollback | alter) VERSION=$((VERSION + 1)) ;; esac
        assert_answer "$action" "$name" "$role"
      else
        metasrv_expect_error 403 permission_denied
      fi
    done < <(callers)
  done
  metasrv_check_errors

  # what the calls changed: exactly what the allowed callers asked for
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  assert_equal "$(jq -c '[.entries[] | select(.kind == "namespace") | .namespace]' <<<"$HTTP_BODY")" \
    '["m","ns_admin"]'
  assert_equal "$(jq -c '[.entries[] | select(.kind == "table") | .name] | sort' <<<"$HTTP_BODY")" \
    '["d_alice","d_etl","d_none","d_peer","d_revoked","d_unknown","d_wrong","t","t_admin"]'
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(jq -c '[.version, [.segments[].location], [.schema[].name]]' <<<"$HTTP_BODY")" \
    '[15,[],["a","c_admin","c_etl","c_alice"]]'

  # and the server counted each refusal under its action
  for action in $ACTIONS; do
    assert_equal "$action 401: $(metasrv_count "$action" 401)" "$action 401: 4"
  done
  assert_equal "$(metasrv_count catalog_snapshot 403)" 1
  assert_equal "$(metasrv_count resolve 403)" 0
  assert_equal "$(metasrv_count append 403)" 1
  assert_equal "$(metasrv_count compact 403)" 1
  assert_equal "$(metasrv_count rewrite 403)" 1
  assert_equal "$(metasrv_count rollback 403)" 1
  assert_equal "$(metasrv_count alter 403)" 1
  assert_equal "$(metasrv_count expire 403)" 1
  assert_equal "$(metasrv_count grant 403)" 3
  assert_equal "$(metasrv_count revoke 403)" 3
  assert_equal "$(metasrv_count grants 403)" 0
  assert_equal "$(metasrv_count history 403)" 0
  assert_equal "$(metasrv_count create_namespace 403)" 3
  assert_equal "$(metasrv_count create_table 403)" 3
  assert_equal "$(metasrv_count drop_table 403)" 3
  assert_equal "$(metasrv_count whoami 403)" 0
  assert_equal "$(metasrv_count references 403)" 3
  assert_equal "$(metasrv_count gc 403)" 3
}

@test "GET /v1/actions lists exactly what the role may run; lake-catalog actions agrees" {
  local name tok role
  while IFS=: read -r name tok role; do
    echo "# GET /v1/actions as $name"
    metasrv_req "$tok" GET /v1/actions
    if [ -z "$role" ]; then
      metasrv_assert_error 401 unauthenticated
      continue
    fi
    assert_equal "HTTP $HTTP_CODE" "HTTP 200"
    assert_equal "$(jq -c 'keys' <<<"$HTTP_BODY")" '["actions"]'
    assert_equal "$name: $(jq -c '.actions | sort' <<<"$HTTP_BODY")" "$name: $(allowed_list "$role")"
    run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog actions
    assert_clean_success
    assert_equal "$name: $(printf '%s\n' "$output" | jq -R . | jq -cs 'sort')" "$name: $(allowed_list "$role")"
  done < <(callers)
  assert_equal "$(allowed_list user)" \
    '["alter","append","compact","expire","grants","history","list_tables","presign_get","resolve","rewrite","rollback","upload_abort","upload_begin","upload_complete","upload_parts","whoami"]'
}

@test "GET /v1/health needs no token; /v1/metrics needs admin or metadata-peer" {
  metasrv_req - GET /v1/health
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c . <<<"$HTTP_BODY")" '{"status":"ok","registry":"ok"}'
  metasrv_req "$SRV/wrong.token" GET /v1/health
  assert_equal "$HTTP_CODE" 200

  local tok
  for tok in "$ADMIN" "$PEER"; do
    metasrv_req "$tok" GET /v1/metrics
    assert_equal "HTTP $HTTP_CODE" "HTTP 200"
    grep -qi '^content-type: text/plain' <<<"$HTTP_HEAD" || fail "metrics are not text/plain: $HTTP_HEAD"
    grep -q '^lake_requests_total{action="health",status="200"} 2$' <<<"$HTTP_BODY" ||
      fail "health requests not counted: $HTTP_BODY"
    grep -q '^lake_snapshot_permits_in_use 0$' <<<"$HTTP_BODY" || fail "no permits gauge: $HTTP_BODY"
    grep -q '^lake_registry_generation 0$' <<<"$HTTP_BODY" || fail "no generation gauge: $HTTP_BODY"
    grep -q '^lake_request_duration_seconds_bucket{le="+Inf"} [0-9]' <<<"$HTTP_BODY" ||
      fail "no latency histogram: $HTTP_BODY"
    metasrv_assert_redacted "$HTTP_BODY"
  done
  for tok in "$ETL" "$ALICE"; do
    metasrv_req "$tok" GET /v1/metrics
    metasrv_assert_error 403 permission_denied
  done
  for tok in - "$SRV/wrong.token" "$SRV/unknown.token" "$REVOKED"; do
    metasrv_req "$tok" GET /v1/metrics
    metasrv_assert_error 401 unauthenticated
  done
}

@test "revocation is immediate: the very next request fails (401, exit 77), and a cached catalog does not hide it" {
  lake-catalog create-namespace m
  lake-catalog create m.t 'a TEXT'
  local carol
  carol=$(metasrv_token query-service carol)
  metasrv_use "$SRV" "$carol"
  run --separate-stderr lake-catalog --max-age 0 list
  assert_clean_success
  assert_output $'m\tt'
  local before
  before=$(metasrv_count catalog_snapshot)

  # revoked while the server runs, without restarting it
  run --separate-stderr lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name carol
  assert_clean_success
  assert_output ""

  # the very next request: refused, and the cache does not answer instead
  run --separate-stderr lake-catalog --max-age 0 list
  assert_error lake-catalog 77
  assert_output ""
  assert_equal "$(metasrv_count catalog_snapshot 401)" 1
  assert_equal "$(metasrv_count catalog_snapshot)" "$((before + 1))"
  run --separate-stderr lake-catalog whoami
  assert_error lake-catalog 77
  metasrv_post "$carol" whoami
  metasrv_assert_error 401 unauthenticated

  # token list shows it revoked; revoking again, or an unknown name, fails
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}"
  assert_success
  [[ $(grep $'^carol\t' <<<"$output") == $'carol\tquery-service\t'*$'\t'????-??-??T* ]] ||
    fail "carol is not listed as revoked: $output"
  run --separate-stderr lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name carol
  assert_error lake-metasrv 66 carol
  run --separate-stderr lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name nobody
  assert_error lake-metasrv 66 nobody
}

@test "lake-catalog exits 77 on one line when the server answers 401 or 403, and changes nothing; a user still resolves" {
  lake-catalog create-namespace m
  lake-catalog create m.t 'a TEXT'
  # a user resolves a table by name that it holds read on (issue 29)
  lake-catalog grant read ON m.t TO alice
  local gen
  gen=$(lake-catalog status | sed -n 's/^generation=//p')
  [ "$gen" = 3 ] || fail "generation $gen"

  # each: token file, then the lake-catalog arguments (an empty cache each time)
  local cases=(
    "$ALICE|create-namespace z"
    "$PEER|create-namespace z"
    "$PEER|drop m.t"
    "$ETL|create-namespace z"
    "$ETL|drop m.t"
    "$SRV/wrong.token|--max-age 0 list"
    "$SRV/wrong.token|whoami"
    "$SRV/wrong.token|create-namespace z"
    "$SRV/unknown.token|--max-age 0 list"
    "$SRV/unknown.token|whoami"
    "$REVOKED|--max-age 0 list"
    "$REVOKED|drop m.t"
  )
  local c tok args
  for c in "${cases[@]}"; do
    tok=${c%%|*} args=${c#*|}
    echo "# $(basename "$tok" .token): lake-catalog $args"
    rm -rf "$XDG_CACHE_HOME"
    # shellcheck disable=SC2086 # $args is split into the words of a command line
    run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog $args
    assert_error lake-catalog 77
    assert_output ""
    metasrv_assert_redacted "$stderr"
  done
  # a user may not read the directory, but may resolve a table by name (DESIGN §5)
  # that it holds read on (granted above), and list the tables it may read
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog --max-age 0 list
  assert_clean_success
  assert_output $'m\tt'
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog resolve m.t
  assert_clean_success
  assert_equal "$(jq -c '[.namespace, .name, .version]' <<<"$output")" '["m","t",0]'
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog show m.t
  assert_clean_success
  assert_output $'a\tTEXT'
  # the one DDL with a schema argument, refused for query-service
  run --separate-stderr env LAKE_TOKEN_FILE="$ETL" lake-catalog create m.z 'a TEXT'
  assert_error lake-catalog 77

  # nothing changed
  rm -rf "$XDG_CACHE_HOME"
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'m\tt'
  assert_equal "$(lake-catalog status | sed -n 's/^generation=//p')" "$gen"
}
