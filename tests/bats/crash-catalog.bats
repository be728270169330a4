#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-catalog SIGKILLed 30 times during a refresh (issue 8), against a real
# lake-metasrv with 1500 tables, so that a refresh takes long enough to be
# killed in flight; each round first changes the directory (one more
# table), so the cache holds either the old or the new snapshot.  After
# every kill the next reader, offline (the cache alone), sees one whole
# snapshot: `list` prints exactly the old list or exactly the new one, and
# `status` the generation that goes with it; the snapshot file parses and
# no temporary file is left beside it.
#
# Kill moments are drawn over the refresh's whole lifetime (from before the
# process runs to past its end), seeded and logged ("# crash: ..." lines,
# $T/crash.log); LAKE_CRASH_SEED=N replays them.

load helpers/common
load helpers/metasrv
load helpers/crash

KILLS=30
TABLES=1500

setup() {
  metasrv_setup
  crash_seed
  metasrv_tables w t "$TABLES"
}

teardown() {
  metasrv_stop
  common_teardown
}

# What the cache alone says: the list (sorted) in $T/seen, the generation
# in SEEN_GEN.  Fails unless both commands succeed or, with no snapshot
# yet, both fail as "nothing cached" (69): then SEEN_GEN is "none".
read_offline() {
  run --separate-stderr lake-catalog --offline list
  if [ "$status" -eq 69 ] && [ "$CACHED_GEN" = none ]; then
    assert_output ""
    SEEN_GEN=none
    : >"$T/seen"
    return 0
  fi
  [ "$status" -eq 0 ] || fail "offline list failed ($status): $stderr"
  sort <<<"$output" >"$T/seen"
  run --separate-stderr lake-catalog --offline status
  [ "$status" -eq 0 ] || fail "offline status failed ($status): $stderr"
  SEEN_GEN=$(sed -n 's/^generation=//p' <<<"$output")
}

@test "SIGKILL of lake-catalog refresh 30 times: the next reader sees the old or the new snapshot, whole" {
  local k delay t0 t1 life g lines
  # the server's directory, as a sorted list, and the cache's
  for k in $(seq "$TABLES"); do printf 'w\tt%s\n' "$k"; done | sort >"$T/server"
  CACHED_GEN=none
  : >"$T/cached"

  # the lifetime of a full refresh, from the start of the process, warm
  # (the first one also fetches whoami and makes the cache directory) and
  # of a changed directory, as in the rounds: the shorter of two (the
  # machine is shared, so one may be slowed)
  timeout 60 lake-catalog refresh --force >/dev/null 2>&1 || fail "a refresh failed"
  life=
  for k in 1 2; do
    metasrv_post "$ADMIN" create_table "{\"namespace\":\"w\",\"name\":\"calibration$k\",\"schema\":[{\"name\":\"x\",\"type\":\"INTEGER\"}]}"
    [ "$HTTP_CODE" = 200 ] || fail "create_table: $HTTP_CODE $HTTP_BODY"
    printf 'w\tcalibration%s\n' "$k" >>"$T/server"
    sort -o "$T/server" "$T/server"
    t0=$(crash_now_ms)
    timeout 60 lake-catalog refresh --force >/dev/null 2>&1 || fail "a refresh failed"
    t1=$(crash_now_ms)
    [ -n "$life" ] && [ "$life" -le $((t1 - t0)) ] || life=$((t1 - t0))
  done
  # start over: the kills begin on an empty cache (the first refresh)
  rm -rf "$XDG_CACHE_HOME/lake"
  crash_log "a refresh of $TABLES tables takes $life ms"

  # KILLS + 1 rounds, and more (3 x KILLS at most) until KILLS / 6
  # refreshes were killed in flight: a refresh that finished before its
  # kill shows the lifetime was measured long (a machine busier then than
  # now), and the lifetime is cut to 2/3 of that delay, so the kills land
  # inside the refreshes however the load changes
  local killed=0 gen=
  k=-1
  while [ "$k" -lt "$KILLS" ] || { [ "$killed" -lt $((KILLS / 6)) ] && [ "$k" -lt $((KILLS * 3)) ]; }; do
    k=$((k + 1))
    if [ "$k" -gt 0 ]; then
      # one more table: a new generation at the server
      metasrv_post "$ADMIN" create_table "{\"namespace\":\"w\",\"name\":\"n$k\",\"schema\":[{\"name\":\"x\",\"type\":\"INTEGER\"}]}"
      [ "$HTTP_CODE" = 200 ] || fail "create_table: $HTTP_CODE $HTTP_BODY"
      gen=$(jq -er .generation <<<"$HTTP_BODY")
      printf 'w\tn%s\n' "$k" >>"$T/server"
      sort -o "$T/server" "$T/server"
    fi
    # at least 1 ms: timeout(1) takes a duration of 0 as "never"
    delay=$(( $(crash_rand $((life * 5 / 4 + 5))) + 1 ))
    crash_log "round $k: refresh killed after $delay ms"
    g=0
    timeout -s KILL "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))s" \
      lake-catalog refresh --force >/dev/null 2>"$T/refresh.err" 3>&- || g=$?
    case $g in
      137) killed=$((killed + 1)) ;;
      0)
        crash_log "round $k: the refresh had finished"
        [ "$life" -le $((delay * 2 / 3)) ] || life=$((delay * 2 / 3))
        ;;
      *) fail "round $k: refresh exited $g: $(cat "$T/refresh.err")" ;;
    esac

    read_offline
    if cmp -s "$T/seen" "$T/cached" && [ "$SEEN_GEN" = "$CACHED_GEN" ]; then
      crash_log "round $k: the old snapshot (generation $SEEN_GEN)"
    elif cmp -s "$T/seen" "$T/server"; then
      [ -z "$gen" ] || assert_equal "round $k generation $SEEN_GEN" "round $k generation $gen"
      [ "$CACHED_GEN" = none ] || [ "$SEEN_GEN" -gt "$CACHED_GEN" ] ||
        fail "round $k: generation $SEEN_GEN not above $CACHED_GEN"
      crash_log "round $k: the new snapshot (generation $SEEN_GEN)"
    else
      lines=$(wc -l <"$T/seen")
      fail "round $k: a torn snapshot: $lines entries at generation $SEEN_GEN; old had $(wc -l <"$T/cached") at $CACHED_GEN, new $(wc -l <"$T/server")"
    fi
    cp "$T/seen" "$T/cached"
    CACHED_GEN=$SEEN_GEN
    # nothing but whole files in the cache directory (a refresh killed
    # between naming its replacing file and renaming it leaves
    # ".tmp-PID-ID"; read_offline, the next process, removes it: tempSweep)
    local left
    left=$(find "$XDG_CACHE_HOME/lake" -name '.tmp-*' 2>/dev/null)
    [ -z "$left" ] || fail "round $k: temporary files left in the cache: $left"
  done
  crash_log "$killed of $((k + 1)) refreshes were killed before they finished"
  [ "$killed" -ge $((KILLS / 6)) ] || fail "only $killed refreshes were killed in flight"
  # and a refresh after all that brings the cache up to date
  timeout 60 lake-catalog refresh --force >/dev/null || fail "the final refresh failed"
  read_offline
  cmp -s "$T/seen" "$T/server" || fail "the final refresh did not give the server's directory"
}
