# SPDX-License-Identifier: BSD-2-Clause
# Two real lake-metasrv instances over one registry, for the suites that
# share a PostgreSQL registry between them (pg-registry.bats,
# pg-failover.bats).  Load after helpers/common and helpers/metasrv; SRV
# (the server directory) and ADMIN (its admin token) must be set.
#
#   instances_start        metasrv_init over SRV (its registry.url, if any),
#                          then instance A (--pool 8) and B (--pool 2);
#                          sets A_PID A_URL B_PID B_URL, PIDS=() (the
#                          test's own background processes), exports the
#                          client's token and CA
#   instances_stop         SIGKILL to A, B and every PIDS, waited for; the
#                          error lines of their logs gathered
#                          (metasrv_gather_errors)
#   post URL ACTION BODY   one action as ADMIN; prints the answer, fails on non-200
#   new_table              namespace s and table s.t (a INTEGER), through A
#   version_of URL         the current version of s.t through URL
#   append_client "URL…" C COUNT [SECONDS]
#                          client C: COUNT appends to s.t, each a new
#                          segment (file://$SRV/stage/tables/s/cC-N); prints
#                          "N VERSION" per acknowledged append.  A connection
#                          refused or lost, or a 503, sends the same request
#                          again to the next URL, after a pause, for SECONDS
#                          (default 60): a lost append is sent again as it
#                          was, which the registry answers with the version
#                          that committed it; a conflict is retried against
#                          the current version.
#   storm_start CLIENTS EACH
#                          CLIENTS append_clients at once in the background,
#                          EACH appends each, the even ones through A then
#                          B, the odd ones through B then A; client C's
#                          lines in $T/versions.C, its errors in
#                          $T/client.C.err, its PID in PIDS
#   storm_wait             every PIDS waited for, each must succeed; PIDS=()
#   storm_check CLIENTS EACH  each client was told of EACH appends, at
#                          strictly increasing versions
#   wait_version URL MIN   until s.t is at version MIN or more through URL
#                          (300 tries, 20 ms apart); prints the last one seen

instances_start() {
  metasrv_init "$SRV"
  metasrv_start "$SRV"
  # shellcheck disable=SC2034 # A_URL and B_URL are the suites'
  A_PID=$METASRV_PID A_URL=$METASRV_URL
  metasrv_start "$SRV" 0 --pool 2
  # shellcheck disable=SC2034 # (the same)
  B_PID=$METASRV_PID B_URL=$METASRV_URL
  METASRV_PID=
  PIDS=()
  export LAKE_TOKEN_FILE=$ADMIN LAKE_CA_FILE=$SRV/cert.pem
}

instances_stop() {
  local p
  for p in "${A_PID:-}" "${B_PID:-}" "${PIDS[@]}"; do
    if [ -n "$p" ]; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  metasrv_gather_errors
}

post() {
  curl -sS -f --cacert "$SRV/cert.pem" -H "Authorization: Bearer $(cat "$ADMIN")" \
    --data-binary "$3" "$1/v1/actions/$2"
}

append_client() {
  local -a urls
  read -r -a urls <<<"$1"
  local c=$2 count=$3 secs=${4:-60} at=0 n v body
  req() { # req ACTION BODY: sets CODE and ANS
    local out end=$((SECONDS + secs))
    while [ $SECONDS -lt $end ]; do
      if out=$(curl -sS --cacert "$SRV/cert.pem" -H "Authorization: Bearer $(cat "$ADMIN")" -w '\n%{http_code}' \
        --data-binary "$2" "${urls[$at]}/v1/actions/$1" 2>/dev/null); then
        CODE=${out##*$'\n'} ANS=${out%$'\n'*}
        [ "$CODE" = 503 ] || return 0
      fi
      at=$(((at + 1) % ${#urls[@]}))
      sleep 0.1
    done
    echo "client $c: no endpoint answered $1 for $secs s" >&2
    return 1
  }
  for n in $(seq "$count"); do
    req resolve '{"namespace":"s","name":"t"}' || return 1
    v=$(jq .version <<<"$ANS")
    while :; do
      body="{\"namespace\":\"s\",\"name\":\"t\",\"expected_version\":$v,\"segments\":[$(metasrv_segment "file://$SRV/stage/tables/s/c$c-$n")],\"files\":[]}"
      req append "$body" || return 1
      case $CODE in
        200) echo "$n $(jq .version <<<"$ANS")"; break ;;
        409) req resolve '{"namespace":"s","name":"t"}' || return 1; v=$(jq .version <<<"$ANS") ;;
        *) echo "client $c: HTTP $CODE $ANS" >&2; return 1 ;;
      esac
    done
  done
}

new_table() {
  post "$A_URL" create_namespace '{"namespace":"s"}' >/dev/null
  post "$A_URL" create_table '{"namespace":"s","name":"t","schema":[{"name":"a","type":"INTEGER"}]}' >/dev/null
}

version_of() {
  post "$1" resolve '{"namespace":"s","name":"t"}' | jq .version
}

storm_start() {
  local c urls
  for c in $(seq "$1"); do
    if [ $((c % 2)) = 0 ]; then urls="$A_URL $B_URL"; else urls="$B_URL $A_URL"; fi
    append_client "$urls" "$c" "$2" >"$T/versions.$c" 2>"$T/client.$c.err" &
    PIDS+=($!)
  done
}

storm_wait() {
  local p
  for p in "${PIDS[@]}"; do wait "$p" || fail "a client failed: $(cat "$T"/client.*.err)"; done
  PIDS=()
}

storm_check() {
  local c
  for c in $(seq "$1"); do
    assert_equal "client $c: $(wc -l <"$T/versions.$c") answers" "client $c: $2 answers"
    cut -d' ' -f2 "$T/versions.$c" | sort -n -c -u 2>/dev/null ||
      fail "client $c: versions not strictly increasing: $(cut -d' ' -f2 "$T/versions.$c" | paste -sd,)"
  done
}

wait_version() {
  local v
  for _ in $(seq 300); do
    v=$(version_of "$1")
    [ "$v" -ge "$2" ] 2>/dev/null && break
    sleep 0.02
  done
  printf '%s\n' "$v"
}
