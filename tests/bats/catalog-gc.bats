#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-catalog gc, run against the source LAKE_TEST_SOURCE names
# (helpers/source.bash): what is unreferenced (a put without --table, the
# segments and files of a dropped table) is listed by --dry-run and removed
# without it, everything referenced stays readable; the grace period keeps
# young objects; leftovers of interrupted puts go too, symlinks are never
# followed; a user-role token gets 77 and a source that is down 69, and
# neither removes anything.  One case runs the stage on S3 (radosgw,
# helpers/rgw.bash).

load helpers/common
load helpers/source

# the S3 case runs the embedded source with LAKE_STAGE on radosgw
setup_file() {
  source_setup_file
  [ "${LAKE_TEST_SOURCE:-local}" != local ] || rgw_cluster_start
}

teardown_file() { source_teardown_file; }

setup() {
  source_setup
}

teardown() {
  source_teardown
}

# Every regular file below the stage, sorted, as file:// locations.
stage_locations() {
  find "$GC_STAGE" -type f 2>/dev/null | sort | sed 's|^|file://|'
}

# A lake with referenced and unreferenced objects:
#   LOOSE     a put without --table (unreferenced)
#   KEPT_FILE a FILE in docs.papers (referenced), KEPT_SEGS its segments
#   DROPPED   the FILE and segments of docs.gone, dropped afterwards
make_garbage() {
  GC_STAGE=$(source_stage_dir)
  [[ $GC_STAGE == /* ]] || fail "no stage directory: $GC_STAGE"
  LOOSE=$(echo loose | lake-put | json_field location)
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, pdf FILE'
  lake-catalog create docs.gone 'title TEXT, pdf FILE'
  echo "kept bytes" >"$T/kept.txt"
  KEPT_FILE=$(lake-put --table docs.papers --column pdf --set title=kept "$T/kept.txt" | json_field location)
  lake-query -c "insert into docs.papers values ('second', NULL)"
  echo "gone bytes" >"$T/gone.txt"
  local gone_file
  gone_file=$(lake-put --table docs.gone --column pdf --set title=gone "$T/gone.txt" | json_field location)
  local gone_segs
  gone_segs=$(lake-catalog resolve docs.gone | jq -r '.segments[].location')
  KEPT_SEGS=$(lake-catalog resolve docs.papers | jq -r '.segments[].location' | sort)
  [ "$(wc -l <<<"$KEPT_SEGS")" -eq 2 ] || fail "expected two segments after the append: $KEPT_SEGS"
  lake-catalog drop docs.gone
  DROPPED=$(printf '%s\n' "$gone_file" "$gone_segs" | sort)
  GARBAGE=$(printf '%s\n' "$LOOSE" "$DROPPED" | sort)
  REFERENCED=$(printf '%s\n' "$KEPT_FILE" "$KEPT_SEGS" | sort)
}

# stdout of gc as location<TAB>size: the locations, sorted.
gc_locations() {
  cut -f1 <<<"$output" | sort
}

@test "gc --dry-run --grace 0 lists exactly the unreferenced objects with their sizes and removes nothing" {
  make_garbage
  local before
  before=$(stage_locations)
  assert_equal "$before" "$(printf '%s\n' "$GARBAGE" "$REFERENCED" | sort)"

  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  assert_equal "$(gc_locations)" "$GARBAGE"
  # the size column is the object's size
  assert_line "$(printf '%s\t%s' "$LOOSE" 6)"
  assert_equal "$stderr" "lake-catalog: gc: 3 objects, $(cut -f2 <<<"$output" | paste -sd+ | bc) bytes would be removed; 3 kept (referenced), 0 kept (younger than the grace)"
  assert_equal "$(stage_locations)" "$before"

  # -H adds a header; --json prints an array of objects; -q drops the summary
  run --separate-stderr lake-catalog -H -q gc --dry-run --grace 0
  assert_clean_success
  assert_line --index 0 $'location\tsize'
  run --separate-stderr lake-catalog --json -q gc --dry-run --grace 0
  assert_clean_success
  assert_equal "$(jq -r '.[].location' <<<"$output" | sort)" "$GARBAGE"
  assert_equal "$(jq -r --arg l "$LOOSE" '.[] | select(.location == $l) | .size' <<<"$output")" 6
  assert_equal "$(stage_locations)" "$before"
}

@test "gc --grace 0 removes exactly the unreferenced objects; the tables stay readable" {
  make_garbage
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(gc_locations)" "$GARBAGE"
  [[ $stderr == "lake-catalog: gc: 3 objects, "*" bytes removed; 3 kept (referenced), 0 kept (younger than the grace)" ]] ||
    fail "summary: $stderr"
  assert_equal "$(stage_locations)" "$REFERENCED"

  # everything referenced is still readable
  run --separate-stderr lake-get "$KEPT_FILE"
  assert_success
  assert_output "kept bytes"
  run --separate-stderr lake-query -f csv -c "select title, fl_get_size(pdf) from docs.papers order by title"
  assert_success
  assert_output $'kept,11\nsecond,'
  run --separate-stderr lake-get "$LOOSE"
  assert_failure 66

  # a second run finds nothing more
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_output ""
  assert_equal "$stderr" "lake-catalog: gc: 0 objects, 0 bytes removed; 3 kept (referenced), 0 kept (younger than the grace)"
}

@test "the gc action on a file:// stage: pages of one object walk the whole stage in key order; together they remove exactly the unreferenced" {
  [ "$LAKE_TEST_SOURCE" != local ] || skip "an action of lake-metasrv"
  make_garbage
  metasrv_gc_pages "$LAKE_TOKEN_FILE"
  assert_equal "$GC_CALLS calls, $GC_KEPT kept" "6 calls, 3 kept"
  assert_equal "$GC_OBJECTS" "$GARBAGE"
  assert_equal "$(stage_locations)" "$REFERENCED"
}

@test "gc keeps unreferenced objects younger than the grace (default 86400 s)" {
  make_garbage
  local old
  old=$(echo old | lake-put | json_field location)
  touch -d '2 days ago' "${old#file://}"
  run --separate-stderr lake-catalog gc
  assert_success
  assert_output "$(printf '%s\t4' "$old")"
  assert_equal "$stderr" "lake-catalog: gc: 1 object, 4 bytes removed; 3 kept (referenced), 3 kept (younger than the grace)"
  assert_equal "$(stage_locations)" "$(printf '%s\n' "$GARBAGE" "$REFERENCED" | sort)"

  # a referenced object is kept however old it is
  touch -d '2 days ago' "${KEPT_FILE#file://}"
  run --separate-stderr lake-catalog -q gc --grace 3600
  assert_clean_success
  assert_output ""
  [ -f "${KEPT_FILE#file://}" ]
}

@test "gc --grace takes durations: 1d, 12h, 30m, 45s or plain seconds" {
  make_garbage
  local old young
  old=$(echo old | lake-put | json_field location)
  young=$(echo young | lake-put | json_field location)
  touch -d '13 hours ago' "${old#file://}"
  touch -d '11 hours ago' "${young#file://}"
  # the make_garbage objects are new: only "old" is older than 12 h
  run --separate-stderr lake-catalog gc --dry-run --grace 12h
  assert_success
  assert_output "$(printf '%s	4' "$old")"
  assert_equal "$stderr" "lake-catalog: gc: 1 object, 4 bytes would be removed; 3 kept (referenced), 4 kept (younger than the grace)"
  local g
  for g in 1d 86400 1440m; do
    run --separate-stderr lake-catalog -q gc --dry-run --grace "$g"
    assert_clean_success
    assert_output ""
  done
  for g in 660m 39600s 39600; do # 11 h: both
    run --separate-stderr lake-catalog -q gc --dry-run --grace "$g"
    assert_clean_success
    assert_equal "${#lines[@]}" 2
  done
  # one byte, one object
  local one
  one=$(printf x | lake-put | json_field location)
  touch -d '2 days ago' "${one#file://}"
  run --separate-stderr lake-catalog gc --grace 1d
  assert_success
  assert_output "$(printf '%s	1' "$one")"
  assert_equal "$stderr" "lake-catalog: gc: 1 object, 1 byte removed; 3 kept (referenced), 5 kept (younger than the grace)"
}

@test "gc --grace: a negative, fractional or unknown duration is a usage error (64)" {
  local bad
  for bad in -1 abc 1.5 '' 1w 12H '1 d' 1dd d 99999999999999999999; do
    run --separate-stderr lake-catalog gc --grace "$bad"
    assert_error lake-catalog 64 "--grace"
  done
  run --separate-stderr lake-catalog gc extra
  assert_failure 64
}

@test "gc removes leftovers of interrupted puts past the grace and never follows a symlink" {
  make_garbage
  mkdir -p "$GC_STAGE/files/2026/12" "$T/outside"
  echo partial >"$GC_STAGE/files/2026/12/.tmp-01OLD"
  touch -d '2 days ago' "$GC_STAGE/files/2026/12/.tmp-01OLD"
  echo partial >"$GC_STAGE/files/2026/12/.tmp-01NEW"
  echo precious >"$T/outside/secret"
  touch -d '2 days ago' "$T/outside/secret"
  ln -s "$T/outside/secret" "$GC_STAGE/files/2026/12/link"
  ln -s "$T/outside" "$GC_STAGE/tables/linkdir"

  run --separate-stderr lake-catalog gc
  assert_success
  assert_output "$(printf 'file://%s\t8' "$GC_STAGE/files/2026/12/.tmp-01OLD")"
  [ ! -e "$GC_STAGE/files/2026/12/.tmp-01OLD" ]
  [ -f "$GC_STAGE/files/2026/12/.tmp-01NEW" ]
  [ -L "$GC_STAGE/files/2026/12/link" ]
  [ -L "$GC_STAGE/tables/linkdir" ]
  assert_equal "$(cat "$T/outside/secret")" precious

  run --separate-stderr lake-catalog -q gc --grace 0
  assert_clean_success
  refute_output --partial secret
  refute_output --partial link
  assert_equal "$(cat "$T/outside/secret")" precious
}

@test "gc sees every object under the stage, not only files/ and tables/: one an upload of an older release put elsewhere goes past the grace (issue 41)" {
  make_garbage
  mkdir -p "$GC_STAGE/anything/at" "$GC_STAGE/tables/x"
  echo stray >"$GC_STAGE/anything/at/all"
  echo stray >"$GC_STAGE/top-level"
  touch -d '2 days ago' "$GC_STAGE/anything/at/all" "$GC_STAGE/top-level"
  echo young >"$GC_STAGE/anything/young"
  run --separate-stderr lake-catalog gc
  assert_success
  assert_equal "$(gc_locations)" "$(printf 'file://%s\n' "$GC_STAGE/anything/at/all" "$GC_STAGE/top-level" | sort)"
  [ ! -e "$GC_STAGE/anything/at/all" ] && [ -f "$GC_STAGE/anything/young" ] || fail "$(find "$GC_STAGE" -type f)"
  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(stage_locations)" "$REFERENCED"
}

@test "gc needs the admin role: a user-role token gets 77 and nothing is removed" {
  [ "$LAKE_TEST_SOURCE" != local ] || skip "the embedded source's caller is admin"
  make_garbage
  local before user
  before=$(stage_locations)
  user=$(metasrv_token user alice)
  LAKE_TOKEN_FILE=$user run --separate-stderr lake-catalog gc --grace 0
  assert_error lake-catalog 77
  assert_output ""
  assert_equal "$(stage_locations)" "$before"
}

@test "with the source down gc fails (69) and removes nothing, even with a cached catalog" {
  make_garbage
  lake-catalog list >/dev/null # a cached snapshot and whoami
  local before
  before=$(stage_locations)
  source_break
  run --separate-stderr lake-catalog --max-age 100000 gc --grace 0
  assert_error lake-catalog 69 "gc needs the live catalog and removed nothing"
  assert_output ""
  assert_equal "$(stage_locations)" "$before"
  source_heal
}

@test "gc on an S3 stage removes the unreferenced objects from the bucket and keeps the referenced" {
  local_only "the embedded source with LAKE_STAGE on radosgw"
  s3_start
  local loose kept keys
  loose=$(echo loose | lake-put | json_field location)
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, pdf FILE'
  lake-catalog create docs.gone 'title TEXT'
  echo kept >"$T/kept.txt"
  kept=$(lake-put --table docs.papers --column pdf --set title=kept "$T/kept.txt" | json_field location)
  lake-query -c "insert into docs.gone values ('x')"
  local gone_seg
  gone_seg=$(lake-catalog resolve docs.gone | jq -r '.segments[0].location')
  lake-catalog drop docs.gone
  # an object elsewhere under the stage (an upload of an older release
  # that took any dir) is garbage too; one outside the stage is not gc's
  local stray=s3://$S3_BUCKET/stage/anything/at/all
  s3_curl -X PUT --data-binary stray "$S3_ENDPOINT/$S3_BUCKET/stage/anything/at/all" -o /dev/null
  s3_curl -X PUT --data-binary other "$S3_ENDPOINT/$S3_BUCKET/stage2/not-the-stage" -o /dev/null
  assert_equal "$(s3_keys | wc -l)" 6

  run --separate-stderr lake-catalog gc --dry-run --grace 0
  assert_success
  assert_equal "$(gc_locations)" "$(printf '%s\n' "$loose" "$gone_seg" "$stray" | sort)"
  assert_equal "$(s3_keys | wc -l)" 6

  run --separate-stderr lake-catalog gc --grace 0
  assert_success
  assert_equal "$(gc_locations)" "$(printf '%s\n' "$loose" "$gone_seg" "$stray" | sort)"
  [[ $stderr == *"gc: 3 objects, "*" bytes removed; 2 kept (referenced), 0 kept (younger than the grace)"* ]] ||
    fail "summary: $stderr"
  keys=$(s3_keys)
  assert_equal "$(wc -l <<<"$keys")" 3
  [[ $keys == *"stage2/not-the-stage"* ]] || fail "an object outside the stage removed: $keys"
  [[ $keys != *"${loose##*/}"* ]] || fail "loose object still there: $keys"
  [[ $keys == *"${kept##*/}"* ]] || fail "referenced object gone: $keys"
  run --separate-stderr lake-get "$kept"
  assert_success
  assert_output kept
  run --separate-stderr lake-query -c "select title from docs.papers"
  assert_success
  assert_output kept
  s3_stop
}
