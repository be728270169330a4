#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Action bodies are strict JSON (issue 15, sections 1 and 2; lake-metasrv(8)
# REQUESTS): a \u0000 in a namespace or name, a number outside RFC 8259, an
# invalid escape, a raw control character in a string, text after the
# object, a key given twice: each is 400 invalid_argument "the request body
# must be one JSON object: ..." from a real TLS lake-metasrv, and nothing
# is created, resolved or changed.  A client reads the answers by the
# same rules.

load helpers/common
load helpers/metasrv
load helpers/background

setup() {
  metasrv_setup nouse
  metasrv_post "$ADMIN" create_namespace '{"namespace":"t"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"t","name":"x","schema":[{"name":"a","type":"TEXT"}]}'
  [ "$HTTP_CODE" = 200 ] || fail "create_table: $HTTP_CODE $HTTP_BODY"
}

teardown() {
  if [ -n "${CRAFTED_PID:-}" ]; then
    kill "$CRAFTED_PID" 2>/dev/null || true
    wait "$CRAFTED_PID" 2>/dev/null || true
  fi
  metasrv_stop
  common_teardown
}

# The last answer is 400 invalid_argument for a body that is not strict JSON.
refused_as_json() {
  metasrv_assert_error 400 invalid_argument
  [[ $(jq -r .error.message <<<"$HTTP_BODY") == "the request body must be one JSON object: "* ]] ||
    fail "not refused as JSON: $HTTP_BODY"
}

@test "the issue's examples: \\u0000 in a namespace or name is 400, never cut at the NUL" {
  local before
  before=$(metasrv_directory)
  # the exact requests of the issue: each used to answer for t.x or create x
  metasrv_post "$ADMIN" resolve '{"namespace":"t\u0000x","name":"x"}'
  refused_as_json
  metasrv_post "$ADMIN" resolve '{"namespace":"t","name":"x\u0000evil"}'
  refused_as_json
  metasrv_post "$ADMIN" create_namespace '{"namespace":"x\u0000y"}'
  refused_as_json
  metasrv_post "$ADMIN" create_table '{"namespace":"t","name":"y\u0000z","schema":[{"name":"a","type":"TEXT"}]}'
  refused_as_json
  metasrv_post "$ADMIN" create_table '{"namespace":"t","name":"y","schema":[{"name":"a\u0000b","type":"TEXT"}]}'
  refused_as_json
  metasrv_post "$ADMIN" drop_table '{"namespace":"t","name":"x\u0000"}'
  refused_as_json
  assert_equal "$(metasrv_directory)" "$before"
  # the same requests without the NUL are served
  metasrv_post "$ADMIN" resolve '{"namespace":"t","name":"x"}'
  assert_equal "$HTTP_CODE" 200
}

@test "numbers outside RFC 8259, invalid escapes, raw control characters, text after the object, repeated keys: 400, nothing changed" {
  local before
  before=$(metasrv_directory)
  local cases=(
    # numbers: cJSON read each of these (1. as 1)
    $'catalog_snapshot\t{"known_generation":-01}'
    $'catalog_snapshot\t{"known_generation":012}'
    $'catalog_snapshot\t{"known_generation":1.}'
    $'catalog_snapshot\t{"known_generation":-2.}'
    $'catalog_snapshot\t{"known_generation":0.e1}'
    $'catalog_snapshot\t{"known_generation":2.e3}'
    $'catalog_snapshot\t{"known_generation":-.123}'
    $'catalog_snapshot\t{"known_generation":+1}'
    $'catalog_snapshot\t{"known_generation":.5}'
    $'catalog_snapshot\t{"known_generation":00}'
    $'catalog_snapshot\t{"known_generation":0x10}'
    $'catalog_snapshot\t{"known_generation":NaN}'
    $'catalog_snapshot\t{"known_generation":Infinity}'
    $'resolve\t{"namespace":"t","name":"x","version":1.}'
    $'resolve\t{"namespace":"t","name":"x","version":-01}'
    # escapes
    $'resolve\t{"namespace":"t","name":"\\uqqqq"}'
    $'resolve\t{"namespace":"t","name":"\\x41"}'
    $'resolve\t{"namespace":"t","name":"\\ud800"}'
    $'create_namespace\t{"namespace":"\\udc00"}'
    # raw control characters in a string
    $'resolve\t{"namespace":"t","name":"x\t"}'
    $'create_namespace\t{"namespace":"a\x01"}'
    $'create_namespace\t{"namespace":"a\nb"}'
    # text after the object
    $'create_namespace\t{"namespace":"g"}garbage'
    $'create_namespace\t{"namespace":"g"},'
    # repeated keys: the dispatch would see only one of them
    $'create_namespace\t{"namespace":"ok1","namespace":"ok2"}'
    $'resolve\t{"namespace":"t","name":"x","name":"nope"}'
    $'create_table\t{"namespace":"t","name":"y","schema":[{"name":"a","type":"TEXT","type":"INTEGER"}]}'
  )
  local c action body
  for c in "${cases[@]}"; do
    action=${c%%$'\t'*} body=${c#*$'\t'}
    echo "# $action: $body"
    metasrv_post "$ADMIN" "$action" "$body"
    refused_as_json
  done
  # a NUL byte after the object (curl sends it from a file)
  printf '{"namespace":"n"}\0{"x":1}' >"$T/nul.json"
  metasrv_req "$ADMIN" POST /v1/actions/create_namespace "" --data-binary "@$T/nul.json"
  refused_as_json
  assert_equal "$(metasrv_directory)" "$before"
  # the forms RFC 8259 allows are served
  metasrv_post "$ADMIN" catalog_snapshot '{"known_generation":-1}'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" catalog_snapshot $'{ "known_generation" :\t0e0 }\r\n'
  assert_equal "$HTTP_CODE" 200
  metasrv_post "$ADMIN" resolve '{"namespace":"\u0074","name":"x"}'
  assert_equal "$HTTP_CODE" 200
}

# A server that answers every POST with 200 and the body in $T/answer.
crafted_start() {
  python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = open(sys.argv[1], "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
' "$T/answer" >"$T/crafted.port" &
  CRAFTED_PID=$!
  wait_for test -s "$T/crafted.port"
  CRAFTED_URL=http://127.0.0.1:$(cat "$T/crafted.port")
}

@test "a client reads the server's answers by the same rules: \\u0000, a lax number, a repeated key are a malformed answer" {
  crafted_start
  local answer
  for answer in '{"principal":"ad\u0000min","role":"admin","actions":[]}' \
                '{"principal":"admin","role":"admin","actions":[],"x":01}' \
                '{"principal":"admin","role":"admin","role":"user","actions":[]}' \
                '{"principal":"admin","role":"admin","actions":[]} trailing'; do
    echo "# $answer"
    printf '%s' "$answer" >"$T/answer"
    run --separate-stderr env LAKE_METASRV="$CRAFTED_URL" LAKE_TOKEN_FILE="$ADMIN" lake-catalog whoami
    assert_error lake-catalog 1 "malformed answer (not one JSON object: "
  done
  # the same answer, strict, is taken
  printf '%s' '{"principal":"admin","role":"admin","actions":["whoami"]}' >"$T/answer"
  run --separate-stderr env LAKE_METASRV="$CRAFTED_URL" LAKE_TOKEN_FILE="$ADMIN" lake-catalog whoami
  assert_success
}

@test "a cache file that is not strict JSON is not used, even with a right checksum: the server is asked again" {
  metasrv_use
  export LAKE_CATALOG_TTL=600
  printf 'hello\n' >"$T/a"
  local v
  v=$(lake-put --name a <"$T/a") # caches whoami, which advertises the stage
  local f
  f=$(find "$XDG_CACHE_HOME" -type f -name whoami)
  [ -n "$f" ] || fail "no whoami cache file under $XDG_CACHE_HOME"
  cached() { # cached JSON: write it as the whoami cache file, checksummed
    python3 -c 'import sys, zlib
text = sys.argv[2].encode()
open(sys.argv[1], "wb").write(text + b"\ncrc32 %08x\n" % zlib.crc32(text))' "$f" "$1"
  }
  local who='"principal":"admin","role":"admin","actions":["whoami"],"stage":"file:///elsewhere"'
  # a fresh cache file is used (the cache is the user's own): strict JSON
  # advertising another stage puts the REF outside it
  cached "{$who}"
  run --separate-stderr lake-get "$v"
  assert_error lake-get 65 "outside the managed stage"
  # the same, not strict, is not used: the server answers with the real stage
  local bad
  for bad in "{$who,\"n\":01}" "{$who,\"role\":\"user\"}" "{$who,\"x\":\"\\u0000\"}" "{$who} x"; do
    echo "# $bad"
    cached "$bad"
    run --separate-stderr lake-get "$v"
    assert_success
    assert_output hello
  done
}
