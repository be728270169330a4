#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# A full disk (issue 8): a small tmpfs, mounted by the test when it runs as
# root (skipped with a message otherwise), holds the stage or the registry.
#   - lake-put of more bytes than fit fails with one clear line (exit 1, an
#     I/O error: DESIGN §1) and leaves no object, no temporary file and no
#     space taken; the table it was to append to is unchanged.
#   - an append to a lake-metasrv whose registry's disk is full is answered
#     with a redacted error (503 unavailable: no path, no SQL), the client
#     exits 75 (retry later), and the registry passes integrity_check with
#     every earlier version intact; once space is freed the append goes
#     through.

load helpers/common
load helpers/metasrv

setup() {
  [ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs (run the suite as root)"
  common_setup
  MNT=$T/mnt
  mkdir -p "$MNT"
  mount -t tmpfs -o size=8m,mode=0755 lake-crash-test "$MNT" || skip "cannot mount a tmpfs here"
}

teardown() {
  [ -n "${T:-}" ] || return 0
  metasrv_stop
  if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || umount -l "$MNT"; fi
  common_teardown
}

# Blocks in use on the tmpfs (df: 1K blocks).
used_kib() {
  df -k --output=used "$MNT" | tail -n 1 | tr -d ' '
}

@test "full disk: lake-put of more than fits fails with one clear line (1) and leaves no object, no temporary file, no space taken" {
  export LAKE_STAGE=file://$MNT/stage
  lake-catalog create-namespace k
  lake-catalog create k.t 'f FILE'
  local before
  before=$(used_kib)

  # a pipe of 16 MiB into 8 MiB, with a row for a table
  run_to "$T/out" lake-put --table k.t < <(head -c $((16 * 1024 * 1024)) /dev/zero)
  assert_error lake-put 1 "No space left on device"
  assert_equal "$(stat -c %s "$T/out")" 0
  assert_no_objects "$MNT/stage"
  assert_equal "$(used_kib)" "$before"
  assert_equal "$(lake-catalog resolve k.t | jq .version)" 0

  # a file, likewise
  head -c $((12 * 1024 * 1024)) /dev/zero >"$T/big"
  run_to "$T/out" lake-put "$T/big"
  assert_error lake-put 1 "No space left on device"
  assert_no_objects "$MNT/stage"
  assert_equal "$(used_kib)" "$before"

  # the stage still works for what fits
  echo fits >"$T/small"
  run_to "$T/out" lake-put --table k.t "$T/small"
  assert_clean_success
  cmp "$T/small" "$(loc_path "$(json_field location <"$T/out")")"
  assert_equal "$(lake-catalog resolve k.t | jq .version)" 1
}

@test "full disk: an append to a metasrv whose registry is full is a redacted 503, the client exits 75, the registry stays intact" {
  # the registry on the tmpfs, through a symlink (SQLite resolves it, so
  # its -wal and -shm files are made there too); the server's directory
  # (certificates, logs, the helpers' scratch files) and the stage elsewhere
  metasrv_init "$T/srv" "file://$T/stage"
  mv "$T/srv/registry.db" "$MNT/registry.db"
  ln -s "$MNT/registry.db" "$T/srv/registry.db"
  metasrv_start
  metasrv_use
  local admin=$T/srv/admin.token
  lake-catalog create-namespace d
  lake-catalog create d.t 'n INTEGER'
  lake-query -c 'INSERT INTO d.t VALUES (1)'
  lake-query -c 'INSERT INTO d.t VALUES (2)'
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 2

  # fill the disk
  [ -f "$MNT/registry.db-wal" ] || fail "the registry's log is not on the tmpfs: $(ls "$MNT")"
  dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null || true
  assert_equal "$(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ')" 0

  # the answer itself: a redacted error object, 503 with Retry-After
  local seg
  seg=$(printf '{"location":"file://%s/stage/tables/x/seg","size":1,"sha256":"%s","rows":1}' "$T" \
    2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881)
  metasrv_post "$admin" append "{\"namespace\":\"d\",\"name\":\"t\",\"expected_version\":2,\"segments\":[$seg],\"files\":[]}"
  metasrv_assert_error 503 unavailable
  [[ $HTTP_BODY == *"disk full"* ]] || fail "the message does not say why: $HTTP_BODY"
  [[ $HTTP_HEAD == *"Retry-After:"* ]] || fail "no Retry-After: $HTTP_HEAD"
  [[ $HTTP_BODY != *"$MNT"* ]] || fail "the answer names the registry's path: $HTTP_BODY"
  # the server logged the detail under the same request id
  local rid
  rid=$(jq -r .error.request_id <<<"$HTTP_BODY")
  metasrv_log_wait 1
  grep -q "request_id=$rid .*status=503.*sqlite 13" "$T/srv/serve.log" ||
    fail "no log line with the detail for $rid: $(tail -n 3 "$T/srv/serve.log")"

  # a client: one line, exit 75, nothing appended; the server's reason in
  # its trace (a 503 is retried for retry_deadline seconds: 5 here, so that the
  # first round ends inside it even on a slow machine)
  run --separate-stderr env LAKE_RETRY_DEADLINE=5 LAKE_TRACE=1 lake-query -c 'INSERT INTO d.t VALUES (3)'
  [[ $stderr == *"-> error unavailable (registry: disk full; retry once space is freed), round 1"* ]] ||
    fail "the trace does not say why: $stderr"
  metasrv_assert_redacted "$(grep '^trace: source ' <<<"$stderr")"
  stderr=$(untraced_stderr)
  mapfile -t stderr_lines <<<"$stderr"
  assert_error lake-query 75 "the catalog is temporarily unavailable" "gave up after 5 s (retry_deadline)"
  metasrv_assert_redacted "$stderr"

  # the registry: intact, every earlier version there, nothing half-written
  assert_equal "$(sqlite3 "$MNT/registry.db" 'PRAGMA integrity_check')" ok
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 2
  assert_equal "$(lake-query -c 'SELECT group_concat(n) FROM (SELECT n FROM d.t ORDER BY n)')" "1,2"
  assert_equal "$(lake-catalog resolve --version 1 d.t | jq '[.segments[].rows] | add')" 1

  # space freed: the same kind of append goes through
  rm -f "$MNT/fill"
  run --separate-stderr lake-query -c 'INSERT INTO d.t VALUES (3)'
  assert_clean_success
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 3
  metasrv_stop
  assert_equal "$(sqlite3 "$MNT/registry.db" 'PRAGMA integrity_check')" ok
}

@test "full disk: the embedded registry's commands (list too) exit 75 naming the file and why; nothing changes; space freed, they work" {
  # a lake on the tmpfs; then an empty snapshot cache
  export LAKE_HOME=$MNT/lake
  lake-catalog create-namespace e
  lake-catalog create e.t 'n INTEGER'
  lake-query -c 'INSERT INTO e.t VALUES (1)'
  rm -rf "$XDG_CACHE_HOME"
  [ ! -e "$MNT/lake/registry.db-shm" ] || fail "the registry's -shm file outlived its last user"
  dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null || true
  assert_equal "$(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ')" 0

  local c
  for c in "lake-catalog list" "lake-catalog create-namespace z" "lake-query -c 'SELECT n FROM e.t'" \
           "lake-query -c 'INSERT INTO e.t VALUES (2)'"; do
    echo "# $c"
    eval "run --separate-stderr $c"
    assert_error "${c%% *}" 75 "$MNT/lake/registry.db" "No space left on device" "retry once space is freed"
    assert_output ""
  done

  rm -f "$MNT/fill"
  run --separate-stderr lake-catalog list
  assert_clean_success
  assert_output $'e\tt'
  assert_equal "$(lake-query -c 'SELECT group_concat(n) FROM e.t')" 1
  assert_equal "$(sqlite3 "$MNT/lake/registry.db" 'PRAGMA integrity_check')" ok
}

@test "a read-only or foreign-owned lake: every command (list too) exits 77 naming the file and why, and changes nothing" {
  lake-catalog create-namespace r
  lake-catalog create r.t 'n INTEGER'
  lake-query -c 'INSERT INTO r.t VALUES (1)'
  local before
  before=$(sha_of "$LAKE_HOME/registry.db")

  # another user's lake (root's, made readable to others: 0755 and 0644,
  # as a lake made before it was private by default; not writable), read
  # by a user with its own cache
  chmod 0755 "$T" "$LAKE_HOME"
  chmod 0644 "$LAKE_HOME/registry.db"
  mkdir "$T/nobody"
  chown nobody "$T/nobody"
  local c
  for c in "lake-catalog list" "lake-catalog create-namespace z" "lake-query -c 'SELECT n FROM r.t'" \
           "lake-query -c 'INSERT INTO r.t VALUES (2)'"; do
    echo "# nobody: $c"
    eval "run --separate-stderr runuser -u nobody -- env PATH=\"\$PATH\" LAKE_HOME=\"\$LAKE_HOME\" \
      XDG_CACHE_HOME=\"\$T/nobody\" HOME=/nonexistent $c"
    assert_error "${c%% *}" 77 "$LAKE_HOME/registry.db" "for this user (it belongs to root)" "must be writable"
    assert_output ""
  done

  # a LAKE_HOME not yet made, under a directory this user may not write
  run --separate-stderr runuser -u nobody -- env PATH="$PATH" LAKE_HOME="$T/new/lake" \
    XDG_CACHE_HOME="$T/nobody" HOME=/nonexistent lake-catalog list
  assert_error lake-catalog 77 "cannot create $T/new" "Permission denied"
  assert_output ""

  # a lake on a read-only mount, for root too
  LAKE_HOME=$MNT/lake lake-catalog create-namespace r
  LAKE_HOME=$MNT/lake lake-catalog create r.t 'n INTEGER'
  rm -rf "$XDG_CACHE_HOME"
  mount -o remount,ro "$MNT"
  for c in "lake-catalog list" "lake-catalog create-namespace z" "lake-query -c 'SELECT n FROM r.t'"; do
    echo "# read-only mount: $c"
    eval "run --separate-stderr env LAKE_HOME=\"\$MNT/lake\" $c"
    assert_error "${c%% *}" 77 "$MNT/lake/registry.db" "Read-only file system"
    assert_output ""
  done
  mount -o remount,rw "$MNT"

  assert_equal "$(sha_of "$LAKE_HOME/registry.db")" "$before"
  assert_equal "$(lake-query -c 'SELECT group_concat(n) FROM r.t')" 1
}
