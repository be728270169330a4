/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * handles.c - the live handles (see handles.h): a sorted array of
 * addresses under one mutex; a program holds a few, so a binary search
 * and an insertion's move are cheap.
 */
#include "api/handles.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct live {
    uintptr_t p;
    int kind;
} live;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static live *all;
static size_t n, cap;

/* The first index whose address is not below p. */
static size_t lower(uintptr_t p) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (all[mid].p < p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int handleAdd(const void *p, int kind) {
    uintptr_t a = (uintptr_t)p;
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (n == cap) {
        size_t c = cap ? 2 * cap : 16;
        live *more = realloc(all, c * sizeof *all);
        if (more) {
            all = more;
            cap = c;
        } else {
            rc = -1;
        }
    }
    if (!rc) {
        size_t i = lower(a);
        memmove(all + i + 1, all + i, (n - i) * sizeof *all);
        all[i] = (live){a, kind};
        n++;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* p's index when it is live as kind, else -1; the caller holds mu. */
static long findLocked(uintptr_t p, int kind) {
    size_t i = lower(p);
    return i < n && all[i].p == p && all[i].kind == kind ? (long)i : -1;
}

int handleLive(const void *p, int kind) {
    pthread_mutex_lock(&mu);
    long i = findLocked((uintptr_t)p, kind);
    pthread_mutex_unlock(&mu);
    return i >= 0;
}

int handleDrop(const void *p, int kind) {
    pthread_mutex_lock(&mu);
    long i = findLocked((uintptr_t)p, kind);
    if (i >= 0) {
        memmove(all + i, all + i + 1, (n - (size_t)i - 1) * sizeof *all);
        n--;
    }
    pthread_mutex_unlock(&mu);
    return i >= 0;
}
