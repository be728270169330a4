#!/usr/bin/env bats
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
