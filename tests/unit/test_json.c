/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_json.c - the strict JSON pass (lib/core/jsonstrict.c): texts RFC
 * 8259 accepts and lake takes, and texts refused with the reason and
 * offset, in the spirit of JSONTestSuite's y_ and n_ cases.
 */
#include "core/jsonstrict.h"
#include "core/utf8.h"

#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Texts given with their length, so that a NUL byte can be in them. */
#define T(s) s, sizeof s - 1

/* p as one printable line for a test name (cut at a NUL byte). */
static const char *shown(const char *p, size_t n) {
    static char in[256], out[512];
    snprintf(in, sizeof in, "%.*s", (int)n, p);
    utf8Fold(in, out, sizeof out);
    return out;
}

static void accept(const char *p, size_t n) {
    jsonFault f;
    cJSON *j = jsonStrictParse(p, n, NULL, NULL, &f);
    ok(j != NULL, "accepted: %s%s%s", shown(p, n), j ? "" : " -- ", j ? "" : f.why);
    cJSON_Delete(j);
}

static void refuse(const char *p, size_t n, const char *why, size_t off) {
    jsonFault f;
    cJSON *j = jsonStrictParse(p, n, NULL, NULL, &f);
    ok(!j && strcmp(f.why, why) == 0 && f.off == off, "refused: %s (%s at %zu; got %s at %zu)",
       shown(p, n), why, off, j ? "accepted" : f.why, j ? 0 : f.off);
    cJSON_Delete(j);
}

static void testAccepted(void) {
    accept(T("{}"));
    accept(T("[]"));
    accept(T(" \t\r\n{\"a\":1} \n"));
    accept(T("0"));
    accept(T("-0"));
    accept(T("-0.0e-0"));
    accept(T("1E+2"));
    accept(T("123.456e789"));
    accept(T("9223372036854775808"));
    accept(T("[1,-1,0.5,1e3,true,false,null,\"\"]"));
    accept(T("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u00e9\\uFFFF\""));
    accept(T("\"\\ud83d\\ude00\""));          /* a surrogate pair */
    accept(T("\"\xf0\x9f\x98\x80 caf\xc3\xa9\"")); /* raw UTF-8 */
    accept(T("\"\x7f\""));                    /* DEL is not a control to JSON */
    accept(T("{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}]}")); /* same key, other objects */
    accept(T("{\"a\":1,\"A\":2}"));           /* keys are case-sensitive */
}

static void testRefused(void) {
    refuse(T(""), "a value missing", 0);
    refuse(T("   "), "a value missing", 3);
    refuse(T("-01"), "a leading zero in a number", 0);
    refuse(T("012"), "a leading zero in a number", 0);
    refuse(T("[00]"), "a leading zero in a number", 1);
    refuse(T("1."), "a number without digits after its '.'", 0);
    refuse(T("-2."), "a number without digits after its '.'", 0);
    refuse(T("0.e1"), "a number without digits after its '.'", 0);
    refuse(T("2.e3"), "a number without digits after its '.'", 0);
    refuse(T("1e"), "a number without digits in its exponent", 0);
    refuse(T("1e+"), "a number without digits in its exponent", 0);
    refuse(T("-.123"), "a malformed number", 0);
    refuse(T("-"), "a malformed number", 0);
    refuse(T("+1"), "not a JSON value", 0);
    refuse(T(".5"), "not a JSON value", 0);
    refuse(T("0x1F"), "text after the value", 1);
    refuse(T("NaN"), "not a JSON value", 0);
    refuse(T("-Infinity"), "a malformed number", 0);
    refuse(T("Infinity"), "not a JSON value", 0);
    refuse(T("\"\\uqqqq\""), "an invalid \\u escape in a string", 1);
    refuse(T("\"\\u12\""), "an invalid \\u escape in a string", 1);
    refuse(T("\"\\x41\""), "an invalid escape in a string", 1);
    refuse(T("\"\\a\""), "an invalid escape in a string", 1);
    refuse(T("\"\\'\""), "an invalid escape in a string", 1);
    refuse(T("\"a\tb\""), "a raw control character in a string", 2);
    refuse(T("\"a\x01" "b\""), "a raw control character in a string", 2);
    refuse(T("\"a\nb\""), "a raw control character in a string", 2);
    refuse(T("\"a\0b\""), "a raw control character in a string", 2);
    refuse(T("\"a\\u0000b\""), "\\u0000 in a string", 2);
    refuse(T("{\"t\\u0000x\":1}"), "\\u0000 in a string", 3);
    refuse(T("\"\\ud800\""), "a lone surrogate escape in a string", 1);
    refuse(T("\"\\ud800\\u0041\""), "a lone surrogate escape in a string", 1);
    refuse(T("\"\\udc00\""), "a lone surrogate escape in a string", 1);
    refuse(T("\"\xff\""), "a string that is not UTF-8", 1);
    refuse(T("\"\xc0\xaf\""), "a string that is not UTF-8", 1);      /* overlong */
    refuse(T("\"\xed\xa0\x80\""), "a string that is not UTF-8", 1);  /* a raw surrogate */
    refuse(T("\"abc"), "an unterminated string", 0);
    refuse(T("{\"a\":1} x"), "text after the value", 8);
    refuse(T("{\"a\":1}{}"), "text after the value", 7);
    refuse(T("{\"a\":1}\0"), "text after the value", 7);
    refuse(T("[1,]"), "not a JSON value", 3);
    refuse(T("{\"a\":1,}"), "an object key that is not a string", 7);
    refuse(T("{a:1}"), "an object key that is not a string", 1);
    refuse(T("{'a':1}"), "an object key that is not a string", 1);
    refuse(T("{\"a\" 1}"), "a key without ':'", 5);
    refuse(T("[1 2]"), "an array without ',' or ']'", 3);
    refuse(T("[tru]"), "not a JSON value", 1);
    refuse(T("/* c */ 1"), "not a JSON value", 0);
    refuse(T("{\"a\":1,\"a\":2}"), "a key repeated in an object", JSON_NO_OFFSET);
    refuse(T("{\"x\":{\"k\":1,\"b\":2,\"k\":3}}"), "a key repeated in an object", JSON_NO_OFFSET);
}

static void testNesting(void) {
    enum { DEEP = CJSON_NESTING_LIMIT };
    char *p = malloc(2 * DEEP + 2);
    if (!p) return;
    memset(p, '[', DEEP);
    memset(p + DEEP, ']', DEEP);
    accept(p, 2 * DEEP);
    memset(p, '[', DEEP + 1);
    memset(p + DEEP + 1, ']', DEEP + 1);
    refuse(p, 2 * DEEP + 2, "nesting too deep", DEEP);
    free(p);
}

static int noted(void *arg, size_t off) {
    size_t *offs = arg;
    offs[++offs[0]] = off;
    return 0;
}

static void testNumbers(void) {
    size_t offs[8] = {0};
    jsonFault f;
    cJSON *j = jsonStrictParse(T("{\"a\":1,\"b\":\"2\",\"c\":[-3.5,4e1]}"), noted, offs, &f);
    ok(j && offs[0] == 3 && offs[1] == 5 && offs[2] == 20 && offs[3] == 25,
       "each number's offset, in order");
    cJSON_Delete(j);
}

/* jsonWhole: a number C cannot hold as int64_t is refused, not converted */
static void testWhole(void) {
    static const struct { const char *text; int whole; int64_t v; } cases[] = {
        {"0", 1, 0}, {"42", 1, 42}, {"9007199254740992", 1, 9007199254740992LL},
        {"9007199254740993.5", 0, 0}, {"81990000000000000000", 0, 0}, {"1e300", 0, 0},
        {"-1", 0, 0}, {"1.5", 0, 0}, {"\"7\"", 0, 0}, {"null", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = cJSON_Parse(cases[i].text);
        int64_t v = -7;
        int got = jsonWhole(j, 0, &v);
        ok(got == cases[i].whole && (!got || v == cases[i].v) && (got || v == -7),
           "jsonWhole(%s) = %d (%lld)", cases[i].text, got, (long long)v);
        cJSON_Delete(j);
    }
}

int main(void) {
    testAccepted();
    testRefused();
    testNesting();
    testNumbers();
    testWhole();
    return tapDone();
}
