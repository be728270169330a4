# A real lake-metasrv for a test: TLS on an ephemeral loopback port, a fresh
# registry, test certificates made with the openssl command.  Load after
# helpers/common.  Every function works in a directory (default $T/srv).
#
#   metasrv_init  [DIR] [STAGE_URL]   registry + admin token (DIR/admin.token)
#   metasrv_start [DIR] [PORT] [serve options…]   sets METASRV_URL, _PID, _PORT
#   metasrv_stop  [DIR]                SIGTERM, waits for the drain
#   metasrv_kill                       SIGKILL
#   metasrv_use   [DIR] [TOKENFILE]    exports LAKE_METASRV, LAKE_TOKEN_FILE, LAKE_CA_FILE
#   metasrv_token ROLE NAME [DIR]      creates a principal, prints its token file
#   metasrv_count ACTION [STATUS]      requests the server counted (/v1/metrics)

metasrv_certs() {
  local dir=$1
  [ -f "$dir/cert.pem" ] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1 ||
    fail "openssl could not make a test certificate"
}

metasrv_init() {
  local dir=${1:-$T/srv} stage=${2:-file://$T/srv/stage}
  mkdir -p "$dir"
  metasrv_certs "$dir"
  lake-metasrv init --db "$dir/registry.db" --stage "$stage" >"$dir/admin.token" ||
    fail "lake-metasrv init failed"
}

metasrv_start() {
  local dir=${1:-$T/srv} port=${2:-0}
  shift 2 2>/dev/null || shift $#
  : >"$dir/serve.out"
  lake-metasrv serve --db "$dir/registry.db" --listen "127.0.0.1:$port" \
    --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" "$@" \
    >"$dir/serve.out" 2>>"$dir/serve.log" 3>&- &
  METASRV_PID=$!
  local i
  for i in $(seq 200); do
    grep -q '^listening on ' "$dir/serve.out" && break
    kill -0 "$METASRV_PID" 2>/dev/null || { cat "$dir/serve.log" >&2; fail "lake-metasrv exited"; }
    sleep 0.025
  done
  METASRV_URL=$(sed -n 's/^listening on //p' "$dir/serve.out")
  [ -n "$METASRV_URL" ] || fail "lake-metasrv did not start"
  METASRV_PORT=${METASRV_URL##*:}
  export METASRV_URL METASRV_PID METASRV_PORT
}

metasrv_stop() {
  [ -n "${METASRV_PID:-}" ] || return 0
  kill -TERM "$METASRV_PID" 2>/dev/null || true
  wait "$METASRV_PID" 2>/dev/null || true
  METASRV_PID=
}

metasrv_kill() {
  [ -n "${METASRV_PID:-}" ] || return 0
  kill -KILL "$METASRV_PID" 2>/dev/null || true
  wait "$METASRV_PID" 2>/dev/null || true
  METASRV_PID=
}

metasrv_use() {
  local dir=${1:-$T/srv}
  export LAKE_METASRV=$METASRV_URL LAKE_TOKEN_FILE=${2:-$dir/admin.token} LAKE_CA_FILE=$dir/cert.pem
}

metasrv_token() {
  local role=$1 name=$2 dir=${3:-$T/srv}
  lake-metasrv token create --db "$dir/registry.db" --role "$role" --name "$name" >"$dir/$name.token" ||
    fail "token create failed"
  printf '%s\n' "$dir/$name.token"
}

# curl to the server with a token file (or none): metasrv_curl TOKENFILE|- ARGS…
metasrv_curl() {
  local tok=$1 dir=${METASRV_DIR:-$T/srv}
  shift
  if [ "$tok" = - ]; then
    curl -sS --cacert "$dir/cert.pem" "$@"
  else
    curl -sS --cacert "$dir/cert.pem" -H "Authorization: Bearer $(cat "$tok")" "$@"
  fi
}

metasrv_count() {
  local action=$1 status=${2:-} dir=${METASRV_DIR:-$T/srv}
  metasrv_curl "$dir/admin.token" "$METASRV_URL/v1/metrics" |
    awk -v a="action=\"$action\"" -v s="status=\"$status\"" \
      '$1 ~ /^lake_requests_total/ && index($1, a) && (s == "status=\"\"" || index($1, s)) { n += $2 } END { print n + 0 }'
}
