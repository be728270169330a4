#!/usr/bin/env bats
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

# The options a program's --help lists, one per line, sorted: the left
# column of each line of the options table ("  -o, --output DIR   ...").
help_options() {
  "$LAKE_BIN/$1" --help |
    sed -nE 's/^ +(-[^ ].*)$/\1/p' | sed -E 's/   .*//' |
    grep -oE '(^|[ ,])-{1,2}[A-Za-z0-9][A-Za-z0-9-]*' | tr -d ' ,' | sort -u
}

# The options of the --help table that take an argument: every name on a
# line whose left column ends in an upper-case word ("-o, --output DIR").
help_arg_options() {
  "$LAKE_BIN/$1" --help |
    sed -nE 's/^ +(-[^ ].*)$/\1/p' | sed -E 's/   .*//' |
    grep -E ' [A-Z][A-Z_]*$' |
    grep -oE '(^|[ ,])-{1,2}[A-Za-z0-9][A-Za-z0-9-]*' | tr -d ' ,' | sort -u
}

# What lake.bash offers for a program: its _lake_opts_<prog> (or, with
# "args", its _lake_args_<prog>) list, read by sourcing the file.
bash_options() {
  local kind=${2:-opts}
  bash -c 'source "$1" || exit 1
           v=_lake_${3}_${2//-/_}; [ -n "${!v+x}" ] || exit 2
           printf "%s\n" ${!v}' _ "$BASH_COMP" "$1" "$kind" | sort -u
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

zsh_options() {
  zsh_spec_lines "$1" |
    sed -E -e 's/\[[^]]*\]//g' -e 's/_arguments[^:]*://' |
    grep -oE "(^|[^A-Za-z0-9_])-{1,2}[A-Za-z][A-Za-z0-9-]*" |
    sed -E 's/^[^-]+//' | sort -u
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
    help_options "$p" >"$T/help"
    zsh_options "$p" >"$T/comp"
    assert_subset "$T/comp" "$T/help" "$p: in --help, not in _lake"
  done
}

@test "completions: _lake offers only options --help prints" {
  local p
  for p in $(programs); do
    help_options "$p" >"$T/help"
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

@test "man: every program has a section-1 page documenting its --help options" {
  command -v mandoc >/dev/null || fail "mandoc is not installed (make deps)"
  local p o
  for p in $(programs); do
    assert_file_exists "$LAKE_SRC/man/$p.1"
    mandoc -Tascii "$LAKE_SRC/man/$p.1" | col -b >"$T/page"
    while read -r o; do
      grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" "$T/page" ||
        { echo "$p.1 does not mention $o" >&2; return 1; }
    done < <(help_options "$p")
  done
}
