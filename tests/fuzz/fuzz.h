/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz.h - what the libFuzzer harnesses share: an assertion that aborts
 * (libFuzzer saves the input that made it), the contract every lake error
 * keeps, and a NUL-terminated copy of the fuzzer's bytes.
 */
#ifndef LAKE_FUZZ_H
#define LAKE_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__,      \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* A failure returned rc == err->code, a code of DESIGN §1 (and 67, an
 * expired version: issue 28), and one line of
 * message: no control character reaches a terminal or a log line. */
static inline void fuzzCheckError(int rc, const lakeError *err) {
    FUZZ_CHECK(rc == (int)err->code, "rc %d, err->code %d", rc, (int)err->code);
    switch (err->code) {
    case LAKE_EFAIL: case LAKE_EUSAGE: case LAKE_EDATA: case LAKE_ENOINPUT: case LAKE_EEXPIRED:
    case LAKE_EUNAVAIL: case LAKE_ETEMP: case LAKE_EPERM: case LAKE_ECONFIG: break;
    default: FUZZ_CHECK(0, "code %d is no exit status of DESIGN §1", (int)err->code);
    }
    FUZZ_CHECK(err->msg[0] != '\0', "empty message");
    for (const unsigned char *p = (const unsigned char *)err->msg; *p; p++)
        FUZZ_CHECK(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in message '%s'", *p, err->msg);
}

/* data as a C string (caller frees); an embedded NUL ends it early, as it
 * would for any caller that holds the text as a string. */
static inline char *fuzzString(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
