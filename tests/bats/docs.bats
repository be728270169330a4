#!/usr/bin/env bats
# The pages say what the programs do (issue 14, "Docs that disagree with
# the programs"): each test runs what a page promises, as a user would,
# and where a page gives commands to copy, runs those very commands,
# extracted from the page, so the page cannot drift from the programs.

load helpers/common
load helpers/metasrv

setup() {
  common_setup
  MAN=${LAKE_SRC:-$BATS_TEST_DIRNAME/../..}/man
}

teardown() {
  metasrv_stop
  common_teardown
}

@test "remote mode: lake-put and lake-get work with the stage the server advertises, and no page says otherwise" {
  metasrv_init
  metasrv_start
  metasrv_use
  printf 'hello\n' >"$T/h.txt"
  run --separate-stderr lake-put "$T/h.txt"
  assert_success
  assert_equal "$stderr" ""
  [[ $(json_field location "$output") == "file://$T/srv/stage/files/"* ]] || fail "not in the advertised stage: $output"
  run --separate-stderr lake-get "$output"
  assert_success
  assert_output hello
  lake-catalog create-namespace d
  lake-catalog create d.t 'f FILE'
  run --separate-stderr lake-put --table d.t "$T/h.txt"
  assert_success
  run --separate-stderr bash -c 'lake-query -f jsonl -c "SELECT f FROM d.t" | lake-get'
  assert_success
  assert_output hello
  # the sentences that said otherwise
  run grep -n -i -E "not supported yet|still refuse|server; only$|not supported by this version" \
    "$MAN"/lake-put.1 "$MAN"/lake-get.1 "$MAN"/lake.conf.5
  assert_failure 1
}

@test "lake-metasrv token create: an active name is refused, a revoked one is issued again with the new token and role" {
  metasrv_init
  metasrv_regopt
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name ann
  assert_success
  printf '%s\n' "$output" >"$T/old.token"
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role user --name ann
  assert_error lake-metasrv 1 "principal ann exists; revoke it first"
  assert_output ""
  lake-metasrv token revoke "${METASRV_REGOPT[@]}" --name ann
  run --separate-stderr lake-metasrv token create "${METASRV_REGOPT[@]}" --role query-service --name ann
  assert_success
  printf '%s\n' "$output" >"$T/new.token"
  run lake-metasrv token list "${METASRV_REGOPT[@]}"
  assert_line --regexp $'^ann\tquery-service\t[^\t]+\t-$'
  metasrv_start
  metasrv_use "$T/srv" "$T/new.token"
  run --separate-stderr lake-catalog whoami
  assert_success
  assert_line principal=ann
  assert_line role=query-service
  metasrv_use "$T/srv" "$T/old.token"
  export LAKE_CACHE_DIR=$T/cache-old
  run --separate-stderr lake-catalog whoami
  assert_failure 77
}

@test "lake-catalog whoami in an embedded lake: local:<login name>, admin, the configured stage" {
  run --separate-stderr lake-catalog whoami
  assert_success
  assert_equal "$output" "principal=local:$(id -un)
role=admin
stage=file://$STAGE"
  run grep -c "login name of the user running the command" "$MAN/lake-catalog.1"
  assert_output 1
}

@test "completions from a PREFIX, without bash-completion: the README's ~/.bashrc and ~/.zshrc lines work" {
  local src=${LAKE_SRC:-$BATS_TEST_DIRNAME/../..} root=$T/root
  run make -s -C "$src" install DESTDIR="$root" PREFIX=/opt/lake
  assert_success
  local bashrc zshrc
  bashrc=$(sed -n 's|^    \(source /opt/lake/.*\)$|\1|p' "$src/README.md")
  zshrc=$(sed -n 's|^    \(fpath=(/opt/lake/.*\)$|\1|p' "$src/README.md")
  [ -n "$bashrc" ] && [ -n "$zshrc" ] || fail "the README lost its lines"
  # the same lines, with DESTDIR in front of the PREFIX
  bashrc=${bashrc//\/opt\/lake/$root/opt/lake}
  zshrc=${zshrc//\/opt\/lake/$root/opt/lake}
  run bash --norc -c "$bashrc"'
    COMP_WORDS=(lake-catalog cre); COMP_CWORD=1; COMPREPLY=()
    complete -p lake-query >/dev/null && _lake_complete && printf "%s\n" "${COMPREPLY[@]}" | sort'
  assert_success
  assert_output "create
create-namespace"
  run zsh -fc "$zshrc"'
    autoload -Uz compinit && compinit -u -d "$1/zcompdump" && print -r -- ${_comps[lake-get]}' _ "$T"
  assert_success
  assert_output _lake
}
