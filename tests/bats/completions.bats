#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# completions.bats - the bash and zsh completions and the man pages agree with
# what the programs' --help prints, so the three cannot drift apart.
#   LAKE_BIN  the built programs; every lake-* in it is checked
#   LAKE_SRC  the source tree (completions/, man/), exported by tests/run

load helpers/common

setup() {
  common_setup
  : "${LAKE_SRC:?LAKE_SRC must point at the source tree}"
  BASH_COMP="$LAKE_SRC/completions/lake.bash"
  ZSH_COMP="$LAKE_SRC/completions/_lake"
  assert_file_exists "$BASH_COMP"
  assert_file_exists "$ZSH_COMP"
}

teardown() {
  common_teardown
}

# The programs to check: every lake-* in LAKE_BIN (at least put and get).
programs() {
  local p
  for p in "$LAKE_BIN"/lake-*; do
    [ -x "$p" ] && basename "$p"
  done
}

# The lines of an options table on stdin ("  -o, --output DIR   ..."),
# without their leading blanks.
option_lines() {
  sed -nE 's/^ +(-[^ ].*)$/\1/p'
}

# The left column of option lines on stdin: the names and the argument
# ("-o, --output DIR", "--listen HOST:PORT"), without the description, even
# where a long left column leaves a single space before it
# ("--max-schema-bytes BYTES serve: ...").  An argument is one upper-case
# word, which may hold a colon or a dot ("HOST:PORT", lake-query's "NS.T"),
# so a description that starts after one space is not taken for one.
option_left() {
  sed -E 's/^((-[A-Za-z0-9], )?--?[A-Za-z0-9][A-Za-z0-9-]*( [A-Z][A-Z_:.=]*)?)( .*)?$/\1/'
}

# The option names of option lines on stdin, one per line, sorted: the
# left column of each line.
option_names() {
  option_left |
    { grep -oE '(^|[ ,])-{1,2}[A-Za-z0-9][A-Za-z0-9-]*' || true; } | tr -d ' ,' | sort -u
}

# The names among option lines on stdin that take an argument: every name
# on a line whose left column ends in an upper-case word ("-o, --output DIR").
option_arg_names() {
  option_left | { grep -E ' [A-Z][A-Z_:.=]*$' || true; } |
    { grep -oE '(^|[ ,])-{1,2}[A-Za-z0-9][A-Za-z0-9-]*' || true; } | tr -d ' ,' | sort -u
}

# The options a program's --help lists, one per line, sorted.
help_options() {
  "$LAKE_BIN/$1" --help | option_lines | option_names
}

# The options of the --help table that take an argument.
help_arg_options() {
  "$LAKE_BIN/$1" --help | option_lines | option_arg_names
}

# The commands a program's --help lists, one per line: under "Commands:"
# (lake-catalog's "  list [NS]   tables as ..."), or as the first word after
# the program's name on its usage lines (lake-metasrv's "usage: lake-metasrv
# init --db PATH ..."); none for a program without commands.
help_commands() {
  "$LAKE_BIN/$1" --help |
    awk -v prog="$1" '
      /^(usage:|      ) / && $0 ~ ("^(usage:)? +" prog " ") {
        w = $0; sub("^(usage:)? +" prog " +", "", w); sub(/ .*/, "", w)
        if (w ~ /^[a-z][a-z-]*$/) print w
      }
      /Commands:$/ { inc = 1; next } inc && /^$/ { inc = 0 } inc && /^  [a-z]/ { print $1 }' |
    awk '!seen[$0]++'
}

# The option lines that command $2 of program $1 adds to the program's own:
# the lines of 'prog command --help' that 'prog --help' does not print.
# That help is printed from the command's option table in main.c, the one
# that parses its options, and the difference catches a command option
# that shares a global name (resolve's "--version N" against "--version").
command_own_lines() {
  comm -13 <("$LAKE_BIN/$1" --help | option_lines | sort) \
           <("$LAKE_BIN/$1" "$2" --help | option_lines | sort)
}

# Every option a program accepts anywhere: its --help and, for a program
# with commands, each command's --help.
help_all_options() {
  local c
  {
    help_options "$1"
    for c in $(help_commands "$1"); do
      "$LAKE_BIN/$1" "$c" --help | option_lines | option_names
    done
  } | sort -u
}

# What lake.bash offers for a program: its _lake_opts_<prog> (or, with
# "args", its _lake_args_<prog>; with "commands", its
# _lake_commands_<prog>) list, read by sourcing the file.
bash_options() {
  local kind=${2:-opts}
  bash -c 'source "$1" || exit 1
           v=_lake_${3}_${2//-/_}; [ -n "${!v+x}" ] || exit 2
           printf "%s\n" ${!v}' _ "$BASH_COMP" "$1" "$kind" | sort -u
}

# What lake.bash adds for command $2 of program $1: its
# _lake_opts_<prog>_<command> (or, with "args", _lake_args_<prog>_<command>)
# list, empty when the variable is not set.
bash_command_options() {
  local kind=${3:-opts}
  bash -c 'source "$1" || exit 1
           v=_lake_${4}_${2//-/_}_${3//-/_}
           [ -z "${!v-}" ] || printf "%s\n" ${!v}' _ "$BASH_COMP" "$1" "$2" "$kind" | sort -u
}

# Every option the zsh file names for a program: the shared `common` array
# plus the program's case branch, with the [descriptions] and the
# _arguments flags taken out.
zsh_spec_lines() {
  awk -v prog="$1" '
    /^common=\(/ { inc = 1; next }
    inc && /^\)/ { inc = 0 }
    inc { print }
    $0 ~ "^[ \t]*\\(" prog "\\)" { inp = 1; next }
    inp && /;;/ { inp = 0 }
    inp { print }
  ' "$ZSH_COMP"
}

# The option names in zsh spec lines on stdin.
zsh_option_names() {
  sed -E -e 's/\[[^]]*\]//g' -e 's/_arguments[^:]*://' |
    { grep -oE "(^|[^A-Za-z0-9_])-{1,2}[A-Za-z][A-Za-z0-9-]*" || true; } |
    sed -E 's/^[^-]+//' | sort -u
}

zsh_options() {
  zsh_spec_lines "$1" | zsh_option_names
}

# The options _lake adds for one command of lake-catalog: its
# own_<command>=( ... ) array (none when there is no such array).
zsh_command_options() {
  awk -v name="own_${1//-/_}" '
    $0 ~ "^[ \t]*" name "=\\(" { inside = 1 }
    inside { print }
    inside && /\)[ \t]*$/ { inside = 0 }
  ' "$ZSH_COMP" | zsh_option_names
}

# Fail listing the lines of file $2 that are not in file $1 (both sorted).
assert_subset() {
  local missing
  missing=$(comm -13 "$1" "$2")
  if [ -n "$missing" ]; then
    echo "$3:" $missing >&2
    return 1
  fi
}

@test "completions: LAKE_BIN holds lake-put and lake-get" {
  run programs
  assert_success
  assert_line lake-put
  assert_line lake-get
}

@test "completions: lake.bash registers a completion for every program" {
  local p
  for p in $(programs); do
    run bash -c 'source "$1" && complete -p "$2"' _ "$BASH_COMP" "$p"
    assert_success
    assert_output --partial "complete -F _lake_complete $p"
  done
}

@test "completions: _lake is a #compdef for every program" {
  local p first
  first=$(head -n 1 "$ZSH_COMP")
  [[ $first == "#compdef "* ]] || { echo "first line: $first" >&2; return 1; }
  for p in $(programs); do
    [[ " ${first#\#compdef } " == *" $p "* ]] || { echo "$p not in: $first" >&2; return 1; }
    grep -qE "^[[:space:]]*\\($p\\)" "$ZSH_COMP" || { echo "no ($p) branch" >&2; return 1; }
  done
}

@test "completions: every --help option is in lake.bash" {
  local p
  for p in $(programs); do
    help_options "$p" >"$T/help"
    [ -s "$T/help" ] || { echo "$p --help lists no options" >&2; return 1; }
    bash_options "$p" >"$T/comp" || { echo "lake.bash has no list for $p" >&2; return 1; }
    assert_subset "$T/comp" "$T/help" "$p: in --help, not in lake.bash"
    # and literally in the file, for readers who grep
    while read -r o; do
      grep -qe " $o\\b\\|'$o\\b" "$BASH_COMP" || { echo "$p: $o not in lake.bash" >&2; return 1; }
    done <"$T/help"
  done
}

@test "completions: lake.bash offers only options --help prints" {
  local p
  for p in $(programs); do
    help_options "$p" >"$T/help"
    bash_options "$p" >"$T/comp"
    assert_subset "$T/help" "$T/comp" "$p: in lake.bash, not in --help"
  done
}

@test "completions: lake.bash knows exactly which options take an argument" {
  local p
  for p in $(programs); do
    help_arg_options "$p" >"$T/help"
    bash_options "$p" args >"$T/comp"
    assert_subset "$T/comp" "$T/help" "$p: takes an argument, not so in lake.bash"
    assert_subset "$T/help" "$T/comp" "$p: takes no argument, but lake.bash says so"
  done
}

@test "completions: every --help option is in _lake" {
  local p
  for p in $(programs); do
    help_all_options "$p" >"$T/help"
    zsh_options "$p" >"$T/comp"
    assert_subset "$T/comp" "$T/help" "$p: in --help, not in _lake"
  done
}

@test "completions: _lake offers only options --help prints" {
  local p
  for p in $(programs); do
    help_all_options "$p" >"$T/help"
    zsh_options "$p" >"$T/comp"
    [ -s "$T/comp" ] || { echo "_lake names no options for $p" >&2; return 1; }
    assert_subset "$T/help" "$T/comp" "$p: in _lake, not in --help"
  done
}

@test "completions: _lake describes every option" {
  local p line
  for p in $(programs); do
    while IFS= read -r line; do
      case $line in
        *_arguments*) continue ;;
        *"'"*-[a-z]*) [[ $line == *"["?*"]"* ]] ||
                        { echo "$p: no [description]: $line" >&2; return 1; } ;;
      esac
    done < <(zsh_spec_lines "$p")
  done
}

@test "completions: lake-catalog --help lists its commands and their options" {
  local c
  [ -x "$LAKE_BIN/lake-catalog" ] || skip "no lake-catalog in LAKE_BIN"
  run help_commands lake-catalog
  assert_success
  for c in list show resolve refresh status create-namespace create drop whoami actions; do
    assert_line "$c"
  done
  # resolve and refresh have options of their own, which the checks below
  # must see
  run command_own_lines lake-catalog resolve
  assert_output --regexp '^--version N +the registration'
  run command_own_lines lake-catalog refresh
  assert_output --regexp '^--force +fetch'
  run command_own_lines lake-catalog list
  assert_output ""
}

@test "completions: lake.bash offers exactly the commands --help lists" {
  local p
  for p in $(programs); do
    help_commands "$p" | sort -u >"$T/help"
    [ -s "$T/help" ] || continue
    bash_options "$p" commands >"$T/comp" || { echo "lake.bash has no commands for $p" >&2; return 1; }
    assert_subset "$T/comp" "$T/help" "$p: a command of --help, not in lake.bash"
    assert_subset "$T/help" "$T/comp" "$p: a command in lake.bash, not in --help"
  done
}

@test "completions: lake.bash knows each command's own options and their arguments" {
  local p c
  for p in $(programs); do
    for c in $(help_commands "$p"); do
      command_own_lines "$p" "$c" | option_names >"$T/help"
      bash_command_options "$p" "$c" >"$T/comp"
      assert_subset "$T/comp" "$T/help" "$p $c: in --help, not in lake.bash"
      assert_subset "$T/help" "$T/comp" "$p $c: in lake.bash, not in --help"
      command_own_lines "$p" "$c" | option_arg_names >"$T/help"
      bash_command_options "$p" "$c" args >"$T/comp"
      assert_subset "$T/comp" "$T/help" "$p $c: takes an argument, not so in lake.bash"
      assert_subset "$T/help" "$T/comp" "$p $c: takes no argument, but lake.bash says so"
    done
  done
}

@test "completions: _lake names every command and each command's own options" {
  local p c
  [ -x "$LAKE_BIN/lake-catalog" ] || skip "no lake-catalog in LAKE_BIN"
  for p in $(programs); do
    for c in $(help_commands "$p"); do
      grep -qF "'$c:" "$ZSH_COMP" || { echo "_lake does not describe $p command $c" >&2; return 1; }
      [ "$p" = lake-catalog ] || continue # own_<command> arrays are lake-catalog's
      command_own_lines "$p" "$c" | option_names >"$T/help"
      zsh_command_options "$c" >"$T/comp"
      assert_subset "$T/comp" "$T/help" "$p $c: in --help, not in _lake"
      assert_subset "$T/help" "$T/comp" "$p $c: in _lake, not in --help"
    done
  done
}

# Run the bash completion function for a command line (the last word is
# the one being completed) and print COMPREPLY, one per line.
bash_complete() {
  bash -c 'source "$1" || exit 1; shift
           COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
           _lake_complete; printf "%s\n" "${COMPREPLY[@]}"' _ "$BASH_COMP" "$@"
}

@test "completions: bash completes lake-put --na to --name" {
  run bash_complete lake-put --na
  assert_success
  assert_output --name
}

@test "completions: bash completes lake-get options, short and long" {
  run bash_complete lake-get -
  assert_success
  assert_line -o
  assert_line --output
  assert_line --no-verify
  assert_line -h
  assert_line --version
  refute_line --name
}

@test "completions: bash completes directories only after -o and --output" {
  mkdir -p "$T/w/outdir"
  : >"$T/w/outfile"
  cd "$T/w"
  run bash_complete lake-get -o out
  assert_success
  assert_output outdir
  run bash_complete lake-get --output = out
  assert_output outdir
  run bash_complete lake-get --output=out
  assert_output --output=outdir
}

@test "completions: bash completes files as lake-put operands, nothing for --stage" {
  mkdir -p "$T/w"
  : >"$T/w/report.pdf"
  cd "$T/w"
  run bash_complete lake-put rep
  assert_success
  assert_output report.pdf
  run bash_complete lake-put --stage rep
  assert_success
  assert_output ""
}

@test "completions: bash completes lake-catalog commands, then each command's options" {
  run bash_complete lake-catalog cr
  assert_success
  assert_line create
  assert_line create-namespace
  assert_equal "${#lines[@]}" 2
  run bash_complete lake-catalog --
  assert_line --json
  assert_line --max-age
  refute_line --force
  run bash_complete lake-catalog refresh --
  assert_line --force
  assert_line --strict
  run bash_complete lake-catalog list --
  refute_line --force
  # resolve's --version N shares its name with the global --version: once
  run bash_complete lake-catalog resolve --ver
  assert_output --version
}

@test "completions: bash skips option arguments when it looks for the command" {
  run bash_complete lake-catalog --max-age 5 sh
  assert_output show
  run bash_complete lake-catalog --max-age = 5 sh
  assert_output show
  run bash_complete lake-catalog -H --json sta
  assert_output status
  # the arguments of --max-age and of resolve's --version N are free text
  run bash_complete lake-catalog --max-age ''
  assert_output ""
  run bash_complete lake-catalog resolve x.y --version ''
  assert_output ""
}

# A lake with two namespaces and three tables, and a lake-catalog wrapper
# first in PATH that records how each run was called and what it traced
# (LAKE_TRACE=1), so that a test can count the calls to the metadata source
# that completion makes.
catalog_fixture() {
  lake-catalog create-namespace docs
  lake-catalog create docs.papers 'title TEXT, pdf FILE'
  lake-catalog create docs.notes 'body TEXT'
  lake-catalog create-namespace web
  lake-catalog create web.pages 'url TEXT'
  mkdir -p "$T/wrap"
  printf '%s\n' '#!/bin/sh' \
    "printf '%s\\n' \"\$*\" >>'$T/calls'" \
    "LAKE_TRACE=1 exec '$LAKE_BIN/lake-catalog' \"\$@\" 2>>'$T/trace'" >"$T/wrap/lake-catalog"
  chmod +x "$T/wrap/lake-catalog"
  PATH="$T/wrap:$PATH"
  : >"$T/calls"
  : >"$T/trace"
}

@test "completions: bash completes lake-catalog table names from the cache, with no source call" {
  local c
  catalog_fixture
  # an expired snapshot: any read allowed to ask the source would ask
  export LAKE_CATALOG_TTL=0
  run bash_complete lake-catalog show d
  assert_success
  assert_line docs.notes
  assert_line docs.papers
  assert_equal "${#lines[@]}" 2
  for c in resolve drop; do
    run bash_complete lake-catalog "$c" ''
    assert_line docs.notes
    assert_line docs.papers
    assert_line web.pages
  done
  run bash_complete lake-catalog --json resolve w
  assert_output web.pages
  run cat "$T/calls"
  assert_line -- "--offline list"
  run cat "$T/trace"
  refute_output --partial "trace: source"
  # the wrapper does see source calls: the same read without --offline
  lake-catalog list >/dev/null
  run cat "$T/trace"
  assert_output --partial "trace: source catalog_snapshot"
}

@test "completions: bash completes alter's table, its change, and for a rename or drop the table's columns, from the cache" {
  catalog_fixture
  export LAKE_CATALOG_TTL=0
  run bash_complete lake-catalog alter docs.p
  assert_output docs.papers
  run bash_complete lake-catalog alter docs.papers ''
  assert_equal "$(sort <<<"$output" | paste -sd,)" "add-column,drop-column,rename-column"
  run bash_complete lake-catalog alter docs.papers drop-column ''
  assert_equal "$(paste -sd, <<<"$output")" "title,pdf"
  run bash_complete lake-catalog alter docs.papers rename-column t
  assert_output title
  # add-column's 'COL TYPE' is new text
  run bash_complete lake-catalog alter docs.papers add-column ''
  assert_output ""
  run cat "$T/calls"
  assert_line -- "--offline show docs.papers"
  run cat "$T/trace"
  refute_output --partial "trace: source"
}

@test "completions: bash completes grant and revoke word by word, the target from the cache" {
  catalog_fixture
  export LAKE_CATALOG_TTL=0
  run bash_complete lake-catalog grant ''
  assert_equal "$(sort <<<"$output" | paste -sd,)" "modify,read,write"
  run bash_complete lake-catalog grant read ''
  assert_output ON
  run bash_complete lake-catalog grant read ON d
  assert_equal "$(sort <<<"$output" | paste -sd,)" "docs,docs.notes,docs.papers"
  # the whole catalog, quoted as the shell needs it (not a bare glob)
  run bash_complete lake-catalog grant read ON ''
  assert_equal "$(sort <<<"$output" | paste -sd,)" "'*',docs,docs.notes,docs.papers,web,web.pages"
  run bash_complete lake-catalog grants d
  assert_equal "$(sort <<<"$output" | paste -sd,)" "docs,docs.notes,docs.papers"
  run bash_complete lake-catalog grant read ON docs ''
  assert_output TO
  run bash_complete lake-catalog revoke read ON docs ''
  assert_output FROM
  run bash_complete lake-catalog revoke read ON docs FROM ''
  assert_equal "$(sort <<<"$output" | paste -sd,)" "PUBLIC,role:user"
  run bash_complete lake-catalog grants docs.p
  assert_output docs.papers
  run cat "$T/trace"
  refute_output --partial "trace: source"
}

@test "completions: bash completes lake-catalog namespaces from the cache" {
  catalog_fixture
  export LAKE_CATALOG_TTL=0
  run bash_complete lake-catalog list ''
  assert_success
  assert_line docs
  assert_line web
  assert_equal "${#lines[@]}" 2
  # a new table: its namespace and the dot; the name is typed
  run bash_complete lake-catalog create w
  assert_output web.
  # a new namespace and a schema are new text
  run bash_complete lake-catalog create-namespace ''
  assert_output ""
  run bash_complete lake-catalog create docs.x ''
  assert_output ""
  run bash_complete lake-catalog show docs.papers ''
  assert_output ""
  run cat "$T/trace"
  refute_output --partial "trace: source"
}

@test "completions: bash completes no lake-catalog tables without a cache, and creates no registry" {
  # no snapshot yet: --offline exits 69 and completion stays quiet
  run bash_complete lake-catalog show ''
  assert_success
  assert_output ""
  assert_file_not_exists "$LAKE_HOME/registry.db"
}

@test "completions: lake-metasrv --help lists its commands and the options that take an argument" {
  [ -x "$LAKE_BIN/lake-metasrv" ] || skip "no lake-metasrv in LAKE_BIN"
  run help_commands lake-metasrv
  assert_success
  assert_output "$(printf '%s\n' init serve token audit)"
  # a long left column leaves one space before the description, and an
  # argument may hold a colon: both still count as taking an argument
  run help_arg_options lake-metasrv
  assert_line --max-schema-bytes
  assert_line --listen
  refute_line --insecure-listen
  refute_line --json
}

@test "completions: bash completes lake-metasrv commands, token commands and roles" {
  run bash_complete lake-metasrv ''
  assert_success
  assert_output "$(printf '%s\n' init serve token audit)"
  run bash_complete lake-metasrv --db = reg.db se
  assert_output serve
  run bash_complete lake-metasrv -q --db reg.db token ''
  assert_output "$(printf '%s\n' create list revoke)"
  run bash_complete lake-metasrv token create --role q
  assert_output query-service
  run bash_complete lake-metasrv token create --role=m
  assert_output --role=metadata-peer
  run bash_complete lake-metasrv token list ''
  assert_output ""
  run bash_complete lake-metasrv init ''
  assert_output ""
  run bash_complete lake-metasrv serve --max-b
  assert_line --max-body
  assert_line --max-bytes
  assert_equal "${#lines[@]}" 2
  # free text: the address, the names, the numbers
  run bash_complete lake-metasrv serve --listen ''
  assert_output ""
  run bash_complete lake-metasrv serve --tls-priority ''
  assert_output ""
  run bash_complete lake-metasrv serve --tls-p
  assert_output --tls-priority
  run bash_complete lake-metasrv token create --name ''
  assert_output ""
}

@test "completions: bash completes files after lake-metasrv --db, --tls-cert and --tls-key" {
  mkdir -p "$T/w"
  : >"$T/w/registry.db"
  : >"$T/w/cert.pem"
  : >"$T/w/key.pem"
  cd "$T/w"
  run bash_complete lake-metasrv init --db reg
  assert_success
  assert_output registry.db
  run bash_complete lake-metasrv serve --tls-cert ce
  assert_output cert.pem
  run bash_complete lake-metasrv serve --tls-key=k
  assert_output --tls-key=key.pem
}

@test "completions: bash completes lake-query formats, SQL files and --import tables from the cache" {
  [ -x "$LAKE_BIN/lake-query" ] || skip "no lake-query in LAKE_BIN"
  catalog_fixture
  export LAKE_CATALOG_TTL=0
  run bash_complete lake-query -f j
  assert_success
  assert_output "$(printf '%s\n' json jsonl)"
  run bash_complete lake-query --format=t
  assert_output "$(printf '%s\n' --format=tsv --format=table)"
  run bash_complete lake-query --import d
  assert_output "$(printf '%s\n' docs.notes docs.papers)"
  run bash_complete lake-query --import = w
  assert_output web.pages
  run cat "$T/trace"
  refute_output --partial "trace: source"
  # one SQL file; none with -c or --import, and -c SQL is free text
  mkdir -p "$T/w"
  : >"$T/w/report.sql"
  cd "$T/w"
  run bash_complete lake-query rep
  assert_output report.sql
  run bash_complete lake-query report.sql ''
  assert_output ""
  run bash_complete lake-query -c ''
  assert_output ""
  # inside the SQL: the table name being typed, the rest of the word kept
  run bash_complete lake-query -c 'SELECT * FROM docs.p'
  assert_output 'SELECT * FROM docs.papers'
  # in an open quote one match has a twin with a blank, so that readline
  # neither closes the quote nor adds a space (see the readline test)
  run bash_complete lake-query --command '"SELECT count(*) FROM (w'
  assert_output "$(printf '%s\n' '"SELECT count(*) FROM (web.pages' '"SELECT count(*) FROM (web.pages ')"
  run bash_complete lake-query -c 'SELECT * FROM x'
  assert_output ""
  run cat "$T/trace"
  refute_output --partial "trace: source"
  run bash_complete lake-query -c 'SELECT 1' rep
  assert_output ""
  run bash_complete lake-query --import docs.papers rep
  assert_output ""
}

# What an interactive bash (real readline, on a pseudo-terminal) inserts
# when TAB is pressed at the end of LINE, with lake.bash loaded.  Each step
# waits for what the shell prints, never for a time: readline takes keys in
# order, so C-t, bound after TAB to print the line (READLINE_LINE), shows
# the line once the completion is done.  (The bound of 60 s only keeps a
# hung shell from hanging the suite.)
readline_tab() {
  python3 - "$BASH_COMP" "$1" <<'PY'
import os, pty, select, signal, sys, time
comp, line = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
seen = b""
def until(mark):
    global seen
    end = time.time() + 60
    while mark not in seen:
        if time.time() > end:
            sys.exit("readline_tab: no %r from the shell, only %r" % (mark, seen))
        if select.select([fd], [], [], 0.1)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                sys.exit("readline_tab: the shell ended: %r" % seen)
            seen += chunk
    i = seen.index(mark) + len(mark)
    out, seen = seen[:i], seen[i:]
    return out
# (the echo of each command line differs from its output: RE""ADY, %s)
os.write(fd, b"PS1='$ '; bind 'set bell-style none'; source '" + comp.encode() +
         b"'; bind -x '\"\\C-t\": printf \"\\n<<<%s>>>\\n\" \"$READLINE_LINE\"'; echo RE\"\"ADY\n")
until(b"READY\r\n")
os.write(fd, line.encode() + b"\t\x14")
until(b"\n<<<")
done = until(b">>>")[:-3].decode(errors="replace")
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
if not done.startswith(line):
    sys.exit("readline_tab: the line became %r" % done)
sys.stdout.write(done[len(line):])
PY
}

@test "completions: bash completes a table inside a quoted -c SQL without closing the quote or adding a space" {
  [ -x "$LAKE_BIN/lake-query" ] || skip "no lake-query in LAKE_BIN"
  catalog_fixture
  lake-catalog list >/dev/null   # the snapshot cache the completion reads
  run readline_tab 'lake-query -c "SELECT * FROM web.pa'
  assert_output 'ges'
  run readline_tab "lake-query -c 'SELECT count(*) FROM (web.pa"
  assert_output 'ges'
  run readline_tab 'lake-query --command="SELECT * FROM web.pa'
  assert_output 'ges'
  run readline_tab 'lake-query -c SELECT\ *\ FROM\ web.pa'
  assert_output 'ges'
  # elsewhere a unique match still ends the word
  run readline_tab 'lake-catalog show web.pa'
  assert_output 'ges '
}

# A directory and files whose names hold a blank, beside names that begin
# the same: "my<TAB>" must offer "my dir", never "my" and "dir".
blank_names() {
  mkdir -p "$T/w/my dir" "$T/w/my dir2/sub"
  : >"$T/w/my file.pem"
  : >"$T/w/my file.sql"
  cd "$T/w" || return
}

@test "completions: bash keeps a file name with a blank whole (COMPREPLY)" {
  blank_names
  run bash_complete lake-get -o my
  assert_success
  assert_output "$(printf '%s\n' 'my dir' 'my dir2')"
  run bash_complete lake-get --output = 'my\ dir'
  assert_output "$(printf '%s\n' 'my dir' 'my dir2')"
  run bash_complete lake-get -o '"my d'
  assert_output "$(printf '%s\n' 'my dir' 'my dir2')"
  run bash_complete lake-get -o "'my dir2"
  assert_output 'my dir2'
  run bash_complete lake-put 'my f'
  assert_output "$(printf '%s\n' 'my file.pem' 'my file.sql')"
  run bash_complete lake-put 'my\ file.s'
  assert_output 'my file.sql'
  run bash_complete lake-metasrv serve --tls-cert 'my\ file.p'
  assert_output 'my file.pem'
  run bash_complete lake-metasrv --db 'my\ file.s'
  assert_output 'my file.sql'
  run bash_complete lake-query 'my\ file.s'
  assert_output 'my file.sql'
}

@test "completions: bash completes a file name with a blank in an interactive shell, quoted as typed" {
  blank_names
  rmdir "$T/w/my dir"
  # one directory: the rest of its name, the blank escaped as typed, a slash
  run readline_tab 'lake-get -o my'
  assert_output '\ dir2/'
  run readline_tab 'lake-get --output=my'
  assert_output '\ dir2/'
  run readline_tab 'lake-get -o my\ d'
  assert_output 'ir2/'
  run readline_tab 'lake-get -o "my'
  assert_output ' dir2"/'
  run readline_tab "lake-get -o 'my"
  assert_output " dir2'/"
  # one file: the rest of its name and a space (after the closing quote)
  run readline_tab 'lake-put my\ file.s'
  assert_output 'ql '
  run readline_tab 'lake-put "my file.s'
  assert_output 'ql" '
  run readline_tab 'lake-query my\ file.s'
  assert_output 'ql '
  run readline_tab "lake-metasrv serve --tls-cert 'my file.p"
  assert_output "em' "
  run readline_tab 'lake-put my\ file.sql my\ file.p'
  assert_output 'em '
  # several: what they have in common, the blank escaped
  run readline_tab 'lake-put my'
  assert_output '\ '
}

@test "completions: zsh -n accepts _lake" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  run zsh -n "$ZSH_COMP"
  assert_success
  assert_output ""
}

@test "completions: bash -n accepts lake.bash" {
  run bash -n "$BASH_COMP"
  assert_success
}

@test "man: every page is mandoc -Tlint -Wwarning clean" {
  command -v mandoc >/dev/null || fail "mandoc is not installed (make deps)"
  local m n=0
  for m in "$LAKE_SRC"/man/*.[1-9]; do
    [ -f "$m" ] || continue
    n=$((n + 1))
    run mandoc -Tlint -Wwarning "$m"
    [ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output" >&2; return 1; }
  done
  [ "$n" -ge 4 ] || { echo "only $n man pages in $LAKE_SRC/man" >&2; return 1; }
}

# The man page of a program: section 8 for the server, 1 for the rest.
man_page() {
  case $1 in
    lake-metasrv) echo "$LAKE_SRC/man/$1.8" ;;
    *) echo "$LAKE_SRC/man/$1.1" ;;
  esac
}

@test "man: every program has a page documenting its --help options" {
  # and its commands' options (lake-catalog resolve --version N, refresh --force)
  command -v mandoc >/dev/null || fail "mandoc is not installed (make deps)"
  local p o page
  for p in $(programs); do
    page=$(man_page "$p")
    assert_file_exists "$page"
    mandoc -Tascii "$page" | col -b >"$T/page"
    while read -r o; do
      grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" "$T/page" ||
        { echo "${page##*/} does not mention $o" >&2; return 1; }
    done < <(help_all_options "$p")
  done
}

@test "man: lake-metasrv.8 documents every action, error code and metric" {
  [ -x "$LAKE_BIN/lake-metasrv" ] || skip "no lake-metasrv in LAKE_BIN"
  local w
  mandoc -Tascii "$LAKE_SRC/man/lake-metasrv.8" | col -b >"$T/page"
  for w in catalog_snapshot resolve append create_namespace create_table drop_table whoami \
           invalid_argument unauthenticated permission_denied not_found conflict \
           failed_precondition payload_too_large unavailable internal \
           lake_requests_total lake_request_duration_seconds lake_snapshot_permits_in_use \
           lake_registry_generation lake_metasrv_build_info LAKE_TEST_SNAPSHOT_MUTATIONS LAKE_TEST_KILL_AFTER_APPEND \
           /v1/health /v1/actions /v1/metrics Retry-After KillSignal=SIGTERM; do
    grep -qF -- "$w" "$T/page" || { echo "lake-metasrv.8 does not mention $w" >&2; return 1; }
  done
}
