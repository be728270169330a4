#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# liblake's section 3 (issue 42, 2.8): every function lake.h declares is a
# name `man 3 FUNCTION` finds, and the pages render their quotes as written.

load helpers/common

setup() {
  common_setup
  BUILD=${LAKE_BIN%/bin}
  [ -e "$BUILD/liblake.so" ] || fail "$BUILD/liblake.so is not built (make)"
  SAN=()
  if [[ $BUILD == */build-san ]]; then SAN=(-fsanitize=address,undefined); fi
}
teardown() {
  common_teardown
}

# the names a section 3 page answers to: its NAME section's .Nm lines
man3_names() {
  awk 'FNR == 1 { f = 0 } /^\.Sh / { f = ($2 == "NAME") } f && $1 == ".Nm" { print $2 }' "$@"
}

@test "man 3: every function lake.h declares is named by a page, and make install links the name to it" {
  grep -oE '\blake_[a-z0-9_]+\(' "$LAKE_SRC/include/lake.h" | tr -d '(' | sort -u >"$T/declared"
  [ "$(wc -l <"$T/declared")" -ge 50 ] || fail "too few functions in lake.h: $(cat "$T/declared")"
  man3_names "$LAKE_SRC"/man/man3/*.3 | sort >"$T/named"
  run comm -23 "$T/declared" "$T/named"
  assert_output "" # declared, but on no page's NAME
  run comm -13 "$T/declared" <(grep -vx liblake "$T/named")
  assert_output "" # named, but not in lake.h
  root=$T/root
  run make -s -C "$LAKE_SRC" ${SAN:+SANITIZE=1} install DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  man3=$root/opt/lake/share/man/man3
  local fn page
  while read -r fn; do
    page=$(grep -lE "^\.Nm $fn( ,)?\$" "$LAKE_SRC"/man/man3/*.3)
    assert_file_exist "$man3/$fn.3"
    assert_equal "$(readlink -f "$man3/$fn.3")" "$(readlink -f "$man3/${page##*/}")"
  done <"$T/declared"
  # what man finds, as a user types it
  if command -v man >/dev/null; then
    run man -w -M "$root/opt/lake/share/man" 3 lake_put_fd
    assert_success
    assert_equal "$(readlink -f "$output")" "$(readlink -f "$man3/lake_open.3")"
    run man -w -M "$root/opt/lake/share/man" lake_rows_next
    assert_success
    assert_equal "$(readlink -f "$output")" "$(readlink -f "$man3/lake_query.3")"
  fi
  # and make uninstall takes the links away with the pages
  run make -s -C "$LAKE_SRC" ${SAN:+SANITIZE=1} uninstall DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  run find "$man3" ! -type d
  assert_output ""
}

@test "man 3: quotes render as written, none opened inside another" {
  local m
  for m in "$LAKE_SRC"/man/man3/*.3; do
    run mandoc -Tlint -Wwarning "$m"
    assert_success
    assert_output ""
    # a quote macro (Qq, Dq, Sq, Ql) quotes to the end of its line: a
    # second one, or No, or Op, on that line lands inside the first
    run grep -nE '^\.(.* )?(Qq|Dq|Sq|Ql) .*(^| )(Qq|Dq|Sq|Ql|No|Op)( |$)' "$m"
    assert_output ""
    # rendered: "a, "b"" or 'a, 'b'' is a quote opened inside another
    run bash -c "mandoc -Tutf8 '$m' | col -b | tr '\n' ' ' |
      grep -oE '“[^”]*“|‘[^’]*‘|\"[A-Za-z0-9?:_-]+, \"|\"\"\"'"
    assert_output ""
  done
}
