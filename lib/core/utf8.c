/*
 * utf8.c - UTF-8 checks (see utf8.h).
 */
#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

size_t utf8SeqLen(const unsigned char *s, size_t n) {
    unsigned c = s[0], cp;
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

int utf8Valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = s[i] ? utf8SeqLen(s + i, n - i) : 0;
        if (!k) return 0;
        i += k;
    }
    return 1;
}

void utf8OneLine(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80 ? 1 : utf8SeqLen((const unsigned char *)s + i, n - i);
        if (ch < 0x20 || ch == 0x7f || len == 0) {
            s[i] = '?';
            len = 1;
        } else if (len == 2 && ch == 0xC2 && (unsigned char)s[i + 1] < 0xA0) {
            s[i] = s[i + 1] = '?'; /* a C1 control, U+0080..U+009F */
        }
        i += len;
    }
}

size_t utf8Fold(const char *in, char *out, size_t n) {
    const unsigned char *s = (const unsigned char *)in;
    size_t len = strlen(in), o = 0;
    if (n == 0) return 0;
    for (size_t i = 0; i < len;) {
        char esc[8];
        const char *put = esc;
        size_t k, adv = 1, seq = s[i] < 0x80 ? 1 : utf8SeqLen(s + i, len - i);
        if (strchr("\n\r\t\v\f", s[i])) {
            esc[0] = ' ';
            k = 1;
        } else if (s[i] < 0x20 || s[i] == 0x7f || seq == 0) {
            k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", s[i]);
        } else if (seq == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0) {
            k = (size_t)snprintf(esc, sizeof esc, "\\u%04x", s[i + 1]);
            adv = 2;
        } else {
            put = in + i;
            k = adv = seq;
        }
        if (o + k >= n) break; /* cut whole: never half an escape or a character */
        memcpy(out + o, put, k);
        o += k;
        i += adv;
    }
    out[o] = '\0';
    return o;
}
