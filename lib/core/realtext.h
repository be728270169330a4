/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * realtext.h - a double as the shortest decimal text that reads back as the
 * same double.
 *
 * Promises: strtod(realText(x)) == x bit for bit for every finite x (the
 * sign of zero included); the text always shows that it is a REAL (a '.'
 * or an exponent: 2.0, -0.0, 1e-300), so it never reads back as an
 * INTEGER; infinities are "Inf" and "-Inf" and NaN "NaN", as SQLite
 * writes them.
 */
#ifndef LAKE_REALTEXT_H
#define LAKE_REALTEXT_H

/* Room for any realText result, NUL included. */
#define REAL_TEXT_MAX 32

/* Write x into out; returns out. */
char *realText(double x, char out[REAL_TEXT_MAX]);

#endif
