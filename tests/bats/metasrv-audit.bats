#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-metasrv's audit trail and expiring tokens (issue 29): every mutating
# action, and every unauthenticated or permission_denied request, is a row
# in the registry that `lake-metasrv audit` reads (filters, TSV, JSON); a
# mutating action whose row cannot be written fails and changes nothing;
# rows older than --audit-retention are pruned when the server starts;
# tokens made with --expires stop authenticating once past, as a revoked
# one; token list shows expires_at and last_used_at, and last_used_at is
# written once a minute per principal at most.  A real server over TLS
# (helpers/metasrv), on a SQLite or a PostgreSQL registry.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  ALICE=$(metasrv_token user alice)
}

teardown() {
  metasrv_stop
  common_teardown
}

# One SQL statement on the test's registry, SQLite file or PostgreSQL
# database alike; rows as psql -At and sqlite3 print them (|-separated).
reg_sql() {
  if [ -s "$SRV/registry.url" ]; then
    local url db
    url=$(cat "$SRV/registry.url")
    db=${url#*@/}
    pg_sql "${db%%\?*}" "$1"
  else
    sqlite3 "$SRV/registry.db" "$1"
  fi
}

# A token of ROLE for NAME that expires after SPAN: its file.
token_expiring() {
  lake-metasrv token create "${METASRV_REGOPT[@]}" --role "$1" --name "$2" --expires "$3" >"$SRV/$2.token" ||
    fail "token create --expires failed"
  printf '%s\n' "$SRV/$2.token"
}

# The trail as lake-metasrv audit prints it, without the time and the
# request id: principal, role, action, target, result.
trail() {
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" "$@"
  assert_clean_success
  cut -f2-6 <<<"$output"
}

# The request ids the server logged for ACTION, in order.
logged_ids() {
  metasrv_log_lines | grep " action=$1 " | sed 's/.* request_id=\([^ ]*\) .*/\1/'
}

@test "every mutating action is one row (principal, role, action, target, result, request id), written with its change; reads are not" {
  local seg=$STAGE_URL/tables/m/seg_1
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"a","type":"TEXT"}]}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "$seg")],\"files\":[]}"
  assert_equal "$HTTP_CODE" 200
  # a retry of the same append changes nothing, and says so in a row of its own
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":0,\"segments\":[$(metasrv_segment "$seg")],\"files\":[]}"
  assert_equal "$(json_field version "$HTTP_BODY")" 1
  metasrv_post "$ADMIN" compact "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":1,\"replace\":[\"$seg\"],\"segments\":[$(metasrv_segment "$STAGE_URL/tables/m/seg_2")],\"files\":[]}"
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" rewrite "{\"namespace\":\"m\",\"name\":\"t\",\"expected_version\":2,\"operation\":\"delete\",\"replace\":[\"$STAGE_URL/tables/m/seg_2\"],\"segments\":[],\"files\":[]}"
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" rollback '{"namespace":"m","name":"t","expected_version":3,"version":2}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" alter '{"namespace":"m","name":"t","operation":"add-column","column":"b TEXT"}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" expire '{"namespace":"m","name":"t","older_than":86400}'
  assert_equal "$HTTP_CODE" 200
  # a grant and a revoke are rows; alice's read between them is none
  metasrv_post "$ADMIN" grant '{"privilege":"read","on":"m.t","grantee":"alice"}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ALICE" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" revoke '{"privilege":"read","on":"m.t","grantee":"alice"}'
  assert_equal "$HTTP_CODE" 200
  # gc through the server: its expire of every table is a row without a target
  run --separate-stderr lake-catalog gc
  assert_success
  metasrv_post "$ADMIN" drop_table '{"namespace":"m","name":"t"}'
  assert_equal "$HTTP_CODE" 200
  # reads leave no row
  metasrv_post "$ADMIN" whoami
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  metasrv_log_wait 17

  assert_equal "$(trail)" "$(printf 'admin\tadmin\t%s\tok\n' create_namespace$'\t'm create_table$'\t'm.t \
    append$'\t'm.t append$'\t'm.t compact$'\t'm.t rewrite$'\t'm.t rollback$'\t'm.t alter$'\t'm.t expire$'\t'm.t \
    grant$'\t'm.t revoke$'\t'm.t expire$'\t'- drop_table$'\t'm.t)"
  # each row carries the id the server logged (and answered errors with)
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --action append
  assert_equal "$(cut -f7 <<<"$output")" "$(logged_ids append)"
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --action drop_table
  assert_equal "$(cut -f7 <<<"$output")" "$(logged_ids drop_table)"
  # and its time is the registry's clock's, RFC 3339 UTC
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}"
  assert_equal "$(cut -f1 <<<"$output" | grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$')" 0
}

@test "failed mutating actions carry their error code; unauthenticated and permission_denied requests are rows; no token material" {
  local tok wrong
  tok=$(cat "$ADMIN")
  if [ "${tok: -1}" = 0 ]; then wrong=${tok%?}1; else wrong=${tok%?}0; fi
  printf '%s\n' "$wrong" >"$SRV/wrong.token"
  GONE=$(metasrv_token admin gone)
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name gone

  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_assert_error 412 failed_precondition
  metasrv_post "$ADMIN" drop_table '{"namespace":"m","name":"nope"}'
  metasrv_assert_error 404 not_found
  metasrv_post "$ADMIN" append "{\"namespace\":\"m\",\"name\":\"nope\",\"expected_version\":0,\"segments\":[$(metasrv_segment "$STAGE_URL/x")],\"files\":[]}"
  metasrv_assert_error 404 not_found
  metasrv_post "$ALICE" create_namespace '{"namespace":"x"}'
  metasrv_assert_error 403 permission_denied
  metasrv_req "$ALICE" GET /v1/metrics
  assert_equal "$HTTP_CODE" 403
  metasrv_post - create_table '{"namespace":"m","name":"t"}'
  metasrv_assert_error 401 unauthenticated
  metasrv_post "$SRV/wrong.token" drop_table '{"namespace":"m","name":"t"}'
  metasrv_assert_error 401 unauthenticated
  metasrv_post "$GONE" whoami
  metasrv_assert_error 401 unauthenticated
  # a target is only ever names: anything else the body holds stays out
  metasrv_post "$ALICE" create_namespace '{"namespace":"../etc\tx"}'
  metasrv_assert_error 403 permission_denied
  metasrv_log_wait 10

  assert_equal "$(trail)" "$(printf '%s\n' \
    $'admin\tadmin\tcreate_namespace\tm\tok' \
    $'admin\tadmin\tcreate_namespace\tm\tfailed_precondition' \
    $'admin\tadmin\tdrop_table\tm.nope\tnot_found' \
    $'admin\tadmin\tappend\tm.nope\tnot_found' \
    $'alice\tuser\tcreate_namespace\tx\tpermission_denied' \
    $'alice\tuser\tmetrics\t-\tpermission_denied' \
    $'-\t-\tcreate_table\tfrom=127.0.0.1\tunauthenticated' \
    $'-\t-\tdrop_table\tclaimed=admin from=127.0.0.1\tunauthenticated' \
    $'-\t-\twhoami\tclaimed=gone from=127.0.0.1\tunauthenticated' \
    $'alice\tuser\tcreate_namespace\t-\tpermission_denied')"

  # --result and --principal pick rows out
  assert_equal "$(trail --result unauthenticated | cut -f1,4 | paste -sd,)" \
    "$(printf -- '-\t%s,' from=127.0.0.1 'claimed=admin from=127.0.0.1' 'claimed=gone from=127.0.0.1' | sed 's/,$//')"
  # a token's claim is no principal: their rows are not admin's or gone's
  assert_equal "$(trail --principal gone)" ""
  assert_equal "$(trail --principal alice --result permission_denied | cut -f3 | paste -sd,)" \
    "create_namespace,metrics,create_namespace"

  # no token, secret or hash in the trail, as printed or as stored
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --json
  assert_clean_success
  local printed=$output stored t sha
  stored=$(reg_sql "SELECT * FROM audit")
  for t in "$ADMIN" "$ALICE" "$GONE" "$SRV/wrong.token"; do
    t=$(cat "$t")
    sha=$(printf '%s' "$t" | sha256sum | cut -c1-64)
    [[ $printed$stored != *"${t##*_}"* ]] || fail "the trail holds a token's secret"
    [[ $printed$stored != *"$sha"* ]] || fail "the trail holds a token's hash"
  done
  [[ $printed$stored != *lk_* ]] || fail "the trail holds token material"
}

@test "a mutating action whose audit row cannot be written fails and changes nothing; a refusal's is logged" {
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  assert_equal "$HTTP_CODE" 200
  local before
  before=$(metasrv_directory)
  # the registry refuses every insert into the trail (a trigger: the
  # database itself says no, as a full or broken one would)
  if [ -s "$SRV/registry.url" ]; then
    # shellcheck disable=SC2016 # $$ quotes the function's body for PostgreSQL, not the shell
    reg_sql 'CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION '"'audit refused'"'; END$$;
             CREATE TRIGGER audit_fail BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION audit_refuse();'
  else
    reg_sql "CREATE TRIGGER audit_fail BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit refused'); END;"
  fi
  metasrv_post "$ADMIN" create_namespace '{"namespace":"n"}'
  metasrv_assert_error 500 internal
  metasrv_post "$ADMIN" create_table '{"namespace":"m","name":"t","schema":[{"name":"a","type":"TEXT"}]}'
  metasrv_assert_error 500 internal
  assert_equal "$(metasrv_directory)" "$before"
  # reads are unaffected; a refusal is answered as ever, its lost row logged
  metasrv_post "$ADMIN" whoami
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ALICE" drop_table '{"namespace":"m","name":"t"}'
  metasrv_assert_error 403 permission_denied
  metasrv_log_wait 6
  grep -q "request_id=$(jq -r .error.request_id <<<"$HTTP_BODY"): audit row (drop_table permission_denied) not written" \
    "$SRV/serve.log" || fail "the lost row is not logged: $(cat "$SRV/serve.log")"
  reg_sql "DROP TRIGGER audit_fail$([ -s "$SRV/registry.url" ] && echo ' ON audit')"
  metasrv_post "$ADMIN" create_namespace '{"namespace":"n"}'
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(trail --action create_namespace)" $'admin\tadmin\tcreate_namespace\tm\tok\nadmin\tadmin\tcreate_namespace\tn\tok'
}

@test "audit: --since takes a duration or an RFC 3339 time; --json and --header; bad filters exit 64" {
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_log_wait 1
  reg_sql "INSERT INTO audit(at, principal, role, action, target, result, request_id)
           VALUES ('2020-01-02T03:04:05Z', 'old', 'admin', 'drop_table', 'm.t', 'ok', 'R0')"
  assert_equal "$(trail | cut -f1 | paste -sd,)" "admin,old" # in the order written
  assert_equal "$(trail --since 1d | cut -f1 | paste -sd,)" "admin"
  assert_equal "$(trail --since 2020-01-02T03:04:05Z | cut -f1 | paste -sd,)" "admin,old"
  assert_equal "$(trail --since 2020-01-02T04:04:06+01:00 | cut -f1 | paste -sd,)" "admin"
  assert_equal "$(trail --since 2099-01-01T00:00:00Z)" ""
  assert_equal "$(trail --action drop_table --result ok)" $'old\tadmin\tdrop_table\tm.t\tok'

  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --header --principal old
  assert_clean_success
  assert_equal "$output" $'at\tprincipal\trole\taction\ttarget\tresult\trequest_id\n2020-01-02T03:04:05Z\told\tadmin\tdrop_table\tm.t\tok\tR0'
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --json
  assert_clean_success
  assert_equal "$(jq -c '[.[] | [.principal, .action, .target, .result, (keys | sort)]]' <<<"$output")" \
    '[["admin","create_namespace","m","ok",["action","at","principal","request_id","result","role","seq","target"]],["old","drop_table","m.t","ok",["action","at","principal","request_id","result","role","seq","target"]]]'

  local bad
  for bad in "--since yesterday" "--since -1d" "--since 2026-02-30T00:00:00Z" "--principal a\tb" "--action" \
             "--result ok;drop" "--json --header" "--expires 0"; do
    # shellcheck disable=SC2086 # each case is several words on purpose
    run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" $bad
    assert_error lake-metasrv 64
  done
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" extra
  assert_error lake-metasrv 64
}

@test "serve prunes audit rows older than --audit-retention when it starts; a bad retention exits 64" {
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  metasrv_log_wait 1
  reg_sql "INSERT INTO audit(at, action, result) VALUES ('2020-01-01T00:00:00Z', 'append', 'ok')"
  metasrv_stop
  metasrv_start "$SRV" 0 --audit-retention 30d
  assert_equal "$(trail | cut -f1,3 | paste -sd,)" $'admin\tcreate_namespace'
  grep -q 'audit trail: 1 row(s) before .* pruned (--audit-retention)' "$SRV/serve.log" ||
    fail "the prune is not logged: $(cat "$SRV/serve.log")"
  local bad
  for bad in 0 -1d 90x ""; do
    # (bounded: a value taken would start a server, not fail)
    run --separate-stderr timeout 10 lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 \
      --insecure-listen --audit-retention "$bad"
    assert_error lake-metasrv 64
  done
}

@test "serve forgets the uploads begun more than gc's grace (1d) ago, when it starts; a younger one stays (issue 41, hole 5)" {
  reg_sql "INSERT INTO uploads VALUES ('$STAGE_URL/files/old', 'alice', '2020-01-01T00:00:00Z')"
  reg_sql "INSERT INTO uploads VALUES ('$STAGE_URL/files/young', 'alice', '$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)')"
  metasrv_stop
  metasrv_start "$SRV" 0
  assert_equal "$(reg_sql 'SELECT location FROM uploads')" "$STAGE_URL/files/young"
  grep -q "uploads: 1 begun before .* forgotten (gc's grace)" "$SRV/serve.log" ||
    fail "the pruning is not logged: $(cat "$SRV/serve.log")"
}

@test "a token made with --expires stops authenticating once past, exactly as a revoked one; token list shows expires_at" {
  local t0
  t0=$(date -u +%s)
  SOON=$(token_expiring user soon 2s)
  LATER=$(token_expiring user later 1d)
  GONE=$(metasrv_token user gone)
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name gone
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}"
  assert_clean_success
  local soon later
  soon=$(awk -F'\t' '$1 == "soon" { print $5 }' <<<"$output")
  later=$(awk -F'\t' '$1 == "later" { print $5 }' <<<"$output")
  # expires_at is when it was made (this side of the clock) plus the span
  [ "$(date -u -d "$soon" +%s)" -ge $((t0 + 2)) ] && [ "$(date -u -d "$soon" +%s)" -le $(($(date -u +%s) + 2)) ] ||
    fail "soon expires at $soon"
  [ "$(date -u -d "$later" +%s)" -ge $((t0 + 86400)) ] || fail "later expires at $later"
  assert_equal "$(awk -F'\t' '$1 == "alice" { print $5 }' <<<"$output")" -

  # wait (bounded) until the short one is refused, past its expiry
  for _ in $(seq 100); do
    metasrv_post "$SOON" whoami
    [ "$HTTP_CODE" = 401 ] && break
    sleep 0.1
  done
  metasrv_assert_error 401 unauthenticated
  [ "$(date -u +%s)" -ge "$(date -u -d "$soon" +%s)" ] || fail "refused before its expiry"
  local expired=$HTTP_BODY
  metasrv_post "$GONE" whoami
  assert_equal "$(jq -c '.error | del(.request_id)' <<<"$expired")" "$(jq -c '.error | del(.request_id)' <<<"$HTTP_BODY")"
  # the other still works; the client exits 77 with the expired one
  metasrv_post "$LATER" whoami
  assert_equal "$HTTP_CODE" 200
  metasrv_use "$SRV" "$SOON"
  run --separate-stderr lake-catalog whoami
  assert_equal "$status" 77
  # (the refusals claimed soon's name: no principal, the claim in target)
  assert_equal "$(trail --result unauthenticated | awk -F'\t' '$1 == "-" && $4 ~ /^claimed=soon from=/ { print $3 }' | sort -u)" whoami

  # renewed: revoked and issued again, the new token expires anew
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name soon
  SOON=$(metasrv_token user soon)
  metasrv_post "$SOON" whoami
  assert_equal "$HTTP_CODE" 200

  # bad spans: none, not a duration, more than ten years
  local bad
  for bad in 0 -5s 1w 3651d ""; do
    run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name x --expires "$bad"
    assert_error lake-metasrv 64
  done
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}" --json
  assert_clean_success
  assert_equal "$(jq -r '.[] | select(.name == "x") | .name' <<<"$output")" ""
  assert_equal "$(jq -c '[.[] | select(.name == "alice") | .expires_at]' <<<"$output")" '[null]'
  # -H: the same rows under their column names
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}" -H
  assert_clean_success
  assert_equal "$(head -1 <<<"$output")" $'name\trole\tcreated_at\trevoked_at\texpires_at\tlast_used_at'
  assert_equal "$(awk -F'\t' '$1 == "gone" { print $2, ($4 != "-"), $5 }' <<<"$output")" "user 1 -"
}

@test "token list shows last_used_at: written at a token's first use, then at most once a minute" {
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}"
  assert_equal "$(awk -F'\t' '$1 == "alice" { print $6 }' <<<"$output")" -
  local t0 used
  t0=$(date -u +%s)
  metasrv_post "$ALICE" whoami
  assert_equal "$HTTP_CODE" 200
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}" --json
  used=$(jq -r '.[] | select(.name == "alice") | .last_used_at' <<<"$output")
  [ "$(date -u -d "$used" +%s)" -ge "$t0" ] || fail "alice's last use: $used"

  # recorded 10 s ago: the next requests write nothing
  local recent old
  recent=$(date -u -d @$(($(date -u +%s) - 10)) +%Y-%m-%dT%H:%M:%SZ)
  reg_sql "UPDATE principals SET last_used_at = '$recent' WHERE name = 'alice'"
  metasrv_post "$ALICE" whoami
  metasrv_post "$ALICE" resolve '{"namespace":"m","name":"t"}'
  assert_equal "$(reg_sql "SELECT last_used_at FROM principals WHERE name = 'alice'")" "$recent"
  # recorded two minutes ago: the next request records it anew
  old=$(date -u -d @$(($(date -u +%s) - 120)) +%Y-%m-%dT%H:%M:%SZ)
  reg_sql "UPDATE principals SET last_used_at = '$old' WHERE name = 'alice'"
  t0=$(date -u +%s)
  metasrv_post "$ALICE" whoami
  used=$(reg_sql "SELECT last_used_at FROM principals WHERE name = 'alice'")
  [ "$(date -u -d "$used" +%s)" -ge "$t0" ] || fail "alice's last use not recorded anew: $used"
  # a refused token is no use of its principal
  local tok
  tok=$(cat "$ADMIN")
  printf '%s\n' "${tok%?}$([ "${tok: -1}" = 0 ] && echo 1 || echo 0)" >"$SRV/wrong.token"
  metasrv_post "$SRV/wrong.token" whoami
  metasrv_assert_error 401 unauthenticated
  assert_equal "$(reg_sql "SELECT count(*) FROM principals WHERE name = 'admin' AND last_used_at IS NULL")" 1
}

@test "the embedded (local) lake keeps no audit trail" {
  run --separate-stderr env -u LAKE_METASRV -u LAKE_TOKEN_FILE lake-catalog create-namespace m
  assert_success
  [ -f "$LAKE_HOME/registry.db" ] || fail "no embedded registry"
  assert_equal "$(sqlite3 "$LAKE_HOME/registry.db" "SELECT count(*) FROM audit")" 0
  assert_equal "$(sqlite3 "$LAKE_HOME/registry.db" "SELECT count(*) FROM namespaces")" 1
}
