# SPDX-License-Identifier: BSD-2-Clause
# A real lake-metasrv for a test: TLS on an ephemeral loopback port, a fresh
# registry, test certificates made with the openssl command.  Load after
# helpers/common.  Every function works in a directory (default $T/srv).
#
#   metasrv_init  [DIR] [STAGE_URL]   registry + admin token (DIR/admin.token)
#   metasrv_certs DIR [rsa]            the test certificate (before metasrv_init: RSA)
#   metasrv_start [DIR] [PORT] [serve options…]   sets METASRV_URL, _PID, _PORT
#   metasrv_stop  [DIR]                SIGTERM, waits for the drain
#   metasrv_kill                       SIGKILL
#   metasrv_use   [DIR] [TOKENFILE]    exports LAKE_METASRV, LAKE_TOKEN_FILE, LAKE_CA_FILE
#   metasrv_token ROLE NAME [DIR]      creates a principal, prints its token file
#   as_admin COMMAND...                runs COMMAND with $ADMIN's token
#   metasrv_count ACTION [STATUS]      requests the server counted (/v1/metrics)
#   metasrv_regopt [DIR]               METASRV_REGOPT: the option naming DIR's registry
#
# Every error answer a server started here sends is gathered: its log line
# (lake-metasrv(8), LOGGING: error=CODE message="…") goes, once the server
# has stopped, to $LAKE_TEST_ERROR_BODIES when tests/run sets it; tests/run
# ends by checking them all (helpers/check-error-bodies).
#
# LAKE_TEST_REGISTRY=pg keeps each server's registry in a fresh database of
# the PostgreSQL that helpers/pg.bash started (PG_DIR; tests/run starts one
# for its remote-pg runs) instead of DIR/registry.db: the same suites then
# test the PostgreSQL backend.  Tests that look inside a SQLite file say so
# with sqlite_registry_only.

metasrv_regopt() {
  local dir=${1:-$T/srv}
  if [ -s "$dir/registry.url" ]; then METASRV_REGOPT=(--registry "$(cat "$dir/registry.url")")
  else METASRV_REGOPT=(--db "$dir/registry.db"); fi
}

sqlite_registry_only() {
  [ "${LAKE_TEST_REGISTRY:-sqlite}" != pg ] || skip "a SQLite registry only: $1"
}

# metasrv_certs DIR [rsa]: DIR/cert.pem and DIR/key.pem, ECDSA P-256 (or
# RSA 2048), unless DIR has a certificate already
metasrv_certs() {
  local dir=$1 key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
  [ "${2:-}" = rsa ] && key=(-newkey rsa:2048)
  [ -f "$dir/cert.pem" ] && return 0
  mkdir -p "$dir"
  openssl req -x509 "${key[@]}" -nodes \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1 ||
    fail "openssl could not make a test certificate"
}

metasrv_init() {
  local dir=${1:-$T/srv} stage=${2:-file://$T/srv/stage}
  mkdir -p "$dir"
  metasrv_certs "$dir"
  # tokens are secrets: made private, as a careful user makes them (a
  # client warns about a token file that group or others can read)
  umask 077
  if [ "${LAKE_TEST_REGISTRY:-sqlite}" = pg ] && [ ! -s "$dir/registry.url" ]; then
    [ -n "${PG_DIR:-}" ] || fail "LAKE_TEST_REGISTRY=pg needs a PostgreSQL: bash tests/bats/helpers/pg.bash run bats …"
    # shellcheck source=pg.bash
    source "${BATS_TEST_DIRNAME}/helpers/pg.bash"
    # shellcheck disable=SC2119 # no options: the plain URL
    pg_fresh_url >"$dir/registry.url" || fail "cannot create a PostgreSQL database"
  fi
  metasrv_regopt "$dir"
  lake-metasrv init "${METASRV_REGOPT[@]}" --stage "$stage" >"$dir/admin.token" ||
    fail "lake-metasrv init failed"
}

metasrv_start() {
  local dir=${1:-$T/srv} port=${2:-0}
  shift 2 2>/dev/null || shift $#
  : >"$dir/serve.out"
  touch "$dir/serve.log"
  METASRV_LOGS+=("$(stat -c %s "$dir/serve.log") $dir/serve.log")
  metasrv_regopt "$dir"
  # (the sanitized pass checks the server for leaks: tests/run)
  ASAN_OPTIONS=${LAKE_TEST_SERVER_ASAN_OPTIONS-${ASAN_OPTIONS:-}} \
    lake-metasrv serve "${METASRV_REGOPT[@]}" --listen "127.0.0.1:$port" \
    --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" "$@" \
    >"$dir/serve.out" 2>>"$dir/serve.log" 3>&- &
  METASRV_PID=$!
  local i
  # METASRV_START_WAIT: seconds to wait for "listening on" at most (a
  # bound, not a time the test needs: a hung start must not hang the suite)
  for i in $(seq $((${METASRV_START_WAIT:-60} * 40))); do
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
  if [ -n "${METASRV_PID:-}" ]; then
    kill -TERM "$METASRV_PID" 2>/dev/null || true
    wait "$METASRV_PID" 2>/dev/null || true
    METASRV_PID=
  fi
  metasrv_gather_errors
}

metasrv_kill() {
  if [ -n "${METASRV_PID:-}" ]; then
    kill -KILL "$METASRV_PID" 2>/dev/null || true
    wait "$METASRV_PID" 2>/dev/null || true
    METASRV_PID=
  fi
  metasrv_gather_errors
}

# The error lines the servers started since the last call wrote (each log
# from where its server started; a log shared by restarts is read once).
metasrv_gather_errors() {
  local entry off log
  if [ -n "${LAKE_TEST_ERROR_BODIES:-}" ]; then
    for entry in "${METASRV_LOGS[@]}"; do
      off=${entry%% *} log=${entry#* }
      [ -f "$log" ] && tail -c "+$((off + 1))" "$log"
    done | grep ' request_id=.* error=' | awk '!seen[$0]++' >>"$LAKE_TEST_ERROR_BODIES" || true
  fi
  METASRV_LOGS=()
}

metasrv_use() {
  local dir=${1:-$T/srv}
  export LAKE_METASRV=$METASRV_URL LAKE_TOKEN_FILE=${2:-$dir/admin.token} LAKE_CA_FILE=$dir/cert.pem
}

# COMMAND… as the admin ($ADMIN), whoever the client environment is.
as_admin() {
  env LAKE_TOKEN_FILE="$ADMIN" "$@"
}

metasrv_token() {
  local role=$1 name=$2 dir=${3:-$T/srv}
  metasrv_regopt "$dir"
  lake-metasrv token create "${METASRV_REGOPT[@]}" --role "$role" --name "$name" >"$dir/$name.token" ||
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

# --- for the metasrv suites (tests/bats/metasrv-*.bats) ---------------------
#
#   metasrv_req TOKENFILE|- METHOD PATH [BODY [CURL ARGS…]]
#                                      one request: HTTP_CODE, HTTP_BODY, HTTP_HEAD
#   metasrv_post TOKENFILE|- ACTION [BODY]     POST /v1/actions/ACTION (BODY: {})
#   metasrv_assert_error HTTP CODE     the last answer is DESIGN §5's error object
#   metasrv_assert_redacted TEXT       no path, SQL or token material in TEXT
#   metasrv_expect_error HTTP CODE, then metasrv_check_errors: the same, batched
#   metasrv_log_wait N [DIR]           wait until DIR/serve.log holds N request lines
#   metasrv_log_lines [DIR]            the request lines of DIR/serve.log
#   metasrv_tables NS PREFIX COUNT [TOKENFILE]  NS and COUNT tables, one curl
#   metasrv_segment LOCATION           one append segment (JSON) at LOCATION
#   metasrv_directory                  the catalog as the server has it, one line
#   metasrv_gc_pages TOKENFILE [FIELDS]  the gc action a page of one object at a time:
#                                      GC_CALLS, GC_KEPT, GC_OBJECTS
#   metasrv_allowed ACTION ROLE        the role table: may ROLE run ACTION?
#                                      ($METASRV_ACTIONS: every action;
#                                      $METASRV_VEND_ACTIONS: those of vended
#                                      access, which need an S3 stage)

metasrv_req() {
  local tok=$1 method=$2 path=$3 body=${4-} dir=${METASRV_DIR:-$T/srv} secret=
  shift 3
  [ $# -gt 0 ] && shift
  # no command substitutions here: the role matrix makes many of these
  local args=(-sS --cacert "$dir/cert.pem" -X "$method" -o "$dir/.answer" -D "$dir/.head"
              -w '%{http_code}')
  if [ "$tok" != - ]; then
    IFS= read -r secret <"$tok" || true
    args+=(-H "Authorization: Bearer $secret")
  fi
  [ "$method" = POST ] && args+=(--data-binary "$body")
  : >"$dir/.answer"
  : >"$dir/.head"
  curl "${args[@]}" "$@" "$METASRV_URL$path" >"$dir/.code" 2>"$dir/.curl.err" || true
  HTTP_CODE='' HTTP_BODY='' HTTP_HEAD=''
  IFS= read -r HTTP_CODE <"$dir/.code" || true
  IFS= read -r -d '' HTTP_BODY <"$dir/.answer" || true
  IFS= read -r -d '' HTTP_HEAD <"$dir/.head" || true
  HTTP_HEAD=${HTTP_HEAD//$'\r'/}
}

metasrv_post() {
  metasrv_req "$1" POST "/v1/actions/$2" "${3:-{\}}"
}

# Paths, SQL and token material never reach a client (DESIGN §5).
metasrv_assert_redacted() {
  local text=$1 word
  for word in /tmp "$T" "${BATS_TMPDIR:-/tmp}" registry.db SELECT INSERT UPDATE lk_ Bearer; do
    [[ $text != *"$word"* ]] || fail "an answer contains '$word': $text"
  done
  [[ ${text,,} != *sqlite* ]] || fail "an answer mentions sqlite: $text"
}

# Exactly one JSON object {"error":{"code","message","request_id"}} with
# the HTTP status and code asked for, and nothing a client must not see.
metasrv_assert_error() {
  local http=$1 code=$2 got
  assert_equal "HTTP $HTTP_CODE" "HTTP $http"
  got=$(jq -rs 'if length == 1 and (.[0] | type == "object" and keys == ["error"]
           and (.error | type == "object" and keys == ["code", "message", "request_id"]
                and ([.code, .message, .request_id] | all(type == "string" and . != ""))))
         then .[0].error.code else "(not an error object of DESIGN §5)" end' <<<"$HTTP_BODY" 2>&1) ||
    got="(not JSON)"
  assert_equal "code $got: $HTTP_BODY" "code $code: $HTTP_BODY"
  metasrv_assert_redacted "$HTTP_BODY"
}

# The same for many answers (the role matrix makes dozens), with one jq in
# all: metasrv_expect_error HTTP CODE checks the status and redaction of the
# last answer now and queues its body; metasrv_check_errors checks the queue.
metasrv_expect_error() {
  local body=${HTTP_BODY%$'\n'}
  assert_equal "HTTP $HTTP_CODE: $body" "HTTP $1: $body"
  [[ $body != *$'\n'* ]] || fail "an answer of more than one line: $body"
  metasrv_assert_redacted "$body"
  printf '%s\t%s\n' "$2" "$body" >>"${METASRV_DIR:-$T/srv}/.errors"
}

metasrv_check_errors() {
  local f=${METASRV_DIR:-$T/srv}/.errors bad
  [ -s "$f" ] || fail "metasrv_check_errors: nothing queued"
  bad=$(jq -rR 'index("\t") as $i | .[:$i] as $code | .[$i + 1:] as $body
    | ($body | try fromjson catch null) as $j
    | if ($j | type == "object" and keys == ["error"]
           and (.error | type == "object" and keys == ["code", "message", "request_id"]
                and ([.code, .message, .request_id] | all(type == "string" and . != ""))))
         and $j.error.code == $code
      then empty else "expected \($code): \($body)" end' "$f") || bad="jq failed on $f"
  rm -f "$f"
  [ -z "$bad" ] || fail "not the error objects of DESIGN §5 expected: $bad"
}

metasrv_log_lines() {
  grep ' request_id=' "${1:-$T/srv}/serve.log" || true
}

# The log line is written when the response has been sent, which the
# client may see first: wait for it (at most 60 s, a guard against a hang:
# 2 s was short on a loaded machine).
metasrv_log_wait() {
  local n=$1 dir=${2:-$T/srv}
  poll_until lines_at_least "$dir/serve.log" "$n" ' request_id=' ||
    fail "expected $n request lines in $dir/serve.log, found $(metasrv_log_lines "$dir" | wc -l)"
}

# NS and COUNT tables PREFIX1..PREFIXCOUNT (three columns each) made over one
# curl process (one connection), fast enough for hundreds.
metasrv_tables() {
  local ns=$1 prefix=$2 count=$3 tok=${4:-${METASRV_DIR:-$T/srv}/admin.token} dir=${METASRV_DIR:-$T/srv} i secret
  metasrv_post "$tok" create_namespace "{\"namespace\":\"$ns\"}"
  [ "$HTTP_CODE" = 200 ] || fail "create_namespace $ns: $HTTP_CODE $HTTP_BODY"
  secret=$(cat "$tok")
  for i in $(seq "$count"); do
    [ "$i" -gt 1 ] && echo next
    printf 'url = "%s/v1/actions/create_table"\ncacert = "%s"\noutput = "/dev/null"\n' \
      "$METASRV_URL" "$dir/cert.pem"
    printf 'header = "Authorization: Bearer %s"\nfail\n' "$secret"
    printf 'data = "{\\"namespace\\":\\"%s\\",\\"name\\":\\"%s%d\\",\\"schema\\":[' "$ns" "$prefix" "$i"
    printf '{\\"name\\":\\"title\\",\\"type\\":\\"TEXT\\"},{\\"name\\":\\"year\\",\\"type\\":\\"INTEGER\\"},'
    printf '{\\"name\\":\\"document\\",\\"type\\":\\"FILE\\"}]}"\n'
  done >"$dir/.tables.curl"
  curl -sS -K "$dir/.tables.curl" || fail "create_table over curl failed"
  rm -f "$dir/.tables.curl"
}

# DESIGN §5's role table, written out here, not read from the program:
# metasrv_allowed ACTION ROLE succeeds when ROLE may run ACTION.
# shellcheck disable=SC2034 # for the suites
METASRV_VEND_ACTIONS="presign_get upload_begin upload_parts upload_complete upload_abort"
# shellcheck disable=SC2034 # for the suites
METASRV_ACTIONS="catalog_snapshot resolve history append compact rewrite rollback alter expire create_namespace create_table drop_table grant revoke grants whoami list_tables references gc $METASRV_VEND_ACTIONS"
metasrv_allowed() {
  case "$1:$2" in
    catalog_snapshot:admin | catalog_snapshot:query-service | catalog_snapshot:metadata-peer) return 0 ;;
    resolve:* | history:*) return 0 ;;
    append:admin | append:query-service | append:user) return 0 ;;
    compact:admin | compact:query-service | compact:user) return 0 ;;
    rewrite:admin | rewrite:query-service | rewrite:user) return 0 ;;
    rollback:admin | rollback:query-service | rollback:user) return 0 ;;
    alter:admin | alter:query-service | alter:user) return 0 ;;
    expire:admin | expire:query-service | expire:user) return 0 ;;
    create_namespace:admin | create_table:admin | drop_table:admin) return 0 ;;
    grant:admin | revoke:admin | grants:*) return 0 ;;
    whoami:* | list_tables:*) return 0 ;;
    references:admin | gc:admin) return 0 ;;
    presign_get:admin | presign_get:query-service | presign_get:user) return 0 ;;
    upload_*:admin | upload_*:query-service | upload_*:user) return 0 ;;
  esac
  return 1
}

# The gc action as TOKEN, one object a page (grace 0), from the first page
# to the last, with more request FIELDS (e.g. '"dry_run":true,'): GC_CALLS
# the calls, GC_KEPT the objects kept as referenced, GC_OBJECTS the
# locations the pages answered, sorted.  Each page holds one object.
# shellcheck disable=SC2034 # for the suites
metasrv_gc_pages() {
  local tok=$1 fields=${2:-} after='' all=''
  GC_CALLS=0 GC_KEPT=0
  while :; do
    metasrv_post "$tok" gc "{$fields\"grace\":0,\"limit\":1${after:+,\"after\":\"$after\"}}"
    assert_equal "$HTTP_CODE $HTTP_BODY" "200 $HTTP_BODY"
    all+=$(jq -r '.objects[].location' <<<"$HTTP_BODY")$'\n'
    GC_KEPT=$((GC_KEPT + $(jq '.kept_referenced' <<<"$HTTP_BODY")))
    assert_equal "$(jq '(.objects | length) + .kept_referenced' <<<"$HTTP_BODY")" 1
    after=$(jq -r '.next // empty' <<<"$HTTP_BODY")
    GC_CALLS=$((GC_CALLS + 1))
    [ -n "$after" ] || break
    [ "$GC_CALLS" -lt 100 ] || fail "the gc pages do not end"
  done
  GC_OBJECTS=$(sed '/^$/d' <<<"$all" | sort)
}

# The catalog as the server has it: generation and entries, one line
# (asked as $ADMIN).
metasrv_directory() {
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  [ "$HTTP_CODE" = 200 ] || fail "catalog_snapshot: $HTTP_CODE $HTTP_BODY"
  jq -c '[.generation, [.entries[] | [.namespace, .name]]]' <<<"$HTTP_BODY"
}

metasrv_segment() { # (test locations need no JSON escaping)
  printf '{"location":"%s","size":1,"sha256":"%s","rows":1}\n' "$1" \
    2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881
}

# The common set-up of a metasrv suite: a private lake (common_setup), a
# registry with an admin token, a server started, and, unless given
# "nouse", the client environment pointed at it.  Sets SRV (the server's
# directory), ADMIN (the admin token file) and STAGE_URL.
metasrv_setup() {
  common_setup
  SRV=$T/srv
  metasrv_init "$SRV"
  metasrv_start "$SRV"
  [ "${1:-}" = nouse ] || metasrv_use "$SRV"
  # shellcheck disable=SC2034 # ADMIN and STAGE_URL are the suites'
  ADMIN=$SRV/admin.token
  # shellcheck disable=SC2034 # (the same)
  STAGE_URL=file://$SRV/stage
}
