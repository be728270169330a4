/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_json.c - the strict JSON pass (jsonStrictParse) against cJSON.
 *
 * Input: the JSON text, NUL bytes and all.
 *
 * Invariants: a text the pass accepts has strings and keys of well-formed
 * UTF-8, and what cJSON prints of it is accepted again as the same tree
 * (but for a number beyond a double's range, which cJSON prints as null);
 * every refusal names a reason and an offset inside the text (or none, for
 * a repeated key); the numbers the pass reports lie inside the text, in
 * order, each at a '-' or a digit.
 */
#include "core/jsonstrict.h"
#include "core/utf8.h"
#include "fuzz.h"

#include <math.h>

typedef struct { size_t n, last, size; const uint8_t *data; } numbers;

static int noted(void *arg, size_t off) {
    numbers *ns = arg;
    FUZZ_CHECK(off < ns->size, "number at %zu past the end %zu", off, ns->size);
    FUZZ_CHECK(ns->n == 0 || off > ns->last, "numbers out of order");
    FUZZ_CHECK(ns->data[off] == '-' || (ns->data[off] >= '0' && ns->data[off] <= '9'),
               "a number starting with 0x%02x", ns->data[off]);
    ns->n++;
    ns->last = off;
    return 0;
}

/* Every string and key of j and below is well-formed UTF-8. */
static void walk(const cJSON *j) {
    for (const cJSON *c = j->child; c; c = c->next) {
        if (c->string)
            FUZZ_CHECK(utf8Valid((const unsigned char *)c->string, strlen(c->string)), "a key not UTF-8");
        if (cJSON_IsString(c))
            FUZZ_CHECK(utf8Valid((const unsigned char *)c->valuestring, strlen(c->valuestring)),
                       "a string not UTF-8");
        walk(c);
    }
}

/* 1 when a number of j or below is out of a double's range (cJSON prints
 * it as null). */
static int infinite(const cJSON *j) {
    if (cJSON_IsNumber(j) && !isfinite(j->valuedouble)) return 1;
    for (const cJSON *c = j->child; c; c = c->next)
        if (infinite(c)) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    numbers ns = {.size = size, .data = data};
    jsonFault f;
    cJSON *j = jsonStrictParse((const char *)data, size, noted, &ns, &f);
    if (j) {
        /* what cJSON prints of it is strict too, and the same tree */
        walk(j);
        char *text = cJSON_PrintUnformatted(j);
        FUZZ_CHECK(text, "cannot print an accepted text");
        cJSON *again = jsonStrictParse(text, strlen(text), NULL, NULL, &f);
        FUZZ_CHECK(again, "cJSON printed what the pass refuses: %s: %s", f.why, text);
        FUZZ_CHECK(infinite(j) || cJSON_Compare(j, again, 1), "printed and parsed again, not the same: %s", text);
        cJSON_Delete(again);
        cJSON_free(text);
        cJSON_Delete(j);
        return 0;
    }
    FUZZ_CHECK(f.why && f.why[0], "a refusal without a reason");
    FUZZ_CHECK(f.off == JSON_NO_OFFSET || f.off <= size, "offset %zu past the end %zu", f.off, size);
    return 0;
}
