/* SPDX-License-Identifier: BSD-2-Clause */
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

static int valid(const unsigned char *s, size_t n, int nul) {
    for (size_t i = 0; i < n;) {
        size_t k = s[i] || nul ? utf8SeqLen(s + i, n - i) : 0;
        if (!k) return 0;
        i += k;
    }
    return 1;
}

int utf8Valid(const unsigned char *s, size_t n) { return valid(s, n, 0); }

int utf8ValidNul(const unsigned char *s, size_t n) { return valid(s, n, 1); }

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

size_t utf8Decode(const unsigned char *s, size_t n, unsigned *cp) {
    size_t len = utf8SeqLen(s, n);
    if (len == 0) return 0;
    static const unsigned lead[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    unsigned c = s[0] & lead[len];
    for (size_t i = 1; i < len; i++) c = c << 6 | (s[i] & 0x3F);
    *cp = c;
    return len;
}

typedef struct cpRange {
    unsigned lo, hi;
} cpRange;

/* Zero columns: combining marks, zero-width spaces and joiners,
 * variation selectors (Unicode 15, general categories Mn/Me and Cf in
 * the ranges terminals draw as nothing). */
static const cpRange zeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF},
    {0x05C1, 0x05C2}, {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x06DF, 0x06E4},
    {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A},
    {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F},
    {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0x302A, 0x302D},
    {0x3099, 0x309A}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF},
    {0xE0100, 0xE01EF},
};

/* Two columns: East Asian Wide (W) and Fullwidth (F), emoji presentation
 * included (Unicode 15 EastAsianWidth.txt, merged into runs). */
static const cpRange wide[] = {
    {0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC},
    {0x23F0, 0x23F0}, {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615},
    {0x2648, 0x2653}, {0x267F, 0x267F}, {0x2693, 0x2693}, {0x26A1, 0x26A1},
    {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5}, {0x26CE, 0x26CE},
    {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
    {0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B},
    {0x2728, 0x2728}, {0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755},
    {0x2757, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0}, {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55}, {0x2E80, 0x303E},
    {0x3041, 0x3247}, {0x3250, 0x4DBF}, {0x4E00, 0xA4C6}, {0xA960, 0xA97C},
    {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE10, 0xFE19}, {0xFE30, 0xFE6B},
    {0xFF01, 0xFF60}, {0xFFE0, 0xFFE6}, {0x16FE0, 0x16FE4}, {0x17000, 0x18CD5},
    {0x1B000, 0x1B2FB}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E},
    {0x1F191, 0x1F19A}, {0x1F200, 0x1F202}, {0x1F210, 0x1F23B}, {0x1F240, 0x1F248},
    {0x1F250, 0x1F251}, {0x1F260, 0x1F265}, {0x1F300, 0x1F320}, {0x1F32D, 0x1F335},
    {0x1F337, 0x1F37C}, {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA}, {0x1F3CF, 0x1F3D3},
    {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4}, {0x1F3F8, 0x1F43E}, {0x1F440, 0x1F440},
    {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D}, {0x1F54B, 0x1F54E}, {0x1F550, 0x1F567},
    {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596}, {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F},
    {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC}, {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6D7},
    {0x1F6DC, 0x1F6DF}, {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC}, {0x1F7E0, 0x1F7EB},
    {0x1F7F0, 0x1F7F0}, {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF},
    {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

static int inRanges(unsigned cp, const cpRange *r, size_t n) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int utf8Width(unsigned cp) {
    if (cp < 0x300) return 1;
    if (inRanges(cp, zeroWidth, sizeof zeroWidth / sizeof zeroWidth[0])) return 0;
    if (inRanges(cp, wide, sizeof wide / sizeof wide[0])) return 2;
    return 1;
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
