/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * realtext.c - shortest round-trip text of a double (see realtext.h).
 *
 * SQLite's own text of a REAL has 15 significant digits, which loses the
 * last bits of many doubles (1.7976931348623157e308 becomes a number that
 * overflows); here 15, 16 and then 17 digits are tried, and 17 always
 * reads back exactly.
 */
#include "core/realtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *realText(double x, char out[REAL_TEXT_MAX]) {
    if (isnan(x)) return strcpy(out, "NaN");
    if (isinf(x)) return strcpy(out, x < 0 ? "-Inf" : "Inf");
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, REAL_TEXT_MAX, "%.*g", digits, x);
        double back = strtod(out, NULL);
        if (back == x && signbit(back) == signbit(x)) break;
    }
    if (!strpbrk(out, ".e")) strcat(out, ".0");
    return out;
}
