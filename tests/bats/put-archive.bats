#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-put --archive: every regular entry of a tar, zip or tar.zst (on stdin
# or named) becomes its own object, named by its path, in archive order;
# --table adds one row per entry in one append; links skipped, unsafe names
# made safe, a truncated archive keeps its whole entries and exits 65.

load helpers/common

setup() {
  common_setup
  mkdir -p "$T/out"
}

teardown() {
  common_teardown
}

# A tree in $T/src: nested folders, empty files, a folder with no file, a
# name with spaces and UTF-8, and a 12 MiB file of random bytes.
make_tree() {
  local s="$T/src"
  mkdir -p "$s/a/b/c" "$s/with space" "$s/big" "$s/emptydir"
  printf 'top\n' >"$s/top.txt"
  : >"$s/empty"
  printf 'deep\n' >"$s/a/b/c/deep.txt"
  : >"$s/a/b/empty two"
  printf 'naïve\n' >"$s/with space/ünïcödé — naïve.txt"
  head -c $((12 * 1024 * 1024)) /dev/urandom >"$s/big/blob.bin"
}

# The regular files of an archive, in archive order, with a leading "./"
# dropped: archive_names tar|zip FILE
archive_names() {
  python3 - "$1" "$2" <<'EOF'
import sys, tarfile, zipfile
kind, path = sys.argv[1], sys.argv[2]
if kind == "tar":
    names = [m.name for m in tarfile.open(path) if m.isreg()]
else:
    # zipfile decodes names without the UTF-8 flag as CP437: undo that
    names = [i.filename if i.flag_bits & 0x800 else i.filename.encode("cp437").decode()
             for i in zipfile.ZipFile(path).infolist() if not i.is_dir()]
for n in names:
    print(n[2:] if n.startswith("./") else n)
EOF
}

# The FILE values in $T/values against the tree: one per regular file, in
# the order of $T/expected, each stored once, and each read back with
# lake-get -o (which names the file by the base name of the FILE name) is
# byte for byte the source file.
check_values() {
  local i=0 v name got
  assert_equal "$(jq -r .name "$T/values")" "$(cat "$T/expected")"
  assert_equal "$(wc -l <"$T/values")" "$(find "$T/src" -type f | wc -l)"
  assert_equal "$(stage_objects | wc -l)" "$(find "$T/src" -type f | wc -l)"
  while IFS= read -r v; do
    i=$((i + 1))
    name=$(json_field name "$v")
    assert_equal "$(json_field size "$v")" "$(stat -c %s "$T/src/$name")"
    assert_equal "$(json_field sha256 "$v")" "$(sha_of "$T/src/$name")"
    mkdir "$T/out/$i"
    run_to "$T/got" lake-get -o "$T/out/$i" "$v"
    assert_clean_success
    got="$T/out/$i/${name##*/}"
    assert_file_exists "$got"
    cmp "$T/src/$name" "$got"
  done <"$T/values"
}

@test "a tar on stdin: one FILE value per regular file, in archive order, named by its path" {
  make_tree
  tar -C "$T/src" -cf "$T/a.tar" .
  archive_names tar "$T/a.tar" >"$T/expected"
  assert_equal "$(wc -l <"$T/expected")" 6
  run_to "$T/values" lake-put --archive <"$T/a.tar"
  assert_clean_success
  check_values
  # the plain names: no "./", nothing for the folders
  assert_equal "$(jq -r .name "$T/values" | sort)" \
    "$(printf '%s\n' 'a/b/c/deep.txt' 'a/b/empty two' big/blob.bin empty top.txt 'with space/ünïcödé — naïve.txt' | sort)"
  assert_equal "$(jq -r 'select(.name == "top.txt") | .content_type' "$T/values")" text/plain
}

@test "a zip named as an operand" {
  make_tree
  (cd "$T/src" && zip -qr "$T/a.zip" .)
  archive_names zip "$T/a.zip" >"$T/expected"
  run_to "$T/values" lake-put --archive "$T/a.zip"
  assert_clean_success
  check_values
}

@test "several archives in one run: their entries in operand order" {
  mkdir -p "$T/src"
  printf 1 >"$T/src/one"; printf 2 >"$T/src/two"; printf 3 >"$T/src/three"
  tar -C "$T/src" -cf "$T/a.tar" two one
  (cd "$T/src" && zip -q "$T/b.zip" three)
  run_to "$T/values" lake-put --archive "$T/a.tar" - <"$T/b.zip"
  assert_clean_success
  assert_equal "$(jq -r .name "$T/values")" $'two\none\nthree'
}

@test "a tar.zst on stdin: the compression is detected" {
  make_tree
  tar -C "$T/src" -cf "$T/a.tar" .
  zstd -q "$T/a.tar" -o "$T/a.tar.zst"
  archive_names tar "$T/a.tar" >"$T/expected"
  run_to "$T/values" lake-put --archive - <"$T/a.tar.zst"
  assert_clean_success
  check_values
}

@test "--table: one row per entry in one append; a TEXT column path gets each entry's path" {
  make_tree
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE, path TEXT, batch INTEGER'
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  run_to "$T/values" bash -c "tar -C '$T/src' -cf - . | lake-put --archive --table docs.scans --set batch=7"
  assert_clean_success
  assert_equal "$(wc -l <"$T/values")" 6
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 1
  run --separate-stderr lake-query -c "SELECT path, fl_get_size(f) FROM docs.scans ORDER BY 1"
  assert_success
  assert_output "$(cd "$T/src" && find . -type f -printf '%P\t%s\n' | LC_ALL=C sort)"
  run lake-query -c "SELECT count(*) FROM docs.scans WHERE batch = 7 AND json_extract(f, '\$.name') = path"
  assert_output 6
}

@test "--table: a path column given by --set keeps that value; a table without one is fine" {
  printf 'x\n' >"$T/x.txt"
  tar -C "$T" -cf "$T/x.tar" x.txt
  lake-catalog create-namespace docs
  lake-catalog create docs.t 'f FILE, PATH TEXT'
  lake-catalog create docs.plain 'f FILE'
  run --separate-stderr lake-put --archive --table docs.t --set path=fixed "$T/x.tar"
  assert_success
  run lake-query -c "SELECT PATH, fl_get_file_name(f) FROM docs.t"
  assert_output $'fixed\tx.txt'
  run --separate-stderr lake-put --archive --table docs.plain "$T/x.tar"
  assert_success
  assert_equal "$(lake-catalog resolve docs.plain | jq .version)" 1
}

@test "a symbolic link and a hard link are skipped with one warning each" {
  mkdir -p "$T/src/d"
  printf 'data\n' >"$T/src/d/file.txt"
  ln -s file.txt "$T/src/d/sym"
  ln "$T/src/d/file.txt" "$T/src/d/hard"
  tar -C "$T/src" -cf "$T/l.tar" d/file.txt d/sym d/hard
  run_to "$T/values" lake-put --archive <"$T/l.tar"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(jq -r .name "$T/values")" d/file.txt
  assert_equal "$stderr" "lake-put: stdin: d/sym: a symbolic link, skipped
lake-put: stdin: d/hard: a hard link to d/file.txt, skipped"
  assert_equal "$(stage_objects | wc -l)" 1
  # -q: the same without the warnings
  run_to "$T/values" lake-put -q --archive <"$T/l.tar"
  assert_clean_success
}

@test "unsafe entry names are stored under safe names, with a warning each" {
  python3 - "$T/bad.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ["../x", "/etc/y", "./ok/./z", "a/../../b"]:
        data = name.encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
EOF
  run_to "$T/values" lake-put --archive "$T/bad.tar"
  assert_equal "exit $status" "exit 0"
  assert_equal "$(jq -r .name "$T/values")" $'x\netc/y\nok/z\na/b'
  assert_equal "$stderr" "lake-put: $T/bad.tar: ../x: unsafe name, stored as x
lake-put: $T/bad.tar: /etc/y: unsafe name, stored as etc/y
lake-put: $T/bad.tar: a/../../b: unsafe name, stored as a/b"
  # the bytes are each entry's own
  assert_equal "$(lake-get "$(sed -n 2p "$T/values")")" /etc/y
  assert_equal "$(stage_objects | wc -l)" 4
}

# A tar.gz of two small files then the 12 MiB one, cut in the middle of it.
make_truncated() {
  make_tree
  tar -C "$T/src" -czf "$T/t.tgz" top.txt a/b/c/deep.txt big/blob.bin
  head -c $(($(stat -c %s "$T/t.tgz") / 2)) "$T/t.tgz" >"$T/cut.tgz"
}

@test "a truncated tar.gz: the whole entries are stored and printed, then 65 naming the entry" {
  make_truncated
  run_to "$T/values" lake-put --archive <"$T/cut.tgz"
  assert_error lake-put 65 "stdin: big/blob.bin: "
  assert_equal "$(jq -r .name "$T/values")" $'top.txt\na/b/c/deep.txt'
  # nothing of the cut entry, not even a temporary file
  assert_equal "$(files_under | wc -l)" 2
  # named: the message names the file
  run_to "$T/values" lake-put --archive "$T/cut.tgz"
  assert_error lake-put 65 "$T/cut.tgz: big/blob.bin: "
}

@test "a truncated tar.gz with --table: nothing appended, the message says so" {
  make_truncated
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE, path TEXT'
  run_to "$T/values" lake-put --archive --table docs.scans <"$T/cut.tgz"
  assert_error lake-put 65 "big/blob.bin" "nothing appended to docs.scans" "2 objects stored stay unreferenced"
  assert_equal "$(wc -l <"$T/values")" 2
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  run lake-query -c "SELECT count(*) FROM docs.scans"
  assert_output 0
}

@test "input that is no archive is 65 and stores nothing; an empty input is an empty archive" {
  run_to "$T/values" lake-put --archive <<<"just some text"
  assert_error lake-put 65 "stdin: "
  assert_no_objects
  run_to "$T/values" lake-put --archive </dev/null
  assert_clean_success
  assert_equal "$(stat -c %s "$T/values")" 0
  run_to "$T/values" lake-put --archive "$T/nope.tar"
  assert_error lake-put 66 "$T/nope.tar"
}

@test "--archive with --name, --size or --sha256 is a usage error (64)" {
  printf 'x' >"$T/x"
  tar -C "$T" -cf "$T/x.tar" x
  for opt in "--name n" "--size 1" "--sha256 $(sha_of "$T/x")"; do
    # shellcheck disable=SC2086 # $opt is split into an option and its value
    run_to "$T/values" lake-put --archive $opt "$T/x.tar"
    assert_error lake-put 64 "entries of an archive"
  done
  assert_no_objects
}

# A tar of three small files and a 5000-byte one, cut inside the last
# header: libarchive reports it FATAL only at the end.
make_cut_header() {
  mkdir -p "$T/h"
  printf a >"$T/h/a"; printf b >"$T/h/b"; printf c >"$T/h/c"
  head -c 5000 /dev/urandom >"$T/h/d"
  tar -C "$T/h" -cf "$T/h.tar" a b c d
  head -c $((3 * 1024 + 100)) "$T/h.tar" >"$T/cuthdr.tar"
}

@test "a tar cut inside its last header is 65, named or piped; --table appends nothing and says gc removes the objects" {
  make_cut_header
  run_to "$T/values" lake-put --archive "$T/cuthdr.tar"
  assert_error lake-put 65 "$T/cuthdr.tar: "
  # without --table the whole entries before the damage are printed
  assert_equal "$(jq -r .name "$T/values")" $'a\nb\nc'
  run_to "$T/values" sh -c 'cat "$1" | lake-put --archive' sh "$T/cuthdr.tar"
  assert_error lake-put 65 "stdin: "
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE, path TEXT'
  run_to "$T/values" lake-put --archive --table docs.scans "$T/cuthdr.tar"
  assert_error lake-put 65 "$T/cuthdr.tar: " "nothing appended to docs.scans (the 3 objects stored stay unreferenced; lake-catalog gc removes them)"
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
}

@test "a tar cut inside an entry lake-put skips is 65 named, redirected or piped, and appends nothing" {
  # an entry named ".." (no usable name) and a fifo entry with data bytes
  # (a non-regular entry), each cut short in its data, after one good entry
  python3 - "$T" <<'PY'
import io, sys, tarfile
t = sys.argv[1]
for kind in ("dotdot", "fifo"):
    with tarfile.open(f"{t}/{kind}.tar", "w", format=tarfile.USTAR_FORMAT) as tf:
        i = tarfile.TarInfo("a"); i.size = 1; tf.addfile(i, io.BytesIO(b"a"))
        i = tarfile.TarInfo(".." if kind == "dotdot" else "f")
        i.size = 20000
        tf.addfile(i, io.BytesIO(b"x" * 20000))
    data = open(f"{t}/{kind}.tar", "rb").read()
    if kind == "fifo":  # turn the second entry into a fifo that still states a size
        h = bytearray(data[1024:1536]); h[156:157] = b"6"; h[148:156] = b" " * 8
        h[148:156] = b"%06o\0 " % sum(h); data = data[:1024] + bytes(h) + data[1536:]
    open(f"{t}/{kind}-cut.tar", "wb").write(data[:1536 + 3000])
PY
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE, path TEXT'
  for kind in dotdot fifo; do
    run_to "$T/values" lake-put -q --archive --table docs.scans "$T/$kind-cut.tar"
    assert_error lake-put 65 "$T/$kind-cut.tar: " "nothing appended to docs.scans"
    run_to "$T/values" lake-put -q --archive --table docs.scans <"$T/$kind-cut.tar"
    assert_error lake-put 65 "stdin: " "nothing appended to docs.scans"
    run_to "$T/values" sh -c 'cat "$1" | lake-put -q --archive --table docs.scans' sh "$T/$kind-cut.tar"
    assert_error lake-put 65 "stdin: " "nothing appended to docs.scans"
  done
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
}

# $T/sparse/{all-hole,leading-hole,trailing-hole}: 100 MiB each, sparse on
# disk: no data, data only at the end, data only at the start.
make_sparse() {
  local s="$T/sparse"
  mkdir -p "$s"
  truncate -s 100M "$s/all-hole"
  truncate -s 100M "$s/leading-hole"
  printf 'the end\n' | dd of="$s/leading-hole" bs=1M seek=99 conv=notrunc status=none
  printf 'the start\n' >"$s/trailing-hole"
  truncate -s 100M "$s/trailing-hole"
}

@test "sparse entries (pax and GNU): all-hole, leading-hole and trailing-hole are stored as tar x extracts them" {
  make_sparse
  local fmt name v
  for fmt in pax gnu; do
    tar -C "$T/sparse" --sparse --format=$fmt -cf "$T/$fmt.tar" all-hole leading-hole trailing-hole
    mkdir -p "$T/x-$fmt"
    tar -C "$T/x-$fmt" -xf "$T/$fmt.tar"
    run_to "$T/values" lake-put -q --archive "$T/$fmt.tar"
    assert_clean_success
    assert_equal "$(jq -r .name "$T/values")" $'all-hole\nleading-hole\ntrailing-hole'
    for name in all-hole leading-hole trailing-hole; do
      v=$(jq -c "select(.name == \"$name\")" "$T/values")
      assert_equal "$fmt $name $(json_field size "$v")" "$fmt $name $(stat -c %s "$T/x-$fmt/$name")"
      assert_equal "$fmt $name $(json_field sha256 "$v")" "$fmt $name $(sha_of "$T/x-$fmt/$name")"
    done
  done
}

@test "a sparse map past its declared size or out of order is 65 naming the entry; the entries before stay" {
  # pax sparse 1.0 entries "b" after a file "a": a block of 10 bytes in an
  # entry of real size 5, and a block at 100 before one at 0 (libarchive
  # hands both out without an error)
  python3 - "$T" <<'PY'
import io, sys, tarfile
def mk(fn, realsize, m, data):
    with tarfile.open(fn, "w", format=tarfile.PAX_FORMAT) as tf:
        i = tarfile.TarInfo("a"); i.size = 1; tf.addfile(i, io.BytesIO(b"a"))
        i = tarfile.TarInfo("b")
        i.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                         "GNU.sparse.name": "b", "GNU.sparse.realsize": str(realsize)}
        i.size = 512 + len(data)
        tf.addfile(i, io.BytesIO(m + bytes(512 - len(m)) + data))
t = sys.argv[1]
mk(f"{t}/past.tar", 5, b"1\n0\n10\n", b"x" * 10)
mk(f"{t}/order.tar", 1000, b"2\n100\n5\n0\n5\n", b"y" * 10)
PY
  local kind n=0
  for kind in past order; do
    n=$((n + 1))
    run_to "$T/values" lake-put --archive "$T/$kind.tar"
    assert_error lake-put 65 "$T/$kind.tar: b: data blocks out of order or past the size the header declares: refused"
    assert_equal "$(jq -r .name "$T/values")" a
    assert_equal "$(files_under | wc -l)" "$n"
  done
}
