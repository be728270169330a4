#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# shellcheck disable=SC2016 # the commands in single quotes expand in the container, not here
# tests/systemd/nspawn-service.sh: the packaged lake-metasrv.service under a
# real systemd (issue 20), following lake-metasrv(8), "The Debian package
# and systemd", step by step in a fresh Debian 12 booted with systemd-nspawn.
#
# How to run it: as root, on a Debian 12 host with the Debian mirror
# reachable, after "make deb":
#
#     apt-get install -y systemd-container debootstrap
#     tests/systemd/nspawn-service.sh [DEB_DIR]      # default build/deb
#
# It is not part of make check: it needs root, debootstrap from the network
# (a minbase bookworm with systemd, about 250 MB, made once and kept in
# $LAKE_NSPAWN_BASE, default /var/tmp/lake-nspawn-base) and a kernel that
# lets systemd-nspawn boot a container.  PID 1 on the host need not be
# systemd (the container is booted with --register=no --keep-unit).  Each
# run boots a throw-away copy of that base with a private network (so port
# 7700 on the host is not touched), installs the two packages with apt,
# makes the registry, the admin token and the certificate as the page says,
# enables and starts the service, then checks it serves, logs, reloads,
# stops, comes back at boot, restarts on upgrade, stops on removal, and
# purges as the page says.  It prints TAP lines (ok / not ok) and exits 1
# when a check failed.  About a minute once the base exists.
#
# Where the page says "from a client" on host lake.example, the client runs
# inside the container and /etc/hosts names 127.0.0.1 lake.example.  The
# packages' dependencies are installed (chroot, apt-get) into the copy
# before it boots, since the booted container has no network; everything
# of lake's own is installed inside the running container with apt.
#
# Variables: LAKE_NSPAWN_BASE (the cached base root), LAKE_NSPAWN_MIRROR
# (default: the first Debian URI in /etc/apt/sources.list*, else
# http://deb.debian.org/debian), LAKE_NSPAWN_KEEP=1 (keep the copy).

set -u
export LC_ALL=C.UTF-8

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
debdir=${1:-$src/build/deb}
base=${LAKE_NSPAWN_BASE:-/var/tmp/lake-nspawn-base}

die() { echo "nspawn-service: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run it as root"
for t in systemd-nspawn debootstrap nsenter; do
  command -v "$t" >/dev/null || die "no $t (apt-get install systemd-container debootstrap)"
done
shopt -s nullglob
debs=("$debdir"/lake_*_amd64.deb "$debdir"/lake-metasrv_*_amd64.deb)
[ "${#debs[@]}" = 2 ] || die "want one lake_*.deb and one lake-metasrv_*.deb in $debdir (make deb)"

mirror=${LAKE_NSPAWN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
           grep -oE 'https?://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ')
  mirror=${mirror:-http://deb.debian.org/debian}
fi

# --- the base: debootstrap once -------------------------------------------
if [ ! -f "$base/.lake-nspawn-complete" ]; then
  rm -rf "$base"
  echo "# debootstrap bookworm into $base from $mirror"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,ca-certificates,curl,openssl \
    bookworm "$base" "$mirror" >"/var/tmp/lake-nspawn-debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -5 /var/tmp/lake-nspawn-debootstrap.log)"
  touch "$base/.lake-nspawn-complete"
fi

# --- a throw-away copy, the packages' dependencies, the .debs -------------
work=$(mktemp -d /var/tmp/lake-nspawn.XXXXXX)
root=$work/root
machine=lakens$$
nspawn_pid=
cp -a "$base" "$root" || die "cannot copy $base"
rm -f "$root/.lake-nspawn-complete"
mkdir -p "$root/root/debs"
cp "${debs[@]}" "$root/root/debs/"
deb_lake=$(basename "${debs[0]}")
deb_srv=$(basename "${debs[1]}")

# the first alternative of each dependency that is not one of ours
mapfile -t deps < <(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; echo; done |
       tr ',' '\n' | sed 's/|.*//; s/(.*//; s/^ *//; s/ *$//' | grep -v '^lake' | grep . | sort -u)
chroot "$root" apt-get install -y -q --no-install-recommends "${deps[@]}" >"$work/deps.log" 2>&1 ||
  die "the dependencies do not install: $(tail -5 "$work/deps.log")"
# the client's stand-in for DNS: lake.example is this machine
echo '127.0.0.1 lake.example' >>"$root/etc/hosts"

# --- boot, run in it, stop -------------------------------------------------
leader=
boot() {
  systemd-nspawn -D "$root" -b --register=no --keep-unit --private-network -M "$machine" \
    --console=pipe </dev/null >>"$work/boot.log" 2>&1 &
  nspawn_pid=$!
  local s=
  for _ in $(seq 1 60); do
    kill -0 "$nspawn_pid" 2>/dev/null || { echo "# nspawn exited: $(tail -5 "$work/boot.log")"; return 1; }
    leader=$(pgrep -P "$nspawn_pid" | head -1)
    if [ -n "$leader" ]; then
      s=$(nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null)
      case $s in running|degraded) return 0 ;; esac
    fi
    sleep 1
  done
  echo "# the container did not finish booting in 60 s: state ${s:-unknown}; $(tail -5 "$work/boot.log")"
  return 1
}

# run a shell command in the container as root, in /root, with a clean
# environment and the umask a root login has
cin() {
  nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive bash -c "umask 022; cd /root && $1"
}

# (not poweroff: a slip would reach the host's command)
container_poweroff() {
  [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null || return 0
  cin 'systemctl poweroff' >/dev/null 2>&1
  for _ in $(seq 1 30); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid"; sleep 5
    kill -0 "$nspawn_pid" 2>/dev/null && kill -KILL "$nspawn_pid"
  fi
  wait "$nspawn_pid" 2>/dev/null
  nspawn_pid=
}

cleanup() {
  container_poweroff
  if [ "${LAKE_NSPAWN_KEEP:-}" = 1 ]; then echo "# kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
# TAP comment lines: #, three spaces, each line of $1
comment() { local l; while IFS= read -r l; do echo "#   $l"; done <<<"$1"; }
notok() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
  [ -z "${2:-}" ] || comment "$2"
}
# check DESCRIPTION COMMAND: ok when the container command succeeds; its
# output is in $out either way
check() {
  if out=$(cin "$2" 2>&1); then ok "$1"; passed=1; else notok "$1" "$out"; passed=0; fi
}
# the output of a check that passed, as an excerpt (a failure's is shown)
show() { [ "$passed" = 0 ] || comment "$1"; }
passed=1

boot || { notok "systemd boots in the container" "$(tail -20 "$work/boot.log")"; echo "1..$n"; exit 1; }
ok "systemd boots in the container: $(cin 'systemctl --version | head -1')"

# The page, in order.
check "apt install ./$deb_lake ./$deb_srv" \
  "cd debs && apt-get install -y -q ./$deb_lake ./$deb_srv"
check "the lake user, /var/lib/lake lake:lake 0750, /etc/lake/tls root:lake 0750, metasrv.conf" \
  'id lake && [ "$(stat -c "%U:%G %a" /var/lib/lake)" = "lake:lake 750" ] &&
   [ "$(stat -c "%U:%G %a" /etc/lake/tls)" = "root:lake 750" ] && [ -f /etc/lake/metasrv.conf ]'
check "the service is installed, neither enabled nor started" \
  '[ "$(systemctl is-enabled lake-metasrv)" = disabled ] && ! systemctl is-active --quiet lake-metasrv'

# 1. the registry and the admin token
check "1. runuser -u lake -- lake-metasrv init (umask 077): the registry and a private admin.token" \
  'umask 077; runuser -u lake -- lake-metasrv init --db /var/lib/lake/registry.db \
     --stage file:///var/lib/lake/stage >/root/admin.token &&
   [ -s /root/admin.token ] && [ "$(stat -c %a /root/admin.token)" = 600 ] &&
   [ "$(stat -c %U /var/lib/lake/registry.db)" = lake ]'

# 2. the certificate (TLS certificates), installed for root and lake only
check "2. a CA and a certificate for lake.example and 127.0.0.1; install -m 640 -g lake into /etc/lake/tls" \
  'set -e; mkdir ca; cd ca
   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
     -keyout ca.key -out ca.pem -days 3650 -subj "/CN=lake CA"
   openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
     -keyout key.pem -out cert.csr -subj /CN=lake.example
   printf "subjectAltName=DNS:lake.example,IP:127.0.0.1\n" > cert.ext
   openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
     -days 825 -extfile cert.ext -out cert.pem
   install -m 640 -g lake cert.pem key.pem /etc/lake/tls/
   [ "$(stat -c "%U:%G %a" /etc/lake/tls/key.pem)" = "root:lake 640" ]'

# 3. metasrv.conf: its defaults are what the page's steps made
check "3. /etc/lake/metasrv.conf's defaults name the registry and the certificate of steps 1 and 2" \
  '. /etc/lake/metasrv.conf && [ "$REGISTRY" = sqlite:/var/lib/lake/registry.db ] &&
   [ "$TLS_CERT" = /etc/lake/tls/cert.pem ] && [ "$TLS_KEY" = /etc/lake/tls/key.pem ] &&
   [ "$LISTEN" = 0.0.0.0:7700 ]'

# 4. start it
check "4. systemctl enable --now lake-metasrv" 'systemctl enable --now lake-metasrv'
out=$(cin 'for i in $(seq 1 50); do journalctl -u lake-metasrv -o cat | grep -q "^listening on" && break; sleep 0.2; done
           systemctl is-active lake-metasrv; systemctl is-enabled lake-metasrv' 2>&1)
if [ "$out" = $'active\nenabled' ]; then ok "systemctl is-active: active, is-enabled: enabled"
else notok "systemctl is-active: active, is-enabled: enabled" "$out$(cin 'systemctl status --no-pager lake-metasrv; journalctl -u lake-metasrv --no-pager' 2>&1)"; fi
check "journalctl -u lake-metasrv: \"listening on https://0.0.0.0:7700\"" \
  'journalctl -u lake-metasrv -o cat | grep -x "listening on https://0.0.0.0:7700"'
show "$out"

# 5. from a client, with the CA
# the answer the installed page shows
check "5. curl --cacert ca.pem https://lake.example:7700/v1/health: what lake-metasrv(8) shows" \
  'want=$(zcat /usr/share/man/man8/lake-metasrv.8.gz | sed -n "/^\.Ss The Debian package/,/^\.S[sh] /p" |
          grep -A1 -E "^\\$ curl .*/v1/health$" | grep "^{")
   got=$(curl -sS --cacert ca/ca.pem https://lake.example:7700/v1/health)
   echo "$got"; [ -n "$want" ] && [ "$got" = "$want" ] || { echo "the page: $want"; false; }'
show "$out"
check "5. LAKE_METASRV=https://lake.example:7700 LAKE_CA_FILE=ca.pem LAKE_TOKEN_FILE=admin.token lake-catalog whoami" \
  'LAKE_METASRV=https://lake.example:7700 LAKE_CA_FILE=ca/ca.pem LAKE_TOKEN_FILE=admin.token \
     lake-catalog whoami 2>&1 | grep -x principal=admin'
show "$out"
check "the service writes its registry: create-namespace, create, list through it" \
  'export LAKE_METASRV=https://lake.example:7700 LAKE_CA_FILE=ca/ca.pem LAKE_TOKEN_FILE=admin.token
   lake-catalog create-namespace demo && lake-catalog create demo.t "k INTEGER, s TEXT" &&
   [ "$(lake-catalog list)" = "$(printf "demo\tt")" ]'
check "no token: 401, the server is TLS-only" \
  '[ "$(curl -s -o /dev/null -w %{http_code} --cacert ca/ca.pem -X POST https://lake.example:7700/v1/whoami)" = 401 ] &&
   ! curl -s -o /dev/null http://127.0.0.1:7700/v1/health'
check "the journal has the request lines" \
  'journalctl -u lake-metasrv -o cat | grep -E "^[0-9T:-]+Z request_id=[0-9A-Z]+ principal=(admin|-) action=(health|whoami|create_table) status=(200|401) " |
   tee /dev/stderr | [ "$(wc -l)" -ge 3 ]'
show "$out"
check "a token made the same way (umask 077, runuser ... token create) counts at once" \
  'umask 077; runuser -u lake -- lake-metasrv token create --db /var/lib/lake/registry.db \
     --role user --name alice >alice.token &&
   LAKE_METASRV=https://lake.example:7700 LAKE_CA_FILE=ca/ca.pem LAKE_TOKEN_FILE=alice.token \
     lake-catalog whoami 2>&1 | grep -x principal=alice'

# a new certificate, then systemctl reload (SIGHUP)
check "systemctl reload lake-metasrv after a new certificate: active, same process, the new certificate served" \
  'set -e; cd ca; pid=$(systemctl show -p MainPID --value lake-metasrv)
   openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key2.pem -out cert2.csr \
     -subj /CN=lake.example 2>/dev/null
   openssl x509 -req -in cert2.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
     -extfile cert.ext -out cert2.pem 2>/dev/null
   cp cert2.pem /etc/lake/tls/cert.pem; cp key2.pem /etc/lake/tls/key.pem
   systemctl reload lake-metasrv
   systemctl is-active lake-metasrv
   [ "$(systemctl show -p MainPID --value lake-metasrv)" = "$pid" ]
   journalctl -u lake-metasrv -o cat | grep "SIGHUP: certificate and key read again"
   want=$(openssl x509 -in cert2.pem -noout -serial)
   got=$(openssl s_client -connect 127.0.0.1:7700 -CAfile ca.pem </dev/null 2>/dev/null | openssl x509 -noout -serial)
   echo "served $got"; [ "$got" = "$want" ]
   curl -sS --cacert ca.pem https://lake.example:7700/v1/health'
show "$out"

out=$(cin 'systemd-analyze security --no-pager lake-metasrv' 2>&1)
level=$(sed -n 's/.*Overall exposure level for lake-metasrv.service: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }'; then
  ok "systemd-analyze security lake-metasrv: exposure $level (at most 2.0)"
else notok "systemd-analyze security lake-metasrv: exposure ${level:-?} (at most 2.0)" "$out"; fi
# --man=no: a minimal Debian has no man(1) to look Documentation= up with
check "systemd-analyze verify lake-metasrv.service: clean" \
  'out=$(systemd-analyze verify --man=no /lib/systemd/system/lake-metasrv.service 2>&1); echo "$out"; [ -z "$out" ]'

check "systemctl stop: drains, exits 0, not restarted" \
  'systemctl stop lake-metasrv && ! systemctl is-active --quiet lake-metasrv &&
   [ "$(systemctl show -p Result --value lake-metasrv)" = success ] &&
   [ "$(systemctl show -p ExecMainStatus --value lake-metasrv)" = 0 ] &&
   journalctl -u lake-metasrv -o cat | grep "draining"'

# a bad configuration: exits at once with one line, retried every 2 s,
# then failed (systemd's start limit: 5 starts in 10 s)
check "a key that is not the certificate's: one line in the journal, retried, then failed; restored, it starts" \
  'set -e; cp /etc/lake/tls/key.pem key.good; cp ca/key.pem /etc/lake/tls/key.pem
   systemctl start lake-metasrv || true
   for i in $(seq 1 40); do systemctl is-failed --quiet lake-metasrv && break; sleep 0.5; done
   systemctl is-failed lake-metasrv
   echo "NRestarts=$(systemctl show -p NRestarts --value lake-metasrv) ExecMainStatus=$(systemctl show -p ExecMainStatus --value lake-metasrv)"
   lines=$(journalctl -u lake-metasrv -o cat | grep -c "^lake-metasrv: " || true)
   echo "error lines: $lines"
   [ "$lines" -ge 1 ]
   journalctl -u lake-metasrv -o cat | grep "^lake-metasrv: " | tail -1
   [ "$(systemctl show -p NRestarts --value lake-metasrv)" -ge 1 ]
   cp key.good /etc/lake/tls/key.pem; systemctl reset-failed lake-metasrv; systemctl start lake-metasrv
   for i in $(seq 1 50); do curl -s --cacert ca/ca.pem https://lake.example:7700/v1/health >/dev/null && break; sleep 0.2; done
   systemctl is-active lake-metasrv'
show "$out"

# "now and at every boot"
container_poweroff
if boot; then
  check "after a reboot the enabled service is active and serves" \
    'for i in $(seq 1 50); do curl -s --cacert ca/ca.pem https://lake.example:7700/v1/health >/dev/null && break; sleep 0.2; done
     systemctl is-active lake-metasrv && curl -sS --cacert ca/ca.pem https://lake.example:7700/v1/health'
  show "$out"
else
  notok "after a reboot the enabled service is active and serves" "$(tail -20 "$work/boot.log")"
fi

check "an upgrade (apt reinstall) restarts the running service" \
  'set -e; pid=$(systemctl show -p MainPID --value lake-metasrv)
   cd debs; apt-get install -y -q --reinstall ./'"$deb_srv"' >/dev/null
   systemctl is-active lake-metasrv
   new=$(systemctl show -p MainPID --value lake-metasrv); echo "MainPID $pid -> $new"; [ "$new" != "$pid" ]'
show "$out"
check "apt remove lake-metasrv stops the running service" \
  'systemctl start lake-metasrv && systemctl is-active lake-metasrv &&
   apt-get remove -y -q lake-metasrv >/dev/null && ! systemctl is-active lake-metasrv &&
   ! pgrep -x lake-metasrv'
check "apt purge: metasrv.conf gone; the registry, the certificate and the lake user kept" \
  'apt-get purge -y -q lake-metasrv >/dev/null && [ ! -e /etc/lake/metasrv.conf ] &&
   [ -f /var/lib/lake/registry.db ] && [ -f /etc/lake/tls/cert.pem ] && id lake >/dev/null &&
   [ ! -e /lib/systemd/system/lake-metasrv.service ]'

echo "1..$n"
[ "$failed" = 0 ] || { echo "# $failed of $n failed"; exit 1; }
