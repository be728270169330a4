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
#   instances_stop         SIGKILL to A, B and every PIDS, waited for
#   post URL ACTION BODY   one action as ADMIN; prints the answer, fails on non-200
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
