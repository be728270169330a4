#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Security checks (issue 8, part 5), against a real lake-metasrv over TLS
# on an ephemeral loopback port (helpers/metasrv):
#  - plain HTTP is refused off loopback;
#  - TLS below 1.2 is refused by the server (the client is shown able to
#    speak it), 1.2 and 1.3 are served;
#  - a token file that group or others can read draws one warning;
#  - a token revoked while connections stay open: on those very
#    connections it gets 401 everywhere, every other role its exact set;
#  - malformed HTTP gets bounded, redacted answers and the server lives on.
# Every error answer of the whole run is checked by tests/run at its end
# (helpers/check-error-bodies); the answers here are checked on the spot.

load helpers/common
load helpers/metasrv

setup() {
  metasrv_setup
}

teardown() {
  [ -z "${SSERVER_PID:-}" ] || kill "$SSERVER_PID" 2>/dev/null || true
  metasrv_stop
  common_teardown
}

@test "--insecure-listen off loopback is refused (64, one line) before anything is opened: 0.0.0.0, ::, this host's own addresses" {
  local addrs=(0.0.0.0:0 '[::]:0') a
  # the machine's non-loopback addresses, when it has any
  for a in $(hostname -I 2>/dev/null); do
    case $a in *:*) addrs+=("[$a]:0") ;; *) addrs+=("$a:0") ;; esac
  done
  for a in "${addrs[@]}"; do
    # a registry that does not exist: the refusal comes first
    run --separate-stderr timeout 10 lake-metasrv serve --db "$T/none.db" --listen "$a" --insecure-listen
    assert_error lake-metasrv 64 "--insecure-listen" "not a loopback address"
    assert_output ""
    assert_file_not_exists "$T/none.db"
  done
  # loopback itself is served (metasrv-client.bats uses it)
}

# Connect with openssl s_client at one protocol version; the handshake's
# messages go to $T/hs.VERSION.  Succeeds when a ServerHello came back.
handshake() {
  local v=$1 port=$2
  timeout 10 openssl s_client -connect "127.0.0.1:$port" "-$v" -cipher 'DEFAULT@SECLEVEL=0' \
    -CAfile "$SRV/cert.pem" -msg </dev/null >"$T/hs.$v" 2>&1 || true
  grep -q '^<<< .*ServerHello' "$T/hs.$v"
}

@test "TLS 1.0 and 1.1 are refused by the server, not the client; 1.2 and 1.3 are served" {
  # the client can speak TLS 1.0 and 1.1: a server that allows them (openssl
  # s_server, the control) completes the same handshakes, s_client's and curl's
  local v port curlv
  for v in tls1 tls1_1; do
    timeout 20 openssl s_server -accept 127.0.0.1:0 -cert "$SRV/cert.pem" -key "$SRV/key.pem" \
      "-$v" -cipher 'DEFAULT@SECLEVEL=0' -www -naccept 2 >"$T/sserver.out" 2>&1 </dev/null &
    SSERVER_PID=$!
    port=
    for _ in $(seq 200); do
      port=$(sed -n 's/^ACCEPT 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/sserver.out")
      [ -n "$port" ] && break
      sleep 0.025
    done
    [ -n "$port" ] || fail "openssl s_server did not start: $(cat "$T/sserver.out")"
    handshake "$v" "$port" || fail "control: s_client could not speak $v: $(cat "$T/hs.$v")"
    curlv=${v#tls}; curlv=1.${curlv#1_}; [ "$v" = tls1 ] && curlv=1.0
    run curl -sS --cacert "$SRV/cert.pem" --tlsv$curlv --tls-max $curlv --ciphers 'DEFAULT@SECLEVEL=0' \
      -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/"
    assert_equal "control: curl at TLS $curlv: $status $output" "control: curl at TLS $curlv: 0 200"
    kill "$SSERVER_PID" 2>/dev/null || true
    wait "$SSERVER_PID" 2>/dev/null || true
    SSERVER_PID=
  done

  # lake-metasrv: the client offers the old version, no ServerHello comes
  for v in tls1 tls1_1; do
    if handshake "$v" "$METASRV_PORT"; then fail "lake-metasrv accepted $v: $(cat "$T/hs.$v")"; fi
    grep -q '^>>> .*ClientHello' "$T/hs.$v" || fail "no ClientHello was sent for $v: $(cat "$T/hs.$v")"
  done
  # the same curl fails the handshake (35); at 1.2 and 1.3 it is served
  for v in 1.0 1.1; do
    run curl -sS --cacert "$SRV/cert.pem" --tlsv$v --tls-max $v --ciphers 'DEFAULT@SECLEVEL=0' \
      "$METASRV_URL/v1/health"
    assert_equal "curl at TLS $v: exit $status" "curl at TLS $v: exit 35"
  done
  for v in 1.2 1.3; do
    run curl -sS --cacert "$SRV/cert.pem" --tlsv$v --tls-max $v -w ' %{http_code}' "$METASRV_URL/v1/health"
    assert_success
    assert_output '{"status":"ok","registry":"ok"} 200'
  done
  for v in tls1_2 tls1_3; do
    handshake "$v" "$METASRV_PORT" || fail "lake-metasrv refused $v: $(cat "$T/hs.$v")"
    grep -q "Verify return code: 0 (ok)" "$T/hs.$v" || fail "$v: not verified: $(cat "$T/hs.$v")"
  done
  kill -0 "$METASRV_PID" || fail "lake-metasrv died"
}

@test "a token file that group or others can read draws one warning naming it and chmod 600, and still works; 600 or LAKE_TOKEN none" {
  local tok=$T/my.token mode
  cp "$ADMIN" "$tok"
  for mode in 644 640 604 660; do
    chmod "$mode" "$tok"
    run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog whoami
    assert_success
    assert_line --index 0 principal=admin
    assert_equal "${#stderr_lines[@]} line(s): $stderr" "1 line(s): $stderr"
    assert_equal "$stderr" \
      "lake-catalog: token_file: $tok is accessible by group or others (mode 0$mode); chmod 600 $tok"
  done
  # the config file's token_file too, and another program (lake-query,
  # which reads its configuration only for a statement naming a lake table)
  # a change is liblake's call (lake_open_v2): the warning of the open
  # reaches stderr as before, and -q drops it
  run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog create-namespace sec
  assert_success
  assert_equal "$stderr" \
    "lake-catalog: token_file: $tok is accessible by group or others (mode 0660); chmod 600 $tok"
  run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog -q create sec.t 'n INTEGER'
  assert_clean_success
  chmod 644 "$tok"
  printf 'metasrv = %s\ntoken_file = %s\nca_file = %s\n' "$METASRV_URL" "$tok" "$SRV/cert.pem" >"$T/lake.conf"
  run --separate-stderr env -u LAKE_METASRV -u LAKE_TOKEN_FILE -u LAKE_CA_FILE LAKE_CONFIG="$T/lake.conf" \
    lake-query -c 'select count(*) from sec.t'
  assert_success
  assert_output 0
  assert_equal "$stderr" \
    "lake-query: token_file: $tok is accessible by group or others (mode 0644); chmod 600 $tok"

  # the fix the warning names silences it; a token in the environment has no file
  chmod 600 "$tok"
  run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog whoami
  assert_clean_success
  run --separate-stderr env -u LAKE_TOKEN_FILE LAKE_TOKEN="$(cat "$tok")" lake-catalog whoami
  assert_clean_success
  # -q silences the warning, as every warning
  chmod 644 "$tok"
  run --separate-stderr env LAKE_TOKEN_FILE="$tok" lake-catalog -q whoami
  assert_clean_success
}

@test "a token revoked while its connection stays open: 401 on every action there; every other role keeps exactly its set on the same connections" {
  metasrv_token admin ops >/dev/null
  metasrv_token query-service etl >/dev/null
  metasrv_token metadata-peer peer >/dev/null
  metasrv_token user alice >/dev/null
  local callers=("admin:admin" "ops:admin" "etl:query-service" "peer:metadata-peer" "alice:user") c args=()
  for c in "${callers[@]}"; do args+=("${c%%:*}=$SRV/${c%%:*}.token"); done

  # what the role table says, round by round; ops is revoked between them
  local want=() round name role action list
  for round in 1 2; do
    for c in "${callers[@]}"; do
      name=${c%%:*} role=${c#*:}
      [ "$round:$name" != 2:ops ] || role=
      list=()
      for action in $METASRV_ACTIONS; do metasrv_allowed "$action" "$role" && list+=("$action"); done
      if [ -z "$role" ]; then want+=("$round $name actions 401 unauthenticated")
      else want+=("$round $name actions 200 [$(printf '%s\n' "${list[@]}" | sort | paste -sd,)]"); fi
      for action in $METASRV_ACTIONS; do
        if [ -z "$role" ]; then want+=("$round $name $action 401 unauthenticated")
        elif ! metasrv_allowed "$action" "$role"; then want+=("$round $name $action 403 permission_denied")
        elif [ "$action" = whoami ]; then want+=("$round $name $action 200 principal=$name")
        else want+=("$round $name $action 400 invalid_argument"); fi
      done
    done
  done

  run --separate-stderr python3 "$LAKE_SRC/tests/bats/helpers/keepalive-roles" "$METASRV_URL" "$SRV/cert.pem" \
    "$METASRV_ACTIONS" "${args[@]}" -- lake-metasrv token revoke --db "$SRV/registry.db" --name ops
  assert_success
  assert_equal "$(grep -v ' port ' <<<"$output")" "$(printf '%s\n' "${want[@]}")"
  # round 2 went over the very connections of round 1
  local ports1 ports2
  ports1=$(sed -n 's/^1 \([a-z]*\) port /\1 /p' <<<"$output")
  ports2=$(sed -n 's/^2 \([a-z]*\) port /\1 /p' <<<"$output")
  assert_equal "$(wc -l <<<"$ports1")" 5
  assert_equal "$ports2" "$ports1"
  # and the server saw exactly five connections' worth of requests: one
  # line each, the revoked token's round-2 lines unauthenticated
  # (a connection's requests: GET /v1/actions and one POST per action)
  local per=$((1 + $(wc -w <<<"$METASRV_ACTIONS")))
  metasrv_log_wait $((2 * 5 * per))
  assert_equal "$(metasrv_log_lines | grep -c ' principal=ops ')" $per
  assert_equal "$(metasrv_log_lines | grep -c ' principal=- .* status=401 ')" $per
  run lake-metasrv token list --db "$SRV/registry.db" --json
  assert_equal "$(jq -r '.[] | select(.name == "ops") | .revoked_at != null' <<<"$output")" true
}

@test "malformed HTTP: huge headers or URL, wrong methods, deep or broken JSON, a forged log line in a field name: bounded, redacted answers, the server lives on" {
  local big
  big=$(head -c 100000 /dev/zero | tr '\0' a)
  # libmicrohttpd refuses these itself, before lake-metasrv sees a request:
  # a small fixed page, naming nothing; or, when the request was still being
  # sent as it closed, a reset connection (curl: 000), racing the answer
  too_big() { # STATUS then metasrv_req arguments
    local code=$1
    shift
    metasrv_req "$@"
    [[ $HTTP_CODE == "$code" || $HTTP_CODE == 000 ]] ||
      fail "HTTP $HTTP_CODE (not $code or a reset): $HTTP_BODY"
    [ "${#HTTP_BODY}" -lt 1024 ] || fail "a large answer to a large request: ${#HTTP_BODY} bytes"
    metasrv_assert_redacted "$HTTP_BODY"
  }
  too_big 431 "$ADMIN" GET /v1/health '' -H "X-Big: $big"
  too_big 414 "$ADMIN" GET "/v1/actions?$big"
  local i hdrs=()
  for i in $(seq 400); do hdrs+=(-H "X-H$i: ${big:0:200}"); done
  too_big 431 "$ADMIN" POST /v1/actions/whoami '{}' "${hdrs[@]}"

  # wrong methods: 404 not_found (no such resource), one JSON error object
  local m
  for m in GET PUT DELETE PATCH; do
    metasrv_req "$ADMIN" "$m" /v1/actions/whoami
    metasrv_assert_error 404 not_found
  done
  metasrv_req "$ADMIN" POST /v1/metrics '{}'
  metasrv_assert_error 404 not_found
  metasrv_req - DELETE /v1/health
  metasrv_assert_error 401 unauthenticated

  # JSON nested far past any sane depth, truncated, or not UTF-8
  metasrv_post "$ADMIN" whoami "$(head -c 100000 /dev/zero | tr '\0' '[')"
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" resolve '{"namespace":"m","name":'
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$ADMIN" whoami $'{"\xff\xfex":1}'
  metasrv_assert_error 400 invalid_argument
  jq -e . <<<"$HTTP_BODY" >/dev/null || fail "not valid JSON: $HTTP_BODY"
  [[ $HTTP_BODY != *$'\xff'* ]] || fail "invalid UTF-8 went back to the client"

  # a field name with a newline: quoted in the answer, and the log stays
  # one line per request (nothing forged)
  local before
  before=$(metasrv_log_lines | wc -l)
  metasrv_post "$ADMIN" whoami '{"x\n2026-01-01T00:00:00Z request_id=FORGED principal=admin action=whoami status=200 duration_ms=1.0":1}'
  metasrv_assert_error 400 invalid_argument
  metasrv_log_wait $((before + 1))
  if grep -q '^2026-01-01T00:00:00Z' "$SRV/serve.log"; then fail "a forged log line: $(grep -n FORGED "$SRV/serve.log")"; fi
  assert_equal "$(grep -c FORGED "$SRV/serve.log")" 1
  # the other control characters as lake-metasrv(8) says: \xHH, C1 as
  # \uHHHH, no raw one in the log (a terminal escape, a bell)
  before=$(metasrv_log_lines | wc -l)
  metasrv_post "$ADMIN" whoami '{"x\u001b[31mred\u0007\u0085tail":1}'
  metasrv_assert_error 400 invalid_argument
  metasrv_log_wait $((before + 1))
  grep -qF "detail=whoami: unknown field 'x\\x1b[31mred\\x07\\u0085tail'" "$SRV/serve.log" ||
    fail "not quoted as documented: $(grep -a 'red' "$SRV/serve.log")"
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$SRV/serve.log"; then
    fail "a raw control character in the log: $(grep -an $'\x1b' "$SRV/serve.log" | cat -v)"
  fi

  # after all that, it still serves
  metasrv_post "$ADMIN" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  assert_equal "$(jq -r .principal <<<"$HTTP_BODY")" admin
  kill -0 "$METASRV_PID" || fail "lake-metasrv died"
}
