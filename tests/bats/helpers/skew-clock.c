/* SPDX-License-Identifier: BSD-2-Clause */
/* skew-clock.c - an LD_PRELOAD shim that moves time(2) by
 * LAKE_TEST_CLOCK_SKEW seconds, for the skewed-clock test of s3-rgw.bats
 * (faketime is not installed here).  libcurl takes the date it signs
 * (x-amz-date) from time(), so a program run with the shim signs requests
 * with a clock that is really off; every other clock is left alone.
 * Built by the test: cc -shared -fPIC -o skew-clock.so skew-clock.c */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

time_t time(time_t *out) {
    struct timespec ts;
    const char *skew = getenv("LAKE_TEST_CLOCK_SKEW");
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    time_t t = ts.tv_sec + (skew ? (time_t)atoll(skew) : 0);
    if (out) *out = t;
    return t;
}
