#!/usr/bin/env bats
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
  run --separate-stderr bash "$LAKE_SRC/tests/demo.sh"
  assert_success
  assert_line "(no difference)"
  assert_line --regexp '^demo: 5 files went in through one archive and one append, and came back byte for byte'
  # the demo's lake was its own, and is gone
  [ ! -e "$LAKE_HOME" ] || [ -z "$(ls -A "$LAKE_HOME")" ]
}
