/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * id.c - ULID-style ids from the clock and the kernel's random numbers
 * (getrandom(2), what OpenSSL's RNG is seeded from: no libcrypto for an id).
 */
#include "core/id.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int idNew(char out[ID_LEN + 1], lakeError *err) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    unsigned char r[10];
    ssize_t got;
    while ((got = getrandom(r, sizeof r, 0)) < 0 && errno == EINTR) {}
    if (got != (ssize_t)sizeof r) return errSet(err, LAKE_EFAIL, "random number generator failed");

    /* 10 characters of time (50 bits, top 2 zero), 16 of randomness. */
    for (int i = 9; i >= 0; i--) {
        out[i] = crockford[ms & 31];
        ms >>= 5;
    }
    uint64_t hi = 0, lo = 0; /* 80 bits as 40 + 40 */
    for (int i = 0; i < 5; i++) hi = hi << 8 | r[i];
    for (int i = 5; i < 10; i++) lo = lo << 8 | r[i];
    for (int i = 17; i >= 10; i--) { out[i] = crockford[hi & 31]; hi >>= 5; }
    for (int i = 25; i >= 18; i--) { out[i] = crockford[lo & 31]; lo >>= 5; }
    out[ID_LEN] = '\0';
    return 0;
}
