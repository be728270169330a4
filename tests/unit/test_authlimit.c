/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_authlimit.c - lake-metasrv's allowance of failed authentications
 * per address (cmd/lake-metasrv/authlimit.h): per address, IPv6 by its
 * /64, off at 0, and a full table that forgets the oldest address without
 * losing a refusal from the sums.  (The server's use of it is tested over
 * TLS in metasrv-flood.bats; here, what a test cannot reach from
 * loopback: many addresses.)
 */
#include <stdint.h>
#include <string.h>

#include "../../cmd/lake-metasrv/authlimit.c"
#include "tap.h"

static struct sockaddr_in v4(uint32_t host) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(host);
    return a;
}

static struct sockaddr_in6 v6(const char *text) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, text, &a.sin6_addr);
    return a;
}

#define SA(x) ((const struct sockaddr *)&(x))

static void failN(const struct sockaddr *sa, int n) {
    for (int i = 0; i < n; i++) authlimitDone(sa, 0, 1);
}

/* A request that authenticates: its wait (0: let in, and done at once). */
static unsigned probe(const struct sockaddr *sa, const char *id) {
    int held;
    unsigned wait = authlimitRefused(sa, id, &held);
    if (!wait) authlimitDone(sa, held, 0);
    return wait;
}

/* Every refusal still to be summed, taken out. */
static uint64_t drained(size_t *rows) {
    authlimitSummary s[16];
    size_t n;
    uint64_t sum = 0;
    *rows = 0;
    while ((n = authlimitDue(s, 16, 1)) > 0) {
        for (size_t i = 0; i < n; i++) sum += s[i].refused;
        *rows += n;
    }
    return sum;
}

int main(void) {
    authlimitInit(3);
    struct sockaddr_in a = v4(0x0a000001), b = v4(0x0a000002);
    failN(SA(a), 2);
    ok(probe(SA(a), "id1") == 0, "two failures of three: not refused");
    failN(SA(a), 1);
    unsigned wait = probe(SA(a), "id2");
    ok(wait >= 1 && wait <= 20, "the third: refused, Retry-After %u s (one back in 20 s at 3 a minute)", wait);
    ok(probe(SA(b), "id3") == 0, "another address is not refused");
    probe(SA(a), "id4");
    authlimitSummary s[4];
    ok(authlimitDue(s, 4, 0) == 0, "refusals are not due before %d s", AUTHLIMIT_FOLD_S);
    ok(authlimitPending() == 2, "two refusals pending");
    ok(authlimitDue(s, 4, 1) == 1 && s[0].refused == 2 && strcmp(s[0].addr, "10.0.0.1") == 0 &&
           strcmp(s[0].id, "id2") == 0,
       "at shutdown: one sum, 2 refused from 10.0.0.1, the first's id");
    ok(authlimitPending() == 0, "and taken out");

    struct sockaddr_in6 x = v6("2001:db8:1:2::5"), y = v6("2001:db8:1:2:ffff::9"), z = v6("2001:db8:1:3::5");
    failN(SA(x), 3);
    ok(probe(SA(y), "id5") > 0, "IPv6: the same /64 is refused");
    ok(probe(SA(z), "id6") == 0, "another /64 is not");
    char text[64];
    authlimitAddress(SA(y), text, sizeof text);
    ok(strcmp(text, "2001:db8:1:2::/64") == 0, "shown as its /64: %s", text);
    struct sockaddr_in6 mapped = v6("::ffff:10.0.0.1");
    ok(probe(SA(mapped), "id7") > 0, "an IPv4-mapped address is its IPv4 one");
    size_t rows;
    drained(&rows);

    /* many more addresses than slots, each past its allowance and refused
     * once: the table stays as it is, the newest addresses are limited,
     * and every refusal is in a sum (the forgotten ones under "*") */
    uint64_t refused = 0;
    const uint32_t many = 3 * AUTHLIMIT_SLOTS;
    for (uint32_t i = 0; i < many; i++) {
        struct sockaddr_in c = v4(0x0b000000 + i);
        failN(SA(c), 3);
        refused += probe(SA(c), "idn") > 0;
    }
    ok(refused == many, "each of %u addresses refused after 3 failures: %llu", (unsigned)many,
       (unsigned long long)refused);
    struct sockaddr_in last = v4(0x0b000000 + many - 1);
    ok(probe(SA(last), "idl") > 0, "the newest is still limited");
    refused++;
    authlimitSummary first;
    size_t got = authlimitDue(&first, 1, 1);
    ok(got == 1 && strcmp(first.addr, AUTHLIMIT_FORGOTTEN) == 0 && first.refused > 0,
       "the forgotten addresses' refusals: one sum under '*' (%llu)", (unsigned long long)first.refused);
    uint64_t sum = first.refused + drained(&rows);
    ok(sum == refused, "no refusal lost: %llu summed of %llu", (unsigned long long)sum,
       (unsigned long long)refused);
    ok(rows <= AUTHLIMIT_SLOTS, "besides, at most one sum per slot (%zu)", rows);

    /* requests in flight together: an address that has failed has at
     * most as many in flight as it has failures left */
    authlimitInit(3);
    struct sockaddr_in e = v4(0x0d000001);
    failN(SA(e), 1);
    int h1, h2, h3;
    ok(authlimitRefused(SA(e), "c1", &h1) == 0 && h1 && authlimitRefused(SA(e), "c2", &h2) == 0 && h2,
       "two failures left: two requests let in, each holding one");
    ok(authlimitRefused(SA(e), "c3", &h3) > 0, "a third in flight with them: refused");
    authlimitDone(SA(e), h1, 1);
    authlimitDone(SA(e), h2, 0);
    ok(probe(SA(e), "c4") == 0, "the first failed, the second did not: one left, let in");
    failN(SA(e), 1);
    ok(probe(SA(e), "c5") > 0, "and none after one more failure");
    drained(&rows);

    authlimitInit(0);
    struct sockaddr_in d = v4(0x0c000001);
    failN(SA(d), 100);
    ok(probe(SA(d), "id8") == 0, "--auth-failures 0: never refused");
    return tapDone();
}
