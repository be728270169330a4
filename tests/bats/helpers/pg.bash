# SPDX-License-Identifier: BSD-2-Clause
# A real PostgreSQL for the tests: Debian's server binaries, initdb into a
# temporary directory, pg_ctl on a unix socket in that directory (no TCP
# port to collide on), stopped afterwards.  initdb refuses root, so as root
# the server runs as the unprivileged user `nobody` (present on every
# Debian system) in a directory chowned to it; otherwise as the invoking
# user.  One server per bats file (setup_file / teardown_file) or per
# tests/run, a fresh database per test.
#
#   pg_start              starts a server; exports PG_DIR (its socket directory)
#   pg_stop               stops it (fast shutdown) and removes its directory
#   pg_halt / pg_resume   stop and start the same server (an outage)
#   pg_createdb NAME      a new empty database
#   pg_url NAME [PASSWORD]  the postgresql:// URL of database NAME (the
#                         server trusts local connections: a password given
#                         is accepted and ignored, which lets tests check it
#                         is never printed)
#   pg_sql NAME SQL       run SQL in database NAME, print the rows (psql -At)
#   pg_fresh_url [PASSWORD]  a new database for this test, its URL
#
# As a script, `bash pg.bash run COMMAND…` runs COMMAND with a server up
# and PG_DIR exported (tests/run does this for the remote-pg runs).
# Functions return non-zero rather than calling bats' fail, so tests/run
# can use them too.

# shellcheck source=ports.bash
source "$(dirname "${BASH_SOURCE[0]}")/ports.bash"

pg_bindir() {
  local d
  for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { printf '%s\n' "$d"; return 0; }
  done
  echo "pg.bash: no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)" >&2
  return 1
}

# Run a server command as the user the server runs as, from a directory
# that user may enter (the checkout may be under /root).
pg_as() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u nobody -- "$@"); else "$@"; fi
}

# pg_daemon COMMAND…: pg_as with no descriptor but 0, 1 and 2 inherited.
# The server outlives the command that started it; a bats pipe it held
# open (fd 3 and bats' own) would keep bats waiting for it forever.
pg_daemon() {
  (
    close_inherited_fds
    pg_as "$@"
  )
}

pg_start() {
  PG_BIN=$(pg_bindir) || return 1
  PG_DIR=$(mktemp -d /tmp/lake-pg.XXXXXX) || return 1
  [ "$(id -u)" = 0 ] && chown nobody "$PG_DIR"
  pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U lake -A trust -E UTF8 --locale=C --no-sync \
    >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  export PG_BIN PG_DIR
  pg_resume
}

pg_resume() {
  # fsync off: the tests' server needs no durability, only speed (a
  # benchmark sets PG_DURABLE=1)
  local fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  [ "${PG_DURABLE:-0}" != 1 ] || fast=
  pg_daemon "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
    -o "-k $PG_DIR -c listen_addresses= $fast -c max_connections=200" \
    start >/dev/null 2>&1 || { cat "$PG_DIR/server.log" >&2; return 1; }
}

pg_halt() {
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1
}

pg_stop() {
  [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR" ] || return 0
  pg_halt || pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$PG_DIR"
}

pg_sql() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h "$PG_DIR" -U lake -d "$1" -c "$2"
}

pg_createdb() {
  pg_sql postgres "CREATE DATABASE $1"
}

pg_url() {
  printf 'postgresql://lake%s@/%s?host=%s\n' "${2:+:$2}" "$1" "$PG_DIR"
}

# A database named after this test (bats' counters), unique in the server.
pg_fresh_url() {
  PG_DB=t_${BATS_SUITE_TEST_NUMBER:-0}_${BATS_TEST_NUMBER:-0}_$$_$RANDOM
  pg_createdb "$PG_DB" || return 1
  pg_url "$PG_DB" "${1:-}"
}

# --- a primary and a streaming standby (issue 19) ---------------------------
# Two servers on 127.0.0.1 (TCP, two free ports; their sockets in their own
# directories), node a made by initdb, node b by pg_basebackup -R from it;
# synchronous replication (synchronous_standby_names = '*',
# synchronous_commit = on: a commit is acknowledged once the standby has
# flushed it), wal_log_hints and full_page_writes on so pg_rewind can bring
# a dead primary back as a standby.  fsync stays off unless PG_DURABLE=1
# (a test's machine does not crash; its processes do).  The roles move
# with failovers: $PGP_DIR/primary names the node that is the primary.
#
#   pgp_start            both nodes, b streaming from a; exports PGP_DIR,
#                        PGP_PORT_A, PGP_PORT_B
#   pgp_stop             both stopped, the directory removed
#   pgp_primary / pgp_standby   the node (a or b) in that role now
#   pgp_url DB           postgresql://lake@A,B/DB?target_session_attrs=read-write
#   pgp_sql NODE DB SQL  psql -At on that node
#   pgp_crash NODE       SIGKILL to its postmaster and every process of it
#                        at once (a machine's death: nothing is shut down)
#   pgp_promote NODE     pg_ctl promote -w; NODE is the primary from now;
#                        with no standby left, its synchronous_standby_names
#                        is cleared (ALTER SYSTEM) so that commits do not
#                        wait for one
#   pgp_rejoin NODE      a dead NODE back as the standby of the primary:
#                        pg_rewind (it winds back what the old timeline
#                        wrote after the fork), started, streaming, and the
#                        primary's synchronous_standby_names '*' again
#   pgp_halt NODE / pgp_resume NODE   pg_ctl stop -m immediate / start
#   pgp_heal             whatever is down rejoins; waits for a streaming,
#                        synchronous standby
#   pgp_set NODE NAME VALUE|RESET   ALTER SYSTEM SET NAME = VALUE (VALUE
#                        as SQL: quote a string) or RESET NAME, then
#                        pg_reload_conf()
#   pgp_createdb NAME    a new empty database, replayed on the standby
#   pgp_wait_sync STATE  until the primary has a streaming standby in
#                        sync_state STATE (sync: a synchronous one; async)
#   pgp_wait_replayed SQL VALUE [DB]  until SQL answers VALUE on the standby

pgp_node_port() { if [ "$1" = a ]; then echo "$PGP_PORT_A"; else echo "$PGP_PORT_B"; fi; }
pgp_other() { if [ "$1" = a ]; then echo b; else echo a; fi; }
pgp_primary() { cat "$PGP_DIR/primary"; }
pgp_standby() { pgp_other "$(pgp_primary)"; }

pgp_sql() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(pgp_node_port "$1")" -U lake -d "$2" -c "$3"
}

pgp_set() {
  local sql="ALTER SYSTEM SET $2 = $3"
  [ "$3" != RESET ] || sql="ALTER SYSTEM RESET $2"
  pgp_sql "$1" postgres "$sql" >/dev/null && pgp_sql "$1" postgres "SELECT pg_reload_conf()" >/dev/null
}

pgp_url() {
  printf 'postgresql://lake@127.0.0.1:%s,127.0.0.1:%s/%s?target_session_attrs=read-write\n' \
    "$PGP_PORT_A" "$PGP_PORT_B" "$1"
}

# pgp_conf NODE: the node's own settings, last in its postgresql.conf (a
# base backup copies the primary's file: these lines win over the copy's)
pgp_conf() {
  local fast="fsync = off"
  [ "${PG_DURABLE:-0}" != 1 ] || fast=
  cat >>"$PGP_DIR/$1/data/postgresql.conf" <<CONF
# pg.bash: node $1
listen_addresses = '127.0.0.1'
port = $(pgp_node_port "$1")
unix_socket_directories = '$PGP_DIR/$1'
cluster_name = '$1'
max_connections = 200
wal_level = replica
max_wal_senders = 5
wal_keep_size = '256MB'
hot_standby = on
wal_log_hints = on
full_page_writes = on
synchronous_commit = on
synchronous_standby_names = '*'
wal_receiver_status_interval = 1
$fast
CONF
}

# pgp_own_conf NODE: pgp_conf as the user the server runs as
pgp_own_conf() {
  pg_as bash -c "$(declare -f pgp_conf pgp_node_port); PGP_DIR=$PGP_DIR PGP_PORT_A=$PGP_PORT_A \
    PGP_PORT_B=$PGP_PORT_B PG_DURABLE=${PG_DURABLE:-0} pgp_conf $1"
}

pgp_resume() {
  pg_daemon "$PG_BIN/pg_ctl" -D "$PGP_DIR/$1/data" -l "$PGP_DIR/$1.log" -w -t 60 start >/dev/null 2>&1 ||
    { tail -n 20 "$PGP_DIR/$1.log" >&2; return 1; }
}

pgp_halt() {
  pg_as "$PG_BIN/pg_ctl" -D "$PGP_DIR/$1/data" -m immediate -w stop >/dev/null 2>&1
}

pgp_running() {
  local pid
  pid=$(head -n 1 "$PGP_DIR/$1/data/postmaster.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

pgp_start() {
  PG_BIN=$(pg_bindir) || return 1
  PGP_DIR=$(mktemp -d /tmp/lake-pgpair.XXXXXX) || return 1
  read -r PGP_PORT_A PGP_PORT_B < <(free_port 2) && [ -n "$PGP_PORT_B" ] || return 1
  export PG_BIN PGP_DIR PGP_PORT_A PGP_PORT_B
  mkdir -p "$PGP_DIR/a" "$PGP_DIR/b"
  [ "$(id -u)" = 0 ] && chown -R nobody "$PGP_DIR"
  pg_as "$PG_BIN/initdb" -D "$PGP_DIR/a/data" -U lake -A trust -E UTF8 --locale=C --no-sync \
    >"$PGP_DIR/initdb.log" 2>&1 || { cat "$PGP_DIR/initdb.log" >&2; return 1; }
  pgp_own_conf a || return 1
  echo a >"$PGP_DIR/primary"
  pgp_resume a || return 1
  # no standby yet: the base backup's own commits must not wait for one
  pgp_set a synchronous_standby_names "''" || return 1
  pgp_basebackup b || return 1
  pgp_set a synchronous_standby_names RESET || return 1
  pgp_wait_sync sync
}

# pgp_basebackup NODE: NODE's data made afresh from the primary, started as its standby
pgp_basebackup() {
  rm -rf "$PGP_DIR/$1/data"
  pg_as "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$(pgp_node_port "$(pgp_primary)")" -U lake \
    -D "$PGP_DIR/$1/data" -R -X stream --checkpoint=fast >"$PGP_DIR/basebackup.log" 2>&1 ||
    { cat "$PGP_DIR/basebackup.log" >&2; return 1; }
  pgp_own_conf "$1" || return 1
  pgp_resume "$1"
}

pgp_stop() {
  [ -n "${PGP_DIR:-}" ] && [ -d "$PGP_DIR" ] || return 0
  local n
  for n in a b; do pgp_running "$n" && pgp_halt "$n"; done
  rm -rf "$PGP_DIR"
}

pgp_crash() {
  local pid kids k
  pid=$(head -n 1 "$PGP_DIR/$1/data/postmaster.pid") || return 1
  # stopped first, the postmaster forks no child the list below would miss
  # (each child is a session of its own: no process group to kill)
  kill -STOP "$pid" || return 1
  kids=$(ps -o pid= --ppid "$pid")
  # shellcheck disable=SC2086 # the children's PIDs, one word each
  kill -KILL "$pid" $kids 2>/dev/null
  for k in "$pid" $kids; do
    while kill -0 "$k" 2>/dev/null; do sleep 0.02; done
  done
}

pgp_promote() {
  pg_as "$PG_BIN/pg_ctl" -D "$PGP_DIR/$1/data" -w -t 60 promote >/dev/null 2>&1 || return 1
  echo "$1" >"$PGP_DIR/primary"
  pgp_set "$1" synchronous_standby_names "''"
}

pgp_rejoin() {
  local node=$1 primary
  primary=$(pgp_primary)
  # the promotion's checkpoint puts the new timeline in the control file pg_rewind reads
  pgp_sql "$primary" postgres "CHECKPOINT" >/dev/null || return 1
  # (pg_rewind's crash recovery runs single-user, which refuses a standby)
  rm -f "$PGP_DIR/$node/data/standby.signal"
  if ! pg_as "$PG_BIN/pg_rewind" -D "$PGP_DIR/$node/data" -R \
    --source-server="host=127.0.0.1 port=$(pgp_node_port "$primary") user=lake dbname=postgres" \
    >"$PGP_DIR/rewind.log" 2>&1; then
    cat "$PGP_DIR/rewind.log" >&2
    return 1
  fi
  # pg_rewind copied the primary's configuration files: its postgresql.conf
  # (its port), its postgresql.auto.conf (synchronous_standby_names = '')
  pg_as bash -c "grep -v '^synchronous_standby_names' '$PGP_DIR/$node/data/postgresql.auto.conf' >'$PGP_DIR/$node/auto' &&
    cat '$PGP_DIR/$node/auto' >'$PGP_DIR/$node/data/postgresql.auto.conf'" || return 1
  pgp_own_conf "$node" || return 1
  pgp_resume "$node" || return 1
  pgp_set "$primary" synchronous_standby_names RESET || return 1
  pgp_wait_sync sync
}

pgp_wait_sync() {
  local primary state=$1
  primary=$(pgp_primary)
  # (60 s: a guard against a hang; 30 s was short on a loaded machine)
  for _ in $(seq 1200); do
    [ "$(pgp_sql "$primary" postgres "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = '$state'" 2>/dev/null)" = 1 ] &&
      return 0
    sleep 0.05
  done
  echo "pg.bash: no streaming standby of $primary in sync_state $state after 60 s" >&2
  return 1
}

# libpq tries the next host of a URL when one refuses to connect or takes
# no writes, not when one says "no such database": the standby, first in
# the URL after a failover, must have replayed the creation
pgp_createdb() {
  pgp_sql "$(pgp_primary)" postgres "CREATE DATABASE $1" >/dev/null &&
    pgp_wait_replayed "SELECT count(*) FROM pg_database WHERE datname = '$1'" 1
}

# pgp_wait_replayed SQL VALUE [DB]: until SQL answers VALUE on the standby
# (at most 60 s, a guard against a hang)
pgp_wait_replayed() {
  local standby
  standby=$(pgp_standby)
  for _ in $(seq 1200); do
    [ "$(pgp_sql "$standby" "${3:-postgres}" "$1" 2>/dev/null)" = "$2" ] && return 0
    sleep 0.05
  done
  echo "pg.bash: the standby $standby never answered $2 to $1" >&2
  return 1
}

pgp_heal() {
  local primary standby
  primary=$(pgp_primary) standby=$(pgp_standby)
  pgp_running "$primary" || pgp_resume "$primary" || return 1
  # a primary fenced by a test takes writes again
  if [ "$(pgp_sql "$primary" postgres "SHOW default_transaction_read_only")" != off ]; then
    pgp_set "$primary" default_transaction_read_only RESET || return 1
  fi
  # a standby that is not one (a fenced old primary) goes, and rejoins
  if pgp_running "$standby" && [ "$(pgp_sql "$standby" postgres "SELECT pg_is_in_recovery()")" != t ]; then
    pgp_halt "$standby" || return 1
  fi
  if ! pgp_running "$standby"; then
    pgp_rejoin "$standby" || return 1
  fi
  pgp_wait_sync sync
}

if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = run ]; then
  shift
  pg_start || exit 1
  trap pg_stop EXIT
  "$@"
  exit $?
fi
