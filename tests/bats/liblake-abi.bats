#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# liblake's ABI (issue 31, parts 4 and 5): an accidental change of what
# liblake.so.0 offers a program fails here.
#  - make abi-check: abidiff between the library make built (build/, or
#    build-san/ under SANITIZE=1) and the committed baseline
#    lib/api/liblake.abi, exported functions and the types of lake.h only;
#    shown to fail on a copy of the tree whose lake.h lays lake_error out
#    differently or whose liblake.map drops a name, and on an added
#    function (a baseline without one);
#  - debian/liblake0.symbols, which dpkg-gensymbols -c4 holds the liblake0
#    package to, is exactly what make symbols writes from liblake.map and
#    exactly what the library exports (dpkg-gensymbols itself lets a
#    listed symbol missing from the library pass when it is listed at the
#    package's own version: checked here instead).
# After a deliberate change of the API: make abi-baseline symbols.

load helpers/common

setup() {
  common_setup
  command -v abidiff >/dev/null || fail "no abidiff (make deps installs abigail-tools)"
  BUILD=${LAKE_BIN%/bin}
  SAN=
  if [[ $BUILD == */build-san ]]; then SAN=1; fi
  VERSION=$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")
}
teardown() {
  common_teardown
}

# make in the source tree, as the build the tests run was made
lake_make() {
  make -s --no-print-directory -C "$LAKE_SRC" ${SAN:+SANITIZE=1} "$@"
}

@test "make abi-check: liblake.so.0's ABI is the committed baseline's" {
  run lake_make abi-check
  assert_success
  assert_output ""
  # the baseline describes the functions of lake.h, no more
  grep -oE '\blake_[a-z0-9_]+\(' "$LAKE_SRC/include/lake.h" | tr -d '(' | sort -u >"$T/declared"
  sed -n "s/^ *<elf-symbol name='\([^']*\)'.*/\1/p" "$LAKE_SRC/lib/api/liblake.abi" | sort >"$T/baseline"
  run diff "$T/declared" "$T/baseline"
  assert_success
}

@test "make abi-check fails on a library whose lake_error is laid out differently (a copy of the tree)" {
  # the sources, with lake_error's message grown in lake.h, and the build's
  # objects (their times kept): make remakes what includes lake.h (lake.c)
  # and relinks the library
  mkdir -p "$T/src"
  (cd "$LAKE_SRC" && tar -cf - Makefile include lib "${BUILD##*/}/lib" "${BUILD##*/}/pic.stamp") | tar -xf - -C "$T/src"
  sed -i 's/char message\[512\];/char message[1024];/' "$T/src/include/lake.h"
  run diff "$LAKE_SRC/include/lake.h" "$T/src/include/lake.h"
  assert_failure 1 # (the edit took)
  run make -s --no-print-directory -C "$T/src" ${SAN:+SANITIZE=1} abi-check
  assert_failure
  assert_line --regexp '^ +CC +build(-san)?/lib/api/lake\.o$'
  assert_output --partial "underlying type 'struct lake_error' changed:"
  assert_output --partial "type size changed from 4224 to 8320 (in bits)"
  assert_line --regexp "^abi-check: build(-san)?/liblake\.so\.$VERSION differs from lib/api/liblake\.abi "
  # and with lake.h as it was but a name taken out of the version script
  cp "$LAKE_SRC/include/lake.h" "$T/src/include/lake.h"
  sed -i '/^ *lake_free;$/d' "$T/src/lib/api/liblake.map"
  run make -s --no-print-directory -C "$T/src" ${SAN:+SANITIZE=1} abi-check
  assert_failure
  assert_output --partial "1 Removed function"
  assert_output --partial "'function void lake_free(void*)'"
}

@test "make abi-check fails on an added function until the baseline is made again" {
  # a baseline without lake_free, as after a function is added
  awk "/<elf-symbol name='lake_free'/ { next }
       /<function-decl name='lake_free'/ { skip = 1 }
       skip { if (/<\/function-decl>/) skip = 0; next } { print }" \
    "$LAKE_SRC/lib/api/liblake.abi" >"$T/old.abi"
  run cmp -s "$LAKE_SRC/lib/api/liblake.abi" "$T/old.abi"
  assert_failure # (the edit took)
  run lake_make ABI_BASE="$T/old.abi" abi-check
  assert_failure
  assert_output --partial "1 Added function"
  assert_output --partial "'function void lake_free(void*)'"
  assert_line --partial "if the change is deliberate and keeps liblake(3)'s promise: make abi-baseline symbols"
}

@test "debian/liblake0.symbols is what make symbols writes from liblake.map, and what liblake.so.0 exports" {
  cd "$LAKE_SRC"
  run awk -v version="$VERSION" -f lib/api/symbols.awk debian/liblake0.symbols lib/api/liblake.map
  assert_success
  assert_output "$(cat debian/liblake0.symbols)"
  # every defined dynamic symbol (functions and the version node) is listed, and only those
  nm -D --defined-only "$BUILD/liblake.so.0" |
    awk '$2 == "A" { print $3 "@" $3; next } { sub(/@@/, "@", $3); print $3 }' | LC_ALL=C sort >"$T/exported"
  awk '/^ / { print $1 }' debian/liblake0.symbols | LC_ALL=C sort >"$T/listed"
  [ "$(wc -l <"$T/listed")" -ge 20 ] || fail "too few symbols listed: $(cat "$T/listed")"
  run diff "$T/listed" "$T/exported"
  assert_success
  # dpkg-gensymbols -c4, as debian/rules runs it, accepts the file...
  if command -v dpkg-gensymbols >/dev/null; then
    cd "$T"
    run dpkg-gensymbols -pliblake0 -e"$BUILD/liblake.so.0" -I"$LAKE_SRC/debian/liblake0.symbols" \
      -v"$VERSION" -c4 -O/dev/null
    assert_success
    # ... and fails the package build when a symbol is not listed
    grep -v ' lake_free@' "$LAKE_SRC/debian/liblake0.symbols" >"$T/short.symbols"
    run dpkg-gensymbols -pliblake0 -e"$BUILD/liblake.so.0" -I"$T/short.symbols" -v"$VERSION" -c4 -O/dev/null
    assert_failure
    assert_output --partial "+ lake_free@LIBLAKE_0 $VERSION"
  fi
}

@test "make symbols: a listed name keeps its version, a new one gets VERSION, a removed one is refused" {
  printf 'liblake.so.0 liblake0 #MINVER#\n* Build-Depends-Package: liblake-dev\n LIBLAKE_0@LIBLAKE_0 0.1.0\n a@LIBLAKE_0 0.1.0\n b@LIBLAKE_0 0.1.0\n' >"$T/old"
  printf '/* two nodes */\nLIBLAKE_0 {\n  global:\n    b; a; /* c; */\n  local:\n    *;\n};\nLIBLAKE_0.2 { global: c; } LIBLAKE_0;\n' >"$T/map"
  run awk -v version=0.2.0 -f "$LAKE_SRC/lib/api/symbols.awk" "$T/old" "$T/map"
  assert_success
  assert_output "liblake.so.0 liblake0 #MINVER#
* Build-Depends-Package: liblake-dev
 LIBLAKE_0.2@LIBLAKE_0.2 0.2.0
 LIBLAKE_0@LIBLAKE_0 0.1.0
 a@LIBLAKE_0 0.1.0
 b@LIBLAKE_0 0.1.0
 c@LIBLAKE_0.2 0.2.0"
  sed -i 's/ b; a;/ a;/' "$T/map"
  run --separate-stderr awk -v version=0.2.0 -f "$LAKE_SRC/lib/api/symbols.awk" "$T/old" "$T/map"
  assert_failure 1
  assert_output ""
  assert_equal "$stderr" "symbols.awk: b@LIBLAKE_0 is in the symbols file but not in the map: removing or moving a symbol breaks liblake.so.0's ABI"
}
