/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * authlimit.c - the per-address allowance of failed authentications of
 * authlimit.h: a fixed open-addressed table of token buckets.
 */
#include "authlimit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"

#define PROBES 8     /* the slots an address may take, from its hash on */
#define KEY_LEN 9    /* family (4 or 6; 0: an empty slot), then 4 or 8 bytes */
#define ONE 1000     /* one failure, in the thousandths a bucket counts */

typedef struct slot {
    unsigned char key[KEY_LEN];
    int64_t at_ms;      /* when milli was last brought up to date */
    int64_t milli;      /* the allowance left, in thousandths of a failure */
    int64_t held;       /* requests let in and not yet authenticated */
    uint64_t refused;   /* refusals not yet in a summary */
    int64_t since_ms;   /* the first of them */
    char id[ID_LEN + 1];
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned perMinute;
static slot table[AUTHLIMIT_SLOTS];
static slot forgotten; /* the refusals of evicted addresses (key unused) */

void authlimitInit(unsigned per_minute) { perMinute = per_minute; }

/* The key of sa: 0 when it is neither IPv4 nor IPv6 (never limited). */
static int keyOf(const struct sockaddr *sa, unsigned char key[KEY_LEN]) {
    memset(key, 0, KEY_LEN);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            key[0] = 4;
            memcpy(key + 1, a->s6_addr + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a->s6_addr, 8); /* the /64 */
        }
        return 1;
    }
    return 0;
}

static void keyText(const unsigned char key[KEY_LEN], char *buf, size_t n) {
    char text[INET6_ADDRSTRLEN] = "-";
    unsigned char a6[16] = {0};
    if (key[0] == 4) {
        inet_ntop(AF_INET, key + 1, text, sizeof text);
    } else if (key[0] == 6) {
        memcpy(a6, key + 1, 8);
        inet_ntop(AF_INET6, a6, text, sizeof text);
    }
    snprintf(buf, n, "%s%s", text, key[0] == 6 ? "/64" : "");
}

void authlimitAddress(const struct sockaddr *sa, char *buf, size_t n) {
    unsigned char key[KEY_LEN];
    keyOf(sa, key);
    keyText(key, buf, n);
}

static size_t home(const unsigned char key[KEY_LEN]) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < KEY_LEN; i++) h = (h ^ key[i]) * 16777619u;
    return h % AUTHLIMIT_SLOTS;
}

/* The allowance of s brought up to now: per_minute a minute, at most
 * per_minute. */
static void refill(slot *s, int64_t now) {
    int64_t full = (int64_t)perMinute * ONE;
    if (now > s->at_ms) s->milli += (now - s->at_ms) * (int64_t)perMinute / 60;
    if (s->milli > full) s->milli = full;
    s->at_ms = now;
}

/* The slot of key, or NULL. */
static slot *find(const unsigned char key[KEY_LEN]) {
    size_t h = home(key);
    for (size_t i = 0; i < PROBES; i++) {
        slot *s = &table[(h + i) % AUTHLIMIT_SLOTS];
        if (memcmp(s->key, key, KEY_LEN) == 0) return s;
    }
    return NULL;
}

/* A slot for a new key: a free one (empty, or full again with nothing to
 * record), else the one that failed longest ago, its refusals moved to
 * the forgotten summary. */
static slot *claim(const unsigned char key[KEY_LEN], int64_t now) {
    size_t h = home(key);
    slot *oldest = NULL;
    for (size_t i = 0; i < PROBES; i++) {
        slot *s = &table[(h + i) % AUTHLIMIT_SLOTS];
        if (s->key[0]) refill(s, now);
        if (!s->key[0] || (s->refused == 0 && s->held == 0 && s->milli >= (int64_t)perMinute * ONE)) {
            oldest = s;
            break;
        }
        if (!oldest || s->at_ms < oldest->at_ms) oldest = s;
    }
    if (oldest->refused) {
        if (!forgotten.refused) {
            forgotten.since_ms = oldest->since_ms;
            memcpy(forgotten.id, oldest->id, sizeof forgotten.id);
        }
        forgotten.refused += oldest->refused;
    }
    memset(oldest, 0, sizeof *oldest);
    memcpy(oldest->key, key, KEY_LEN);
    oldest->milli = (int64_t)perMinute * ONE;
    oldest->at_ms = now;
    return oldest;
}

unsigned authlimitRefused(const struct sockaddr *sa, const char *id, int *held) {
    unsigned char key[KEY_LEN];
    *held = 0;
    if (!perMinute || !keyOf(sa, key)) return 0;
    unsigned wait = 0;
    pthread_mutex_lock(&mu);
    slot *s = find(key);
    if (s) {
        int64_t now = clockMs();
        refill(s, now);
        int64_t left = s->milli - s->held * ONE; /* what requests in flight do not hold */
        if (left < ONE) {
            if (!s->refused++) {
                s->since_ms = now;
                snprintf(s->id, sizeof s->id, "%s", id);
            }
            /* until one is back, were every one in flight to fail */
            int64_t ms = ((ONE - left) * 60 + perMinute - 1) / perMinute;
            wait = (unsigned)((ms + 999) / 1000);
            if (!wait) wait = 1;
        } else {
            s->held++;
            *held = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return wait;
}

void authlimitDone(const struct sockaddr *sa, int held, int failed) {
    unsigned char key[KEY_LEN];
    if (!perMinute || !keyOf(sa, key)) return;
    pthread_mutex_lock(&mu);
    slot *s = find(key);
    /* (an address forgotten since holds nothing) */
    if (s && held && s->held > 0) s->held--;
    if (failed) {
        int64_t now = clockMs();
        if (s) refill(s, now);
        else s = claim(key, now);
        /* (requests let in before its first failure may fail past it) */
        s->milli = s->milli >= ONE ? s->milli - ONE : 0;
    }
    pthread_mutex_unlock(&mu);
}

/* Take s's refusals into *out when they are due. */
static int take(slot *s, authlimitSummary *out, int64_t now, int all, int isForgotten) {
    if (!s->refused || (!all && now - s->since_ms < AUTHLIMIT_FOLD_S * 1000LL)) return 0;
    if (isForgotten) snprintf(out->addr, sizeof out->addr, "%s", AUTHLIMIT_FORGOTTEN);
    else keyText(s->key, out->addr, sizeof out->addr);
    out->refused = s->refused;
    memcpy(out->id, s->id, sizeof out->id);
    s->refused = 0;
    return 1;
}

size_t authlimitDue(authlimitSummary *out, size_t n, int all) {
    size_t k = 0;
    pthread_mutex_lock(&mu);
    int64_t now = clockMs();
    if (k < n) k += (size_t)take(&forgotten, &out[k], now, all, 1);
    for (size_t i = 0; i < AUTHLIMIT_SLOTS && k < n; i++)
        if (table[i].key[0]) k += (size_t)take(&table[i], &out[k], now, all, 0);
    pthread_mutex_unlock(&mu);
    return k;
}

uint64_t authlimitPending(void) {
    pthread_mutex_lock(&mu);
    uint64_t n = forgotten.refused;
    for (size_t i = 0; i < AUTHLIMIT_SLOTS; i++) n += table[i].refused;
    pthread_mutex_unlock(&mu);
    return n;
}
