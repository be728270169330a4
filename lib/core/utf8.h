/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * utf8.h - UTF-8, checked the strict way (RFC 3629): no overlong forms, no
 * surrogates, nothing past U+10FFFF.
 */
#ifndef LAKE_UTF8_H
#define LAKE_UTF8_H

#include <stddef.h>

/* The length (1-4) of the well-formed UTF-8 sequence at s, which has n > 0
 * bytes left; 0 when none starts there. */
size_t utf8SeqLen(const unsigned char *s, size_t n);

/* 1 when s[0..n) is well-formed UTF-8 without a NUL byte. */
int utf8Valid(const unsigned char *s, size_t n);

/* Make s one line of well-formed UTF-8 in place: a control byte (C0, DEL,
 * and the two bytes of a C1 control), or a byte that starts no
 * well-formed sequence, becomes '?'.  For text that may
 * quote what a client sent and goes to a log line or an answer. */
void utf8OneLine(char *s);

/* 1 when s[0..n) is well-formed UTF-8; NUL bytes (U+0000) allowed. */
int utf8ValidNul(const unsigned char *s, size_t n);

/* Decode the well-formed sequence at s (n > 0 bytes left) into *cp: its
 * length (1-4), or 0 when none starts there (*cp untouched). */
size_t utf8Decode(const unsigned char *s, size_t n, unsigned *cp);

/* The columns a terminal gives code point cp: 2 for East Asian wide and
 * fullwidth characters and emoji, 0 for combining marks, zero-width
 * characters and variation selectors, 1 otherwise (controls included:
 * callers escape them).  A fixed table rather than wcwidth(3), which
 * answers only under a UTF-8 locale: the width of a table cell must not
 * depend on LANG (cron, CI and ssh sessions often run with LANG=C). */
int utf8Width(unsigned cp);

/* Copy in to out (size n > 0) as one line of printable UTF-8, for a
 * diagnostic that may quote input: line breaks and tabs become a blank;
 * any other C0 control, DEL, and each byte that starts no well-formed
 * sequence become \xNN; a C1 control (U+0080..U+009F, which terminals
 * obey as escapes) becomes \u00NN.  A backslash stays itself, so folding
 * twice changes nothing.  Cut at a character or escape boundary when out
 * is too small.  Returns the length written. */
size_t utf8Fold(const char *in, char *out, size_t n);

#endif
