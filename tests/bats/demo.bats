#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# make demo's story (tests/demo.sh) in a fresh LAKE_HOME: a table, a
# directory in through lake-put --archive, a query, the files back out
# through lake-get --archive, compared with diff -r.

load helpers/common

setup() {
  common_setup
}

teardown() {
  common_teardown
}

@test "demo: the whole story runs on the embedded default and ends verified" {
  mkdir "$T/tmp"
  run --separate-stderr env TMPDIR="$T/tmp" bash "$LAKE_SRC/tests/demo.sh"
  assert_success
  assert_line "(no difference)"
  assert_line --regexp '^demo: 5 files went in through one archive and one append, and came back byte for byte'
  # the demo made its lake in a fresh directory of its own, not ours, and
  # removed it
  assert_line --regexp "^\{\"location\":\"file://$T/tmp/lake-demo\."
  [ -z "$(ls -A "$T/tmp")" ] || fail "left behind: $(ls -A "$T/tmp")"
  [ ! -e "$LAKE_HOME/registry.db" ] || fail "the demo used the caller's LAKE_HOME"
}
