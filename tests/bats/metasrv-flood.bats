#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Unauthenticated floods (issue 41): failed authentications are limited per
# client address (--auth-failures, 30 a minute by default, as many at
# once), past which every request from that address is answered 429
# resource_exhausted with Retry-After, from memory; other addresses keep
# being served; the audit rows of failures name no principal (the claimed
# name and the address are in target) and the refusals past the limit are
# summed into one row per address, so a flood leaves a bounded number of
# rows.  A real server over TLS (helpers/metasrv); the flood comes from
# 127.0.0.2 (curl --interface), everyone else from 127.0.0.1.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
  ALICE=$(metasrv_token user alice)
  # alice's name with a secret that is not hers
  BAD="lk_alice_$(printf '%064d' 7)"
}

teardown() {
  [ -z "${FLOOD_PID:-}" ] || { touch "$T/flood.stop"; wait "$FLOOD_PID" 2>/dev/null || true; }
  metasrv_stop
  common_teardown
}

# flood N: N POSTs of whoami with $BAD from 127.0.0.2, one curl;
# one line per answer, "STATUS RETRY-AFTER" (the header, or "-").
flood() {
  local args=()
  for _ in $(seq "$1"); do args+=(-o /dev/null "$METASRV_URL/v1/actions/whoami"); done
  curl -sS --cacert "$SRV/cert.pem" --interface 127.0.0.2 -H "Authorization: Bearer $BAD" \
    -X POST --data-binary '{}' -w '%{http_code} %header{retry-after}\n' "${args[@]}" |
    awk '{ print $1, ($2 == "" ? "-" : $2) }'
}

# The audit trail without time and request id (principal, role, action,
# target, result) for OPTIONS….
trail() {
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" "$@"
  assert_clean_success
  cut -f2-6 <<<"$output"
}

@test "a flood of bad tokens from one address: 401 for the first --auth-failures, then 429 with Retry-After and the error object; other addresses are not refused" {
  local start answers n401 n429
  start=$(date +%s)
  answers=$(flood 100)
  assert_equal "$(wc -l <<<"$answers")" 100
  # the first 30 are checked (30: the default); time only adds to an allowance
  assert_equal "$(head -30 <<<"$answers" | sort | uniq -c | awk '{ $1 = $1 } 1')" "30 401 -"
  n401=$(grep -c '^401 ' <<<"$answers")
  n429=$(grep -c '^429 ' <<<"$answers")
  assert_equal "$((n401 + n429))" 100
  # past them, one more each 2 s at most (30 a minute)
  [ "$n401" -le $((30 + ($(date +%s) - start) / 2 + 1)) ] || fail "$n401 failures let in: $answers"
  [ "$n429" -ge 1 ] || fail "no 429: $answers"
  # every 429 says when to come back: in 2 s at most
  assert_equal "$(grep '^429 ' <<<"$answers" | grep -cvE '^429 [12]$')" 0

  # the answer is DESIGN §5's error object, and carries Retry-After (the
  # next 429: one more failure may have been let in since)
  printf '%s\n' "$BAD" >"$SRV/bad.token"
  local tries=0
  while metasrv_req "$SRV/bad.token" POST /v1/actions/whoami '{}' --interface 127.0.0.2; [ "$HTTP_CODE" = 401 ]; do
    [ $((tries += 1)) -lt 40 ] || fail "never refused again"
  done
  metasrv_assert_error 429 resource_exhausted
  assert_equal "$(jq -r .error.message <<<"$HTTP_BODY")" \
    "too many failed authentications from this address; retry later"
  [[ $HTTP_HEAD == *$'\n'[Rr]etry-[Aa]fter:\ [12]$'\n'* ]] || fail "no Retry-After: $HTTP_HEAD"
  # health is not refused
  metasrv_req - GET /v1/health '' --interface 127.0.0.2
  assert_equal "$HTTP_CODE" 200

  # another address: alice is served, and a bad token there is a 401 of its own
  metasrv_post "$ALICE" whoami
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(json_field principal "$HTTP_BODY")" alice
  metasrv_post "$SRV/bad.token" whoami
  metasrv_assert_error 401 unauthenticated
  # and the refusals are counted
  assert_equal "$(metasrv_count whoami 429)" $((n429 + 1))
}

@test "--auth-failures N sets the allowance; 0 turns the limit off; a bad value is a usage error" {
  metasrv_stop
  metasrv_start "$SRV" 0 --auth-failures 3
  run flood 5
  assert_equal "$(head -3 <<<"$output" | paste -sd' ')" "401 - 401 - 401 -"
  assert_equal "$(sed -n 4p <<<"$output" | cut -d' ' -f1)" 429
  metasrv_stop
  # one failure a minute: the next request from that address is refused,
  # and a lake client says so, and when to come back, exit 75
  metasrv_start "$SRV" 0 --auth-failures 1
  metasrv_use "$SRV"
  printf '%s\n' "$BAD" >"$SRV/bad.token"
  metasrv_post "$SRV/bad.token" whoami
  metasrv_assert_error 401 unauthenticated
  # a good token from that address is refused too: the address is, whoever it is
  metasrv_req "$ALICE" POST /v1/actions/whoami '{}'
  metasrv_assert_error 429 resource_exhausted
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog whoami
  assert_equal "$status" 75
  [[ $stderr =~ ^"lake-catalog: too many failed authentications from this address; retry later (in "[0-9]+" s)"$ ]] ||
    fail "not the message: $stderr"
  assert_equal "$output" ""
  metasrv_stop
  metasrv_start "$SRV" 0 --auth-failures 0
  run flood 60
  assert_equal "$(sort -u <<<"$output")" "401 -"
  run --separate-stderr lake-metasrv serve "${METASRV_REGOPT[@]}" --listen 127.0.0.1:0 --insecure-listen \
    --auth-failures -1
  assert_equal "$status" 64
  assert_equal "$stderr" "lake-metasrv: --auth-failures: '-1' is not a number from 0 to 1000000 (see 'lake-metasrv --help')"
}

@test "a valid client keeps getting 200 from another address while a flood from one is refused" {
  # the flood goes on until the test is done with it
  ( while [ ! -e "$T/flood.stop" ]; do flood 50 >/dev/null; done ) &
  FLOOD_PID=$!
  poll_until_refused() { [ "$(metasrv_count whoami 429)" -ge 1 ]; }
  wait_until "the flood was never refused" poll_until_refused
  local codes=
  for _ in $(seq 20); do
    metasrv_post "$ALICE" whoami
    codes+="$HTTP_CODE "
  done
  assert_equal "$codes" "$(printf '200 %.0s' $(seq 20))"
  # and through lake-catalog, as a user runs it
  run --separate-stderr env LAKE_TOKEN_FILE="$ALICE" lake-catalog whoami
  assert_clean_success
  # the flood was still on all along, and refused: it went on past the answers
  kill -0 "$FLOOD_PID" || fail "the flood ended before the valid requests"
  local before
  before=$(metasrv_count whoami 429)
  wait_until "the flood stopped being refused" eval '[ "$(metasrv_count whoami 429)" -gt '"$before"' ]'
}

@test "a flood leaves a bounded number of audit rows: no principal, the claimed name and the address in target, refusals summed; a user's own rows keep the principal" {
  metasrv_post "$ALICE" create_namespace '{"namespace":"x"}'
  metasrv_assert_error 403 permission_denied
  metasrv_post "$ADMIN" create_namespace '{"namespace":"m"}'
  assert_equal "$HTTP_CODE" 200
  local answers n401 n429
  answers=$(flood 300)
  n401=$(grep -c '^401 ' <<<"$answers")
  n429=$(grep -c '^429 ' <<<"$answers")
  assert_equal "$((n401 + n429))" 300
  # a token that names no valid principal name: the address alone
  printf 'lk_no-name_%064d\n' 1 >"$SRV/odd.token"
  metasrv_post "$SRV/odd.token" whoami
  metasrv_assert_error 401 unauthenticated
  # the refusals not yet in the trail are written when the server stops
  metasrv_stop

  # one row per failure let in, none with a principal or a role
  assert_equal "$(trail --result unauthenticated)" "$(
    for _ in $(seq "$n401"); do printf -- '-\t-\twhoami\tclaimed=alice from=127.0.0.2\tunauthenticated\n'; done
    printf -- '-\t-\twhoami\tfrom=127.0.0.1\tunauthenticated')"
  # the refusals past the limit: summed per address (one row a minute at
  # most), every one of them counted
  run --separate-stderr lake-metasrv audit "${METASRV_REGOPT[@]}" --result resource_exhausted --json
  assert_clean_success
  assert_equal "$(jq -r '[.[] | select(.principal == null and .role == null and .action == "authenticate"
                              and (.target | test("^from=127\\.0\\.0\\.2 refused=[0-9]+$")))] | length' <<<"$output")" \
    "$(jq length <<<"$output")"
  assert_equal "$(jq '[.[].target | ltrimstr("from=127.0.0.2 refused=") | tonumber] | add' <<<"$output")" "$n429"
  [ "$(jq length <<<"$output")" -le 2 ] || fail "refusals not summed: $output"
  # the first refused request's id is the row's: it is in the log
  grep -q " request_id=$(jq -r '.[0].request_id' <<<"$output") .* status=429 " "$SRV/serve.log" ||
    fail "the summary's request id is not a refused request's"
  # the whole flood: a bounded number of rows (30 let in, one each 2 s after, the summaries)
  [ "$(trail | wc -l)" -le $((2 + 1 + n401 + 2)) ] || fail "too many rows: $(trail)"
  # alice's own request still carries her name; the flood's do not
  assert_equal "$(trail --principal alice)" "$(printf 'alice\tuser\tcreate_namespace\tx\tpermission_denied')"
  assert_equal "$(trail --principal admin)" "$(printf 'admin\tadmin\tcreate_namespace\tm\tok')"
}
