#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Configuration (DESIGN §2): option > environment > config file > default,
# seen through where lake-put puts an object and what lake-get accepts.

load helpers/common

setup() {
  common_setup
  A="$T/A" B="$T/B" C="$T/C" D="$T/D"
  mkdir -p "$XDG_CONFIG_HOME/lake"
  CONF="$XDG_CONFIG_HOME/lake/config"
  printf 'payload\n' >"$T/payload"
}

teardown() {
  common_teardown
}

write_conf() { # write_conf FILE STAGE-DIR: a config file naming that stage
  {
    echo "# lake configuration for the tests"
    echo ""
    echo "   stage   =   file://$2   "
    echo "catalog_ttl = 5"
  } >"$1"
}

# put_lands_in DIR [lake-put ARGS]: the object is under DIR/files, and only
# there (not in A, B, C, D nor the default stage).
put_lands_in() {
  local dir=$1 loc path d
  shift
  run --separate-stderr lake-put "$@" "$T/payload"
  assert_clean_success
  loc=$(json_field location "$output")
  [[ $loc == "file://$dir/files/"* ]] || fail "expected a location under file://$dir, got $loc"
  path=$(loc_path "$loc")
  cmp "$T/payload" "$path"
  assert_equal "$(files_under "$dir")" "$path"
  for d in "$A" "$B" "$C" "$D" "$STAGE"; do
    [ "$d" = "$dir" ] || assert_no_objects "$d"
  done
  LOC=$loc
}

@test "config: --stage beats LAKE_STAGE beats the config file" {
  printf 'stage = file://%s\n' "$A" >"$CONF"
  export LAKE_STAGE="file://$B"
  put_lands_in "$C" --stage "file://$C"
  # lake-get resolves the same way: the C object is inside only with --stage
  run_to "$T/got" lake-get --stage "file://$C" "$LOC"
  assert_clean_success
  cmp "$T/payload" "$T/got"
  run --separate-stderr lake-get "$LOC"
  assert_error lake-get 65 "outside the managed stage"
  assert_output ""
}

@test "config: without the option, LAKE_STAGE beats the config file" {
  printf 'stage = file://%s\n' "$A" >"$CONF"
  export LAKE_STAGE="file://$B"
  put_lands_in "$B"
  run_to "$T/got" lake-get "$LOC"
  assert_clean_success
  cmp "$T/payload" "$T/got"
}

@test "config: without option and environment, the config file decides" {
  write_conf "$CONF" "$A"
  put_lands_in "$A"
  run_to "$T/got" lake-get "$LOC"
  assert_clean_success
  cmp "$T/payload" "$T/got"
}

@test "config: an empty LAKE_STAGE counts as unset" {
  write_conf "$CONF" "$A"
  export LAKE_STAGE=
  put_lands_in "$A"
}

@test "config: \$LAKE_CONFIG is read instead of the XDG file" {
  write_conf "$CONF" "$A"
  write_conf "$T/other.conf" "$D"
  export LAKE_CONFIG="$T/other.conf"
  put_lands_in "$D"
  # and the environment still beats it
  rm -rf "$D"
  export LAKE_STAGE="file://$B"
  put_lands_in "$B"
}

@test "config: home in the config file moves the default stage; LAKE_HOME beats it" {
  printf 'home = %s\n' "$T/home2" >"$CONF"
  unset LAKE_HOME
  put_lands_in "$T/home2/stage"
  export LAKE_HOME="$T/lake"
  run --separate-stderr lake-put "$T/payload"
  assert_clean_success
  [[ $(json_field location "$output") == "file://$STAGE/files/"* ]] ||
    fail "LAKE_HOME did not beat the file: $output"
}

@test "config: an unknown key is 78, naming file:line" {
  printf '# comment\n\nstage = file://%s\nno_such_key = 1\n' "$A" >"$CONF"
  run --separate-stderr lake-put "$T/payload"
  assert_error lake-put 78 "$CONF:4" "no_such_key"
  assert_output ""
  assert_no_objects "$A"
  assert_no_objects "$STAGE"
  run --separate-stderr lake-get "file://$A/files/x"
  assert_error lake-get 78 "$CONF:4"
}

@test "config: retry_deadline (LAKE_RETRY_DEADLINE) takes 0 to 3600 seconds; anything else is 78, from the environment or the file" {
  local good bad
  for good in 0 1 30 3600; do
    run --separate-stderr env LAKE_RETRY_DEADLINE=$good lake-put "$T/payload"
    assert_clean_success
  done
  for bad in -1 3601 soon 1.5; do
    run --separate-stderr env LAKE_RETRY_DEADLINE="$bad" lake-put "$T/payload"
    assert_error lake-put 78 "retry_deadline: '$bad' is not a number of seconds from 0 to 3600"
    assert_output ""
  done
  printf 'retry_deadline = never\n' >>"$CONF"
  run --separate-stderr lake-put "$T/payload"
  assert_error lake-put 78 "retry_deadline: 'never'"
  # the environment beats the file
  run --separate-stderr env LAKE_RETRY_DEADLINE=5 lake-put "$T/payload"
  assert_clean_success
}

@test "config: retention (LAKE_RETENTION) takes a duration; anything else is 78, from the environment or the file" {
  local good bad
  for good in 0 45s 30m 12h 7d 86400; do
    run --separate-stderr env LAKE_RETENTION=$good lake-put "$T/payload"
    assert_clean_success
  done
  for bad in -1 1.5 1w soon; do
    run --separate-stderr env LAKE_RETENTION="$bad" lake-put "$T/payload"
    assert_error lake-put 78 "retention: '$bad' is not a duration"
    assert_output ""
  done
  printf 'retention = forever\n' >>"$CONF"
  run --separate-stderr lake-catalog expire
  assert_error lake-catalog 78 "retention: 'forever'"
  # the environment beats the file
  run --separate-stderr env LAKE_RETENTION=1d lake-catalog expire
  assert_clean_success
  assert_output "expired 0 versions"
}

@test "config: a line without '=' is 78, naming file:line" {
  printf 'stage file://%s\n' "$A" >"$T/other.conf"
  export LAKE_CONFIG="$T/other.conf"
  run --separate-stderr lake-put "$T/payload"
  assert_error lake-put 78 "$T/other.conf:1"
  assert_output ""
  assert_no_objects "$A"
  assert_no_objects "$STAGE"
}

@test "config: a missing \$LAKE_CONFIG is 78, naming it" {
  export LAKE_CONFIG="$T/missing.conf"
  run --separate-stderr lake-put "$T/payload"
  assert_error lake-put 78 "$T/missing.conf"
  assert_output ""
  assert_no_objects "$STAGE"
  run --separate-stderr lake-get "file://$STAGE/files/x"
  assert_error lake-get 78 "$T/missing.conf"
  assert_output ""
}

@test "config: a missing XDG config file is fine" {
  rm -rf "$XDG_CONFIG_HOME/lake"
  put_lands_in "$STAGE"
}

@test "config: nothing set: the stage is \$LAKE_HOME/stage" {
  put_lands_in "$LAKE_HOME/stage"
  [[ $LOC =~ ^file://$LAKE_HOME/stage/files/[0-9]{4}/[0-9]{2}/[0-9A-Z]{26}$ ]] ||
    fail "unexpected location $LOC"
}

@test "config: nothing set and no LAKE_HOME: the stage is \$XDG_DATA_HOME/lake/stage" {
  unset LAKE_HOME
  put_lands_in "$XDG_DATA_HOME/lake/stage"
  run_to "$T/got" lake-get "$LOC"
  assert_clean_success
  cmp "$T/payload" "$T/got"
}

@test "config: a stage URL that is not file:// or s3:// is 78" {
  run --separate-stderr lake-put --stage "http://x/y" "$T/payload"
  assert_error lake-put 78 "http://x/y"
  assert_output ""
  export LAKE_STAGE="file://relative/dir"
  run --separate-stderr lake-put "$T/payload"
  assert_error lake-put 78 "file://relative/dir"
  assert_output ""
  assert_no_objects "$STAGE"
}

@test "token and token_file are one setting: the environment's token_file beats the file's token" {
  mkdir -p "$XDG_CONFIG_HOME/lake"
  printf 'metasrv = https://127.0.0.1:9\ntoken = lk_fromfile_00\n' >"$XDG_CONFIG_HOME/lake/config"
  printf 'lk_fromenv_11\n' >"$T/tok"
  # the trace shows no token; the error names what was used: a missing
  # token file would say so, proving the file's token was not taken
  run --separate-stderr env LAKE_TOKEN_FILE="$T/missing" lake-catalog list
  assert_failure 78
  [[ $stderr == *"token_file: $T/missing"* ]] || fail "the file's token won: $stderr"
}

@test "plain http is allowed only to a loopback host, matched exactly" {
  for url in http://localhost.example.com:7700 http://127.0.0.1.example.com:7700 http://example.com:80; do
    run --separate-stderr env LAKE_METASRV="$url" LAKE_TOKEN=lk_x_00 lake-catalog list
    assert_failure 78
    [[ $stderr == "lake-catalog: metasrv: '$url': plain http is allowed only to a loopback host" ]] ||
      fail "$url: $stderr"
  done
  for url in http://127.0.0.1:9 http://localhost:9 'http://[::1]:9'; do
    run --separate-stderr env LAKE_METASRV="$url" LAKE_TOKEN=lk_x_00 lake-catalog --max-age 0 list
    assert_failure 69
  done
}

@test "config: neither XDG_CACHE_HOME nor HOME: 78 naming LAKE_CACHE_DIR, which is enough by itself" {
  run --separate-stderr env -u HOME -u XDG_CACHE_HOME lake-catalog list
  assert_error lake-catalog 78 "neither XDG_CACHE_HOME nor HOME is set" "set LAKE_CACHE_DIR"
  run --separate-stderr env -u HOME -u XDG_CACHE_HOME LAKE_CACHE_DIR="$T/c" lake-catalog list
  assert_clean_success
  run --separate-stderr env -u HOME -u XDG_DATA_HOME -u LAKE_HOME lake-catalog list
  assert_error lake-catalog 78 "neither XDG_DATA_HOME nor HOME is set" "set LAKE_HOME"
}
