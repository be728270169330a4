/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c - see clock.h.
 */
#include "core/clock.h"

int64_t clockMs(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void clockAfterMs(struct timespec *t, clockid_t id, long ms) {
    clock_gettime(id, t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}
