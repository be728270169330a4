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

/* Make s one line of well-formed UTF-8 in place: a control byte, or a byte
 * that starts no well-formed sequence, becomes '?'.  For text that may
 * quote what a client sent and goes to a log line or an answer. */
void utf8OneLine(char *s);

#endif
