#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-2-Clause
# lake-put --archive against archives that lie: bombs and loops are 65 with
# a bounded memory (lake-put(1) "Limits of archive reading"), formats lake
# does not document are refused, a stuck reader and a signal end it, and an
# archive with no regular entries is not an error.

load helpers/common

setup() {
  common_setup
}

teardown() {
  common_teardown
}

# Peak resident memory (KiB) of the last measured run, from /usr/bin/time -v.
peak_kib() {
  sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$T/time"
}

# run_measured FILE CMD...: run_to, with /usr/bin/time -v writing to $T/time
run_measured() {
  local out=$1
  shift
  run_to "$out" /usr/bin/time -v -o "$T/time" "$@"
}

@test "a tar gzipped 12 times is 65 (at most 3 layers of compression), in bounded memory" {
  printf 'x' >"$T/x"
  tar -C "$T" -cf "$T/n0" x
  local i
  for i in $(seq 1 12); do gzip -c "$T/n$((i - 1))" >"$T/n$i"; done
  run_measured "$T/values" lake-put --archive "$T/n12"
  assert_error lake-put 65 "$T/n12: 12 layers of compression (at most 3): refused"
  assert_equal "$(stat -c %s "$T/values")" 0
  [ "$(peak_kib)" -lt $((64 * 1024)) ] || fail "peak RSS $(peak_kib) KiB"
  # through a pipe too; 3 layers are still read
  run_to "$T/values" sh -c 'cat "$1" | lake-put --archive' sh "$T/n12"
  assert_error lake-put 65 "stdin: 12 layers of compression"
  run_to "$T/values" lake-put --archive "$T/n3"
  assert_clean_success
  assert_equal "$(jq -r .name "$T/values")" x
}

@test "an xz stream that claims a 768 MiB dictionary is 65 once it adds 256 MiB, and RSS stays below 320 MiB" {
  # a tar.xz of one skipped entry ("..") of 512 MiB of zeros, compressed
  # with a 1 MiB dictionary; its block header then raised to 768 MiB (the
  # same bytes decode, but liblzma's dictionary fills as they flow)
  {
    python3 -c 'import sys, tarfile
i = tarfile.TarInfo(".."); i.size = 512 << 20
sys.stdout.buffer.write(i.tobuf(format=tarfile.USTAR_FORMAT))'
    head -c $(((512 << 20) + 1024)) /dev/zero
  } | xz --format=xz --check=none --lzma2=preset=0,dict=1MiB -T1 >"$T/bomb.txz"
  python3 - "$T/bomb.txz" <<'PY'
import struct, sys, zlib
p = sys.argv[1]
xz = bytearray(open(p, "rb").read())
size = (xz[12] + 1) * 4
hdr = xz[12:12 + size]
k = hdr.index(b"\x21\x01")  # the LZMA2 filter and its one property byte
hdr[k + 2] = 37              # dictionary 3 * 2^28 bytes
hdr[-4:] = struct.pack("<I", zlib.crc32(bytes(hdr[:-4])))
xz[12:12 + size] = hdr
open(p, "wb").write(xz)
PY
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE'
  run_measured "$T/values" lake-put -q --archive --table docs.scans "$T/bomb.txz"
  assert_error lake-put 65 "$T/bomb.txz: reading the archive takes more than 256 MiB of memory"
  [ "$(peak_kib)" -lt $((320 * 1024)) ] || fail "peak RSS $(peak_kib) KiB"
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
}

# A tar of one file "x" holding "hello", in one of python's tar formats:
# small_tar ustar|pax|gnu
small_tar() {
  python3 - "$1" <<'PY'
import io, sys, tarfile
fmt = {"ustar": tarfile.USTAR_FORMAT, "pax": tarfile.PAX_FORMAT, "gnu": tarfile.GNU_FORMAT}[sys.argv[1]]
b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
    i = tarfile.TarInfo("x"); i.size = 5; t.addfile(i, io.BytesIO(b"hello"))
sys.stdout.buffer.write(b.getvalue())
PY
}

# LZW (compress(1), .Z) of stdin, 9-bit codes only: enough for small_tar
# (no compress(1) on the test hosts; uncompress checks it below)
lzw() {
  python3 -c '
import sys
data = sys.stdin.buffer.read()
d = {bytes([i]): i for i in range(256)}
nxt, codes, w = 257, [], b""
for c in data:
    wc = w + bytes([c])
    if wc in d:
        w = wc
        continue
    codes.append(d[w]); d[wc] = nxt; nxt += 1; w = bytes([c])
if w:
    codes.append(d[w])
assert nxt <= 512
bits = acc = 0
out = bytearray(b"\x1f\x9d\x90")
for code in codes:
    acc |= code << bits; bits += 9
    while bits >= 8:
        out.append(acc & 255); acc >>= 8; bits -= 8
if bits:
    out.append(acc & 255)
sys.stdout.buffer.write(out)'
}

@test "the documented formats and filters are read: ustar, pax, GNU tar; gzip, bzip2, xz, zstd, lz4, compress" {
  local fmt f
  for fmt in ustar pax gnu; do
    small_tar "$fmt" >"$T/x.$fmt.tar"
    run_to "$T/values" lake-put --archive "$T/x.$fmt.tar"
    assert_clean_success
    assert_equal "$(jq -r .name "$T/values")" x
  done
  small_tar ustar >"$T/x.tar"
  gzip -c "$T/x.tar" >"$T/x.tar.gz"
  bzip2 -c "$T/x.tar" >"$T/x.tar.bz2"
  xz -c "$T/x.tar" >"$T/x.tar.xz"
  zstd -q -c "$T/x.tar" >"$T/x.tar.zst"
  lz4 -q -c "$T/x.tar" >"$T/x.tar.lz4"
  lzw <"$T/x.tar" >"$T/x.tar.Z"
  cmp <(uncompress -c "$T/x.tar.Z") "$T/x.tar"
  for f in gz bz2 xz zst lz4 Z; do
    run_to "$T/values" sh -c 'lake-put --archive <"$1"' sh "$T/x.tar.$f"
    assert_clean_success
    assert_equal "$(jq -r '"\(.name) \(.size)"' "$T/values")" "x 5"
  done
}

@test "XAR, RAR, RAR5, ISO 9660 and lzma-compressed tars are 65 'unsupported archive format', nothing stored" {
  # each by its magic bytes, as libarchive's readers would bid on them
  python3 - "$T" <<'PY'
import struct, sys
t = sys.argv[1]
# xar: magic, header size 28, version 1, TOC lengths, SHA-1 checksums
open(f"{t}/a.xar", "wb").write(b"xar!" + struct.pack(">HHQQI", 28, 1, 20, 100, 1) + b"\x78\x9c" + bytes(18))
open(f"{t}/a.rar", "wb").write(b"Rar!\x1a\x07\x00" + bytes(64))
open(f"{t}/a5.rar", "wb").write(b"Rar!\x1a\x07\x01\x00" + bytes(64))
PY
  # an ISO 9660 image (with Rock Ridge) of one file, by libarchive's writer:
  # its 32 KiB of zeros first must not read as an empty tar
  python3 - "$T/a.iso" <<'PY'
import ctypes, sys
la = ctypes.CDLL("libarchive.so.13")
la.archive_write_new.restype = ctypes.c_void_p
la.archive_entry_new.restype = ctypes.c_void_p
a = ctypes.c_void_p(la.archive_write_new())
assert la.archive_write_set_format_iso9660(a) == 0
la.archive_write_set_option(a, None, b"rockridge", b"1")
assert la.archive_write_open_filename(a, sys.argv[1].encode()) == 0
e = ctypes.c_void_p(la.archive_entry_new())
la.archive_entry_set_pathname(e, b"x")
la.archive_entry_set_size(e, ctypes.c_int64(5))
la.archive_entry_set_filetype(e, 0o100000)
la.archive_entry_set_perm(e, 0o644)
assert la.archive_write_header(a, e) == 0
la.archive_write_data(a, b"hello", ctypes.c_size_t(5))
assert la.archive_write_close(a) == 0
la.archive_write_free(a)
PY
  small_tar ustar | xz --format=lzma >"$T/a.tar.lzma"
  local f
  for f in a.xar a.rar a5.rar a.iso a.tar.lzma; do
    run_to "$T/values" lake-put --archive "$T/$f"
    assert_error lake-put 65 "$T/$f: unsupported archive format"
  done
  run_to "$T/values" sh -c 'cat "$1" | lake-put --archive' sh "$T/a.xar"
  assert_error lake-put 65 "stdin: unsupported archive format"
  assert_no_objects
}

# $T/spin.tbz: a tar.bz2 of one file "a", then an entry named ".." (which
# lake-put skips) of almost 6 GB of zeros, as 31 concatenated bzip2
# streams in 37 KiB: libarchive decompresses it for seconds (10+ s of CPU)
# out of the bytes it already read, producing nothing lake-put stores.
make_spin() {
  head -c 200000000 /dev/zero | bzip2 -1 >"$T/z.bz2"
  python3 -c 'import io, sys, tarfile
b = io.BytesIO()
i = tarfile.TarInfo("a"); i.size = 1
b.write(i.tobuf(format=tarfile.USTAR_FORMAT) + b"a" + bytes(511))
i = tarfile.TarInfo(".."); i.size = 6000000000 - 1024
b.write(i.tobuf(format=tarfile.USTAR_FORMAT))
sys.stdout.buffer.write(b.getvalue())' | bzip2 >"$T/spin.tbz"
  local i
  for i in $(seq 30); do cat "$T/z.bz2" >>"$T/spin.tbz"; done
}

# signal_after DELAY SIGNAL CMD...: run CMD (stdin from $T/stdin-fifo's
# writer when it exists), send SIGNAL after DELAY seconds, and print
# "STATUS SECONDS" (the negated signal if it died of one; the time from the
# signal to its end) once it ends, or "hung" after 10 s.  Python, so that
# SIGINT reaches the child as it would from a terminal (a shell's
# background job ignores it).
signal_after() {
  python3 - "$@" <<'PY'
import os, signal, subprocess, sys, time
delay, sig, cmd = float(sys.argv[1]), getattr(signal, sys.argv[2]), sys.argv[3:]
# the stop signals at their defaults, whatever the test run inherited (a
# background job starts with SIGINT ignored, which lake-put respects)
dfl = lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.environ["T"] + "/err", "w"), preexec_fn=dfl)
time.sleep(delay)
p.send_signal(sig)
t0 = time.monotonic()
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill(); p.wait(); print("hung"); sys.exit(0)
print(rc, round(time.monotonic() - t0, 1))
PY
}

@test "a stop signal ends lake-put within 2 s while libarchive spins in data it skips; --table: the note says what is left" {
  make_spin
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE'
  local sig num out
  for sig in SIGINT SIGTERM; do
    num=$(python3 -c "import signal; print(int(signal.$sig))")
    # shellcheck disable=SC2097,SC2098 # T=$T exports T, unchanged, for signal_after's python
    out=$(T=$T signal_after 1.5 "$sig" lake-put -q --archive --max-skipped 100G --table docs.scans "$T/spin.tbz")
    [[ $out != hung ]] || fail "$sig: lake-put did not end"
    assert_equal "${out% *}" "-$num"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 2.0 else 1)" "${out#* }" ||
      fail "$sig: lake-put ended ${out#* } s after the signal"
    assert_equal "$(cat "$T/err")" "lake-put: interrupted; nothing appended to docs.scans (the 1 object stored stays unreferenced; lake-catalog gc removes them)"
  done
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
}

@test "a fifo that never finishes (a blocked reader): SIGINT ends lake-put within 2 s" {
  mkfifo "$T/fifo"
  # a writer that sends half a tar header and stays open
  python3 -c 'import sys, time
f = open(sys.argv[1], "wb"); f.write(b"x" * 100); f.flush(); time.sleep(30)' "$T/fifo" &
  local writer=$! out
  # shellcheck disable=SC2097,SC2098 # T=$T exports T, unchanged, for signal_after's python
  out=$(T=$T signal_after 1 SIGINT lake-put -q --archive "$T/fifo")
  kill "$writer"
  wait "$writer" || true
  [[ $out != hung ]] || fail "lake-put did not end"
  assert_equal "${out% *}" -2
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 2.0 else 1)" "${out#* }"
  assert_equal "$(cat "$T/err")" "lake-put: interrupted"
}

@test "6 GB of zeros in a skipped entry (37 KiB of bzip2) is 65 at the default --max-skipped, and appends nothing" {
  make_spin
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE'
  run_to "$T/values" lake-put -q --archive --table docs.scans "$T/spin.tbz"
  assert_error lake-put 65 "$T/spin.tbz: ..: more than 1GiB of data in entries skipped (--max-skipped): refused" \
    "nothing appended to docs.scans (the 1 object stored stays unreferenced"
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
}

@test "--table and an archive with no regular entries: 0, no new version, one line (none with -q)" {
  mkdir -p "$T/d/a/b" "$T/d/c"
  ln -s nowhere "$T/d/c/link"
  tar -C "$T/d" -cf "$T/dirs.tar" a
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE, path TEXT'
  run_to "$T/values" lake-put --archive --table docs.scans "$T/dirs.tar"
  assert_equal "exit $status" "exit 0"
  assert_equal "$stderr" "lake-put: docs.scans: no files: nothing appended"
  assert_equal "$(stat -c %s "$T/values")" 0
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  # -q: silent; an empty input and a tar of only a symbolic link are the same
  : >"$T/empty.tar"
  tar -C "$T/d" -cf "$T/link.tar" c
  run_to "$T/values" lake-put -q --archive --table docs.scans "$T/dirs.tar" "$T/empty.tar" "$T/link.tar"
  assert_clean_success
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  assert_no_objects
}

# $T/skip.tgz: a tar.gz of a file "a", an entry named ".." (which lake-put
# skips) of $1 MiB of zeros, then a file "c"; a few hundred KiB on disk.
make_skipped() {
  python3 - "$1" <<'PY' | gzip -1 >"$T/skip.tgz"
import sys, tarfile
mib = int(sys.argv[1])
out = sys.stdout.buffer
def entry(name, data, size):
    i = tarfile.TarInfo(name); i.size = size
    out.write(i.tobuf(format=tarfile.USTAR_FORMAT))
    if data is None:
        z = bytes(1 << 20)
        for _ in range(mib): out.write(z)
    else:
        out.write(data + bytes(-len(data) % 512))
entry("a", b"a", 1)
entry("..", None, mib << 20)
entry("c", b"c", 1)
out.write(bytes(1024))
PY
}

@test "data in skipped entries is bounded by --max-skipped: over it 65 naming the option, the entries before stay" {
  make_skipped 300
  lake-catalog create-namespace docs
  lake-catalog create docs.scans 'f FILE'
  run_to "$T/values" lake-put -q --archive --max-skipped 64M --table docs.scans "$T/skip.tgz"
  assert_error lake-put 65 "$T/skip.tgz: ..: " "--max-skipped" "nothing appended to docs.scans"
  assert_equal "$(lake-catalog resolve docs.scans | jq .version)" 0
  # piped, without --table: "a" was put and printed, "c" never read
  run_to "$T/values" sh -c 'cat "$1" | lake-put -q --archive --max-skipped 64MiB' sh "$T/skip.tgz"
  assert_error lake-put 65 "stdin: ..: " "--max-skipped"
  assert_equal "$(jq -r .name "$T/values")" a
  # raised: the whole archive is read
  run_to "$T/values" lake-put -q --archive --max-skipped 512M "$T/skip.tgz"
  assert_clean_success
  assert_equal "$(jq -r .name "$T/values")" $'a\nc'
  # the default (1GiB) lets 300 MiB pass
  run_to "$T/values" lake-put -q --archive "$T/skip.tgz"
  assert_clean_success
  assert_equal "$(jq -r .name "$T/values")" $'a\nc'
}

@test "--max-skipped counts the skipped data of the whole archive, not of one entry" {
  # two archives of 40 MiB skipped each, concatenated: 80 MiB in one tar
  make_skipped 40
  gzip -dc "$T/skip.tgz" | head -c -1024 >"$T/two.tar"
  gzip -dc "$T/skip.tgz" >>"$T/two.tar"
  run_to "$T/values" lake-put -q --archive --max-skipped 64M "$T/two.tar"
  assert_error lake-put 65 "$T/two.tar: ..: " "--max-skipped"
  assert_equal "$(jq -r .name "$T/values")" $'a\nc\na'
  # one archive at a time is under it: each operand has its own count
  run_to "$T/values" lake-put -q --archive --max-skipped 64M "$T/skip.tgz" "$T/skip.tgz"
  assert_clean_success
}

@test "--max-skipped: not a size, or without --archive, is a usage error (64)" {
  printf 'x' >"$T/x"
  local v
  for v in '' x -1 12Q 1.5G; do
    run_to "$T/values" lake-put --archive --max-skipped "$v" "$T/x"
    assert_error lake-put 64 "--max-skipped"
  done
  run_to "$T/values" lake-put --max-skipped 1G "$T/x"
  assert_error lake-put 64 "--max-skipped"
}
