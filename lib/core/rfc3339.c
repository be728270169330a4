/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rfc3339.c - RFC 3339 times (see rfc3339.h).
 */
#include "core/rfc3339.h"

#include <string.h>
#include <time.h>

void rfc3339Format(char out[32], long long t) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void rfc3339Now(char out[32]) { rfc3339Format(out, (long long)time(NULL)); }

/* n decimal digits at s into *out; 0 when one is not a digit. */
static int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

int rfc3339Parse(const char *s, long long *secs, const char **frac, size_t *nfrac) {
    int Y, M, D, h, m, sec, oh = 0, om = 0, sign = 0;
    if (strlen(s) < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) || s[7] != '-' ||
        !digits(s + 8, 2, &D) || !strchr("Tt ", s[10]) || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &m) || s[16] != ':' || !digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19, *f = NULL;
    size_t nf = 0;
    if (*p == '.') {
        f = ++p;
        while (*p >= '0' && *p <= '9') p++;
        nf = (size_t)(p - f);
        if (nf == 0 || nf > 9) return -1;
    }
    if ((*p == 'Z' || *p == 'z') && !p[1]) {
        sign = 0;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && digits(p + 1, 2, &oh) && p[3] == ':' &&
               digits(p + 4, 2, &om) && oh < 24 && om < 60) {
        sign = *p == '+' ? 1 : -1;
    } else {
        return -1;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || (M == 2 && D == 29 && !leap) || h > 23 ||
        m > 59 || sec > 59)
        return -1;
    struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = m, .tm_sec = sec};
    *secs = (long long)timegm(&tm) - (long long)sign * (oh * 3600 + om * 60);
    if (frac) {
        *frac = f;
        *nfrac = nf;
    }
    return 0;
}
