#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# DELETE and UPDATE of lake tables (issue 28): copy-on-write of the
# segments holding a changed row, committed as one version with the
# `rewrite` action; a lost race runs the statement again on the new
# version; a killed statement changes nothing.  Embedded, and remote
# with the stage on S3 (tests/run).

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }

setup() {
  source_setup
  lake-catalog create-namespace d
  # k 0..39 in 4 segments of 10 (one import each), s = "s<k>"
  lake-catalog create d.t 'k INTEGER, s TEXT'
  local j
  for j in 0 1 2 3; do
    awk -v j="$j" 'BEGIN { for (k = 10 * j; k < 10 * j + 10; k++) printf "{\"k\":%d,\"s\":\"s%d\"}\n", k, k }' |
      lake-query -q --import d.t
  done
}

teardown() {
  source_teardown
}

# the version and each segment's rows of d.t
shape() {
  lake-catalog resolve d.t | jq -c '[.version, [.segments[].rows]]'
}

locations() {
  lake-catalog resolve d.t "$@" | jq -r '.segments[].location'
}

@test "DELETE removes the matching rows as one version: only the segments holding one are read again and rewritten" {
  local before
  before=$(locations)
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "DELETE FROM d.t WHERE k BETWEEN 12 AND 14 OR k = 25"
  assert_equal "exit $status" "exit 0"
  assert_equal "$output" ""
  grep -qx "lake-query: d.t: 4 rows deleted" <<<"$stderr" || fail "no count: $stderr"
  grep -q "^trace: source rewrite d.t expected=4 -> version=5" <<<"$stderr" || fail "no rewrite traced: $stderr"
  run lake-query -c "SELECT count(*), sum(k), group_concat(s, ',') FILTER (WHERE k BETWEEN 11 AND 26) FROM d.t"
  assert_output "$(printf '36\t716\ts11,s15,s16,s17,s18,s19,s20,s21,s22,s23,s24,s26')"
  # the untouched segments are the same objects, the two touched replaced
  # by one of the rows they keep
  assert_equal "$(shape)" '[5,[10,10,16]]'
  assert_equal "$(locations | head -2)" "$(sed -n '1p;4p' <<<"$before")"
  # version 4 keeps its rows
  assert_equal "$(locations --version 4)" "$before"
  # a range prunes what the DELETE reads: one segment of three
  run --separate-stderr env LAKE_TRACE=1 lake-query -c "DELETE FROM d.t WHERE k >= 35"
  assert_equal "exit $status" "exit 0"
  grep -q "^trace: query scan d.t v5: 1 of 3 segments kept" <<<"$stderr" || fail "not pruned: $stderr"
  grep -qx "lake-query: d.t: 5 rows deleted" <<<"$stderr" || fail "$stderr"
  assert_equal "$(shape)" '[6,[10,16,5]]'
  # nothing matched: no version, nothing said
  run --separate-stderr lake-query -c "DELETE FROM d.t WHERE k > 1000"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" ""
  assert_equal "$(shape)" '[6,[10,16,5]]'
  # -q keeps the count to itself
  run --separate-stderr lake-query -q -c "DELETE FROM d.t WHERE k = 0"
  assert_equal "$stderr" ""
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 30
}

@test "UPDATE writes the changed rows in place of the old ones; a value its column refuses changes nothing (65)" {
  run --separate-stderr lake-query -c "UPDATE d.t SET s = upper(s) || '!' WHERE k % 10 = 3"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-query: d.t: 4 rows updated"
  assert_equal "$(lake-query -c "SELECT group_concat(s, ',') FROM (SELECT s FROM d.t WHERE s GLOB 'S*' ORDER BY k)")" \
    "S3!,S13!,S23!,S33!"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(k), count(DISTINCT k) FROM d.t')" "$(printf '40\t780\t40')"
  assert_equal "$(shape)" '[5,[40]]'
  # an UPDATE of one segment rewrites that one only
  lake-query -q -c "UPDATE d.t SET k = k + 1000 WHERE s = 'S13!'"
  assert_equal "$(lake-query -c "SELECT k FROM d.t WHERE s = 'S13!'")" 1013
  # a text where an integer goes: refused, nothing changed
  run --separate-stderr lake-query -c "UPDATE d.t SET k = 'abc' WHERE k = 1"
  assert_equal "exit $status" "exit 65"
  [[ $stderr == "lake-query: "*k* ]] || fail "$stderr"
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 6
  assert_equal "$(lake-query -c 'SELECT k FROM d.t WHERE k = 1')" 1
  # a rowid is not the user's to set
  run --separate-stderr lake-query -c "UPDATE d.t SET rowid = 7 WHERE k = 1"
  assert_equal "exit $status" "exit 64"
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 6
}

@test "DELETE without WHERE empties the table as a version of no segments; the versions before keep their rows" {
  run --separate-stderr lake-query -c "DELETE FROM d.t"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-query: d.t: 40 rows deleted"
  assert_equal "$(shape)" '[5,[]]'
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 0
  assert_equal "$(lake-catalog resolve d.t --version 4 | jq '[.segments[].rows] | add')" 40
  lake-query -q -c "INSERT INTO d.t VALUES (1, 'again')"
  assert_equal "$(lake-query -c 'SELECT * FROM d.t')" "$(printf '1\tagain')"
}

@test "refused, changing nothing: DELETE or UPDATE between BEGIN and COMMIT (64), --explain of one (64)" {
  run --separate-stderr lake-query -c "BEGIN; DELETE FROM d.t WHERE k = 1; COMMIT"
  assert_equal "exit $status" "exit 64"
  [[ $stderr == *"not between BEGIN and COMMIT"* ]] || fail "$stderr"
  run --separate-stderr lake-query --explain -c "DELETE FROM d.t WHERE k = 1"
  assert_equal "exit $status" "exit 64"
  assert_equal "$(shape)" '[4,[10,10,10,10]]'
}

# hold NAME SQL: run SQL in the background, held before its commit (its
# segments uploaded) until release NAME; its pid in HELD, its stderr in
# $T/NAME.err
hold() {
  LAKE_TEST_REWRITE_HOLD=$T/$1 LAKE_TRACE=1 lake-query -c "$2" >/dev/null 2>"$T/$1.err" &
  HELD=$!
  held_wait "$T/$1" "$HELD" "$T/$1.err"
}

release() {
  held_release "$T/$1" "$HELD"
  [ "$HELD_STATUS" = 0 ] || fail "the held statement failed: $(cat "$T/$1.err")"
}

@test "an append made while a DELETE runs commutes with it; a DELETE that lost a race for a segment runs again on the new version" {
  # the append lands between the DELETE's read and its commit: it stands
  hold a "DELETE FROM d.t WHERE k IN (1, 2)"
  lake-query -q -c "INSERT INTO d.t VALUES (100, 'new'), (2, 'new two')"
  release a
  ! grep -q "running the statement again" "$T/a.err" || fail "an append made the DELETE run again: $(cat "$T/a.err")"
  grep -qx "lake-query: d.t: 2 rows deleted" "$T/a.err" || fail "$(cat "$T/a.err")"
  assert_equal "$(lake-query -c "SELECT group_concat(k || ':' || s, ',') FROM (SELECT * FROM d.t WHERE k < 4 OR k >= 100 ORDER BY k)")" \
    "0:s0,2:new two,3:s3,100:new"
  # another DELETE rewrites the segment the held one read: the held one
  # loses, reads the new version and deletes what it matches there
  hold b "DELETE FROM d.t WHERE k IN (4, 5) OR s = 'new two'"
  run --separate-stderr lake-query -c "DELETE FROM d.t WHERE k = 6"
  assert_equal "exit $status" "exit 0"
  release b
  grep -q "^trace: query .*(attempt 1); running the statement again" "$T/b.err" || fail "no second run: $(cat "$T/b.err")"
  grep -qx "lake-query: d.t: 3 rows deleted" "$T/b.err" || fail "$(cat "$T/b.err")"
  assert_equal "$(lake-query -c "SELECT group_concat(k, ',') FROM (SELECT k FROM d.t WHERE k < 10 OR k >= 100 ORDER BY k)")" \
    "0,3,7,8,9,100"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 36
}

@test "SIGKILL of a DELETE after its uploads, before its commit: the table is the version before; gc removes what it uploaded" {
  local before
  before=$(locations)
  hold go "DELETE FROM d.t WHERE k < 15"
  kill -KILL "$HELD"
  wait "$HELD" 2>/dev/null || true
  assert_equal "$(shape)" '[4,[10,10,10,10]]'
  assert_equal "$(lake-query -c 'SELECT count(*), sum(k) FROM d.t')" "$(printf '40\t780')"
  # what it uploaded (the rest of the second segment) is referenced by no version
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  assert_equal "$(wc -l <<<"$output")" 1
  grep -qvxF -f <(printf '%s\n' "$before") <(cut -f1 <<<"$output") || fail "gc removed a live segment: $output"
  assert_equal "$(locations)" "$before"
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t')" 40
}

@test "a user token without modify on the table may not DELETE or UPDATE (77), and nothing is stored" {
  [ "$LAKE_TEST_SOURCE" != local ] || skip "roles need a metadata server"
  local alice
  alice=$(metasrv_token user alice)
  lake-catalog grant read ON d TO alice
  lake-catalog grant write ON d TO alice
  run --separate-stderr env LAKE_TOKEN_FILE="$alice" lake-query -c "DELETE FROM d.t WHERE k = 1"
  assert_equal "exit $status" "exit 77"
  [[ $stderr == *"alice holds no modify privilege on d.t"* ]] || fail "$stderr"
  run --separate-stderr env LAKE_TOKEN_FILE="$alice" lake-query -c "UPDATE d.t SET s = 'x' WHERE k = 1"
  assert_equal "exit $status" "exit 77"
  assert_equal "$(shape)" '[4,[10,10,10,10]]'
  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_equal "$output" ""
}

# --- erasure (issue 28 part 4) --------------------------------------------

# Every object of the stage as a location, sorted: the bucket's keys asked
# of radosgw itself, or the files below a file:// stage.
stage_all() {
  local url
  url=$(lake-catalog whoami | sed -n 's/^stage=//p')
  case $url in
    s3://*) s3_keys | sed "s|^|s3://$S3_BUCKET/|" ;;
    file://*) find "${url#file://}" -type f ! -name '.tmp-*' | sort | sed 's|^|file://|' ;;
    *) fail "stage? $url" ;;
  esac
}

# What the object store itself answers for a location: the HTTP status of
# a signed HEAD on S3 (curl -I: radosgw waits long on a GET of a missing
# key), 200 or 404 for a file of a file:// stage.
stage_status() {
  case $1 in
    s3://*) curl -sS -o /dev/null -I -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
              --user "$S3_KEY:$S3_SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$S3_ENDPOINT$(s3_path "$1")" ;;
    file://*) if [ -e "${1#file://}" ]; then echo 200; else echo 404; fi ;;
  esac
}

@test "erasure: put files with --table, DELETE the row of one, expire, gc: that object is gone from the stage (S3: 404), every other one intact, the tables as before" {
  lake-catalog create d.docs 'path TEXT, doc FILE'
  local i
  for i in 1 2 3 4; do echo "document $i" >"$T/doc$i"; done
  lake-put -q --table d.docs --column doc --set path=a "$T/doc1" "$T/doc2" "$T/doc3" >"$T/put"
  lake-put -q --table d.docs --column doc --set path=b "$T/doc4" >>"$T/put"
  local secret seg1
  secret=$(sed -n 2p "$T/put" | json_field location)
  seg1=$(lake-catalog resolve d.docs --version 1 | jq -r '.segments[].location')
  assert_equal "$(stage_status "$secret")" 200
  lake-query -f jsonl -c "SELECT path, doc FROM d.docs WHERE fl_get_file_name(doc) <> 'doc2' ORDER BY 2" >"$T/kept"
  run --separate-stderr lake-query -c "DELETE FROM d.docs WHERE fl_get_file_name(doc) = 'doc2'"
  assert_equal "$stderr" "lake-query: d.docs: 1 row deleted"
  local before
  before=$(stage_all)
  assert_equal "$(lake-catalog expire d.docs --older-than 0)" "expired 3 versions of d.docs"
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  # exactly the deleted row's object and the segment that held the row
  assert_equal "$(cut -f1 <<<"$output" | sort)" "$(printf '%s\n' "$secret" "$seg1" | sort)"
  assert_equal "$(stage_status "$secret")" 404
  assert_equal "$(stage_status "$seg1")" 404
  run --separate-stderr lake-get "$secret"
  assert_equal "$status" 66
  # every other object is where it was
  assert_equal "$(stage_all)" "$(grep -vxF -e "$secret" -e "$seg1" <<<"$before")"
  # the current tables answer as before, every FILE verified by lake-get
  assert_equal "$(lake-query -f jsonl -c 'SELECT path, doc FROM d.docs ORDER BY 2')" "$(cat "$T/kept")"
  mkdir "$T/out"
  lake-query -f jsonl -c "SELECT doc FROM d.docs" | lake-get -o "$T/out"
  assert_equal "$(cat "$T/out/doc1" "$T/out/doc3" "$T/out/doc4")" "$(printf 'document 1\ndocument 3\ndocument 4')"
  assert_equal "$(lake-query -c 'SELECT count(*), sum(k) FROM d.t')" "$(printf '40\t780')"
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.docs AT (VERSION => 1)"
  assert_error lake-query 67 "d.docs: version 1 expired"
}
