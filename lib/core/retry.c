/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * retry.c - the backoff schedule of retry.h.
 */
#include "core/retry.h"

#include <time.h>

long retryCeilingMs(int attempt) {
    long d = RETRY_BASE_MS;
    for (int i = 1; i < attempt && d < RETRY_CAP_MS; i++) d *= 2;
    return d < RETRY_CAP_MS ? d : RETRY_CAP_MS;
}

long retryPauseMs(int attempt, unsigned long random, long floor_ms, long left_ms) {
    long pause = (long)(random % (unsigned long)(retryCeilingMs(attempt) + 1));
    if (pause < floor_ms) pause = floor_ms;
    if (pause > left_ms) pause = left_ms;
    return pause > 0 ? pause : 0;
}

int retrySleep(long ms, const volatile sig_atomic_t *stop) {
    while (ms > 0) {
        if (stop && *stop) return 1;
        long step = ms > 50 ? 50 : ms;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return stop && *stop;
}
