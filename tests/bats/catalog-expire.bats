#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Retention and erasure (issue 28 part 4), run against the source
# LAKE_TEST_SOURCE names (helpers/source.bash): `lake-catalog expire`
# marks the versions whose next version is older than an age (the current
# one never); history shows when each expired; an expired version is
# refused whole with exit 67 (resolve --version, AT (VERSION => N), AT
# (TIMESTAMP => …), rollback --to-version), also by a host that cached
# it; gc expires with the deployment's retention first (lake.conf
# retention, lake-metasrv serve --retention) and then removes what only
# expired versions referred to.  The erasure recipe: the file of a
# deleted row is gone from the stage, every other object intact, the
# table as before.  No test waits on a clock: ages are 0 (everything
# before the current version) or a day (nothing), or versions are dated
# in the past in the registry itself.

load helpers/common
load helpers/source

setup_file() { source_setup_file; }
teardown_file() { source_teardown_file; }
setup() { source_setup; }
teardown() { source_teardown; }

# d.t with versions 0 (create) to 3, one row each append.
three_versions() {
  lake-catalog create-namespace d
  lake-catalog create d.t 'k INTEGER'
  lake-query -c "INSERT INTO d.t VALUES (1)" -c "INSERT INTO d.t VALUES (2)" -c "INSERT INTO d.t VALUES (3)"
}

# Make the deployment's retention 0 (every version but the current one
# expires at gc): lake.conf in the embedded lake, serve --retention for a
# server (restarted on its port).
retention_zero() {
  case $LAKE_TEST_SOURCE in
    local) printf 'retention = 0\n' >"$T/lake.conf"; export LAKE_CONFIG="$T/lake.conf" ;;
    *) metasrv_stop; metasrv_start "$T/srv" "$METASRV_PORT" --retention 0 ;;
  esac
}

# Run SQL on the registry behind the source (SQLite file or PostgreSQL
# URL): how a test dates versions in the past without waiting for a clock.
@test "expire --older-than an age: a version expires when the next one is that old; AT (TIMESTAMP => …) on one is 67" {
  three_versions
  # versions 0 and 1 committed in 2020, 2 in 2021, 3 now
  registry_sql "UPDATE versions SET committed_at = CASE version WHEN 0 THEN '2020-01-01T00:00:00Z'
    WHEN 1 THEN '2020-01-02T00:00:00Z' ELSE '2021-01-01T00:00:00Z' END WHERE version < 3"
  # 0 (1 is from 2020) and 1 (2 is from 2021) expire; 2 does not (3 is new)
  assert_equal "$(lake-catalog expire d.t --older-than 1d)" "expired 2 versions of d.t"
  assert_equal "$(lake-catalog history d.t | awk -F'\t' '{print $1 ":" ($10 == "-" ? "live" : "expired")}' | paste -sd' ')" \
    "0:expired 1:expired 2:live 3:live"
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => '2020-06-01T00:00:00Z')"
  assert_error lake-query 67 "d.t: version 1 expired at "
  assert_equal "$(lake-query -c "SELECT count(*) FROM d.t AT (TIMESTAMP => '2021-06-01T00:00:00Z')")" 2
  # a year back: 2 expires only when 3 is a year old, not now
  assert_equal "$(lake-catalog expire d.t --older-than 365d)" "expired 0 versions of d.t"
}

@test "expire --older-than: the versions whose next one is older expire, never the current; history shows when" {
  three_versions
  assert_equal "$(lake-catalog expire d.t --older-than 1d)" "expired 0 versions of d.t"
  assert_equal "$(lake-catalog history d.t | cut -f1,10)" "$(printf '0\t-\n1\t-\n2\t-\n3\t-')"
  run --separate-stderr lake-catalog expire d.t --older-than 0
  assert_clean_success
  assert_output "expired 3 versions of d.t"
  # marks are never taken back nor made twice
  assert_equal "$(lake-catalog expire d.t --older-than 0)" "expired 0 versions of d.t"
  run --separate-stderr lake-catalog -H history d.t
  assert_equal "${lines[0]}" "$(printf 'version\tcommitted_at\tprincipal\toperation\trows_added\trows_removed\tsegments\trows\tbytes\texpired_at')"
  assert_equal "$(cut -f1 <<<"$output" | tail -n +2 | paste -sd,)" "0,1,2,3"
  assert_equal "$(tail -n 1 <<<"$output" | cut -f10)" "-"
  local v
  for v in 1 2 3; do
    [[ $(sed -n "$((v + 1))p" <<<"$output" | cut -f10) =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]] ||
      fail "version $((v - 1)) has no expired_at: $output"
  done
  assert_equal "$(lake-catalog --json history d.t | jq -c '[.[] | .expired_at != null]')" "[true,true,true,false]"
  # the current table answers as before
  assert_equal "$(lake-query -c 'SELECT group_concat(k) FROM d.t')" "1,2,3"
  lake-query -c "INSERT INTO d.t VALUES (4)"
  assert_equal "$(lake-catalog expire d.t --older-than 0)" "expired 1 version of d.t"
}

@test "an expired version is refused whole (67, one line): resolve --version, AT (VERSION => N), rollback" {
  three_versions
  assert_equal "$(lake-query -c 'SELECT count(*) FROM d.t AT (VERSION => 1)')" 1
  lake-catalog expire d.t --older-than 0 >/dev/null
  run --separate-stderr lake-catalog resolve d.t --version 1
  assert_error lake-catalog 67 "d.t: version 1 expired at " "past the retention"
  assert_output ""
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (VERSION => 2)"
  assert_error lake-query 67 "d.t: version 2 expired at "
  assert_output ""
  run --separate-stderr lake-catalog rollback d.t --to-version 1
  assert_error lake-catalog 67 "d.t: version 1 expired at "
  assert_output ""
  # nothing changed: the current version still 3; rollback to it works
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 3
  assert_equal "$(lake-catalog rollback d.t --to-version 3)" "rolled back d.t to version 3: version 4"
  # a version that never was is still 66, not 67
  run --separate-stderr lake-catalog resolve d.t --version 99
  assert_error lake-catalog 66
}

@test "a cached registration of a version never outlives its expiry: the host that expires, and another after its TTL" {
  three_versions
  local other="$T/other-cache"
  # both hosts cache version 1
  lake-catalog resolve d.t --version 1 >/dev/null
  LAKE_CACHE_DIR=$other lake-catalog resolve d.t --version 1 >/dev/null
  LAKE_CACHE_DIR=$other run --separate-stderr lake-catalog --offline resolve d.t --version 1
  assert_equal "exit $status" "exit 0"
  # this host expires: it never serves version 1 again
  lake-catalog expire d.t --older-than 0 >/dev/null
  run --separate-stderr lake-catalog --max-age 100000 resolve d.t --version 1
  assert_error lake-catalog 67
  run --separate-stderr lake-query -c "SELECT count(*) FROM d.t AT (VERSION => 1)"
  assert_error lake-query 67
  # the other host asks once its TTL passed (max-age 0), and then
  # forgets the registration (even --offline has none to serve)
  LAKE_CACHE_DIR=$other run --separate-stderr lake-catalog --max-age 0 resolve d.t --version 1
  assert_error lake-catalog 67
  LAKE_CACHE_DIR=$other run --separate-stderr lake-catalog --offline resolve d.t --version 1
  assert_error lake-catalog 69 "not cached"
}

@test "expire without a table expires every table's versions; bad input: an unknown table 66, a bad age 64, --offline 64" {
  three_versions
  lake-catalog create d.u 'k INTEGER'
  lake-query -c "INSERT INTO d.u VALUES (1)"
  assert_equal "$(lake-catalog expire --older-than 0)" "expired 4 versions"
  run --separate-stderr lake-catalog expire d.nope --older-than 0
  assert_error lake-catalog 66 "d.nope"
  local bad
  for bad in -1 1.5 1w x ""; do
    run --separate-stderr lake-catalog expire d.t --older-than "$bad"
    assert_error lake-catalog 64 "--older-than"
  done
  run --separate-stderr lake-catalog expire d.t --offline
  assert_error lake-catalog 64 "not --offline"
  run --separate-stderr lake-catalog expire d.t d.u
  assert_error lake-catalog 64
}

@test "gc expires with the deployment's retention first: the default keeps young versions, retention 0 expires them" {
  three_versions
  lake-query -c "DELETE FROM d.t WHERE k = 2"
  local old
  old=$(lake-catalog resolve d.t --version 3 | jq -r '.segments[].location' | sort)
  # the default retention (7d): nothing expires, nothing of version 3 goes
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  assert_output ""
  assert_equal "$(lake-catalog history d.t | cut -f10 | sort -u)" "-"
  retention_zero
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  [[ $stderr == "lake-catalog: gc: 4 versions expired; 1 object, "*" bytes removed; "* ]] || fail "$stderr"
  # the segment the DELETE rewrote (the row k = 2's) is the one removed
  local removed
  removed=$(cut -f1 <<<"$output")
  grep -qxF "$removed" <<<"$old" || fail "removed $removed, not a segment of version 3"
  run --separate-stderr lake-get "$removed"
  assert_equal "$status" 66
  assert_equal "$(lake-query -c 'SELECT group_concat(k) FROM d.t')" "1,3"
  # a dry run expires nothing
  lake-query -c "INSERT INTO d.t VALUES (5)"
  lake-catalog -q gc --dry-run --grace 0 >/dev/null
  assert_equal "$(lake-catalog history d.t | tail -n 1 | cut -f1,10)" "$(printf '5\t-')"
  assert_equal "$(lake-catalog history d.t | sed -n 5p | cut -f10)" "-"
}

@test "erasure: put files with --table, DELETE the row of one, expire, gc: that file is gone, every other object intact, the table as before" {
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'path TEXT, doc FILE'
  local i
  for i in 1 2 3 4; do echo "scan $i" >"$T/s$i.txt"; done
  lake-put -q --table docs.scans --column doc --set path=keep/1 "$T/s1.txt" >"$T/put1"
  lake-put -q --table docs.scans --column doc --set path=secret "$T/s2.txt" "$T/s3.txt" >"$T/put2"
  lake-put -q --table docs.scans --column doc --set path=keep/4 "$T/s4.txt" >"$T/put4"
  local secret
  secret=$(sed -n 1p "$T/put2" | json_field location)
  lake-query -c "UPDATE docs.scans SET path = 'keep/3' WHERE fl_get_file_name(doc) = 's3.txt'" 2>/dev/null
  lake-query -f jsonl -c "SELECT path, doc FROM docs.scans WHERE path LIKE 'keep/%' ORDER BY path" >"$T/before"
  run --separate-stderr lake-query -c "DELETE FROM docs.scans WHERE path = 'secret'"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-query: docs.scans: 1 row deleted"
  # within the retention the file stays: an older version still holds it
  lake-catalog -q gc --grace 0 >/dev/null
  lake-get "$secret" >/dev/null || fail "gc removed a file an unexpired version refers to"
  lake-catalog expire docs.scans --older-than 0 >/dev/null
  run --separate-stderr lake-catalog gc --grace 0
  assert_equal "exit $status" "exit 0"
  grep -qxF "$secret" <<<"$(cut -f1 <<<"$output")" || fail "gc did not remove the deleted row's file: $output"
  # gone from the stage itself
  local dir
  dir=$(source_stage_dir)
  [ ! -e "${secret#file://}" ] || fail "still in the stage: $secret"
  run --separate-stderr lake-get "$secret"
  assert_equal "$status" 66
  # every other FILE intact (lake-get verifies each SHA-256), the table as before
  assert_equal "$(lake-query -f jsonl -c "SELECT path, doc FROM docs.scans ORDER BY path")" "$(cat "$T/before")"
  mkdir "$T/out"
  lake-query -f jsonl -c "SELECT doc FROM docs.scans" | lake-get -o "$T/out"
  assert_equal "$(cat "$T/out/s1.txt" "$T/out/s3.txt" "$T/out/s4.txt")" "$(printf 'scan 1\nscan 3\nscan 4')"
  # exactly the current version's objects are left: its 3 files and its segments
  local want
  want=$( (lake-query -f jsonl -c "SELECT doc FROM docs.scans" | jq -r .doc.location
           lake-catalog resolve docs.scans | jq -r '.segments[].location') | sed 's|^file://||' | sort)
  assert_equal "$(find "$dir/files" "$dir/tables" -type f ! -name '.tmp-*' | sort)" "$want"
}

# registry_has TEXT: how many places of the registry's stored bytes hold
# TEXT: the SQLite file and its WAL, byte by byte; PostgreSQL's rows as
# pg_dump writes them (its dead row versions are VACUUM's to remove).
registry_has() {
  case $REGISTRY in
    postgres*) pg_dump --data-only "$REGISTRY" | grep -acF -- "$1" || true ;;
    *) cat "$REGISTRY" "$REGISTRY-wal" 2>/dev/null | grep -acF -- "$1" || true ;;
  esac
}

@test "erasure reaches the registry: after DELETE, expire and gc no statistic or location of the erased rows and file is left, nor of a dropped table's (issue 41)" {
  lake-catalog create-namespace crm
  lake-catalog create crm.docs 'email TEXT, doc FILE'
  printf 'erin document\n' >"$T/e.txt"
  printf 'zed document\n' >"$T/z.txt"
  lake-put -q --table crm.docs --column doc --set email=erin@example.com "$T/e.txt" >"$T/pute"
  lake-put -q --table crm.docs --column doc --set email=zed@example.com "$T/z.txt" >/dev/null
  lake-query -c "INSERT INTO crm.docs (email) VALUES ('amy@example.com'), ('erin@example.com')"
  local key
  key=$(json_field location <"$T/pute")
  key=${key##*/}
  # the scan finds what is there: her email (a segment's min) and her file
  [ "$(registry_has erin@example.com)" -gt 0 ] && [ "$(registry_has "$key")" -gt 0 ] ||
    fail "the scan does not see what the registry holds"
  lake-query -c "DELETE FROM crm.docs WHERE email = 'erin@example.com'" 2>/dev/null
  lake-catalog expire crm.docs --older-than 0 >/dev/null
  lake-catalog gc --grace 0 >/dev/null 2>&1
  assert_equal "email: $(registry_has erin@example.com), file: $(registry_has "$key")" "email: 0, file: 0"
  # what stays answers as before: the rows, every version's history
  assert_equal "$(lake-query -c 'SELECT email FROM crm.docs ORDER BY 1' | paste -sd' ')" "amy@example.com zed@example.com"
  assert_equal "$(lake-catalog history crm.docs | cut -f1 | paste -sd' ')" "0 1 2 3 4"
  # (rows added, removed, in the version; segments; bytes)
  assert_equal "$(lake-catalog history crm.docs | cut -f5,6,8 | tr '\t' , | paste -sd' ')" "0,0,0 1,0,1 1,0,2 2,0,4 0,2,2"
  # a dropped table's values and locations go with it
  lake-catalog create crm.old 'email TEXT'
  lake-query -c "INSERT INTO crm.old VALUES ('olga@example.com')"
  [ "$(registry_has olga@example.com)" -gt 0 ] || fail "the scan does not see olga"
  lake-catalog drop crm.old
  assert_equal "olga: $(registry_has olga@example.com)" "olga: 0"
}

@test "expire is a change: refused to a user-role token without modify on the table (77), allowed to query-service" {
  [ "$LAKE_TEST_SOURCE" != local ] || skip "the embedded source's caller is admin"
  three_versions
  local user svc
  user=$(metasrv_token user alice)
  svc=$(metasrv_token query-service qs)
  LAKE_TOKEN_FILE=$user run --separate-stderr lake-catalog expire d.t --older-than 0
  assert_error lake-catalog 77 "alice holds no modify privilege on d.t"
  assert_equal "$(lake-catalog history d.t | cut -f10 | sort -u)" "-"
  assert_equal "$(LAKE_TOKEN_FILE=$svc lake-catalog expire d.t --older-than 0)" "expired 3 versions of d.t"
}

@test "expire racing 4 appending clients: every acknowledged append is there, the current version never expires, and reads stay whole" {
  lake-catalog create-namespace d
  lake-catalog create d.t 'c INTEGER, i INTEGER'
  local c pids=()
  for c in 1 2 3 4; do
    (for i in 1 2 3 4 5; do lake-query -q -c "INSERT INTO d.t VALUES ($c, $i)" || exit 1; done) 2>"$T/err.$c" &
    pids+=($!)
  done
  local n=0
  while kill -0 "${pids[@]}" 2>/dev/null; do
    lake-catalog -q expire d.t --older-than 0 >/dev/null || fail "expire failed during the appends"
    lake-query -c "SELECT count(*) FROM d.t" >/dev/null || fail "a read of the current version failed"
    n=$((n + 1))
  done
  for c in "${pids[@]}"; do wait "$c" || fail "an appending client failed: $(cat "$T"/err.*)"; done
  echo "# $n expire runs during the appends"
  assert_equal "$(lake-query -c 'SELECT count(*), count(DISTINCT c * 10 + i) FROM d.t')" "$(printf '20\t20')"
  lake-catalog expire d.t --older-than 0 >/dev/null
  assert_equal "$(lake-catalog history d.t | awk -F'\t' '$10 == "-" {print $1}')" 20
  assert_equal "$(lake-catalog history d.t | awk -F'\t' '$10 != "-"' | wc -l)" 20
}
