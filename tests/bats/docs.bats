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

# man_block PAGE REGEX: the text of the first literal block (.Bd -literal
# to .Ed) after the first line of PAGE matching REGEX, roff escapes undone.
man_block() {
  awk -v re="$2" 'f == 0 && $0 ~ re { f = 1 }
                  f == 1 && /^\.Bd -literal/ { f = 2; next }
                  f == 2 && /^\.Ed/ { exit }
                  f == 2 { print }' "$1" | sed -e 's/\\e/\\/g' -e 's/\\&//g'
}

# commands PROMPT [guard]: the commands of a transcript on stdin, as a
# script: each line that starts with PROMPT and a blank begins one, the
# lines after it belong to it until it is complete shell (a quote, a pipe
# or a backslash left open), and every other line is output, left out.
# With "guard", the script stops at the first command that fails, saying
# which (as set -e would, but "CMD; echo \$?" shows a failure on purpose).
commands() {
  local prompt=$1 guard=${2:-} cmd= line
  while IFS= read -r line; do
    if [ -n "$cmd" ]; then cmd+=$'\n'$line
    elif [[ $line == "$prompt "* ]]; then cmd=${line#"$prompt "}
    else continue; fi
    [[ $cmd == *\\ ]] && continue
    bash -n <<<"$cmd" 2>/dev/null || continue
    if [ -n "$guard" ]; then
      printf '{ %s\n} || { echo failed: %q >&2; exit 1; }\n' "$cmd" "${cmd%%$'\n'*}"
    else printf '%s\n' "$cmd"; fi
    cmd=
  done
  [ -z "$cmd" ] || { echo "an unfinished command: $cmd" >&2; return 1; }
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

@test "lake-metasrv(8) TLS certificates: the page's openssl commands make a CA, a certificate and a key a server and its clients accept" {
  mkdir "$T/tls"
  man_block "$MAN/lake-metasrv.8" '^\.Ss TLS certificates' | commands '$' >"$T/tls/make-certs"
  [ "$(grep -c '^openssl' "$T/tls/make-certs")" -eq 3 ] || fail "not the page's commands: $(cat "$T/tls/make-certs")"
  run --separate-stderr bash -e -c 'cd "$1" && . ./make-certs' _ "$T/tls"
  assert_success
  assert_file_exist "$T/tls/ca.pem"
  assert_file_exist "$T/tls/cert.pem"
  [ "$(stat -c %a "$T/tls/key.pem")" = 600 ] || fail "key.pem is not private"
  run openssl x509 -in "$T/tls/cert.pem" -noout -ext subjectAltName
  assert_output --partial "DNS:lake.example, IP Address:127.0.0.1"
  # a server on them; a client that trusts ca.pem connects by address
  metasrv_init
  cp "$T/tls/cert.pem" "$T/tls/key.pem" "$T/srv/"
  metasrv_start
  export LAKE_METASRV=$METASRV_URL LAKE_TOKEN_FILE=$T/srv/admin.token LAKE_CA_FILE=$T/tls/ca.pem
  [[ $METASRV_URL == https://127.0.0.1:* ]] || fail "not TLS: $METASRV_URL"
  run --separate-stderr lake-catalog whoami
  assert_success
  assert_line principal=admin
  # and by name (curl resolves lake.example to the server)
  run curl -sS --cacert "$T/tls/ca.pem" --resolve "lake.example:$METASRV_PORT:127.0.0.1" \
    "https://lake.example:$METASRV_PORT/v1/health"
  assert_success
  assert_output '{"status":"ok","registry":"ok"}'
  # and every answer the page shows for it (The Debian package and systemd too)
  assert_equal "$(grep -A1 -E '^\$ curl .*/v1/health$' "$MAN/lake-metasrv.8" | grep '^{' | sort -u)" "$output"
  # the system store does not know the CA: without LAKE_CA_FILE, refused
  unset LAKE_CA_FILE
  export LAKE_CACHE_DIR=$T/cache-noca
  run --separate-stderr lake-catalog whoami
  assert_failure
  assert_output ""
}

# A small ~/scans for the tours: two files under 2026/, one under notes/.
make_scans() {
  mkdir -p "$HOME/scans/2026" "$HOME/scans/notes"
  head -c 120000 /dev/urandom >"$HOME/scans/2026/big.tif"
  printf '%%PDF-1.4\n%%%%EOF\n' >"$HOME/scans/2026/a scan.pdf"
  printf 'hello\n' >"$HOME/scans/notes/readme.txt"
}

@test "README: the five-minute tour runs as written, and says what the programs say" {
  local src=${LAKE_SRC:-$BATS_TEST_DIRNAME/../..}
  make_scans
  awk '/^## A five-minute tour/ { f = 1 } f == 1 && /^```/ { n++; if (n == 2) exit; next } f == 1 && n == 1' \
    "$src/README.md" >"$T/tour"
  commands '$' guard <"$T/tour" >"$T/tour.sh"
  [ "$(grep -c '^{ lake-' "$T/tour.sh")" -gt 8 ] || fail "the tour went missing"
  cd "$T"
  run_to "$T/out" bash -o pipefail "$T/tour.sh"
  assert_equal "exit $status: $stderr" "exit 0: $stderr"
  assert [ -f "$T/restore/2026/big.tif" ]
  cmp "$HOME/scans/2026/big.tif" "$T/restore/2026/big.tif"
  # every diagnostic the tour shows is one the programs printed
  local line
  while IFS= read -r line; do
    [[ $line == lake-* ]] || continue
    grep -qxF -- "$line" <<<"$stderr" || fail "the README shows '$line'; the programs said: $stderr"
  done <"$T/tour"
}

@test "lake(7): the tutorial runs as written" {
  make_scans
  man_block "$MAN/lake.7" '^\.Ss Five minutes with an embedded lake' | commands '$' >"$T/tutorial.sh"
  [ "$(grep -c '^lake-' "$T/tutorial.sh")" -ge 4 ] || fail "the tutorial went missing"
  cd "$T"
  run_to "$T/out" bash -e -o pipefail "$T/tutorial.sh"
  assert_equal "exit $status: $stderr" "exit 0: "
  cmp "$HOME/scans/2026/a scan.pdf" "$T/restore/2026/a scan.pdf"
  [ ! -e "$T/restore/notes" ] || fail "restored what the WHERE left out"
}

@test "lake(7): the nightly cron job writes nothing for cron to mail when all goes well" {
  make_scans
  local day
  day=$(date -d yesterday +%F)
  mkdir -p "$T/export" "$T/srv/scans"
  printf 'id,amount\n1,9.5\n2,3\n' >"$T/export/$day.csv"
  cp -r "$HOME/scans" "$T/srv/scans/$day"
  lake-catalog create-namespace sales
  lake-catalog create sales.orders 'id INTEGER, amount REAL'
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'path TEXT, year INTEGER, f FILE'
  # the page's script, its host paths moved under $T
  man_block "$MAN/lake.7" '^\.Ss A nightly cron job' |
    sed -e "s|https://erp.example/|file://$T/|" -e "s|/srv/|$T/srv/|" \
        -e "s|/run/lock/|$T/|" -e "s|/var/log/|$T/|" >"$T/lake-import"
  grep -q '^tar ' "$T/lake-import" || fail "the cron job went missing"
  run_to "$T/mail" sh "$T/lake-import"
  assert_equal "exit $status: $stderr" "exit 0: "
  assert_equal "mail: $(cat "$T/mail")" "mail: "
  assert_equal "$(wc -l <"$T/lake-import.jsonl")" 3
  run lake-query -c "SELECT count(*) FROM sales.orders"
  assert_output 2
}

@test "README: a local lake-put and lake-get peak at the RSS the README states (within 15%)" {
  ldd "$LAKE_BIN/lake-put" | grep -q libasan && skip "a sanitizer build's memory is not lake's"
  local src=${LAKE_SRC:-$BATS_TEST_DIRNAME/../..} put_mib get_mib put_kib get_kib
  put_mib=$(grep -oP 'local `lake-put` peaks at about \K[0-9.]+(?= MiB)' "$src/README.md")
  get_mib=$(grep -oP '`lake-get` at about \K[0-9.]+(?= MiB)' "$src/README.md")
  [ -n "$put_mib" ] && [ -n "$get_mib" ] || fail "the README lost its figures"
  head -c $((16 * 1024 * 1024)) /dev/urandom >"$T/in"
  /usr/bin/time -f %M -o "$T/rss" lake-put -q <"$T/in" >"$T/ref"
  put_kib=$(cat "$T/rss")
  /usr/bin/time -f %M -o "$T/rss" lake-get -q <"$T/ref" >/dev/null
  get_kib=$(cat "$T/rss")
  echo "# lake-put $put_kib KiB (README: $put_mib MiB), lake-get $get_kib KiB (README: $get_mib MiB)" >&3
  awk -v m="$put_kib" -v d="$put_mib" 'BEGIN { d *= 1024; exit !(m >= d * 0.85 && m <= d * 1.15) }' ||
    fail "lake-put peaked at $put_kib KiB; the README says about $put_mib MiB"
  awk -v m="$get_kib" -v d="$get_mib" 'BEGIN { d *= 1024; exit !(m >= d * 0.85 && m <= d * 1.15) }' ||
    fail "lake-get peaked at $get_kib KiB; the README says about $get_mib MiB"
}
