/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_snapshot.c - the readers of the on-disk catalog cache's files: the
 * snapshot (cacheSnapshotCheck) and the points file of a principal denied
 * the directory (cachePointsCheck), each parsing as the cache's reader does.
 *
 * Input: one control byte, then the file.  With the low bit set the
 * harness appends the file's correct "crc32" line, so the fuzzer explores
 * the parser behind the checksum instead of the checksum alone; with the
 * next bit set the file is read as a points file.
 *
 * Invariants: no crash, leak or sanitizer report; a file accepted states
 * at most CACHE_MAX_ENTRIES tables and entries; the answer depends on the
 * bytes alone (a second parse agrees).
 */
#include <zlib.h>

#include "catalog/cache.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char *file = malloc(len + 32);
    if (!file) abort();
    memcpy(file, body, len);
    if (data[0] & 1)
        len += (size_t)snprintf(file + len, 32, "crc32 %08lx\n", crc32(0, (const Bytef *)body, (uInt)len));
    size_t nt = 0, ne = 0, nt2 = 0, ne2 = 0;
    if (data[0] & 2) {
        int rc = cachePointsCheck(file, len, &nt);
        FUZZ_CHECK(rc == 0 || rc == -1, "cachePointsCheck: %d", rc);
        if (rc == 0) {
            FUZZ_CHECK(nt <= CACHE_MAX_ENTRIES, "%zu rows", nt);
            FUZZ_CHECK(cachePointsCheck(file, len, &nt2) == 0 && nt2 == nt, "a second parse disagrees");
        }
        free(file);
        return 0;
    }
    int rc = cacheSnapshotCheck(file, len, &nt, &ne);
    FUZZ_CHECK(rc == 0 || rc == -1, "cacheSnapshotCheck: %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(nt <= CACHE_MAX_ENTRIES && ne <= CACHE_MAX_ENTRIES, "%zu tables, %zu entries", nt, ne);
        FUZZ_CHECK(cacheSnapshotCheck(file, len, &nt2, &ne2) == 0 && nt2 == nt && ne2 == ne,
                   "a second parse disagrees");
    }
    free(file);
    return 0;
}
