# SPDX-License-Identifier: BSD-2-Clause
# lake: build, install, deps, check, bench, demo.
#
#   make                 build the programs into build/bin, liblake.a and
#                        liblake.so.0 (liblake(3)) into build/, and the
#                        examples (examples/*.c) into build/examples
#   make deps            install the Debian packages the build and tests need
#   make check           deps, the npm test peers, build, every test; last line
#                        "N passed, N failed".  The tests start their own peers
#                        on 127.0.0.1: lake-metasrv, PostgreSQL and, for every
#                        S3 suite, one throw-away Ceph cluster per run (ceph-mon,
#                        ceph-osd on a sparse file, radosgw; about 6 s to start)
#                        under a temporary directory
#   make check SANITIZE=1  the same with ASan + UBSan (objects in build-san/)
#   make SANITIZE=thread tsan-bins
#                        liblake and examples/ under ThreadSanitizer
#                        (build-tsan/; make check builds and runs them)
#   make demo            deps, build, a put -> get round trip on a fresh LAKE_HOME
#   make bench           benchmarks: ratios against peers measured in one run,
#                        one table, bench/RESULTS.md (BENCH="load s3": some;
#                        BENCH_QUICK=1: every size shrunk, a smoke test;
#                        BENCH_SCALE=1|10|100: bench/scale's largest sizes,
#                        its curves drawn into bench/plots/ by gnuplot)
#   make install         PREFIX=/usr/local DESTDIR= LIBDIR=PREFIX/lib (and
#                        uninstall): the programs, their manual and
#                        completions, and liblake (lake.h, liblake.a,
#                        liblake.so.0, lake.pc, section 3)
#   make deb             the Debian packages lake, lake-metasrv, liblake0 and
#                        liblake-dev (debian/, debhelper), built from a copy
#                        of the tree under build/deb/, where the .deb files
#                        land; lintian's findings in build/deb/lintian.txt
#   make abi-check       liblake.so.0's ABI (abidiff: its exported functions
#                        and the types lake.h declares) against the baseline
#                        lib/api/liblake.abi; fails on any change (make check
#                        runs it, tests/bats/liblake-abi.bats)
#   make abi-baseline    write lib/api/liblake.abi from build/liblake.so.0, and
#   make symbols         debian/liblake0.symbols from lib/api/liblake.map: both
#                        after a deliberate change of the public API (a name
#                        added to lake.h and liblake.map), committed with it
#   V=1                  print each compiler and linker command in full (the
#                        default is one "  CC file" / "  LD file" line each)
#   make fuzz            libFuzzer harnesses (tests/fuzz/, clang, objects in
#                        build-fuzz/), each run FUZZ_SECONDS=60 on its committed
#                        corpus; new inputs go to a scratch directory; prints
#                        executions and exec/s per harness (make check runs
#                        each for 10 s and replays the corpus); FUZZ_ONLY=GLOB
#                        picks harnesses by name

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     := $(PREFIX)/bin
MANDIR     := $(PREFIX)/share/man
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(PREFIX)/share/zsh/site-functions
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR := $(PREFIX)/include
PCDIR      := $(LIBDIR)/pkgconfig

CC         ?= cc
PKGS       := libcurl libcrypto libcjson libarchive sqlite3 libmagic zlib libmicrohttpd gnutls libpq libedit
SANITIZE   ?=
ifeq ($(SANITIZE),1)
BUILD      := build-san
SANFLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT        := -O1 -g
else ifeq ($(SANITIZE),thread)
# ThreadSanitizer: make check builds the library and the examples here
# (TSAN_EXAMPLES) for liblake.bats's two clients on two threads
BUILD      := build-tsan
SANFLAGS   := -fsanitize=thread -fno-omit-frame-pointer
OPT        := -O1 -g
else
BUILD      := build
SANFLAGS   :=
OPT        := -O2 -g
endif

# Quiet by default: "  CC build/lib/core/cli.o"; V=1 prints the commands.
V          ?= 0
say         = $(if $(filter 1,$(V)),,@printf '  %-3s %s\n' '$(1)' '$(2)';)

# The git revision --version names (lib/core/version.c), "abc1234" or
# "abc1234-dirty"; none outside a git checkout (a tree from git archive, a
# Debian source package), or what GIT_REV=... says (make deb passes the
# checkout's to its copy).  $(BUILD)/gitrev changes only when it does, so
# only version.o is rebuilt, and only then.
ifeq ($(origin GIT_REV),undefined)
GIT_REV    := $(shell git rev-parse --short HEAD 2>/dev/null)
GIT_REV    := $(if $(GIT_REV),$(GIT_REV)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty))
endif
GITREV_FILE = $(BUILD)/gitrev

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl is loaded at run time (lib/core/curl.h), and libedit by
# lake-query's shell (cmd/lake-query/shell.c): their headers, not their libraries
PKG_LIBS   := $(filter-out -lcurl -ledit,$(shell pkg-config --libs $(PKGS) 2>/dev/null))
CFLAGS     ?= $(OPT)
ALL_CFLAGS := -std=c11 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE \
              -DLAKE_VERSION='"$(VERSION)"' -Iinclude -Ilib $(PKG_CFLAGS) $(SANFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS := -Wl,--as-needed $(SANFLAGS) $(LDFLAGS)
LIBS       := $(PKG_LIBS) -lpthread -ldl

LIB_SRC    := $(wildcard lib/core/*.c lib/stage/*.c lib/catalog/*.c lib/catalog/registry/*.c lib/query/*.c lib/api/*.c)
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
PROG_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(wildcard cmd/*/*.c))
LIBLAKE    := $(BUILD)/liblake.a
# The public library (liblake(3)): include/lake.h, liblake.so.0 exporting
# exactly lib/api/liblake.map's names, and lake.pc at install.  The
# library's objects are position-independent, so that the static archive
# the programs link and the shared library are made of the same objects.
SOMAJOR    := 0
SONAME     := liblake.so.$(SOMAJOR)
LIBLAKE_SO := $(BUILD)/liblake.so.$(VERSION)
SO_LINKS   := $(BUILD)/$(SONAME) $(BUILD)/liblake.so
# The static archive make install installs (the programs link $(LIBLAKE),
# the library's internals): the shared library's objects as one
# relocatable object with every name but liblake.map's made local, so a
# program's own configFree or clockMs never clashes with the library's;
# and $(LIBS_PRIVATE), lake.pc's Libs.private: the -l flags of exactly the
# libraries the shared library needs (NEEDED), none it does not.
PUB_LIBLAKE := $(BUILD)/public/liblake.a
LIBS_PRIVATE = $(shell objdump -p $(LIBLAKE_SO) | awk '$$1 == "NEEDED" { print $$2 }' | \
                 sed -n 's/^lib\([^.]*\)\.so.*/-l\1/p' | grep -xF -f - $(BUILD)/so-libs)
EXAMPLES   := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
PROGRAMS   := lake-put lake-get lake-catalog lake-metasrv lake-query
BINS       := $(PROGRAMS:%=$(BUILD)/bin/%)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_OBJ   := $(UNIT_SRC:%.c=$(BUILD)/%.o)
MAN1       := $(wildcard man/*.1)
MAN3       := $(wildcard man/man3/*.3)
# The other names each section 3 page answers to (its NAME section's .Nm
# lines), as NAME.3=PAGE.3: make install links each to its page, so that
# man lake_put_fd finds lake_open(3), as man curl_easy_setopt finds libcurl's.
MAN3_LINKS := $(shell awk 'FNR == 1 { f = 0 } /^\.Sh / { f = ($$2 == "NAME") } \
                f && $$1 == ".Nm" { p = FILENAME; sub(/.*\//, "", p); if ($$2 ".3" != p) print $$2 ".3=" p }' $(MAN3))
MANALL     := $(wildcard man/*.[1-9])

# Every Debian package the build, the tests and the benchmarks need.
DEB_PKGS   := build-essential pkg-config clang libcurl4-openssl-dev libssl-dev \
              libcjson-dev libarchive-dev libsqlite3-dev libmicrohttpd-dev libgnutls28-dev \
              libmagic-dev zlib1g-dev libedit-dev mandoc bats bats-support bats-assert bats-file \
              openssl sqlite3 jq xxd zsh time hyperfine wrk etcd-server python3 zip zstd cpio p7zip-full \
              valgrind postgresql libpq-dev shellcheck radosgw ceph-mon ceph-osd \
              debhelper dpkg-dev fakeroot lintian gnuplot-nox abigail-tools
# The npm peers, pinned by tests/package-lock.json: DuckDB
# (@duckdb/node-api), a benchmark peer of bench/query only, never used by
# the programs or the tests (the S3 peer is radosgw, and the fault proxy
# tests/bats/helpers/s3fault.js needs Node.js alone).  make check installs
# them (npm ci); bench/query leaves DuckDB's
# figures out without them; make bench installs them too; the build, demo
# and install never need them.
NPM_STAMP  := tests/node_modules/.package-lock.json

.PHONY: all deps check unit-bins tsan-bins lint demo bench install uninstall clean objects deb symbols abi-baseline abi-check

all: $(BINS) $(LIBLAKE_SO) $(SO_LINKS) $(PUB_LIBLAKE) $(EXAMPLES)

# Named here so that make does not take the objects of the link rules below
# for intermediate files and delete them after a build (the next make then
# relinked every program).
objects: $(LIB_OBJ) $(PROG_OBJ) $(UNIT_OBJ)

$(shell mkdir -p $(BUILD) && { [ -f $(GITREV_FILE) ] && [ "$$(cat $(GITREV_FILE))" = "$(GIT_REV)" ] || echo "$(GIT_REV)" >$(GITREV_FILE); })
$(BUILD)/lib/core/version.o: $(GITREV_FILE)
$(BUILD)/lib/core/version.o: ALL_CFLAGS += -DLAKE_GIT_REV='"$(GIT_REV)"'

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIBLAKE): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

# Objects made before they were position-independent are made again once.
# No semantic interposition: only liblake.map's names are exported, so
# calls inside the library are inlined and bound as in a static build.
$(LIB_OBJ): ALL_CFLAGS += -fPIC -fno-semantic-interposition
$(LIB_OBJ): $(BUILD)/pic.stamp
$(BUILD)/pic.stamp:
	@mkdir -p $(dir $@) && touch $@

# The shared library leaves out the registry's PostgreSQL driver, which only
# lake-metasrv enables (registryEnablePostgres): a program using liblake
# loads neither libpq nor the thirty libraries libpq brings (Kerberos,
# LDAP...), which cost it 4 ms and 6 MiB at start.
SO_OBJ     := $(filter-out $(BUILD)/lib/catalog/registry/pg.o,$(LIB_OBJ))
SO_LIBS    := $(filter-out -lpq,$(LIBS))
$(LIBLAKE_SO): $(SO_OBJ) lib/api/liblake.map
	$(call say,LD,$@)$(CC) -shared $(ALL_LDFLAGS) -Wl,-soname,$(SONAME) \
	  -Wl,--version-script=lib/api/liblake.map -Wl,--no-undefined -o $@ $(SO_OBJ) $(SO_LIBS)
$(SO_LINKS): $(LIBLAKE_SO)
	@ln -sf $(notdir $<) $@

$(PUB_LIBLAKE): $(SO_OBJ) lib/api/liblake.map
	@mkdir -p $(dir $@)
	@rm -f $@
	@printf '%s\n' $(SO_LIBS) >$(BUILD)/so-libs
	@sed -n 's/^ *\(lake_[a-z0-9_]*\);$$/\1/p' lib/api/liblake.map >$(dir $@)keep
	$(call say,AR,$@)ld -r -o $(dir $@)liblake.o $(SO_OBJ) && \
	  objcopy --keep-global-symbols=$(dir $@)keep $(dir $@)liblake.o && \
	  ar rcs $@ $(dir $@)liblake.o

# The examples are built as a program using the library would be: the
# public header alone, linked with the shared library (found at run time
# next to it, $ORIGIN/..).
$(BUILD)/examples/%: examples/%.c include/lake.h $(SO_LINKS)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude $(SANFLAGS) $(OPT) \
	  -o $@ $< -L$(BUILD) -llake -Wl,-rpath,'$$ORIGIN/..'

# A program is every .c file of its cmd/ folder over the library.
objs_of = $(patsubst %.c,$(BUILD)/%.o,$(wildcard cmd/$(1)/*.c))
.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call objs_of,$$*) $(LIBLAKE)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBLAKE) $(LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBLAKE)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBLAKE) $(LIBS)

# The public ABI (liblake(3), STABILITY).  abidw describes the library's
# exported functions and the types lake.h declares, from the DWARF of a -g
# build (without it there would be symbols alone: refused), with nothing
# that depends on where or by whom it was built (no paths, no line numbers,
# type ids by hash); abidiff compares that with the committed baseline (two
# descriptions made alike: abidiff's own --headers-dir2 on the library
# took lake.h's types for private ones and let their changes pass) and
# exits non-zero on any change, an addition included: a deliberate one is
# committed with a new baseline (make abi-baseline) and symbols file (make
# symbols).  The baseline carries its licence as a comment after the root
# element (abidiff reads no file that does not begin with it).
ABI_BASE   := lib/api/liblake.abi
ABIDW_FLAGS := --headers-dir include --drop-private-types --exported-interfaces-only --no-show-locs \
               --no-corpus-path --no-comp-dir-path --no-elf-needed --type-id-style hash
ABI_DEBUG   = @readelf -S $(1) | grep -q '\.debug_info' || \
	  { echo "$(2): $(1) has no debug information (build with -g)" >&2; exit 1; }

abi-baseline: $(LIBLAKE_SO)
	$(call ABI_DEBUG,$<,abi-baseline)
	abidw $(ABIDW_FLAGS) --out-file $(BUILD)/liblake.abi.new $<
	@{ sed -n 1p $(BUILD)/liblake.abi.new; \
	   echo '  <!-- SPDX-License-Identifier: BSD-2-Clause -->'; \
	   echo '  <!-- liblake.so.0 ABI baseline: make abi-baseline writes it, make abi-check compares -->'; \
	   sed 1d $(BUILD)/liblake.abi.new; } >$(ABI_BASE)
	@rm -f $(BUILD)/liblake.abi.new

abi-check: $(LIBLAKE_SO)
	$(call ABI_DEBUG,$<,abi-check)
	@abidw $(ABIDW_FLAGS) --out-file $(BUILD)/liblake.abi $<
	@abidiff $(ABI_BASE) $(BUILD)/liblake.abi || \
	  { echo "abi-check: $< differs from $(ABI_BASE) (above); if the change is deliberate and keeps liblake(3)'s promise: make abi-baseline symbols" >&2; exit 1; }

# The symbols file dpkg-gensymbols holds liblake0 to (debian/rules: -c4, a
# symbol the library has and the file lacks fails the package build; one
# listed but gone passes there when listed at VERSION, so
# tests/bats/liblake-abi.bats checks both ways): every name of liblake.map,
# with the version it first appeared in (a new one: VERSION).
symbols: lib/api/liblake.map lib/api/symbols.awk
	@awk -v version=$(VERSION) -f lib/api/symbols.awk debian/liblake0.symbols lib/api/liblake.map \
	  >$(BUILD)/liblake0.symbols.new
	@mv $(BUILD)/liblake0.symbols.new debian/liblake0.symbols

# Idempotent: asks apt only for what is missing, through sudo when not root.
deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "deps: installing" $$missing; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi

# npm ci runs again only when package.json or the lock file changed.
$(NPM_STAMP): tests/package.json tests/package-lock.json
	@command -v npm >/dev/null || { echo "check: npm (Node.js 18 or later) is needed for the test peers: install the nodejs and npm packages" >&2; exit 1; }
	npm ci --prefix tests --no-audit --no-fund --loglevel=error
	@mkdir -p $(dir $@) && touch $@

# (a sub-make: its pkg-config flags are read after deps has installed them;
# the test peers come after deps too)
check: deps
	@$(MAKE) --no-print-directory $(NPM_STAMP) all unit-bins fuzz-bins
	@$(MAKE) --no-print-directory SANITIZE=thread tsan-bins
	@LAKE_BIN=$(CURDIR)/$(BUILD)/bin LAKE_UNIT=$(CURDIR)/$(BUILD)/tests \
	  LAKE_SRC=$(CURDIR) LAKE_TEST_SANITIZED=$(SANITIZE) bash tests/run

unit-bins: $(UNIT_BINS)

# liblake and its examples under ThreadSanitizer (make SANITIZE=thread
# tsan-bins: build-tsan/), which liblake.bats runs when LAKE_TSAN names it
tsan-bins: $(EXAMPLES)

lint:
	@for m in $(MANALL); do mandoc -Tlint -Wwarning $$m || exit 1; done

demo: deps
	@$(MAKE) --no-print-directory all
	@LAKE_BIN=$(CURDIR)/$(BUILD)/bin bash tests/demo.sh

bench: deps
	@$(MAKE) --no-print-directory $(NPM_STAMP) all
	@LAKE_BIN=$(CURDIR)/$(BUILD)/bin bash bench/report $(BENCH)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 $(BINS) $(DESTDIR)$(BINDIR)/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(wildcard man/*.5) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(MANDIR)/man7/
	$(if $(wildcard man/*.8),install -m 644 $(wildcard man/*.8) $(DESTDIR)$(MANDIR)/man8/)
	for p in $(PROGRAMS); do install -m 644 completions/lake.bash $(DESTDIR)$(BASHCOMPDIR)/$$p; done
	install -m 644 completions/_lake $(DESTDIR)$(ZSHCOMPDIR)/_lake
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(MANDIR)/man3
	install -m 644 include/lake.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(PUB_LIBLAKE) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIBLAKE_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBLAKE_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liblake.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	  -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS_PRIVATE@|$(strip $(LIBS_PRIVATE))|' lib/api/lake.pc.in \
	  >$(DESTDIR)$(PCDIR)/lake.pc
	install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/
	for l in $(MAN3_LINKS); do ln -sf $${l#*=} $(DESTDIR)$(MANDIR)/man3/$${l%%=*}; done

uninstall:
	rm -f $(PROGRAMS:%=$(DESTDIR)$(BINDIR)/%) $(PROGRAMS:%=$(DESTDIR)$(BASHCOMPDIR)/%) \
	  $(DESTDIR)$(ZSHCOMPDIR)/_lake
	rm -f $(DESTDIR)$(INCLUDEDIR)/lake.h $(DESTDIR)$(LIBDIR)/liblake.a $(DESTDIR)$(LIBDIR)/$(notdir $(LIBLAKE_SO)) \
	  $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/liblake.so $(DESTDIR)$(PCDIR)/lake.pc \
	  $(patsubst man/man3/%,$(DESTDIR)$(MANDIR)/man3/%,$(MAN3)) \
	  $(foreach l,$(MAN3_LINKS),$(DESTDIR)$(MANDIR)/man3/$(firstword $(subst =, ,$(l))))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/*.1)) \
	  $(patsubst man/%,$(DESTDIR)$(MANDIR)/man5/%,$(wildcard man/*.5)) \
	  $(patsubst man/%,$(DESTDIR)$(MANDIR)/man7/%,$(wildcard man/*.7)) \
	  $(patsubst man/%,$(DESTDIR)$(MANDIR)/man8/%,$(wildcard man/*.8))

# The packages: debian/rules runs this Makefile in a copy of the sources
# (what a Debian source package holds: no build/, no tests), so the
# package build neither reads nor disturbs build/; dpkg-buildpackage puts
# the .deb files next to the copy, in build/deb/.  The version is
# VERSION above: debian/changelog must name it (checked here; the package
# is native, no Debian revision).  The package is built as debian/rules
# says, whatever this make was given (SANITIZE=1, -j): neither MAKEFLAGS
# nor SANITIZE is passed on.
DEB_DIR    := build/deb
DEB_SRC    := $(DEB_DIR)/lake-$(VERSION)
DEB_FILES  := Makefile README.md cmd lib include examples man completions debian

deb:
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version) && [ "$$v" = "$(VERSION)" ] || \
	  { echo "deb: debian/changelog is at $$v, the Makefile's VERSION at $(VERSION): add a changelog entry (dch -v $(VERSION))" >&2; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	tar -cf - $(DEB_FILES) | tar -xf - -C $(DEB_SRC)
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE GIT_REV='$(GIT_REV)' \
	  dpkg-buildpackage -b -us -uc --no-sign >../build.log 2>&1 || \
	  { tail -30 ../build.log >&2; exit 1; }
	@cd $(DEB_DIR) && lintian --tag-display-limit 0 *.changes >lintian.txt 2>&1; \
	  if grep -q '^[EW]:' lintian.txt; then cat lintian.txt >&2; echo "deb: lintian found errors or warnings" >&2; exit 1; fi
	@ls $(DEB_DIR)/*.deb

clean:
	rm -rf build build-san

# --- fuzzing: libFuzzer harnesses (tests/fuzz/) ---------------------------
# Built only by fuzz, fuzz-bins and check: the library again with clang,
# coverage instrumentation and ASan + UBSan (every report is a crash).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE \
                -DLAKE_VERSION='"$(VERSION)"' -Iinclude -Ilib $(PKG_CFLAGS) $(FUZZ_SAN) -O1 -g -MMD -MP
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)

.PHONY: fuzz fuzz-bins clean-fuzz

$(FUZZ_BUILD)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/liblake.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/liblake.a
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -MF $@.d -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/liblake.a $(LIBS)

fuzz-bins: $(FUZZ_BINS)

fuzz: fuzz-bins
	@LAKE_FUZZ=$(CURDIR)/$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_ONLY='$(FUZZ_ONLY)' bash tests/fuzz/run

# make check builds them and runs every harness briefly (tests/run's fuzz step)
check: export LAKE_FUZZ := $(CURDIR)/$(FUZZ_BUILD)
check: export LAKE_TSAN := $(CURDIR)/build-tsan

clean: clean-fuzz
clean-fuzz:
	rm -rf $(FUZZ_BUILD)

# (not build/deb: the package build's tree has directories named *.d)
-include $(shell find build build-san -path $(DEB_DIR) -prune -o -name '*.d' -type f -print 2>/dev/null)
-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
