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
    local fd
    for fd in "/proc/$BASHPID/fd/"*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
    done
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

if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = run ]; then
  shift
  pg_start || exit 1
  trap pg_stop EXIT
  "$@"
  exit $?
fi
