#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The TLS lake-metasrv offers (issue 15, part 3), against a real server on
# an ephemeral loopback port with an ECDSA and with an RSA certificate
# (helpers/metasrv), asked by openssl s_client:
#  - TLS 1.2 and 1.3 only;
#  - ECDHE key exchange with AEAD ciphers only: no CBC / SHA-1 MAC suite,
#    no static-RSA key transport, no DHE;
#  - the server's order wins over the client's;
#  - --tls-priority replaces the documented default; a string GnuTLS
#    refuses is a configuration error (78) naming the part it refuses.
# The client is shown able to negotiate every refused suite: under
# --tls-priority NORMAL the same handshakes succeed.
# TLS does not depend on the registry: the PostgreSQL pass skips it.

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  [ "${LAKE_TEST_REGISTRY:-sqlite}" != pg ] || skip "TLS does not depend on the registry"
  metasrv_init "$T/ec"
  metasrv_certs "$T/rsa" rsa
  metasrv_init "$T/rsa"
}

teardown() {
  metasrv_stop
  common_teardown
}

# tls_cipher DIR S_CLIENT_ARGS…: one handshake with the server started from
# DIR; prints the suite it chose, or (NONE) when it refused.  The exchange
# is in $T/hs.
tls_cipher() {
  local dir=$1
  shift
  timeout 10 openssl s_client -connect "127.0.0.1:$METASRV_PORT" -CAfile "$dir/cert.pem" -msg "$@" \
    </dev/null >"$T/hs" 2>&1 || true
  grep -q '^>>> .*ClientHello' "$T/hs" || fail "no ClientHello was sent: $(cat "$T/hs")"
  sed -n 's/^New, [^,]*, Cipher is //p' "$T/hs" | head -1
}

# expect_cipher WANT DIR S_CLIENT_ARGS…: the handshake ends with suite WANT
# ((NONE): refused).
expect_cipher() {
  local want=$1 got
  shift
  got=$(tls_cipher "$@")
  [ "$got" = "$want" ] || fail "s_client ${*:2}: expected $want, got ${got:-nothing}: $(cat "$T/hs")"
}

@test "the default priorities are one string, the one lake-metasrv(8) documents" {
  local def man
  # SERVER_TLS_PRIORITY in server.h: its string literals, joined
  def=$(sed -n '/^#define SERVER_TLS_PRIORITY/,/^$/p' "$LAKE_SRC/cmd/lake-metasrv/server.h" |
    grep -o '"[^"]*"' | tr -d '"\n')
  [[ $def == NORMAL:* ]] || fail "no SERVER_TLS_PRIORITY in server.h: '$def'"
  # the display of TLS priorities, its lines joined
  man=$(awk '/^\.Ss TLS priorities/ { s = 1 } s && /^\.Bd -literal/ { d = 1; next }
             d && /^\.Ed/ { exit } d { printf "%s", $0 }' "$LAKE_SRC/man/man8/lake-metasrv.8")
  assert_equal "lake-metasrv(8): $man" "lake-metasrv(8): $def"
  run --separate-stderr lake-metasrv --help
  assert_success
  assert_output --partial "--tls-priority STRING"
}

@test "ECDSA and RSA certificates: TLS 1.0 and 1.1 refused; ECDHE with AES-GCM and ChaCha20-Poly1305 at 1.2, and 1.3, served" {
  local kind sig v c
  for kind in ec rsa; do
    sig=ECDSA; [ $kind = rsa ] && sig=RSA
    metasrv_start "$T/$kind"
    for v in tls1 tls1_1; do
      expect_cipher '(NONE)' "$T/$kind" "-$v" -cipher 'DEFAULT@SECLEVEL=0'
    done
    for c in AES128-GCM-SHA256 AES256-GCM-SHA384 CHACHA20-POLY1305; do
      expect_cipher "ECDHE-$sig-$c" "$T/$kind" -tls1_2 -cipher "ECDHE-$sig-$c"
      grep -q "Verify return code: 0 (ok)" "$T/hs" || fail "not verified: $(cat "$T/hs")"
    done
    for c in TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256; do
      expect_cipher "$c" "$T/$kind" -tls1_3 -ciphersuites "$c"
    done
    # the server answers HTTP after all that
    METASRV_DIR=$T/$kind metasrv_req - GET /v1/health
    assert_equal "$HTTP_CODE $HTTP_BODY" '200 {"status":"ok","registry":"ok"}'
    metasrv_stop
  done
}

@test "CBC suites with SHA-1 MACs are refused (LUCKY13), with an ECDSA and with an RSA certificate" {
  local c
  metasrv_start "$T/ec"
  for c in ECDHE-ECDSA-AES128-SHA ECDHE-ECDSA-AES256-SHA ECDHE-ECDSA-AES128-SHA256 ECDHE-ECDSA-AES256-SHA384; do
    expect_cipher '(NONE)' "$T/ec" -tls1_2 -cipher "$c@SECLEVEL=0"
  done
  metasrv_stop
  metasrv_start "$T/rsa"
  for c in ECDHE-RSA-AES128-SHA ECDHE-RSA-AES256-SHA ECDHE-RSA-AES128-SHA256 DHE-RSA-AES128-SHA; do
    expect_cipher '(NONE)' "$T/rsa" -tls1_2 -cipher "$c@SECLEVEL=0"
  done
}

@test "an RSA certificate: static-RSA key transport (no forward secrecy) and DHE are refused" {
  local c
  metasrv_start "$T/rsa"
  for c in AES128-GCM-SHA256 AES256-GCM-SHA384 AES256-SHA AES128-SHA \
    DHE-RSA-AES128-GCM-SHA256 DHE-RSA-AES256-GCM-SHA384 DHE-RSA-CHACHA20-POLY1305; do
    expect_cipher '(NONE)' "$T/rsa" -tls1_2 -cipher "$c@SECLEVEL=0"
  done
  # ECDHE over the same certificate is served
  expect_cipher ECDHE-RSA-AES256-GCM-SHA384 "$T/rsa" -tls1_2 -cipher 'AES256-SHA:ECDHE-RSA-AES256-GCM-SHA384'
}

@test "the server's order wins: AES-256-GCM, then ChaCha20-Poly1305, then AES-128-GCM, whatever the client lists first" {
  metasrv_start "$T/rsa"
  expect_cipher ECDHE-RSA-AES256-GCM-SHA384 "$T/rsa" -tls1_2 \
    -cipher 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384'
  expect_cipher ECDHE-RSA-CHACHA20-POLY1305 "$T/rsa" -tls1_2 \
    -cipher 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305'
  expect_cipher TLS_AES_256_GCM_SHA384 "$T/rsa" -tls1_3 \
    -ciphersuites 'TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384'
  metasrv_stop
  metasrv_start "$T/ec"
  expect_cipher ECDHE-ECDSA-AES256-GCM-SHA384 "$T/ec" -tls1_2 \
    -cipher 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384'
}

@test "--tls-priority replaces the default: the client is shown able to get what the default refuses" {
  # GnuTLS's own NORMAL, TLS 1.2 and 1.3: CBC, SHA-1 MACs and static RSA
  # are served, and the client's order wins
  metasrv_start "$T/rsa" 0 --tls-priority 'NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2'
  expect_cipher ECDHE-RSA-AES128-SHA "$T/rsa" -tls1_2 -cipher 'ECDHE-RSA-AES128-SHA@SECLEVEL=0'
  expect_cipher AES128-GCM-SHA256 "$T/rsa" -tls1_2 -cipher 'AES128-GCM-SHA256@SECLEVEL=0'
  expect_cipher AES256-SHA "$T/rsa" -tls1_2 -cipher 'AES256-SHA@SECLEVEL=0'
  expect_cipher ECDHE-RSA-AES128-GCM-SHA256 "$T/rsa" -tls1_2 \
    -cipher 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384'
  metasrv_stop
  metasrv_start "$T/ec" 0 --tls-priority 'NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2'
  expect_cipher ECDHE-ECDSA-AES128-SHA "$T/ec" -tls1_2 -cipher 'ECDHE-ECDSA-AES128-SHA@SECLEVEL=0'
  metasrv_stop
  # and narrower than the default: TLS 1.3 only
  metasrv_start "$T/ec" 0 --tls-priority 'NORMAL:-VERS-ALL:+VERS-TLS1.3:%SERVER_PRECEDENCE'
  expect_cipher '(NONE)' "$T/ec" -tls1_2 -cipher ECDHE-ECDSA-AES256-GCM-SHA384
  expect_cipher TLS_AES_256_GCM_SHA384 "$T/ec" -tls1_3
}

@test "a --tls-priority GnuTLS refuses exits 78 with one line naming the part, before anything is served" {
  local p
  for p in 'NORMAL:+FOO' 'NORMAL:-VERS-ALL:+VERS-TLS1.2:%BOGUS'; do
    run --separate-stderr timeout 10 lake-metasrv serve --db "$T/ec/registry.db" --listen 127.0.0.1:0 \
      --tls-cert "$T/ec/cert.pem" --tls-key "$T/ec/key.pem" --tls-priority "$p"
    assert_error lake-metasrv 78 "--tls-priority" "'${p##*:}'" "invalid"
    assert_output ""
  done
  # nothing enabled at all, and nothing
  for p in 'NONE' 'NORMAL:-VERS-ALL' ''; do
    run --separate-stderr timeout 10 lake-metasrv serve --db "$T/ec/registry.db" --listen 127.0.0.1:0 \
      --tls-cert "$T/ec/cert.pem" --tls-key "$T/ec/key.pem" --tls-priority "$p"
    assert_error lake-metasrv 78 "--tls-priority"
    assert_output ""
  done
  # plain HTTP takes none (64)
  run --separate-stderr timeout 10 lake-metasrv serve --db "$T/ec/registry.db" --listen 127.0.0.1:0 \
    --insecure-listen --tls-priority NORMAL
  assert_error lake-metasrv 64 "--insecure-listen takes no"
}
