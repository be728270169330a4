/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_import.c - the CSV and JSON Lines readers of `lake-query --import`
 * (importOpen, importNext) over bytes in memory.
 *
 * Input: one control byte, then the data.  The control byte picks the
 * format (auto, CSV, JSON Lines) and how many bytes each read hands out
 * (1 to 64, or as many as asked), so records, quotes and CRLF pairs
 * straddle buffer refills.  The record cap is small, so the cap is met.
 *
 * Invariants: importNext returns 1 (a record), 0 (the end) or a failure
 * with a one-line message; a record has one value per column of a known
 * kind, its text bytes readable; line numbers start at 1 and never go
 * back; after the end or a failure the reader is closed cleanly.
 */
#include <sys/types.h>

#include "query/import.h"
#include "query/segment.h"
#include "../unit/memreader.h"
#include "fuzz.h"

#define RECORD_MAX 4096

static segmentSchema *schema;
static volatile unsigned sink; /* every byte of every value is read into it */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    lakeError err = {0};
    const char *json =
        "[{\"name\":\"id\",\"type\":\"INTEGER\"},{\"name\":\"name\",\"type\":\"TEXT\"},"
        "{\"name\":\"score\",\"type\":\"REAL\"},{\"name\":\"ok\",\"type\":\"BOOLEAN\"},"
        "{\"name\":\"at\",\"type\":\"TIMESTAMP\"},{\"name\":\"raw\",\"type\":\"BLOB\"},"
        "{\"name\":\"f\",\"type\":\"FILE\"}]";
    if (segmentSchemaParse(json, &schema, &err)) {
        fprintf(stderr, "fuzz_import: %s\n", err.msg);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const importFormat formats[] = {IMPORT_AUTO, IMPORT_CSV, IMPORT_JSONL, IMPORT_CSV | IMPORT_STRICT};
    importFormat fmt = formats[data[0] & 3];
    memReader src = {(const char *)data + 1, size - 1, 0, (size_t)(data[0] >> 2)};
    lakeReader in = {memRead, &src, "stdin"};
    importReader *r = NULL;
    lakeError err = {0};
    int rc = importOpen(&in, fmt, schema, RECORD_MAX, &r, &err);
    if (rc) {
        FUZZ_CHECK(!r, "a failed importOpen left a reader");
        FUZZ_CHECK(rc == LAKE_EDATA, "importOpen: %d: %s", rc, err.msg);
        fuzzCheckError(rc, &err);
        return 0;
    }
    FUZZ_CHECK(importFormatOf(r) == IMPORT_CSV || importFormatOf(r) == IMPORT_JSONL, "format %d",
               (int)importFormatOf(r));
    const lakeValue *v;
    int64_t line = 0;
    while ((rc = importNext(r, &v, &err)) == 1) {
        FUZZ_CHECK(importLine(r) >= 1 && importLine(r) >= line, "line %lld after %lld",
                   (long long)importLine(r), (long long)line);
        line = importLine(r);
        for (int c = 0; c < schema->ncols; c++) {
            switch (v[c].kind) {
            case LAKE_VALUE_NULL: case LAKE_VALUE_INT: case LAKE_VALUE_REAL: break;
            case LAKE_VALUE_BOOL: FUZZ_CHECK(v[c].i == 0 || v[c].i == 1, "bool %lld", (long long)v[c].i); break;
            case LAKE_VALUE_TEXT: case LAKE_VALUE_BLOB:
                FUZZ_CHECK(v[c].n <= RECORD_MAX, "a value of %zu bytes over the cap", v[c].n);
                for (size_t i = 0; i < v[c].n; i++) sink += (unsigned char)v[c].p[i];
                break;
            default: FUZZ_CHECK(0, "value kind %d", (int)v[c].kind);
            }
        }
    }
    if (rc) {
        FUZZ_CHECK(rc == LAKE_EDATA, "importNext: %d: %s", rc, err.msg);
        fuzzCheckError(rc, &err);
    }
    importClose(r);
    return 0;
}
