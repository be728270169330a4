#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-metasrv's life cycle (DESIGN §9, issue 4): init (which never touches
# an existing file), tokens (printed once, stored only as their SHA-256,
# never listed), serve's first stdout line, and the drain on SIGTERM and
# SIGINT (in-flight requests are answered, then exit 0).

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  SRV=$T/srv
  mkdir -p "$SRV"
  CURL_PID=
}

teardown() {
  if [ -n "${CURL_PID:-}" ]; then
    kill "$CURL_PID" 2>/dev/null || true
    wait "$CURL_PID" 2>/dev/null || true
  fi
  metasrv_stop
  common_teardown
}

# Every file of DIR with its digest.
state_of() {
  (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

@test "init creates a registry and prints the admin token once; it refuses any existing file (exit 1, untouched)" {
  sqlite_registry_only "init on a SQLite file (PostgreSQL: pg-registry.bats)"
  run --separate-stderr lake-metasrv init --db "$SRV/registry.db" --stage "file://$SRV/stage"
  assert_clean_success
  [[ $output =~ ^lk_admin_[0-9a-f]{64}$ ]] || fail "not one admin token: $output"
  local token=$output before
  printf '%s\n' "$token" >"$SRV/admin.token"
  before=$(state_of "$SRV")

  run --separate-stderr lake-metasrv init --db "$SRV/registry.db" --stage "file://$SRV/stage"
  assert_error lake-metasrv 1 "$SRV/registry.db"
  assert_output ""
  assert_equal "$(state_of "$SRV")" "$before"
  run --separate-stderr lake-metasrv init --db "$SRV/registry.db"
  assert_error lake-metasrv 1
  assert_equal "$(state_of "$SRV")" "$before"

  # a new registry is its owner's alone whatever the umask (and its WAL)
  (umask 022 && lake-metasrv init --db "$T/private.db" >/dev/null)
  assert_equal "$(stat -c %a "$T/private.db")" 600

  # not a registry, or empty: refused the same, and left as they were
  echo hello >"$T/hello.db"
  : >"$T/empty.db"
  local f
  for f in "$T/hello.db" "$T/empty.db"; do
    cp "$f" "$f.orig"
    run --separate-stderr lake-metasrv init --db "$f"
    assert_error lake-metasrv 1 "$f"
    assert_output ""
    cmp "$f" "$f.orig" || fail "$f was changed"
  done

  # the first token is the one that works
  metasrv_certs "$SRV"
  metasrv_start
  metasrv_post "$SRV/admin.token" whoami
  assert_equal "$HTTP_CODE" 200
  assert_equal "$(jq -c '[.principal, .role, .stage]' <<<"$HTTP_BODY")" "[\"admin\",\"admin\",\"file://$SRV/stage\"]"
}

@test "token create prints a new token once; token list shows name and role, never a token or its hash" {
  metasrv_init
  metasrv_regopt
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name bob
  assert_clean_success
  [[ $output =~ ^lk_bob_[0-9a-f]{64}$ ]] || fail "not one token: $output"
  local bob=$output admin
  admin=$(cat "$SRV/admin.token")
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role query-service --name etl
  assert_clean_success
  local etl=$output
  [ "${etl#lk_etl_}" != "${bob#lk_bob_}" ] || fail "two tokens with one secret"

  # a name taken: refused, and no token printed
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role admin --name bob
  assert_error lake-metasrv 1 bob
  assert_output ""
  # usage errors
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role root --name x
  assert_error lake-metasrv 64
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user
  assert_error lake-metasrv 64
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name a-b
  assert_error lake-metasrv 64
  run --separate-stderr lake-metasrv token create --db "$T/none.db" --role user --name x
  assert_error lake-metasrv 66
  [ ! -e "$T/none.db" ] || fail "a registry was created by token create"

  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}"
  assert_clean_success
  assert_equal "$(cut -f1,2 <<<"$output")" $'admin\tadmin\nbob\tuser\netl\tquery-service'
  local listed=$output
  run --separate-stderr lake-metasrv token list "${METASRV_REGOPT[@]}" --json
  assert_clean_success
  assert_equal "$(jq -c '[.[] | [.name, .role, (keys | sort)]]' <<<"$output")" \
    '[["admin","admin",["created_at","expires_at","last_used_at","name","revoked_at","role"]],["bob","user",["created_at","expires_at","last_used_at","name","revoked_at","role"]],["etl","query-service",["created_at","expires_at","last_used_at","name","revoked_at","role"]]]'
  listed+=$output

  # neither list shows a token, a secret or a hash
  local tok sha
  for tok in "$admin" "$bob" "$etl"; do
    sha=$(printf '%s' "$tok" | sha256sum | cut -c1-64)
    [[ $listed != *"${tok##*_}"* ]] || fail "token list shows a secret"
    [[ $listed != *"$sha"* ]] || fail "token list shows a token's hash"
    # the registry keeps the SHA-256 only
    [ "${LAKE_TEST_REGISTRY:-sqlite}" != pg ] || continue # (a SQLite file to look into)
    assert_equal "$(sqlite3 "$SRV/registry.db" "SELECT count(*) FROM principals WHERE token_sha256 = '$sha'")" 1
    if grep -qaF "${tok##*_}" "$SRV/registry.db"*; then fail "the registry holds a token"; fi
  done
  [[ $listed != *lk_* ]] || fail "token list shows token material: $listed"

  # and the tokens work
  metasrv_start
  printf '%s\n' "$bob" >"$T/bob.token"
  metasrv_post "$T/bob.token" whoami
  assert_equal "$(jq -c '[.principal, .role]' <<<"$HTTP_BODY")" '["bob","user"]'
}

@test "serve: the first stdout line is 'listening on https://127.0.0.1:PORT'; SIGTERM answers the request in flight, then exits 0" {
  metasrv_init
  metasrv_start
  [[ $METASRV_PORT =~ ^[1-9][0-9]*$ ]] && [ "$METASRV_PORT" -le 65535 ] || fail "port $METASRV_PORT"
  assert_equal "$(cat "$SRV/serve.out")" "listening on https://127.0.0.1:$METASRV_PORT"

  # a request still sending its body (1 KB/s) when SIGTERM comes
  head -c 1300 /dev/zero | tr '\0' ' ' >"$T/slow"
  printf '{}' >>"$T/slow"
  curl -sS --cacert "$SRV/cert.pem" -H "Authorization: Bearer $(cat "$SRV/admin.token")" -H 'Expect:' \
    --limit-rate 1000 --data-binary @"$T/slow" -o "$T/slow.answer" -w '%{http_code}' \
    "$METASRV_URL/v1/actions/whoami" >"$T/slow.code" 2>"$T/slow.err" 3>&- &
  CURL_PID=$!
  sleep 0.4
  kill -TERM "$METASRV_PID"
  local rc=0
  wait "$CURL_PID" || rc=$?
  CURL_PID=
  assert_equal "curl $rc $(cat "$T/slow.code") $(cat "$T/slow.err")" "curl 0 200 "
  assert_equal "$(jq -r .principal "$T/slow.answer")" admin
  rc=0
  wait "$METASRV_PID" || rc=$?
  METASRV_PID=
  assert_equal "server exit $rc" "server exit 0"
  # nothing listens any more
  run curl -sS --cacert "$SRV/cert.pem" "$METASRV_URL/v1/health"
  assert_failure
  # the request was logged, once
  assert_equal "$(metasrv_log_lines | grep -c 'action=whoami status=200')" 1
}

@test "serve: SIGINT drains and exits 0 too" {
  metasrv_init
  metasrv_start
  metasrv_req - GET /v1/health
  assert_equal "$HTTP_CODE" 200
  kill -INT "$METASRV_PID"
  local rc=0
  wait "$METASRV_PID" || rc=$?
  METASRV_PID=
  assert_equal "server exit $rc" "server exit 0"
  assert_equal "$(wc -l <"$SRV/serve.out")" 1
}

@test "serve --timeout S: a client that trickles its request (never idle) is cut off after S s, in the handshake, headers or body; others are served meanwhile" {
  metasrv_init
  metasrv_start "$SRV" 0 --timeout 3
  # Slow clients, a byte every 0.25 s, so never idle for the 3 s idle
  # timeout: one in the TLS handshake, one in the headers, one in the body
  # (that request has begun: it is logged, aborted).
  python3 - "$METASRV_PORT" "$SRV/cert.pem" "$(cat "$SRV/admin.token")" >"$T/trickle.out" 2>&1 3>&- <<'EOF' &
import socket, ssl, sys, threading, time
port, ca, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = b'{"namespace":"x","name":"y"}' + b' ' * 200
head = (b'POST /v1/actions/resolve HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n'
        b'Content-Length: %d\r\n\r\n' % (token.encode(), len(body)))
out = {}
def trickle(kind):
    start = time.monotonic()
    raw = socket.create_connection(("127.0.0.1", port))
    if kind == "handshake":  # the bytes of a ClientHello, never finished
        bio_in, bio_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl.create_default_context(cafile=ca).wrap_bio(bio_in, bio_out, server_hostname="127.0.0.1")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        s, data = raw, bio_out.read()
    else:
        s = ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="127.0.0.1")
        data = head
        if kind == "body":
            s.sendall(head)
            data = body
    s.settimeout(0.25)
    for i in range(len(data)):
        try:
            s.sendall(data[i:i + 1])
            got = s.recv(1)
        except socket.timeout:
            continue
        except OSError:
            got = b''
        # the end of the stream, or mid-handshake a TLS alert record
        cut = not got or (kind == "handshake" and got == b'\x15')
        out[kind] = "cut %.1f" % (time.monotonic() - start) if cut else "answered"
        return
    out[kind] = "never cut"
ts = [threading.Thread(target=trickle, args=(k,)) for k in ("handshake", "headers", "body")]
for t in ts:
    t.start()
for t in ts:
    t.join(15)
for k in ("handshake", "headers", "body"):
    print(k, out.get(k, "hung"))
EOF
  CURL_PID=$!
  sleep 0.5
  # meanwhile the server answers others, while the slow ones still hold on
  for _ in $(seq 5); do
    metasrv_post "$SRV/admin.token" whoami
    assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  done
  kill -0 "$CURL_PID" || fail "the slow clients were done before the others were served: $(cat "$T/trickle.out")"
  wait "$CURL_PID" || fail "the trickling clients failed: $(cat "$T/trickle.out")"
  CURL_PID=
  # each cut off after 3 s (the watchdog looks once a second), none answered
  assert_equal "$(awk '{ print $1, $2 }' "$T/trickle.out")" $'handshake cut\nheaders cut\nbody cut'
  awk '$3 < 3 || $3 > 7 { exit 1 }' "$T/trickle.out" || fail "not cut after 3 to 7 s: $(cat "$T/trickle.out")"
  # the body trickler's request was logged, aborted, never answered
  metasrv_log_wait 6
  assert_equal "$(metasrv_log_lines | grep -c 'action=resolve status=0 .*aborted=1')" 1
  metasrv_post "$SRV/admin.token" whoami
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
}

@test "serve refuses, on one line: a missing registry (66), a missing certificate (78), a bad --listen (64)" {
  sqlite_registry_only "a missing SQLite file (PostgreSQL: pg-registry.bats)"
  metasrv_init
  run --separate-stderr lake-metasrv serve --db "$T/none.db" --listen 127.0.0.1:0 \
    --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem"
  assert_error lake-metasrv 66 "$T/none.db"
  assert_output ""
  [ ! -e "$T/none.db" ] || fail "serve created a registry"
  run --separate-stderr lake-metasrv serve --db "$SRV/registry.db" --listen 127.0.0.1:0 \
    --tls-cert "$T/none.pem" --tls-key "$SRV/key.pem"
  assert_error lake-metasrv 78 "$T/none.pem"
  assert_output ""
  local listen
  for listen in 127.0.0.1 127.0.0.1:65536 :0 127.0.0.1:x; do
    run --separate-stderr lake-metasrv serve --db "$SRV/registry.db" --listen "$listen" \
      --tls-cert "$SRV/cert.pem" --tls-key "$SRV/key.pem"
    assert_error lake-metasrv 64
    assert_output ""
  done
}

@test "an unknown command is named as such (64), before any missing option" {
  run --separate-stderr lake-metasrv bogus
  assert_error lake-metasrv 64 "unknown command 'bogus'"
  run --separate-stderr lake-metasrv bogus --db "$T/x.db"
  assert_error lake-metasrv 64 "unknown command 'bogus'"
  [ ! -e "$T/x.db" ]
  run --separate-stderr lake-metasrv serve
  assert_error lake-metasrv 64 "--db"
}
