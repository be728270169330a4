#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# liblake's section 3 (issue 42, 2.8): every function lake.h declares is a
# name `man 3 FUNCTION` finds, the pages render their quotes as written,
# and every example in them is compiled, and the whole programs run,
# against the built library (build/liblake.so, or build-san's).
#
# The examples' markers.  Each .Bd -literal block of a section 3 page
# is preceded by a comment line saying what it is (a block without one
# fails the suite, so that none is skipped unawares):
#   .\" example: program NAME   a whole C program: compiled and linked as
#                               it is; the test "NAME" below runs it
#   .\" example: fragment       statements or declarations: compiled (cc -c)
#                               in a file of the standard headers a
#                               program would include (stdio, stdlib,
#                               string, fcntl, unistd, signal; POSIX
#                               2008 visible) and lake.h, between the
#                               marker lines
#   .\" example: before CODE    (any number, in order) CODE before the block
#   .\" example: after CODE     (any number, in order) CODE after it
#   .\" example: lake.h         declarations quoted from lake.h: each is
#                               there, word for word (comments aside)
#   .\" example: text           not C (JSON, a shell session): not compiled
# Blocks and markers are read as mandoc renders them: \e is a backslash,
# \& nothing, \- a minus.  C is compiled with -std=c99 and -std=c11,
# -Wall -Wextra -pedantic -Werror.

load helpers/common

setup() {
  common_setup
  BUILD=${LAKE_BIN%/bin}
  [ -e "$BUILD/liblake.so" ] || fail "$BUILD/liblake.so is not built (make)"
  SAN=()
  if [[ $BUILD == */build-san ]]; then SAN=("-fsanitize=address,undefined"); fi
}
teardown() {
  common_teardown
}

# man3_examples DIR: each literal block of the section 3 pages as a file
# of DIR, PAGE-N.KIND or PAGE-NAME.program (a fragment with the lines that
# wrap it); prints the files' names, one a line.
man3_examples() {
  local m
  for m in "$LAKE_SRC"/man/man3/*.3; do
    awk -v dir="$1" -v page="$(basename "$m" .3)" '
      function unesc(s) { gsub(/\\e/, "\\\\", s); gsub(/\\&/, "", s); gsub(/\\-/, "-", s); return s }
      BEGIN {
        prologue = "#define _POSIX_C_SOURCE 200809L\n#include <fcntl.h>\n#include <signal.h>\n" \
                   "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n" \
                   "#include <lake.h>\n"
      }
      /^\.\\" example: / {
        w = $3; rest = $0; sub(/^\.\\" example: [^ ]+ ?/, "", rest)
        if (w == "before") before = before unesc(rest) "\n"
        else if (w == "after") after = after unesc(rest) "\n"
        else { kind = w; name = rest }
        next
      }
      /^\.Bd -literal/ {
        n++
        if (kind !~ /^(program|fragment|lake\.h|text)$/) {
          printf "%s.3:%d: a literal block without an example: marker\n", page, FNR >"/dev/stderr"
          bad = 1
        }
        inb = 1; body = ""; next
      }
      inb && /^\.Ed/ {
        f = dir "/" page "-" (kind == "program" ? name : n) "." kind
        if (kind == "fragment") body = prologue before body after
        printf "%s", body >f
        close(f)
        print f
        inb = 0; kind = ""; name = ""; before = ""; after = ""
        next
      }
      inb { body = body unesc($0) "\n" }
      END { exit bad }
    ' "$m" || return 1
  done
}

# cc_example STD FILE: compiles FILE, a program (into FILE.STD) or a
# fragment (an object thrown away), as a user of lake.h would.
cc_example() {
  local std=$1 f=$2
  case $f in
    *.program) cc -std="$std" -Wall -Wextra -pedantic -Werror "${SAN[@]}" -I"$LAKE_SRC/include" \
                 -x c "$f" -x none -L"$BUILD" -llake -o "$f.$std" ;;
    *.fragment) cc -std="$std" -Wall -Wextra -pedantic -Werror -I"$LAKE_SRC/include" \
                  -x c -c "$f" -o /dev/null ;;
  esac
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
    mandoc -Tutf8 "$m" | LC_ALL=C.UTF-8 col -b | tr '\n' ' ' >"$T/rendered"
    # shellcheck disable=SC1111,SC1112 # the typographic quotes are mandoc's, meant
    LC_ALL=C.UTF-8 run grep -oE '“[^”]*“|‘[^’]*‘|"[A-Za-z0-9?:_-]+, "|"""' "$T/rendered"
    assert_output ""
  done
}

@test "man 3: every literal block is marked, and the declarations quoted from lake.h are lake.h's" {
  man3_examples "$T" >"$T/list"
  grep -q '\.program$' "$T/list" || fail "no program among the examples: $(cat "$T/list")"
  grep -q '\.fragment$' "$T/list" || fail "no fragment among the examples: $(cat "$T/list")"
  # without comments, one space for any run of blanks; a block is
  # checked a declaration (up to a ';' outside braces) at a time
  local f d n=0
  squeeze() { sed -e 's|/\*[^*]*\*/||g' "$1" | tr -s ' \t\n' ' ' | sed -e 's/^ //' -e 's/ $//'; }
  decls() { squeeze "$1" | awk -v RS=';' '{ d = d $0 ";"; b += gsub(/{/, "{") - gsub(/}/, "}") }
                                          b == 0 && d ~ /[^ ;]/ { sub(/^ /, "", d); print d; d = "" }'; }
  hdr=$(squeeze "$LAKE_SRC/include/lake.h")
  while read -r f; do
    [[ $f == *.lake.h ]] || continue
    n=$((n + 1))
    while read -r d; do
      [[ $hdr == *"$d"* ]] || fail "${f##*/}: not in lake.h: $d"
    done < <(decls "$f")
  done <"$T/list"
  [ "$n" -ge 2 ] || fail "only $n blocks quote lake.h"
}

@test "man 3: every C example compiles, -std=c99 and -std=c11, -Wall -Wextra -pedantic -Werror, against lake.h and liblake.so" {
  man3_examples "$T" >"$T/list"
  local f std n=0
  while read -r f; do
    case $f in *.program | *.fragment) ;; *) continue ;; esac
    n=$((n + 1))
    for std in c99 c11; do
      run cc_example "$std" "$f"
      [ "$status" -eq 0 ] || fail "${f##*/} (-std=$std): $output
$(cat -n "$f")"
    done
  done <"$T/list"
  [ "$n" -ge 5 ] || fail "only $n C examples: $(cat "$T/list")"
}

@test "man 3 example copy (liblake(3)): standard input put into the stage, its FILE value, and the object back, verified" {
  man3_examples "$T" >/dev/null
  cc_example c99 "$T/liblake-copy.program"
  head -c 1500000 /dev/urandom >"$T/in"
  LD_LIBRARY_PATH=$BUILD run_to "$T/out" "$T/liblake-copy.program.c99" <"$T/in"
  assert_equal "$status" 0
  cmp "$T/in" "$T/out"
  assert_equal "$(json_field size "$stderr")" 1500000
  assert_equal "$(json_field sha256 "$stderr")" "$(sha256sum <"$T/in" | cut -d' ' -f1)"
  assert_equal "$(stage_objects | wc -l)" 1
}

@test "man 3 example interrupt (lake_open(3)): SIGINT stops the put of a pipe that never ends, and nothing is stored" {
  man3_examples "$T" >/dev/null
  cc_example c11 "$T/lake_open-interrupt.program"
  # an input that has begun and never ends: a FIFO this shell holds open
  mkfifo "$T/fifo"
  exec 8<>"$T/fifo"
  printf 'the first bytes of a long input' >&8
  LD_LIBRARY_PATH=$BUILD "$T/lake_open-interrupt.program.c11" <"$T/fifo" >"$T/out" 2>"$T/err" &
  pid=$!
  # the handler is installed before the put, which waits for more input
  read_wait "$pid" "$T/err"
  kill -INT "$pid"
  status=0
  wait "$pid" || status=$?
  exec 8>&-
  assert_equal "$status" 1
  assert_equal "$(cat "$T/err")" "put: stopped; nothing was stored"
  assert_equal "$(cat "$T/out")" ""
  assert_equal "$(stage_objects | wc -l)" 0
  # and without the signal, the same program stores what it reads
  LD_LIBRARY_PATH=$BUILD run_to "$T/out" "$T/lake_open-interrupt.program.c11" <<<"all of it"
  assert_equal "$status" 0
  assert_equal "$(json_field size "$(cat "$T/out")")" 10
  assert_equal "$(stage_objects | wc -l)" 1
}

@test "man, every section: a literal's quote (Ql) ends where the literal does, not past No's text" {
  # Ql quotes to the end of its line: what follows a No lands inside
  run grep -nE '^\.(.* )?Ql .* No( |$)' "$LAKE_SRC"/man/man*/*.[1-9]
  assert_output ""
}
