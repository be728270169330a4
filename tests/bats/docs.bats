#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The pages say what the programs do (issue 14, "Docs that disagree with
# the programs"): each test runs what a page promises, as a user would,
# and where a page gives commands to copy, runs those very commands,
# extracted from the page, so the page cannot drift from the programs.

load helpers/common
load helpers/metasrv
load helpers/pg

setup() {
  common_setup
  MAN=${LAKE_SRC:-$BATS_TEST_DIRNAME/../..}/man
}

teardown() {
  metasrv_stop
  pair_stop
  trial_stop
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

# man_blocks PAGE REGEX: BLOCKS, the literal blocks of the section that
# begins at the first line matching REGEX, roff escapes undone
man_blocks() {
  local block
  BLOCKS=()
  while IFS= read -r -d $'\x01' block; do BLOCKS+=("$block"); done < <(
    awk -v re="$2" 'f == 0 && $0 ~ re { f = 1; next }
                    f == 1 && /^\.S[hs] / { exit }
                    f == 1 && /^\.Bd -literal/ { f = 2; next }
                    f == 2 && /^\.Ed/ { f = 1; printf "\001"; next }
                    f == 2 { print }' "$1" | sed -e 's/\\e/\\/g' -e 's/\\&//g')
}

# commands PROMPT [guard]: the commands of a transcript on stdin, as a
# script: each line that starts with PROMPT and a blank begins one, the
# lines after it belong to it until it is complete shell (a quote, a pipe
# or a backslash left open), and every other line is output, left out.
# With "guard", the script stops at the first command that fails, saying
# which (as set -e would, but "CMD; echo \$?" shows a failure on purpose).
commands() {
  local prompt=$1 guard=${2:-} cmd='' line
  while IFS= read -r line; do
    if [ -n "$cmd" ]; then cmd+=$'\n'$line
    elif [[ $line == "$prompt "* ]]; then cmd=${line#"$prompt "}
    else continue; fi
    [[ $cmd == *\\ ]] && continue
    # (an open here-document is only a warning to bash -n)
    [ -z "$(bash -n <<<"$cmd" 2>&1)" ] || continue
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

@test "an S3 stage: init needs no AWS_*, keyless clients need the keys (and a non-AWS endpoint) on the server only, and no page says otherwise" {
  metasrv_certs "$T/srv"
  umask 077
  run --separate-stderr env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_REGION \
    -u AWS_DEFAULT_REGION -u AWS_ENDPOINT_URL_S3 -u AWS_ENDPOINT_URL \
    lake-metasrv init --db "$T/srv/registry.db" --stage s3://acme-lake/stage
  assert_success
  assert_equal "$stderr" ""
  printf '%s\n' "$output" >"$T/srv/admin.token"
  metasrv_start
  metasrv_use
  run --separate-stderr lake-catalog whoami
  assert_line stage=s3://acme-lake/stage
  # the sentences that said every client brings keys, or init needs them
  run grep -n -i -E "needs this host's own AWS|brings its own AWS|never needs S3|each client brings its own|needs the AWS variables" \
    "$MAN"/*.[1-8] "${LAKE_SRC:-$BATS_TEST_DIRNAME/../..}/README.md"
  assert_failure 1
  # a store that is not AWS needs its endpoint where the keys are: the page's
  # keyless example and the packaged metasrv.conf name it
  run man_block "$MAN/lake-metasrv.8" '^\.Ss Keyless clients'
  assert_output --partial "AWS_ENDPOINT_URL_S3="
  run grep -x '#AWS_ENDPOINT_URL_S3=https://[^ ]*' "${LAKE_SRC:-$BATS_TEST_DIRNAME/../..}/debian/metasrv.conf"
  assert_success
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
  assert_line --regexp $'^ann\tquery-service\t[^\t]+\t-\t-\t-$'
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

# --- lake-metasrv(8), Primary and standby: the page's steps, run ----------
# Two PostgreSQL 15 servers laid out as Debian lays out a cluster (the
# configuration in etc/ with its conf.d, the data in data/), on two
# loopback ports, run by `nobody` when the tests run as root (initdb
# refuses root; helpers/pg.bash); pg_ctlcluster is pg_ctl on that layout.
# The page's lines run as written but for the names: db1 and db2 become
# 127.0.0.1 and a port, 10.0.0.0/24 127.0.0.1/32, the Debian paths the
# node's directories.

pair_port() { if [ "$1" = db1 ]; then echo "$PAIR_P1"; else echo "$PAIR_P2"; fi; }

# pair_init NODE: a cluster as `apt install postgresql` leaves it, running
pair_init() {
  local d=$PAIR/$1
  mkdir -p "$d/etc/conf.d"
  [ "$(id -u)" != 0 ] || chown nobody "$d"
  pg_as "$PG_BIN/initdb" -D "$d/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C --no-sync >"$d/initdb.log" 2>&1 || { cat "$d/initdb.log"; return 1; }
  mv "$d/data/postgresql.conf" "$d/data/pg_ident.conf" "$d/etc/"
  rm "$d/data/pg_hba.conf"
  # Debian's is `peer` for the postgres user over the socket; the page adds the rest
  echo "local all all trust" >"$d/etc/pg_hba.conf"
  cat >>"$d/etc/postgresql.conf" <<CONF
data_directory = '$d/data'
hba_file = '$d/etc/pg_hba.conf'
ident_file = '$d/etc/pg_ident.conf'
port = $(pair_port "$1")
unix_socket_directories = '$d'
listen_addresses = ''
fsync = off
include_dir = 'conf.d'
CONF
  [ "$(id -u)" != 0 ] || chown -R nobody "$d"
  pair_run "$1" 'db1$' 'db1$ pg_ctlcluster 15 main start'
}

# pair_run NODE PROMPT TRANSCRIPT: the transcript's PROMPT commands, run on
# NODE as its postgres user (HOME the node's directory)
pair_run() {
  local node=$1 d=$PAIR/$1 script=$PAIR/$1.step
  {
    echo 'pg_ctlcluster() {'
    echo '  local action=$3; shift 3; [ "$action" != stop ] || set -- -m fast "$@"'
    echo '  "$PG_BIN/pg_ctl" -D "$NODE/etc" -l "$NODE/server.log" -w -t 60 "$action" "$@" >/dev/null'
    echo '}'
    commands "$2" guard <<<"$3" | pair_names "$d"
  } >"$script"
  chmod 644 "$script"
  pg_daemon env NODE="$d" PG_BIN="$PG_BIN" PGHOST="$d" PGPORT="$(pair_port "$node")" PGUSER=postgres \
    HOME="$d" PGPASSFILE="$d/.pgpass" bash -o pipefail "$script" >"$d/step.out" 2>&1 ||
    { cat "$d/step.out" "$d/server.log"; return 1; }
}

# pair_names DIR: the page's host names, network and paths, for this test
pair_names() {
  sed -e "s|/etc/postgresql/15/main|$1/etc|g" -e "s|/var/lib/postgresql/15/main|$1/data|g" \
      -e "s|listen_addresses = '\*'|listen_addresses = '127.0.0.1'|" -e "s|10\.0\.0\.0/24|127.0.0.1/32|" \
      -e "s|-h db1|-h 127.0.0.1 -p $PAIR_P1|g" -e "s|-h db2|-h 127.0.0.1 -p $PAIR_P2|g" \
      -e "s|host=db1|host=127.0.0.1 port=$PAIR_P1|g" -e "s|host=db2|host=127.0.0.1 port=$PAIR_P2|g" \
      -e "s|db1:5432|127.0.0.1:$PAIR_P1|g" -e "s|db2:5432|127.0.0.1:$PAIR_P2|g"
}

pair_sql() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h "$PAIR/$1" -p "$(pair_port "$1")" -U postgres -d postgres -c "$2"
}

pair_stop() {
  [ -n "${PAIR:-}" ] && [ -d "$PAIR" ] || return 0
  local n
  for n in db1 db2; do
    [ ! -f "$PAIR/$n/data/postmaster.pid" ] ||
      pg_as "$PG_BIN/pg_ctl" -D "$PAIR/$n/data" -m immediate -w stop >/dev/null 2>&1
  done
  rm -rf "$PAIR"
}

# until the primary NODE has a streaming standby in sync_state STATE (30 s)
pair_wait_sync() {
  for _ in $(seq 600); do
    [ "$(pair_sql "$1" "SELECT state || ' ' || sync_state FROM pg_stat_replication" 2>/dev/null)" = "streaming $2" ] &&
      return 0
    sleep 0.05
  done
  fail "$1: no streaming standby in sync_state $2: $(pair_sql "$1" "SELECT * FROM pg_stat_replication")"
}

@test "lake-metasrv(8) Primary and standby: the page's steps make a pair lake-metasrv appends through, over a failover and back" {
  PG_BIN=$(pg_bindir) || fail "no PostgreSQL server binaries"
  PAIR=$(mktemp -d /tmp/lake-docs-pair.XXXXXX)
  [ "$(id -u)" != 0 ] || chown nobody "$PAIR"
  read -r PAIR_P1 PAIR_P2 < <(free_port 2)
  man_blocks "$MAN/lake-metasrv.8" '^\.Ss Primary and standby'
  local b=("${BLOCKS[@]}")
  [ "${#b[@]}" -eq 9 ] || fail "the page has ${#b[@]} blocks of steps, the test knows 9"
  pair_init db1
  pair_init db2
  # 1. both servers; 2. roles and database on db1; 3. db2 a standby
  pair_run db1 'db1$' "${b[0]}"
  pair_run db2 'db1$' "${b[0]}"
  pair_run db1 'db1$' "${b[1]}"
  pair_run db2 'db2$' "${b[2]}"
  assert_equal "$(pair_sql db2 "SELECT pg_is_in_recovery()")" t
  pair_wait_sync db1 async
  # 4. synchronous, on both
  pair_run db1 'db1$' "${b[3]}"
  pair_run db2 'db1$' "${b[3]}"
  pair_wait_sync db1 sync
  # 5. the registry, made as the page says; the page's serve on the same URL
  mkdir -p "$T/srv"
  export PGPASSFILE=$HOME/.pgpass # (libpq looks up the home directory, not $HOME)
  commands 'meta$' guard <<<"${b[4]}" | pair_names "$T" | sed "s|s3://acme-lake/stage|file://$T/srv/stage|" >"$T/init.sh"
  (cd "$T/srv" && bash -o pipefail "$T/init.sh") || fail "step 5 failed: $(cat "$T/init.sh")"
  local url serve
  url=$(grep -o "'postgresql://[^']*'" "$T/init.sh" | tr -d "'")
  [[ $url == "postgresql://lake@127.0.0.1:$PAIR_P1,127.0.0.1:$PAIR_P2/lake?target_session_attrs=read-write" ]] ||
    fail "not the multi-host URL: $url"
  serve=$(commands 'meta$' <<<"${b[5]}" | pair_names "$T")
  [[ $serve == "lake-metasrv serve "*"--registry"*"'$url'" ]] || fail "serve is not on init's URL: $serve"
  printf '%s\n' "$url" >"$T/srv/registry.url"
  metasrv_certs "$T/srv"
  # the fewest workers (one read, one write): once /v1/health (its probe) answers ok
  # after the failover, db2 is the primary, and each worker's next call finds it
  metasrv_start "$T/srv" 0 --pool 1
  metasrv_use
  lake-catalog create-namespace d
  lake-catalog create d.t 'a INTEGER'
  echo '{"a":1}' | lake-query -q --import d.t
  # 6. db1 dies; db2, promoted, would make every append wait without the page's second line
  pg_as "$PG_BIN/pg_ctl" -D "$PAIR/db1/etc" -m immediate -w stop >/dev/null
  assert_equal "$(pair_sql db2 "SHOW synchronous_standby_names")" '*'
  pair_run db2 'db2$' "${b[6]}"
  assert_equal "$(pair_sql db2 "SELECT pg_is_in_recovery()")/$(pair_sql db2 "SHOW synchronous_standby_names")" f/
  for _ in $(seq 200); do
    [ "$(curl -sS --cacert "$T/srv/cert.pem" "$METASRV_URL/v1/health" | jq -r .registry)" = ok ] && break
    sleep 0.1
  done
  echo '{"a":2}' | lake-query -q --import d.t
  assert_equal "$(lake-catalog resolve d.t | jq .version)" 2
  # 7. db1 rewound, started as db2's standby only then; db2 synchronous again
  pair_run db1 'db1$' "${b[7]}"
  assert_file_exist "$PAIR/db1/data/standby.signal"
  assert_equal "$(pair_sql db1 "SELECT pg_is_in_recovery()")" t
  pair_wait_sync db2 async
  pair_run db2 'db2$' "${b[8]}"
  pair_wait_sync db2 sync
  echo '{"a":3}' | lake-query -q --import d.t
  run lake-query -c "SELECT group_concat(a) FROM (SELECT a FROM d.t ORDER BY a)"
  assert_output 1,2,3
}

# --- lake(7), Try the shared deployment: the page's steps, run -------------
# In $T/trial, on free ports instead of the page's 3300, 7480 and 7700; the
# daemons write their PIDs under run/, as the page says, and are killed by
# them whatever happens.
trial_stop() {
  [ -n "${TRIAL:-}" ] && [ -d "$TRIAL/run" ] || return 0
  local f
  for f in "$TRIAL"/run/*.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  return 0
}

@test "lake(7) Try the shared deployment: radosgw, a bucket, a server holding the keys and a keyless client, as the page says" {
  command -v radosgw >/dev/null || skip "radosgw is not installed (make deps)"
  TRIAL=$T/trial
  mkdir "$TRIAL"
  local mon rgw meta
  read -r mon rgw meta < <(free_port 3)
  man_blocks "$MAN/lake.7" '^\.Ss Try the shared deployment'
  local b=("${BLOCKS[@]}")
  [ "${#b[@]}" -eq 2 ] || fail "the page has ${#b[@]} blocks, the test knows 2"
  {
    commands '#' guard <<<"${b[0]}"
    # the certificate as lake-metasrv(8) makes it
    man_block "$MAN/lake-metasrv.8" '^\.Ss TLS certificates' | commands '$' guard
    commands '#' guard <<<"${b[1]}"
  } | sed -e "s/\b3300\b/$mon/g" -e "s/\b7480\b/$rgw/g" -e "s/\b7700\b/$meta/g" >"$T/trial.sh"
  grep -q '^{ radosgw-admin .* user create' "$T/trial.sh" || fail "not the page's steps: $(cat "$T/trial.sh")"
  # the daemons must not hold bats' pipes
  (
    close_inherited_fds
    cd "$TRIAL" && exec timeout 300 bash "$T/trial.sh"
  ) </dev/null >"$T/trial.out" 2>"$T/trial.err" || fail "the steps failed: $(tail -n 20 "$T/trial.err")"
  # what the page shows the last commands print
  assert_equal "$(tail -n 2 "$T/trial.out")" "stage=s3://lake-trial/stage
hello"
  # the object is in the bucket, under the stage
  run curl -sS --fail --aws-sigv4 aws:amz:us-east-1:s3 --user LAKETRIAL:lake-trial-secret \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "http://127.0.0.1:$rgw/lake-trial?list-type=2&prefix=stage%2Ffiles%2F"
  [[ $output == *"<KeyCount>1</KeyCount>"* ]] || fail "not one object under stage/files/: $output"
  # and the page's way to stop it all stops it all
  local pids p
  pids=$(cat "$TRIAL"/run/*.pid)
  [ "$(wc -w <<<"$pids")" -eq 4 ] || fail "not the four daemons' PIDs: $pids"
  (cd "$TRIAL" && grep -o 'kill $(cat run/\*.pid)' "$MAN/lake.7" | bash) || fail "the page's kill failed"
  # radosgw's orderly shutdown may wait on the mon and osd stopped with it:
  # the page's `rgw exit timeout secs` ends it after 10 s (SIGALRM); 120 s
  # is only the bound of a hang, not a measure
  local names
  names=$(for p in $pids; do ps -o comm= -p "$p"; done | sort | tr '\n' ' ')
  for p in $pids; do
    for _ in $(seq 1200); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$p" 2>/dev/null || fail "$p ($(ps -o comm= -p "$p")) still runs 120 s after the page's kill"
  done
  assert_equal "$names" "ceph-mon ceph-osd lake-metasrv radosgw "
}
