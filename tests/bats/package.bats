#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# The Debian packages (issue 20): make deb, then what a user of them gets.
#  - make deb builds lake, lake-metasrv, liblake0 and liblake-dev from a
#    copy of the sources that is not a git checkout (what a Debian source package is: the build's
#    git revision falls back to none), lintian finds no error or warning,
#    and a second build elsewhere gives the same bytes (reproducible);
#  - the packages depend on the libraries the programs dlopen(), which
#    dpkg-shlibdeps cannot see; Build-Depends is in the Makefile's list;
#  - liblake0 (Multi-Arch: same) holds liblake.so.0, hardened, exporting
#    liblake.map's names, with debian/liblake0.symbols as its symbols
#    file (dpkg-gensymbols -c4); liblake-dev the header, liblake.a, the
#    link, lake.pc and section 3, and depends on liblake0 of its version;
#  - installed into a scratch root (dpkg --root, the maintainer scripts
#    run for that root): every program's --version, the man pages and
#    completions where Debian puts them, the lake user, /etc/lake/tls and
#    /var/lib/lake,
#    a put/get round trip from the installed programs; a program built
#    with pkg-config against the installed liblake-dev runs on liblake0
#    (and one linked with liblake.a, pkg-config --static); purged,
#    nothing of them is left;
#  - the unit: systemd-analyze verify clean, security exposure <= 2.0;
#    the maintenance job's units, script and configuration installed
#    (the job itself: metasrv-service.bats);
#  - with CI=true (a throw-away machine, as root): the real
#    apt install of the four, a program built with
#    cc prog.c $(pkg-config --cflags --libs lake), then apt purge, and
#    nothing is left.
#  - every program the unit runs is in a dependency; the maintainer
#    scripts, run with stand-ins for the systemd helpers: installation
#    starts nothing, an upgrade restarts the service, removal stops it.
# PID 1 here is not systemd: the service under a real systemd is
# tests/systemd/nspawn-service.sh's (root, debootstrap from the network;
# not part of make check).  The build is the cost: once, in
# setup_file.

load helpers/common

setup_file() {
  export PKG=$BATS_FILE_TMPDIR
  local tool
  for tool in dpkg-buildpackage dh lintian fakeroot; do
    command -v "$tool" >/dev/null || { echo "no $tool (make deps installs it)" >"$PKG/skip"; return 0; }
  done
  # the sources a Debian source package holds, outside any git checkout
  mkdir -p "$PKG/src"
  (cd "$LAKE_SRC" && tar -cf - Makefile README.md cmd lib include examples man completions debian) | tar -xf - -C "$PKG/src"
  # SANITIZE=1, as make check SANITIZE=1 passes it on: the package is
  # built as debian/rules says all the same
  make -C "$PKG/src" SANITIZE=1 deb >"$PKG/deb.out" 2>&1
  echo $? >"$PKG/deb.rc"
  # each package's files, extracted once for the tests that read them (a
  # failed build is the first test's to report)
  local version p
  version=$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")
  mkdir -p "$PKG/x"
  for p in lake lake-metasrv liblake0 liblake-dev; do
    dpkg-deb -x "$PKG/src/build/deb/${p}_${version}_amd64.deb" "$PKG/x/$p" >>"$PKG/deb.out" 2>&1 || true
  done
}

setup() {
  [ ! -f "$PKG/skip" ] || skip "$(cat "$PKG/skip")"
  common_setup
  VERSION=$(sed -n 's/^VERSION *:= *//p' "$LAKE_SRC/Makefile")
  DEBS=("$PKG/src/build/deb/lake_${VERSION}_amd64.deb" "$PKG/src/build/deb/lake-metasrv_${VERSION}_amd64.deb"
        "$PKG/src/build/deb/liblake0_${VERSION}_amd64.deb" "$PKG/src/build/deb/liblake-dev_${VERSION}_amd64.deb")
  ROOT=$T/root
  # DEBS extracted (setup_file)
  X_LAKE=$PKG/x/lake X_METASRV=$PKG/x/lake-metasrv X_LIB=$PKG/x/liblake0 X_DEV=$PKG/x/liblake-dev
  MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
}

teardown() {
  common_teardown
}

# dpkg into the scratch root $ROOT: its own database, maintainer scripts
# run for it ($DPKG_ROOT) rather than chrooted into it, the libraries the
# packages depend on being the host's
root_dpkg() {
  dpkg --root="$ROOT" --force-depends --force-script-chrootless "$@"
}

root_install() {
  [ "$(id -u)" = 0 ] || skip "dpkg --root with maintainer scripts needs root"
  mkdir -p "$ROOT/etc" "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates"
  touch "$ROOT/var/lib/dpkg/status"
  root_dpkg -i "${DEBS[@]}" >"$T/install.out" 2>&1 || fail "dpkg -i failed: $(cat "$T/install.out")"
}

# A small program on <lake.h>: the header's and the library's versions,
# then stdin put into the stage and read back to stdout, verified.
tiny_program() {
  cat <<'EOF'
#include <stdio.h>
#include <lake.h>
int main(void) {
    lake_client *c;
    lake_file *f;
    lake_reader *r;
    lake_error e;
    char buf[4096];
    ssize_t n;
    printf("%s %s\n", LIBLAKE_VERSION, lake_version());
    if (lake_open(&c, NULL, &e) || lake_put_fd(c, 0, "in", &f, &e) ||
        lake_open_file(c, lake_file_json(f), &r, &e)) {
        fprintf(stderr, "prog: %s\n", e.message);
        return e.exit_status;
    }
    while ((n = lake_reader_read(r, buf, sizeof buf, &e)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    if (n < 0) fprintf(stderr, "prog: %s\n", e.message);
    lake_reader_close(r);
    lake_file_free(f);
    lake_close(c);
    return n < 0 ? e.exit_status : 0;
}
EOF
}

@test "make deb, outside a git checkout: lake, lake-metasrv, liblake0, liblake-dev, lintian without errors or warnings" {
  assert_equal "make deb: exit $(cat "$PKG/deb.rc")" "make deb: exit 0"
  local d
  for d in "${DEBS[@]}"; do assert_file_exists "$d"; done
  run grep -E '^[EW]: ' "$PKG/src/build/deb/lintian.txt"
  assert_failure 1 # (2: no lintian.txt at all)
  # the version is the Makefile's; no git revision outside a checkout
  run dpkg-deb -f "${DEBS[0]}" Version
  assert_output "$VERSION"
  run "$X_LAKE/usr/bin/lake-put" --version
  assert_success
  assert_line --index 0 "lake-put $VERSION"
  # built as debian/rules says (hardened, no sanitizer), whatever make had
  run nm -D "$X_LAKE/usr/bin/lake-put"
  assert_success
  refute_output --partial __asan_
  run grep -c -- '-fstack-protector-strong.*-D_FORTIFY_SOURCE=2\|-D_FORTIFY_SOURCE=2.*-fstack-protector-strong' \
    "$PKG/src/build/deb/build.log"
  [ "$output" -gt 0 ] || fail "the compiler was not given dpkg-buildflags' hardening"
}

@test "make deb refuses a debian/changelog that does not name the Makefile's VERSION" {
  cp -a "$PKG/src" "$T/src"
  rm -rf "$T/src/build"
  sed -i "1s/($VERSION)/(9.9.9)/" "$T/src/debian/changelog"
  run --separate-stderr make -s -C "$T/src" deb
  assert_failure
  assert_equal "${stderr_lines[0]}" "deb: debian/changelog is at 9.9.9, the Makefile's VERSION at $VERSION: add a changelog entry (dch -v $VERSION)"
  [ ! -e "$T/src/build/deb" ] || fail "make deb began a build"
}

@test "make deb is reproducible: a second build, elsewhere, gives the same packages" {
  mkdir -p "$T/again"
  cp -a "$PKG/src" "$T/again/src"
  rm -rf "$T/again/src/build"
  make -C "$T/again/src" deb >"$T/again.out" 2>&1 || fail "the second make deb failed: $(tail "$T/again.out")"
  local d
  for d in "${DEBS[@]}"; do
    cmp "$d" "$T/again/src/build/deb/${d##*/}" || fail "${d##*/} differs between two builds"
  done
}

@test "the packages depend on the libraries the programs dlopen(), and Build-Depends is the Makefile's" {
  local so pkg depends checked=0
  depends=$(dpkg-deb -f "${DEBS[0]}" Depends)
  # every soname lib/ opens by name, and the package that holds it here
  for so in $(grep -rhoE '"lib[a-z0-9_]+\.so\.[0-9]+"' "$LAKE_SRC/lib" | tr -d '"' | sort -u); do
    checked=$((checked + 1))
    pkg=$(dpkg -S "/$so" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || pkg=$(dpkg -S "$so" | grep -v -- '-dev' | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || fail "no package holds $so"
    [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "lake does not depend on $pkg ($so): $depends"
    # the library opens them as the programs do
    [[ ", $(dpkg-deb -f "${DEBS[2]}" Depends)," == *", $pkg"[\ ,]* ]] || fail "liblake0 does not depend on $pkg ($so)"
  done
  [ "$checked" -ge 1 ] || fail "no soname found in lib/: nothing checked"
  depends=$(dpkg-deb -f "${DEBS[1]}" Depends)
  for pkg in libcurl4 libmagic1 libssl3; do
    [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "lake-metasrv does not depend on $pkg: $depends"
  done
  # Build-Depends: each in the Makefile's DEB_PKGS (make deps installs them)
  local list
  list=" $(make -s -C "$LAKE_SRC" -pn deps 2>/dev/null | sed -n 's/^DEB_PKGS *:= *//p' | head -1) "
  for pkg in $(awk '/^Build-Depends:/ { b = 1; sub(/^Build-Depends:/, ""); print; next }
                    b && /^[ \t]/ { print; next } { b = 0 }' "$LAKE_SRC/debian/control" |
               tr ',' '\n' | awk '{ print $1 }' | grep -v '^debhelper-compat$\|^dh-sequence-'); do
    [[ $list == *" $pkg "* ]] || fail "Build-Depends $pkg is not in the Makefile's DEB_PKGS"
  done
}

@test "installed into a scratch root: --version of every program, man pages, completions, the lake user, a put/get" {
  root_install
  local p line
  for p in lake-put lake-get lake-catalog lake-query lake-metasrv; do
    run --separate-stderr "$ROOT/usr/bin/$p" --version
    assert_success
    assert_line --index 0 "$p $VERSION"
    [ "${#lines[@]}" = 2 ] || fail "$p --version: not two lines: $output"
    assert_file_exists "$ROOT/usr/share/bash-completion/completions/$p"
  done
  for p in man1/lake-put.1 man1/lake-get.1 man1/lake-catalog.1 man1/lake-query.1 man5/lake.conf.5 \
           man7/lake.7 man8/lake-metasrv.8; do
    assert_file_exists "$ROOT/usr/share/man/$p.gz"
  done
  assert_file_exists "$ROOT/usr/share/zsh/vendor-completions/_lake"
  assert_file_exists "$ROOT/lib/systemd/system/lake-metasrv.service"
  # the maintenance job (lake-metasrv(8), MAINTENANCE): its units, its
  # script, its configuration
  assert_file_exists "$ROOT/lib/systemd/system/lake-maintenance.service"
  assert_file_exists "$ROOT/lib/systemd/system/lake-maintenance.timer"
  assert_file_executable "$ROOT/usr/libexec/lake/lake-maintenance"
  assert_file_exists "$ROOT/etc/lake/maintenance.conf"
  assert_file_exists "$ROOT/usr/lib/sysusers.d/lake-metasrv.conf"
  # sysusers made the user; /etc/lake/tls is root:lake 0750
  line=$(grep '^lake:' "$ROOT/etc/passwd") || fail "no lake user in the root's /etc/passwd"
  [[ $line == *:/var/lib/lake:* ]] || fail "lake's home: $line"
  assert_equal "$(stat -c '%a %u %g' "$ROOT/etc/lake/tls")" \
    "750 0 $(awk -F: '$1 == "lake" { print $3 }' "$ROOT/etc/group")"
  assert_file_exists "$ROOT/etc/lake/metasrv.conf"
  # tmpfiles.d made the state directory, the lake user's
  local lake
  lake=$(awk -F: '$1 == "lake" { print $3 }' "$ROOT/etc/passwd")
  assert_equal "$(stat -c '%a %u %g' "$ROOT/var/lib/lake")" \
    "750 $lake $(awk -F: '$1 == "lake" { print $3 }' "$ROOT/etc/group")"
  # a round trip through the installed programs, on an embedded lake
  printf 'from the package\n' >"$T/in"
  run --separate-stderr "$ROOT/usr/bin/lake-put" --name in "$T/in"
  assert_clean_success
  run --separate-stderr "$ROOT/usr/bin/lake-get" "$output"
  assert_clean_success
  assert_output "from the package"
}

@test "liblake0 and liblake-dev: their files, the symbols file, a hardened library exporting liblake.map's names" {
  local lib=usr/lib/$MULTIARCH so d f m
  so=$X_LIB/$lib/liblake.so.$VERSION
  run dpkg-deb -c "${DEBS[2]}"
  assert_success
  assert_equal "$(awk '$1 !~ /^d/ { print $6 }' <<<"$output" | sort | tr '\n' ' ')" \
    "./$lib/liblake.so.0 ./$lib/liblake.so.$VERSION ./usr/share/doc/liblake0/changelog.gz ./usr/share/doc/liblake0/copyright "
  assert_equal "$(readlink "$X_LIB/$lib/liblake.so.0")" "liblake.so.$VERSION"
  for d in "${DEBS[2]}" "${DEBS[3]}"; do
    assert_equal "$(dpkg-deb -f "$d" Multi-Arch)" same
  done
  assert_equal "$(dpkg-deb -f "${DEBS[2]}" Section)" libs
  assert_equal "$(dpkg-deb -f "${DEBS[3]}" Section)" libdevel
  [[ ", $(dpkg-deb -f "${DEBS[3]}" Depends)," == *", liblake0 (= $VERSION),"* ]] ||
    fail "liblake-dev does not depend on liblake0 (= $VERSION): $(dpkg-deb -f "${DEBS[3]}" Depends)"
  # the programs link liblake.a: lake needs no liblake0
  [[ ", $(dpkg-deb -f "${DEBS[0]}" Depends)," != *" liblake0"* ]] || fail "lake depends on liblake0"
  # the symbols file is debian/liblake0.symbols, held to by dpkg-gensymbols -c4
  dpkg-deb -e "${DEBS[2]}" "$T/ctl"
  run cat "$T/ctl/symbols"
  assert_output "$(cat "$LAKE_SRC/debian/liblake0.symbols")"
  grep -qx 'dh_makeshlibs -- -c4' "$PKG/src/build/deb/build.log" || fail "dh_makeshlibs did not run with -c4"
  # hardened as the programs are: full RELRO, no sanitizer
  run readelf -d "$so"
  assert_line --regexp '\(SONAME\) +Library soname: \[liblake\.so\.0\]$'
  assert_line --regexp '\(FLAGS\) +BIND_NOW$'
  run readelf -lW "$so"
  assert_line --regexp '^ +GNU_RELRO '
  nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/exported"
  sed -n 's/^ *\(lake_[a-z0-9_]*\);$/\1/p' "$LAKE_SRC/lib/api/liblake.map" | sort >"$T/map"
  run diff "$T/map" "$T/exported"
  assert_success
  run nm -D "$so"
  refute_output --partial __asan_
  # liblake-dev: the header, both libraries' development files, section 3
  for f in usr/include/lake.h "$lib/liblake.a" "$lib/pkgconfig/lake.pc"; do
    assert_file_exists "$X_DEV/$f"
  done
  assert_equal "$(readlink "$X_DEV/$lib/liblake.so")" liblake.so.0
  cmp "$LAKE_SRC/include/lake.h" "$X_DEV/usr/include/lake.h"
  for m in "$LAKE_SRC"/man/man3/*.3; do
    assert_file_exists "$X_DEV/usr/share/man/man3/${m##*/}.gz"
  done
  # and every function of lake.h by its own name (man lake_put_fd): a
  # link to the page that documents it
  for f in $(grep -oE '\blake_[a-z0-9_]+\(' "$LAKE_SRC/include/lake.h" | tr -d '(' | sort -u); do
    assert_file_exists "$X_DEV/usr/share/man/man3/$f.3.gz"
  done
  assert_equal "$(readlink "$X_DEV/usr/share/man/man3/lake_put_fd.3.gz")" lake_open.3.gz
  run grep -E '^(libdir|includedir|Version:)' "$X_DEV/$lib/pkgconfig/lake.pc"
  assert_output "libdir=/$lib
includedir=/usr/include
Version: $VERSION"
  run nm "$X_DEV/$lib/liblake.a"
  refute_output --partial __asan_
}

@test "installed into a scratch root: programs built with pkg-config against liblake-dev run on liblake0, or linked with liblake.a" {
  root_install
  local lib=$ROOT/usr/lib/$MULTIARCH
  export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
  run pkg-config --modversion lake
  assert_output "$VERSION"
  run pkg-config --cflags --libs lake
  assert_equal "${output% }" "-I$ROOT/usr/include -L$lib -llake"
  tiny_program >"$T/prog.c"
  # shellcheck disable=SC2046 # pkg-config's words are meant to split
  cc -Wall -Wextra -Werror -o "$T/prog" "$T/prog.c" $(pkg-config --cflags --libs lake) || fail "cc failed"
  printf 'through the library\n' >"$T/in"
  LD_LIBRARY_PATH=$lib run --separate-stderr "$T/prog" <"$T/in"
  assert_clean_success
  assert_output "$VERSION $VERSION
through the library"
  LD_LIBRARY_PATH=$lib run ldd "$T/prog"
  assert_line --partial "liblake.so.0 => $lib/liblake.so.0"
  # the tree's example on the static library: pkg-config --static names
  # what liblake.a needs
  # shellcheck disable=SC2046 # as above
  cc -Wall -Wextra -Werror -o "$T/roundtrip" "$LAKE_SRC/examples/roundtrip.c" $(pkg-config --cflags lake) \
    -Wl,-Bstatic -llake -Wl,-Bdynamic $(pkg-config --static --libs lake | sed 's/ -llake / /') ||
    fail "cc with liblake.a failed"
  run ldd "$T/roundtrip"
  refute_output --partial liblake
  head -c 1000000 /dev/urandom >"$T/in"
  run --separate-stderr "$T/roundtrip" "$T/in"
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 1 "read back 1000000 bytes: the same"
}

@test "purged from the scratch root, nothing of the packages is left" {
  root_install
  # what dpkg installed, conffiles included
  local d p
  for d in "${DEBS[@]}"; do dpkg-deb -c "$d"; done >"$T/files"
  root_dpkg --purge lake-metasrv lake liblake-dev liblake0 >"$T/purge.out" 2>&1 || fail "purge failed: $(cat "$T/purge.out")"
  for p in lake lake-metasrv liblake0 liblake-dev; do
    run root_dpkg -L "$p"
    assert_failure
  done
  local f left=
  for f in $(awk '$1 !~ /^d/ { print substr($6, 2) }' "$T/files"); do
    [ ! -e "$ROOT$f" ] || left+=" $f"
  done
  [ -z "$left" ] || fail "left after purge:$left"
  assert_not_exist "$ROOT/etc/lake"
  assert_not_exist "$ROOT/usr/bin"
  assert_not_exist "$ROOT/usr/include"
  assert_not_exist "$ROOT/usr/lib/$MULTIARCH"
  assert_not_exist "$ROOT/lib/systemd/system"
}

@test "lake-metasrv.service: systemd-analyze verify is clean, security exposure at most 2.0" {
  command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
  # verify checks that ExecStart is executable: the extracted program's path
  sed "s|^ExecStart=/usr/bin/lake-metasrv |ExecStart=$X_METASRV/usr/bin/lake-metasrv |" \
    "$X_METASRV/lib/systemd/system/lake-metasrv.service" >"$T/lake-metasrv.service"
  run systemd-analyze verify --man=no "$T/lake-metasrv.service"
  assert_success
  assert_output ""
  unit_exposure "$X_METASRV/lib/systemd/system/lake-metasrv.service" 2.0
}

@test "lake-metasrv.service: every program its Exec lines run is the package's, essential, or a dependency's" {
  # ExecReload=/bin/kill is procps', which a minimal Debian 12 lacks: without
  # the dependency systemctl reload failed there (status=203/EXEC)
  local depends prog pkg checked=0
  depends=$(dpkg-deb -f "${DEBS[1]}" Depends)
  for prog in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$X_METASRV/lib/systemd/system/lake-metasrv.service"); do
    [ ! -e "$X_METASRV$prog" ] || continue
    checked=$((checked + 1))
    pkg=$( { dpkg -S "$prog" || dpkg -S "/usr$prog"; } 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || fail "no package here holds $prog"
    [ "$(dpkg-query -W -f='${Essential}' "$pkg")" = yes ] ||
      [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "$prog is $pkg's, not a dependency of lake-metasrv: $depends"
  done
  # (at least ExecReload's /bin/kill)
  [ "$checked" -ge 1 ] || fail "no Exec program outside the package found in the unit: nothing checked"
}

@test "lake-metasrv's maintainer scripts under systemd: installation starts nothing, an upgrade restarts, removal stops" {
  # run with stand-ins for the systemd helpers, which record their calls,
  # and a stand-in for /run/systemd/system (the sign of a systemd machine)
  dpkg-deb -e "${DEBS[1]}" "$T/ctl"
  mkdir -p "$T/bin" "$T/systemd-running" "$T/s" "$T/r/etc"
  echo 'lake:x:997:' >"$T/r/etc/group"
  local c f
  for c in deb-systemd-invoke deb-systemd-helper systemctl systemd-sysusers systemd-tmpfiles chgrp chmod; do
    # deb-systemd-helper: the unit was never enabled (nor installed before)
    printf '#!/bin/sh\necho "%s $*" >>"%s"\n[ %s != deb-systemd-helper ]\n' "$c" "$T/calls" "$c" >"$T/bin/$c"
    chmod +x "$T/bin/$c"
  done
  for f in preinst postinst prerm postrm; do
    [ ! -e "$T/ctl/$f" ] || sed "s|/run/systemd/system|$T/systemd-running|g" "$T/ctl/$f" >"$T/s/$f"
  done
  maint() { [ ! -e "$T/s/$1" ] || PATH=$T/bin:$PATH sh "$T/s/$1" "${@:2}" || fail "$* failed"; }
  # the first installation: start, which deb-systemd-invoke refuses for a
  # disabled unit; never enabled
  : >"$T/calls"
  DPKG_ROOT=$T/r maint postinst configure
  run cat "$T/calls"
  assert_line "deb-systemd-invoke start lake-metasrv.service"
  refute_line --regexp '^deb-systemd-(helper|invoke) enable'
  # an upgrade: nothing stopped before it, a restart after it
  : >"$T/calls"
  maint preinst upgrade "$VERSION"
  maint prerm upgrade "$VERSION"
  run grep stop "$T/calls"
  assert_failure
  : >"$T/calls"
  DPKG_ROOT=$T/r maint postinst configure "$VERSION"
  run cat "$T/calls"
  assert_line "deb-systemd-invoke restart lake-metasrv.service"
  # the maintenance job is never started by the package (that would run
  # it), nor stopped by an upgrade (an enabled timer goes on)
  refute_line --regexp "^deb-systemd-invoke .*lake-maintenance"
  # removal stops it
  : >"$T/calls"
  maint prerm remove
  run cat "$T/calls"
  assert_line "deb-systemd-invoke stop lake-metasrv.service"
}

@test "CI: apt install of the four packages, the programs run, a program builds with pkg-config, apt purge leaves nothing" {
  [ "${CI:-}" = true ] || skip "CI=true only: installs into this machine"
  [ "$(id -u)" = 0 ] || skip "needs root"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${DEBS[@]}" >"$T/apt.out" 2>&1 ||
    fail "apt install failed: $(cat "$T/apt.out")"
  run /usr/bin/lake-put --version
  assert_line --index 0 "lake-put $VERSION"
  run /usr/bin/lake-metasrv --version
  assert_line --index 0 "lake-metasrv $VERSION"
  id lake >/dev/null || fail "no lake user"
  run systemd-analyze verify --man=no /lib/systemd/system/lake-metasrv.service
  assert_output ""
  # as README says: cc prog.c $(pkg-config --cflags --libs lake)
  tiny_program >"$T/prog.c"
  # shellcheck disable=SC2046 # pkg-config's words are meant to split
  cc -Wall -Werror -o "$T/prog" "$T/prog.c" $(pkg-config --cflags --libs lake) || fail "cc failed"
  printf 'through the library\n' >"$T/in"
  run --separate-stderr "$T/prog" <"$T/in"
  assert_clean_success
  assert_output "$VERSION $VERSION
through the library"
  run ldd "$T/prog"
  assert_line --regexp "liblake\.so\.0 => (/usr)?/lib/$MULTIARCH/liblake\.so\.0 "
  dpkg -L lake lake-metasrv liblake0 liblake-dev | sort >"$T/files"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq lake lake-metasrv liblake0 liblake-dev >"$T/apt.out" 2>&1 ||
    fail "apt purge failed: $(cat "$T/apt.out")"
  run dpkg -L lake
  assert_failure
  run dpkg -L liblake0
  assert_failure
  local f left=
  while read -r f; do
    [ -d "$f" ] || [ ! -e "$f" ] || left+=" $f"
  done <"$T/files"
  [ -z "$left" ] || fail "left after purge:$left"
  assert_not_exist /etc/lake/metasrv.conf
  assert_not_exist /lib/systemd/system/lake-metasrv.service
}
