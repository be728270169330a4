#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell: no test reads what another set
# Vended access, the server's side (issue 17 part 1, DESIGN §4, §5): a real
# TLS lake-metasrv whose S3 stage is on radosgw signs URLs with its own
# keys (presign_get, upload_begin, upload_parts, upload_complete,
# upload_abort), and the client moves the bytes with plain curl.  radosgw
# checks every signature, expiry and bound header; the server refuses a
# location outside its stage, an upload it did not begin and an expiry over
# its cap, and never sees an object byte or logs a URL.

load helpers/common
load helpers/rgw
load helpers/metasrv

setup_file() {
  rgw_cluster_start
}

teardown_file() {
  rgw_cluster_stop
}

setup() {
  common_setup
  s3_start
  STAGE_URL=s3://$S3_BUCKET/stage
  metasrv_init "$T/srv" "$STAGE_URL"
  ADMIN=$T/srv/admin.token
  metasrv_token query-service etl >/dev/null
  metasrv_token metadata-peer peer >/dev/null
  metasrv_token user alice >/dev/null
}

teardown() {
  metasrv_stop 2>/dev/null || true
  s3_stop
  common_teardown
}

md5_of() {
  openssl md5 -binary <"$1" | base64
}

# An object put into the stage with the test's own keys: its FILE value.
put_object() {
  run_to "$T/value" lake-put "$1"
  assert_equal "exit $status" "exit 0"
  cat "$T/value"
}

# curl of a vended URL: the HTTP status in CODE, the answer in $T/got,
# headers in $T/head; ARGS are curl's.
vcurl() {
  local url=$1
  shift
  CODE=$(curl -sS -o "$T/got" -D "$T/head" -w '%{http_code}' "$@" "$url") || CODE=000
}

# A URL with one hex digit of its signature changed.
tamper_sig() {
  local url=$1 sig
  sig=${url##*X-Amz-Signature=}
  sig=${sig%%&*}
  local first=${sig:0:1}
  [ "$first" = a ] && first=b || first=a
  printf '%s\n' "${url/X-Amz-Signature=$sig/X-Amz-Signature=$first${sig:1}}"
}

# A ticket with its last hex digit changed.
tamper_ticket() {
  local t=$1 last=${1: -1}
  [ "$last" = 0 ] && last=1 || last=0
  printf '%s%s\n' "${t:0:63}" "$last"
}

# upload_begin of a multipart upload by TOKENFILE: LOC, ID, TICKET.
begin_multipart() {
  metasrv_post "$1" upload_begin '{"content_type":"application/octet-stream"}'
  assert_equal "begin: HTTP $HTTP_CODE $HTTP_BODY" "begin: HTTP 200 $HTTP_BODY"
  assert_equal "$(jq -c 'keys' <<<"$HTTP_BODY")" '["location","ticket","upload_id"]'
  LOC=$(jq -r .location <<<"$HTTP_BODY")
  ID=$(jq -r .upload_id <<<"$HTTP_BODY")
  TICKET=$(jq -r .ticket <<<"$HTTP_BODY")
  [[ $LOC == "$STAGE_URL/files/"* ]] || fail "not in the stage: $LOC"
}

upload_json() {
  jq -cn --arg l "$1" --arg i "$2" --arg t "$3" '{location: $l, upload_id: $i, ticket: $t}'
}

# Part URLs for the files given (parts 1..n of LOC/ID/TICKET): URLS[].
part_urls() {
  local tok=$1 f n=0 parts=()
  shift
  for f in "$@"; do
    n=$((n + 1))
    parts+=("$(jq -cn --argjson n $n --argjson s "$(stat -c %s "$f")" --arg m "$(md5_of "$f")" \
      '{number: $n, size: $s, md5: $m}')")
  done
  metasrv_post "$tok" upload_parts "$(upload_json "$LOC" "$ID" "$TICKET" |
    jq -c --argjson p "[$(IFS=,; echo "${parts[*]}")]" '. + {parts: $p}')"
  assert_equal "parts: HTTP $HTTP_CODE $HTTP_BODY" "parts: HTTP 200 $HTTP_BODY"
  mapfile -t URLS < <(jq -r '.urls[]' <<<"$HTTP_BODY")
  assert_equal "${#URLS[@]}" $#
}

# PUT each file to its part URL; ETAGS[] as S3 answered them.
put_parts() {
  local i=0 f
  ETAGS=()
  for f in "$@"; do
    vcurl "${URLS[$i]}" -T "$f" -H "Content-MD5: $(md5_of "$f")"
    assert_equal "part $((i + 1)): HTTP $CODE" "part $((i + 1)): HTTP 200"
    ETAGS+=("$(sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' "$T/head" | tr -d '\r')")
    i=$((i + 1))
  done
}

complete_body() {
  local i parts=()
  for i in "${!ETAGS[@]}"; do
    parts+=("$(jq -cn --argjson n $((i + 1)) --arg e "${ETAGS[$i]}" '{number: $n, etag: $e}')")
  done
  upload_json "$LOC" "$ID" "$TICKET" | jq -c --argjson p "[$(IFS=,; echo "${parts[*]}")]" '. + {parts: $p}'
}

# alice (a user) may write table v.files, and read it, which refers to
# LOC when one is given: what grants let a user do (issue 29).
alice_may() {
  local p
  metasrv_post "$ADMIN" create_namespace '{"namespace":"v"}'
  metasrv_post "$ADMIN" create_table '{"namespace":"v","name":"files","schema":[{"name":"f","type":"FILE"}]}'
  for p in read write; do
    metasrv_post "$ADMIN" grant "{\"privilege\":\"$p\",\"on\":\"v\",\"grantee\":\"alice\"}"
    assert_equal "grant: HTTP $HTTP_CODE" "grant: HTTP 200"
  done
  [ -z "${1:-}" ] && return
  metasrv_post "$ADMIN" append "{\"namespace\":\"v\",\"name\":\"files\",\"expected_version\":0,\"segments\":[$(metasrv_segment "$STAGE_URL/tables/v/seg")],\"files\":[\"$1\"]}"
  assert_equal "append: HTTP $HTTP_CODE" "append: HTTP 200"
}

# The key of an s3:// location in the bucket.
key_of() {
  printf '%s\n' "${1#s3://"$S3_BUCKET"/}"
}

@test "vend actions: the role table: admin, query-service and user may run all five; metadata-peer none" {
  metasrv_start "$T/srv"
  printf 'hello, vended world\n' >"$T/obj"
  local value loc role tok action
  value=$(put_object "$T/obj")
  loc=$(json_field location "$value")
  alice_may "$loc"
  printf 'part\n' >"$T/part"
  for role in admin:admin query-service:etl user:alice; do
    tok=$T/srv/${role#*:}.token
    metasrv_post "$tok" presign_get "{\"location\":\"$loc\"}"
    assert_equal "$role presign_get: HTTP $HTTP_CODE" "$role presign_get: HTTP 200"
    assert_equal "$(jq -c '[keys, .expires]' <<<"$HTTP_BODY")" '[["expires","url"],900]'
    vcurl "$(jq -r .url <<<"$HTTP_BODY")"
    assert_equal "$role GET: HTTP $CODE" "$role GET: HTTP 200"
    cmp "$T/obj" "$T/got"

    metasrv_post "$tok" upload_begin "$(jq -cn --arg h "$(sha_of "$T/part")" --arg m "$(md5_of "$T/part")" \
      '{content_type: "text/plain", sha256: $h, size: 5, md5: $m}')"
    assert_equal "$role upload_begin (one PUT): HTTP $HTTP_CODE" "$role upload_begin (one PUT): HTTP 200"
    assert_equal "$(jq -c '[keys, .expires]' <<<"$HTTP_BODY")" '[["expires","location","url"],900]'

    begin_multipart "$tok"
    part_urls "$tok" "$T/part"
    put_parts "$T/part"
    metasrv_post "$tok" upload_complete "$(complete_body)"
    assert_equal "$role upload_complete: HTTP $HTTP_CODE $HTTP_BODY" "$role upload_complete: HTTP 200 $HTTP_BODY"
    assert_equal "$HTTP_BODY" "{\"location\":\"$LOC\"}"
    s3_curl -o "$T/stored" "$S3_ENDPOINT/$S3_BUCKET/$(key_of "$LOC")"
    cmp "$T/part" "$T/stored"

    begin_multipart "$tok"
    metasrv_post "$tok" upload_abort "$(upload_json "$LOC" "$ID" "$TICKET")"
    assert_equal "$role upload_abort: HTTP $HTTP_CODE $HTTP_BODY" "$role upload_abort: HTTP 200 {}"
  done
  assert_equal "$(s3_uploads '')" ""

  # metadata-peer: refused before anything is signed or begun
  begin_multipart "$ADMIN"
  local peer=$T/srv/peer.token up
  up=$(upload_json "$LOC" "$ID" "$TICKET")
  for action in $METASRV_VEND_ACTIONS; do
    case $action in
      presign_get) body="{\"location\":\"$loc\"}" ;;
      upload_begin) body='{"content_type":"text/plain"}' ;;
      upload_parts) body=$(jq -c '. + {parts: [{number: 1, size: 5, md5: "AAAAAAAAAAAAAAAAAAAAAA=="}]}' <<<"$up") ;;
      upload_complete) body=$(jq -c '. + {parts: [{number: 1, etag: "x"}]}' <<<"$up") ;;
      upload_abort) body=$up ;;
    esac
    metasrv_post "$peer" "$action" "$body"
    metasrv_assert_error 403 permission_denied
  done
  assert_equal "$(s3_uploads '')" "$(key_of "$LOC") $ID"
  assert_equal "$(metasrv_count upload_begin 403)" 1
}

@test "vend actions: a presigned GET fetched with plain curl; tampered, expired and foreign-key URLs refused by S3" {
  metasrv_start "$T/srv"
  head -c 100000 /dev/urandom >"$T/obj"
  local value loc url
  value=$(put_object "$T/obj")
  loc=$(json_field location "$value")
  alice_may "$loc"
  metasrv_post "$T/srv/alice.token" presign_get "{\"location\":\"$loc\",\"expires\":120}"
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  assert_equal "$(jq .expires <<<"$HTTP_BODY")" 120
  url=$(jq -r .url <<<"$HTTP_BODY")
  [[ $url == "$S3_ENDPOINT/$S3_BUCKET/"* ]] || fail "not a URL of the bucket: $url"
  [[ $url == *X-Amz-Expires=120* ]] || fail "no X-Amz-Expires=120: $url"
  vcurl "$url"
  assert_equal "HTTP $CODE" "HTTP 200"
  cmp "$T/obj" "$T/got"

  vcurl "$(tamper_sig "$url")"
  assert_equal "tampered: HTTP $CODE" "tampered: HTTP 403"
  grep -q SignatureDoesNotMatch "$T/got" || fail "not SignatureDoesNotMatch: $(cat "$T/got")"

  # another key under the same signature: the last character of the key
  local other=${url/"$(key_of "$loc")"/"$(key_of "$loc")x"}
  [ "$other" != "$url" ] || fail "the key is not in the URL"
  vcurl "$other"
  assert_equal "foreign key: HTTP $CODE" "foreign key: HTTP 403"

  metasrv_post "$T/srv/alice.token" presign_get "{\"location\":\"$loc\",\"expires\":1}"
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  url=$(jq -r .url <<<"$HTTP_BODY")
  sleep 2
  vcurl "$url"
  assert_equal "expired: HTTP $CODE" "expired: HTTP 403"
  grep -q AccessDenied "$T/got" || fail "not AccessDenied: $(cat "$T/got")"

  # a location outside the stage, or not a string: 400, nothing signed
  for loc in "s3://$S3_BUCKET/stage2/files/x" "s3://other-bucket/stage/files/x" "s3://$S3_BUCKET/stage/../x" \
             "file:///etc/passwd"; do
    metasrv_post "$ADMIN" presign_get "{\"location\":\"$loc\"}"
    metasrv_assert_error 400 invalid_argument
    [[ $HTTP_BODY != *"$loc"* ]] || fail "the answer quotes the location: $HTTP_BODY"
  done
  for body in '{"location":5}' '{}' '{"location":"'"$STAGE_URL"'/files/a","expires":"60"}' \
              '{"location":"'"$STAGE_URL"'/files/a","expires":0}' '{"location":"'"$STAGE_URL"'/files/a","expires":1.5}' \
              '{"location":"'"$STAGE_URL"'/files/a","url":"x"}'; do
    metasrv_post "$ADMIN" presign_get "$body"
    metasrv_assert_error 400 invalid_argument
  done
}

@test "vend actions: a one-PUT URL stores exactly the body it was signed for" {
  metasrv_start "$T/srv"
  head -c 300000 /dev/urandom >"$T/data"
  local size sha md5 url loc
  size=$(stat -c %s "$T/data") sha=$(sha_of "$T/data") md5=$(md5_of "$T/data")
  metasrv_post "$T/srv/etl.token" upload_begin "$(jq -cn --arg h "$sha" --arg m "$md5" --argjson s "$size" \
    '{dir: "files/vended", content_type: "application/octet-stream", sha256: $h, size: $s, md5: $m}')"
  assert_equal "HTTP $HTTP_CODE $HTTP_BODY" "HTTP 200 $HTTP_BODY"
  url=$(jq -r .url <<<"$HTTP_BODY") loc=$(jq -r .location <<<"$HTTP_BODY")
  [[ $loc == "$STAGE_URL/files/vended/"* ]] || fail "not under dir: $loc"

  # another body of the same length: BadDigest, nothing stored
  head -c 300000 /dev/urandom >"$T/other"
  vcurl "$url" -T "$T/other" -H "Content-MD5: $md5" -H "Content-Type: application/octet-stream" \
    -H "x-amz-meta-sha256: $sha"
  assert_equal "another body: HTTP $CODE" "another body: HTTP 400"
  grep -q BadDigest "$T/got" || fail "not BadDigest: $(cat "$T/got")"
  assert_no_s3_objects

  vcurl "$url" -T "$T/data" -H "Content-MD5: $md5" -H "Content-Type: application/octet-stream" \
    -H "x-amz-meta-sha256: $sha"
  assert_equal "HTTP $CODE" "HTTP 200"
  run_to "$T/back" lake-get "$(jq -cn --arg l "$loc" --argjson s "$size" --arg h "$sha" \
    '{location: $l, size: $s, sha256: $h}')"
  assert_equal "exit $status" "exit 0"
  cmp "$T/data" "$T/back"

  # one PUT needs its size, sha256 and md5; bad ones are the request's fault
  for body in '{"content_type":"a/b","md5":"'"$md5"'","sha256":"'"$sha"'"}' \
              '{"content_type":"a/b","md5":"'"$md5"'","size":1}' \
              '{"content_type":"a/b","md5":"short","size":1,"sha256":"'"$sha"'"}' \
              '{"md5":"'"$md5"'","size":1,"sha256":"'"$sha"'"}' \
              '{"content_type":"a/b","dir":"../x"}' '{"content_type":"a/b","dir":5}' \
              '{"content_type":"a/b","size":-1}' '{"content_type":"a/b","expires":60}'; do
    metasrv_post "$ADMIN" upload_begin "$body"
    metasrv_assert_error 400 invalid_argument
  done
}

@test "vend actions: a multipart upload: begin, parts, PUTs, complete; forged tickets and other upload ids refused" {
  metasrv_start "$T/srv"
  head -c $((5 * MIB)) /dev/urandom >"$T/p1"
  printf 'z' >"$T/p2"
  cat "$T/p1" "$T/p2" >"$T/data"
  local sha
  sha=$(sha_of "$T/data")
  alice_may
  metasrv_post "$T/srv/alice.token" upload_begin "{\"content_type\":\"application/octet-stream\",\"sha256\":\"$sha\"}"
  assert_equal "HTTP $HTTP_CODE" "HTTP 200"
  LOC=$(jq -r .location <<<"$HTTP_BODY") ID=$(jq -r .upload_id <<<"$HTTP_BODY")
  TICKET=$(jq -r .ticket <<<"$HTTP_BODY")
  local up good_ticket=$TICKET good_id=$ID
  up=$(upload_json "$LOC" "$ID" "$TICKET")

  # a forged ticket, another upload's id, another location: 403, nothing done
  local loc2 id2 t2
  begin_multipart "$ADMIN"
  loc2=$LOC id2=$ID t2=$TICKET
  LOC=$(jq -r .location <<<"$up")
  local forged
  for forged in "$(upload_json "$LOC" "$good_id" "$(tamper_ticket "$good_ticket")")" \
                "$(upload_json "$LOC" "$id2" "$good_ticket")" \
                "$(upload_json "$loc2" "$good_id" "$good_ticket")" \
                "$(upload_json "$LOC" "$good_id" "${good_ticket}0")" \
                "$(upload_json "$LOC" "$good_id" "${good_ticket:0:63}")"; do
    metasrv_post "$T/srv/alice.token" upload_parts \
      "$(jq -c '. + {parts: [{number: 1, size: 5, md5: "AAAAAAAAAAAAAAAAAAAAAA=="}]}' <<<"$forged")"
    metasrv_assert_error 403 permission_denied
    metasrv_post "$T/srv/alice.token" upload_complete "$(jq -c '. + {parts: [{number: 1, etag: "x"}]}' <<<"$forged")"
    metasrv_assert_error 403 permission_denied
    metasrv_post "$T/srv/alice.token" upload_abort "$forged"
    metasrv_assert_error 403 permission_denied
  done
  assert_equal "$(s3_uploads '' | sort)" "$(printf '%s %s\n' "$(key_of "$LOC")" "$good_id" "$(key_of "$loc2")" "$id2" | sort)"

  ID=$good_id TICKET=$good_ticket
  part_urls "$T/srv/alice.token" "$T/p1" "$T/p2"
  # a URL binds its part's Content-MD5: part 2's body on part 1's URL is refused
  vcurl "${URLS[0]}" -T "$T/p2" -H "Content-MD5: $(md5_of "$T/p2")"
  assert_equal "wrong part: HTTP $CODE" "wrong part: HTTP 403"
  put_parts "$T/p1" "$T/p2"

  # parts out of order, or a gap: 400
  local body
  body=$(complete_body)
  metasrv_post "$T/srv/alice.token" upload_complete "$(jq -c '.parts |= reverse' <<<"$body")"
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$T/srv/alice.token" upload_complete "$(jq -c '.parts[1].number = 3' <<<"$body")"
  metasrv_assert_error 400 invalid_argument
  metasrv_post "$T/srv/alice.token" upload_complete "$(jq -c '.parts[0].extra = 1' <<<"$body")"
  metasrv_assert_error 400 invalid_argument

  metasrv_post "$T/srv/alice.token" upload_complete "$(jq -c ". + {size: $((5 * MIB + 1))}" <<<"$body")"
  assert_equal "HTTP $HTTP_CODE $HTTP_BODY" "HTTP 200 {\"location\":\"$LOC\"}"
  run_to "$T/back" lake-get "$(jq -cn --arg l "$LOC" --argjson s $((5 * MIB + 1)) --arg h "$sha" \
    '{location: $l, size: $s, sha256: $h}')"
  assert_equal "exit $status" "exit 0"
  cmp "$T/data" "$T/back"

  # abort: the upload is gone from S3; again: already gone is fine
  LOC=$loc2 ID=$id2 TICKET=$t2
  metasrv_post "$ADMIN" upload_abort "$(upload_json "$LOC" "$ID" "$TICKET")"
  assert_equal "HTTP $HTTP_CODE $HTTP_BODY" "HTTP 200 {}"
  assert_equal "$(s3_uploads '')" ""
  metasrv_post "$ADMIN" upload_abort "$(upload_json "$LOC" "$ID" "$TICKET")"
  assert_equal "HTTP $HTTP_CODE $HTTP_BODY" "HTTP 200 {}"

  # no object byte went through the server, and no URL reached its log
  local bytes
  bytes=$(metasrv_curl "$ADMIN" "$METASRV_URL/v1/metrics" | awk '$1 == "lake_metasrv_request_body_bytes_total" { print $2 }')
  [ -n "$bytes" ] && [ "$bytes" -gt 0 ] && [ "$bytes" -lt 65536 ] || fail "request body bytes: '$bytes'"
  metasrv_stop
  ! grep -E 'X-Amz-|Signature|https?://|uploadId' "$T/srv/serve.log" || fail "a URL in the server's log"
  grep -q "action=upload_parts" "$T/srv/serve.log"
}

@test "vend actions: expires: the server's default and cap; over the cap is 400, not shortened" {
  metasrv_start "$T/srv" 0 --presign-expires 10m --presign-max 1h
  local value loc
  value=$(put_object "$BATS_TEST_FILENAME")
  loc=$(json_field location "$value")
  metasrv_post "$ADMIN" presign_get "{\"location\":\"$loc\"}"
  assert_equal "$(jq .expires <<<"$HTTP_BODY")" 600
  metasrv_post "$ADMIN" presign_get "{\"location\":\"$loc\",\"expires\":3600}"
  assert_equal "$(jq .expires <<<"$HTTP_BODY")" 3600
  metasrv_post "$ADMIN" presign_get "{\"location\":\"$loc\",\"expires\":3601}"
  metasrv_assert_error 400 invalid_argument
  [[ $HTTP_BODY == *"at most 3600 seconds"* ]] || fail "the cap is not named: $HTTP_BODY"
  begin_multipart "$ADMIN"
  metasrv_post "$ADMIN" upload_parts "$(upload_json "$LOC" "$ID" "$TICKET" |
    jq -c '. + {expires: 3601, parts: [{number: 1, size: 5, md5: "AAAAAAAAAAAAAAAAAAAAAA=="}]}')"
  metasrv_assert_error 400 invalid_argument
  metasrv_stop

  # a cap below the built-in default caps the default
  metasrv_start "$T/srv" 0 --presign-max 60
  metasrv_post "$ADMIN" presign_get "{\"location\":\"$loc\"}"
  assert_equal "$(jq .expires <<<"$HTTP_BODY")" 60
}

@test "vend actions: --presign-max and --presign-expires: bad values are usage errors (64)" {
  local bad
  for bad in "--presign-max 8d" "--presign-max 0" "--presign-max abc" "--presign-max -5" \
             "--presign-expires 2h --presign-max 1h" "--presign-expires 1x"; do
    # shellcheck disable=SC2086 # the options split as meant
    run --separate-stderr lake-metasrv serve --db "$T/srv/registry.db" --listen 127.0.0.1:0 \
      --tls-cert "$T/srv/cert.pem" --tls-key "$T/srv/key.pem" $bad
    assert_error lake-metasrv 64 "--presign-"
  done
}

@test "vend actions: a local stage is 412; a server without S3 keys 412 saying so (gc too)" {
  metasrv_init "$T/local"
  METASRV_DIR=$T/local metasrv_start "$T/local"
  METASRV_DIR=$T/local metasrv_post "$T/local/admin.token" presign_get \
    "{\"location\":\"file://$T/local/stage/files/x\"}"
  metasrv_assert_error 412 failed_precondition
  [[ $HTTP_BODY == *"need an S3 stage"* ]] || fail "$HTTP_BODY"
  METASRV_DIR=$T/local metasrv_post "$T/local/admin.token" upload_begin '{"content_type":"a/b"}'
  metasrv_assert_error 412 failed_precondition
  metasrv_stop

  # the server's environment without keys; the test's keeps them
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
  metasrv_start "$T/srv"
  export AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET
  metasrv_post "$ADMIN" presign_get "{\"location\":\"$STAGE_URL/files/x\"}"
  metasrv_assert_error 412 failed_precondition
  [[ $HTTP_BODY == *"holds no S3 credentials"* ]] || fail "$HTTP_BODY"
  metasrv_post "$ADMIN" upload_begin '{"content_type":"a/b"}'
  metasrv_assert_error 412 failed_precondition
  # gc where the keys are: there are none
  metasrv_post "$ADMIN" gc '{"dry_run":true}'
  metasrv_assert_error 412 failed_precondition
  [[ $HTTP_BODY == *"holds no S3 credentials"* ]] || fail "$HTTP_BODY"
}

@test "vend actions: the server's S3 keys wrong: 503 unavailable without key material, the cause in the server's log" {
  local secret=wrong-secret-$RANDOM$RANDOM
  export AWS_SECRET_ACCESS_KEY=$secret
  metasrv_start "$T/srv"
  export AWS_SECRET_ACCESS_KEY=$S3_SECRET
  local action body
  alice_may "$STAGE_URL/files/x" # the registry answers; the keys fail
  for action in presign_get upload_begin; do
    [ $action = presign_get ] && body="{\"location\":\"$STAGE_URL/files/x\"}" || body='{"content_type":"a/b"}'
    metasrv_post "$T/srv/alice.token" "$action" "$body"
    metasrv_assert_error 503 unavailable
    grep -qi '^Retry-After: 1' <<<"$HTTP_HEAD" || fail "no Retry-After: $HTTP_HEAD"
    for word in "$secret" "$S3_KEY" "$S3_SECRET" SignatureDoesNotMatch; do
      [[ $HTTP_BODY != *"$word"* ]] || fail "the answer holds '$word': $HTTP_BODY"
    done
  done
  assert_no_s3_objects
  metasrv_stop
  grep -q 'action=presign_get status=503.*detail=.*SignatureDoesNotMatch' "$T/srv/serve.log" ||
    fail "no S3 cause in the log: $(cat "$T/srv/serve.log")"
  ! grep -q "$secret" "$T/srv/serve.log" || fail "the secret in the log"
}
