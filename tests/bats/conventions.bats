#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# Conventions shared by the programs: progress, -q, LAKE_TRACE lines,
# make install/uninstall, and shellcheck over the repository's shell.

load helpers/common

setup() { common_setup; }
teardown() { common_teardown; }

@test "--progress draws a bar on stderr; without a terminal nothing is drawn" {
  head -c 3000000 /dev/urandom >"$T/in"
  run --separate-stderr lake-put --progress "$T/in"
  assert_success
  [[ "$stderr" == *"%"* ]]
  [[ "$stderr" == *"in"* ]]
  run --separate-stderr lake-put "$T/in"
  assert_success
  assert_equal "$stderr" ""
}

@test "-q wins over --progress and silences warnings, never errors" {
  printf a >"$T/x"
  run --separate-stderr lake-put -q --progress "$T/x"
  assert_success
  assert_equal "$stderr" ""
  refs=$(lake-put "$T/x" "$T/x")
  mkdir "$T/out"
  run --separate-stderr lake-get -o "$T/out" <<<"$refs"
  assert_success
  assert_equal "$stderr" "lake-get: x: name already written; writing x.1"
  assert_file_exist "$T/out/x.1"
  run --separate-stderr lake-get -q -o "$T/out" <<<"$refs"
  assert_success
  assert_equal "$stderr" ""
  run --separate-stderr lake-get -q 'file:///etc/passwd'
  assert_failure 65
  assert_equal "$stderr" "lake-get: file:///etc/passwd: outside the managed stage"
}

@test "a bare location is verified against the digest recorded at put" {
  loc=$(printf 'abc' | lake-put | jq -r .location)
  run --separate-stderr lake-get "$loc"
  assert_success
  assert_output abc
  assert_equal "$stderr" ""
  path=${loc#file://}
  printf 'abd' >"$path.new" && cat "$path.new" >"$path"   # same inode, attribute kept
  run --separate-stderr lake-get "$loc"
  assert_failure 65
  [[ "$stderr" == "lake-get: $loc: SHA-256 mismatch"* ]]
}

@test "LAKE_TRACE=1 prints one 'trace: stage' line per object-store request" {
  printf a >"$T/a"; printf b >"$T/b"
  run --separate-stderr env LAKE_TRACE=1 lake-put "$T/a" "$T/b"
  assert_success
  [ "$(grep -c '^trace: stage PUT ' <<<"$stderr")" -eq 2 ]
  refs=$output
  run --separate-stderr env LAKE_TRACE=1 lake-get <<<"$refs"
  assert_success
  assert_output "ab"
  [ "$(grep -c '^trace: stage GET ' <<<"$stderr")" -eq 2 ]
  run --separate-stderr lake-get <<<"$refs"
  assert_equal "$stderr" ""
}

@test "a refused location costs no stage request" {
  run --separate-stderr env LAKE_TRACE=1 lake-get "file://$STAGE/../etc/passwd"
  assert_failure 65
  [ "$(grep -c '^trace:' <<<"$stderr")" -eq 0 ]
}

@test "make install and uninstall honour PREFIX and DESTDIR" {
  root="$T/root"
  run make -s -C "$LAKE_SRC" install DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  local p m
  for p in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    assert_file_exist "$root/opt/lake/bin/$p"
    assert_file_exist "$root/opt/lake/share/bash-completion/completions/$p"
  done
  assert_file_exist "$root/opt/lake/share/zsh/site-functions/_lake"
  for m in "$LAKE_SRC"/man/man[1-9]/*.[1-9]; do
    assert_file_exist "$root/opt/lake/share/man/$(basename "$(dirname "$m")")/$(basename "$m")"
  done
  # liblake (liblake(3)): the header, both libraries, the soname's links, lake.pc
  assert_file_exist "$root/opt/lake/include/lake.h"
  assert_file_exist "$root/opt/lake/lib/liblake.a"
  assert_file_exist "$root/opt/lake/lib/liblake.so.$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")"
  assert_link_exist "$root/opt/lake/lib/liblake.so.0"
  assert_link_exist "$root/opt/lake/lib/liblake.so"
  run grep -x 'includedir=/opt/lake/include' "$root/opt/lake/lib/pkgconfig/lake.pc"
  assert_success
  run "$root/opt/lake/bin/lake-put" --version
  assert_success
  assert_line --index 0 --regexp '^lake-put [0-9]+\.[0-9]+\.[0-9]+( \(git [0-9a-f-]+(dirty)?\))?$'
  run make -s -C "$LAKE_SRC" uninstall DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  [ -z "$(find "$root" ! -type d)" ]
}

@test "make: after a build nothing is left to do (no object deleted); quiet lines, V=1 the commands" {
  # the build the tests run against is complete: make -q must agree (the
  # programs' objects were once deleted as intermediate files, and the
  # next make relinked every program)
  local san=
  [[ $LAKE_BIN == */build-san/bin ]] && san=SANITIZE=1
  [[ $LAKE_BIN == "$LAKE_SRC"/build*/bin ]] || skip "LAKE_BIN is not a build of LAKE_SRC"
  run make -q -C "$LAKE_SRC" $san all
  assert_success
  local p
  for p in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    assert_file_exist "${LAKE_BIN%/bin}/cmd/$p/main.o"
  done
  run make -n -C "$LAKE_SRC" $san all
  assert_success
  refute_output --partial "rm "
  # one short line per step by default, the whole command with V=1 (into
  # a private build directory: the real one is not touched)
  run make --no-print-directory -C "$LAKE_SRC" BUILD="$T/b" "$T/b/lib/core/id.o"
  assert_success
  assert_output "  CC  $T/b/lib/core/id.o"
  rm -rf "$T/b"
  run make --no-print-directory -C "$LAKE_SRC" BUILD="$T/b" V=1 "$T/b/lib/core/id.o"
  assert_success
  assert_output --regexp " -Werror .* -c lib/core/id.c -o $T/b/lib/core/id.o\$"
}

@test "make demo does not need npm (only make check installs the test peers)" {
  # -W: as if tests/package.json had changed, so the npm step is due
  run make -n -C "$LAKE_SRC" -W tests/package.json demo
  assert_success
  refute_output --partial npm
  run make -n -C "$LAKE_SRC" -W tests/package.json check
  assert_success
  assert_output --partial tests/node_modules/.package-lock.json
}

@test "lake-query --import: --progress draws rows and bytes (with a percentage for a file), -q and --no-progress none" {
  lake-catalog create-namespace t
  lake-catalog create t.n 'id INTEGER, s TEXT'
  seq 1 200000 | awk 'BEGIN { print "id,s" } { print $1 ",row" $1 }' >"$T/in.csv"
  run --separate-stderr lake-query --import t.n --progress <"$T/in.csv"
  assert_success
  [[ $stderr == *"t.n "*"%"*" rows "*"B/s"* ]] || fail "no bar: $stderr"
  [[ $stderr == *"200000 rows appended" ]]
  # a pipe has no size: rows and bytes without a percentage
  run --separate-stderr bash -c 'cat "$0" | lake-query --import t.n --progress' "$T/in.csv"
  assert_success
  [[ $stderr == *" rows "*"B/s"* ]] || fail "no bar: $stderr"
  [[ $stderr != *"%"* ]] || fail "a percentage without a size: $stderr"
  # not a terminal, --no-progress, -q (wherever it stands): no bar
  run --separate-stderr lake-query --import t.n <"$T/in.csv"
  assert_equal "$stderr" "lake-query: t.n: 200000 rows appended"
  run --separate-stderr lake-query --import t.n --progress --no-progress <"$T/in.csv"
  assert_equal "$stderr" "lake-query: t.n: 200000 rows appended"
  run --separate-stderr lake-query --progress -q --import t.n <"$T/in.csv"
  assert_equal "$stderr" ""
  assert_equal "$(lake-query -c 'SELECT count(*) FROM t.n')" 1000000
}

@test "--progress and --no-progress: taken by exactly the programs lake(7) says" {
  local p
  for p in lake-put lake-get lake-query; do
    "$p" --help | grep -q -- '--progress' || fail "$p has no --progress"
    "$p" --help | grep -q -- '--no-progress' || fail "$p has no --no-progress"
  done
  for p in lake-catalog lake-metasrv; do
    run --separate-stderr "$p" --progress
    assert_error "$p" 64 "--progress"
  done
  # lake(7) names them
  run bash -c "mandoc -Tutf8 '$LAKE_SRC/man/man7/lake.7' | col -b | tr -s ' \n' ' '"
  assert_output --partial "lake-put(1), lake-get(1) and lake-query(1) --import draw a progress bar"
}

# The repository's shell: every file under bench/, tests/, .ci/ and
# completions/ named *.bash or *.sh or starting with a bash or sh #!, the
# test peers' node_modules and the bats suites aside.
shell_scripts() {
  local f
  (cd "$LAKE_SRC" && find bench tests .ci completions -path tests/node_modules -prune -o -type f -print) |
    sort | while IFS= read -r f; do
      case $f in
        *.bats) ;;
        *.bash | *.sh) printf '%s\n' "$f" ;;
        *) head -n 1 "$LAKE_SRC/$f" | grep -qE '^#!.*[/ ](ba)?sh( |$)' && printf '%s\n' "$f" ;;
      esac
    done
}

@test "shellcheck: the repository's shell is clean, and every warning kept says why" {
  command -v shellcheck >/dev/null || fail "shellcheck is not installed (make deps)"
  local files f
  mapfile -t files < <(shell_scripts)
  for f in bench/lib.sh bench/put-get bench/report tests/run tests/demo.sh tests/fuzz/run .ci/run \
    completions/lake.bash tests/bats/helpers/common.bash tests/bats/helpers/metasrv.bash; do
    printf '%s\n' "${files[@]}" | grep -qxF "$f" || fail "$f is not among the scripts checked: ${files[*]}"
  done
  # .shellcheckrc: sourced files are followed, found beside their script
  cd "$LAKE_SRC"
  run shellcheck -f gcc "${files[@]}"
  [ "$status" -eq 0 ] && [ -z "$output" ] || fail "shellcheck: $output"
  # a kept warning: "# shellcheck disable=SCnnnn # why"
  run grep -nE '^[[:space:]]*# shellcheck disable=' "${files[@]}"
  assert_success
  run grep -nvE '# shellcheck disable=SC[0-9]+(,SC[0-9]+)* # [^ ].*' <<<"$output"
  assert_output ""
}

@test "shellcheck: the bats suites have no warning, and every warning kept says why" {
  command -v shellcheck >/dev/null || fail "shellcheck is not installed (make deps)"
  cd "$LAKE_SRC"
  local files=(tests/bats/*.bats) found
  # Warnings and errors only: of the notes, most (SC2030, SC2031) say that
  # a variable set in one @test is lost to the others, which is how bats
  # runs its tests, each in its own subshell.  bats' run --separate-stderr
  # sets stderr and stderr_lines, which shellcheck 0.9 does not know (it
  # knows output, status and lines): read, they are "referenced but not
  # assigned", set, "unused"; those are dropped here, once for all files.
  run shellcheck -f gcc -S warning "${files[@]}"
  [ "$status" -le 1 ] || fail "shellcheck failed: $output"
  found=$(grep -vE ': warning: (stderr|stderr_lines) (is referenced but not assigned|appears unused)\. .*\[SC(2154|2034)\]$' <<<"$output") || true
  [ -z "$found" ] || fail "shellcheck: $found"
  run grep -nE '^[[:space:]]*# shellcheck disable=' "${files[@]}"
  run grep -nvE '# shellcheck disable=SC[0-9]+(,SC[0-9]+)* # [^ ].*' <<<"$output"
  assert_output ""
}

@test "every source file names its license (SPDX: BSD-2-Clause) in its first lines; LICENSE and debian/copyright give the text" {
  git -C "$LAKE_SRC" rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout"
  local f missing=()
  while IFS= read -r f; do
    case $f in
      # data, not source: JSON, fuzz dictionaries and corpora, the plots
      # bench/plot draws, prose, the
      # packaging (debian/copyright covers it), tool settings
      *.json | *.dict | *.md | tests/fuzz/corpus/* | bench/plots/* | debian/* | .gitignore | .shellcheckrc | tests/valgrind.supp | LICENSE) continue ;;
    esac
    head -3 "$LAKE_SRC/$f" | grep -q "SPDX-License-Identifier: BSD-2-Clause" || missing+=("$f")
  done < <(git -C "$LAKE_SRC" ls-files)
  [ ${#missing[@]} -eq 0 ] || fail "no SPDX line in the first 3 lines of: ${missing[*]}"
  assert_equal "$(sed -n '1p;3p' "$LAKE_SRC/LICENSE")" $'BSD 2-Clause License\nCopyright (c) 2026, The lake authors'
  grep -qx "License: BSD-2-Clause" "$LAKE_SRC/debian/copyright" || fail "debian/copyright names no BSD-2-Clause"
  grep -qx "Copyright: 2026 The lake authors" "$LAKE_SRC/debian/copyright" || fail "debian/copyright: no copyright line"
}
