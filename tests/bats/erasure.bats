#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The erasure recipe of lake(7) (issue 41), as a data-protection engineer
# follows it to forget one customer (her email, her phone and two files),
# in the three deployments: embedded, lake-metasrv with a file stage, and
# lake-metasrv with keyless clients on radosgw.  Two client hosts each:
# host A is the engineer's (this test's cache directory and shell
# history), host B another reader ($T/hostB), which had read every
# version.  After the recipe a byte scan of every object of the stage,
# the registry (and everything else in the server's directory), both
# hosts' caches and the history finds none of her values, none of her
# files' bytes and no location of them; every other row and file is
# intact and verified (lake-get checks each SHA-256).

load helpers/common
load helpers/rgw
load helpers/metasrv

setup_file() { rgw_cluster_start; }
teardown_file() { rgw_cluster_stop; }

setup() {
  common_setup
  export XDG_STATE_HOME=$T/state
  B=$T/hostB
  EMAIL=erin-q7z@example.com PHONE=PHONE-SECRET-5521
  DEPLOY=
}

teardown() {
  [ -z "$DEPLOY" ] || [ "$DEPLOY" = embedded ] || metasrv_stop "$T/srv" 2>/dev/null || true
  [ "$DEPLOY" != keyless ] || s3_stop
  common_teardown
}

host_b() { LAKE_CACHE_DIR=$B "$@"; }

# shell STEP...: lake-query at a terminal (helpers/terminal.py), as the
# engineer types at it; its screen in $T/screen.
shell() {
  printf '%s\n' "$@" | python3 "$BATS_TEST_DIRNAME/helpers/terminal.py" "$T/screen" lake-query ||
    fail "the shell failed: $(cat "$T/screen")"
}

# The deployments.  Each sets STAGE_DUMP: a command that copies every
# object of the stage into the directory it is given.
embedded() {
  DEPLOY='embedded'
  STAGE_DUMP='dump_dir'
  STAGE_DIR=$LAKE_HOME/stage
}

file_stage() {
  DEPLOY='file'
  metasrv_init "$T/srv"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  STAGE_DUMP='dump_dir'
  STAGE_DIR=$T/srv/stage
}

# lake-metasrv holds the S3 keys; the clients hold a lake token only.
keyless() {
  DEPLOY='keyless'
  s3_start
  [ -n "${AWS_ENDPOINT_URL:-}" ] || export AWS_ENDPOINT_URL=$S3_ENDPOINT
  metasrv_init "$T/srv" "s3://$S3_BUCKET/stage"
  metasrv_start "$T/srv"
  metasrv_use "$T/srv"
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 LAKE_STAGE
  STAGE_DUMP='dump_s3'
}

dump_dir() { cp -a "$STAGE_DIR" "$1/stage"; }

# Every object of the bucket (asked of radosgw with the test's own keys),
# and no unfinished upload.
dump_s3() {
  local key
  [ -z "$(s3_uploads)" ] || fail "unfinished uploads: $(s3_uploads)"
  while IFS= read -r key; do
    [ -n "$key" ] || continue
    mkdir -p "$1/s3/$(dirname "$key")"
    s3_curl -o "$1/s3/$key" "$S3_ENDPOINT/$S3_BUCKET/$key" || fail "cannot read s3://$S3_BUCKET/$key"
  done < <(s3_keys)
}

# The places that hold TEXT, one path per line: the stage's objects, the
# registry and the server's directory, both hosts' caches, the history.
places_holding() {
  local text=$1 d
  for d in "$T/dump" "$LAKE_HOME" "$T/srv" "$XDG_CACHE_HOME" "$B" "$XDG_STATE_HOME"; do
    [ ! -e "$d" ] || grep -rlaF --binary-files=text -- "$text" "$d" || true
  done
}

# The recipe, on the deployment set up: her rows put, read by both hosts,
# erased; then the scan.
recipe() {
  lake-catalog create-namespace crm
  lake-catalog create crm.docs 'email TEXT, phone TEXT, doc FILE'
  printf 'ERIN CONTRACT 8d1f0c\n' >"$T/e1.txt"
  printf 'ERIN PASSPORT 2b77aa\n' >"$T/e2.txt"
  printf 'zed invoice\n' >"$T/z.txt"
  lake-put -q --table crm.docs --column doc --set email="$EMAIL" --set phone="$PHONE" "$T/e1.txt" "$T/e2.txt" \
    >"$T/erin.files"
  lake-put -q --table crm.docs --column doc --set email=zed@example.com --set phone=555-0100 "$T/z.txt" >"$T/zed.file"
  lake-query -c "INSERT INTO crm.docs (email, phone) VALUES ('amy@example.com', '555-0199'), ('$EMAIL', '$PHONE')"
  local keys=() loc
  while IFS= read -r loc; do keys+=("${loc##*/}"); done < <(jq -r .location "$T/erin.files")
  assert_equal "${#keys[@]}" 2

  # host B reads every version; host A (the engineer) searches for her in
  # the shell, which keeps the input in its history
  assert_equal "$(host_b lake-query -c "SELECT count(*) FROM crm.docs WHERE email = '$EMAIL'")" 3
  assert_equal "$(host_b lake-query -c "SELECT phone FROM crm.docs AT (VERSION => 1) WHERE email = '$EMAIL' LIMIT 1")" \
    "$PHONE"
  shell 'prompt lake> ' "send SELECT count(*) FROM crm.docs WHERE email = '$EMAIL';\\r" 'prompt lake> ' 'send \x04' 'wait'
  # the scan sees what is there before the recipe: her values everywhere
  mkdir "$T/dump"
  "$STAGE_DUMP" "$T/dump"
  [ -n "$(places_holding "$EMAIL" | grep -v "^$T/dump")" ] || fail "the scan sees no registry or cache holding her email"
  [ -n "$(places_holding "ERIN CONTRACT")" ] || fail "the scan sees no object holding her file"
  rm -rf "$T/dump"
  lake-query -f jsonl -c "SELECT email, phone, doc FROM crm.docs WHERE email <> '$EMAIL' ORDER BY email" >"$T/others"

  # the recipe (lake(7), ERASURE)
  run --separate-stderr lake-query -c "DELETE FROM crm.docs WHERE email = '$EMAIL'"
  assert_equal "exit $status: $stderr" "exit 0: lake-query: crm.docs: 3 rows deleted"
  run --separate-stderr lake-catalog expire crm.docs --older-than 0
  assert_equal "exit $status" "exit 0"
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  [[ $stderr == "lake-catalog: gc: "*" objects, "*" removed;"* ]] || fail "$stderr"
  # another host forgets at its next read of the table (past its TTL;
  # purge-cache at once)
  assert_equal "$(LAKE_CATALOG_TTL=0 host_b lake-query -c "SELECT count(*) FROM crm.docs")" 2
  run --separate-stderr host_b lake-query -c "SELECT count(*) FROM crm.docs AT (VERSION => 1)"
  assert_equal "exit $status" "exit 67"
  # the shell's history is the engineer's to clear: it holds her email
  local history=$XDG_STATE_HOME/lake/query_history
  assert_equal "$(places_holding "$EMAIL")" "$history"
  rm "$history"

  # the scan: nothing of hers anywhere
  mkdir "$T/dump"
  "$STAGE_DUMP" "$T/dump"
  local text found=
  for text in "$EMAIL" "$PHONE" "ERIN CONTRACT" "ERIN PASSPORT" "${keys[@]}"; do
    found+=$(places_holding "$text" | sed "s|^|$text: |")
  done
  assert_equal "$found" ""
  # every other row and file intact, on both hosts
  assert_equal "$(lake-query -f jsonl -c "SELECT email, phone, doc FROM crm.docs ORDER BY email")" "$(cat "$T/others")"
  assert_equal "$(host_b lake-query -f jsonl -c "SELECT email, phone, doc FROM crm.docs ORDER BY email")" \
    "$(cat "$T/others")"
  lake-get "$(cat "$T/zed.file")" >"$T/z.got"
  cmp "$T/z.txt" "$T/z.got"
}

@test "erasure recipe, embedded: nothing of hers in the stage, the registry, either host's cache or the history" {
  embedded
  recipe
}

@test "erasure recipe, lake-metasrv with a file stage: nothing of hers in the stage, the server's directory, either host's cache or the history" {
  file_stage
  recipe
}

@test "erasure recipe, keyless clients on radosgw: nothing of hers in the bucket, the server's directory, either host's cache or the history" {
  keyless
  recipe
}
