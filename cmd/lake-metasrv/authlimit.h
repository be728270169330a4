/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * authlimit.h - lake-metasrv's allowance of failed authentications per
 * client address (issue 41): a flood of bad tokens is answered 429 from
 * memory, without a look at the token or the registry, and leaves a
 * bounded number of audit rows.
 *
 * Each address has a token bucket of per_minute failures, full at first
 * and refilled at per_minute a minute; a failed authentication takes one.
 * While an address has less than one left, every request from it but
 * /v1/health is refused (authlimitRefused), and the refusals are counted
 * for the audit trail, one summary row per address at most every
 * AUTHLIMIT_FOLD_S seconds (authlimitDue).  Successful requests take
 * nothing, and other addresses are not affected.  A request let in from
 * an address that has failed before holds one of what is left until it
 * is authenticated or not (authlimitDone), so that requests in flight
 * together cannot fail past the allowance: such an address has at most
 * as many requests in flight as it has failures left.  An IPv6 address counts
 * by its /64 (a host has the whole prefix to send from); an IPv4 one, or
 * an IPv4-mapped IPv6 one, by itself.
 *
 * Memory is bounded: a fixed table of AUTHLIMIT_SLOTS addresses.  Only a
 * failure makes an entry; an entry whose bucket is full again and whose
 * refusals are recorded is free.  When the few slots an address may take
 * are all in use, the address that failed longest ago is forgotten (it
 * starts again with a full allowance), and its refusals not yet recorded
 * go to one summary of forgotten addresses (AUTHLIMIT_FORGOTTEN).
 *
 * Thread-safe: one mutex over the table; every call is O(1) but
 * authlimitDue, a scan of the table at most once a second.
 */
#ifndef LAKE_METASRV_AUTHLIMIT_H
#define LAKE_METASRV_AUTHLIMIT_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/id.h"

#define AUTHLIMIT_SLOTS 4096
#define AUTHLIMIT_FOLD_S 60 /* refusals of one address are one row this often at most */
#define AUTHLIMIT_DEFAULT 30 /* failures a minute, and at once, per address */
#define AUTHLIMIT_FORGOTTEN "*" /* the address of the summary of forgotten addresses */

/* Allow per_minute failed authentications a minute per address, as many at
 * once; 0 turns the limit off.  Call before serving. */
void authlimitInit(unsigned per_minute);

/* 0 when a request from sa may go on (*held set when it holds one of the
 * address's allowance: then authlimitDone must follow, once); else it is
 * refused: the seconds until the address may try again (Retry-After,
 * >= 1), the refusal counted for the address's summary (id: the
 * request's, kept when it is the first of one). */
unsigned authlimitRefused(const struct sockaddr *sa, const char *id, int *held);

/* A request from sa let in is done with authentication: failed, one less
 * of its allowance; held, what it held is given back. */
void authlimitDone(const struct sockaddr *sa, int held, int failed);

/* The address as the audit trail and the log show it: text, the /64 of an
 * IPv6 one as ADDR/64 ("-" for what is neither IPv4 nor IPv6). */
void authlimitAddress(const struct sockaddr *sa, char *buf, size_t n);

/* Refusals to record in the audit trail. */
typedef struct authlimitSummary {
    char addr[INET6_ADDRSTRLEN + 4]; /* authlimitAddress's text, or AUTHLIMIT_FORGOTTEN */
    uint64_t refused;
    char id[ID_LEN + 1]; /* the first refused request's id */
} authlimitSummary;

/* Up to n summaries due: those whose first refusal is AUTHLIMIT_FOLD_S
 * old (every one with all set: at shutdown), each taken out of the table,
 * which counts that address's refusals anew.  Returns how many. */
size_t authlimitDue(authlimitSummary *out, size_t n, int all);

/* The refusals not yet taken by authlimitDue, every address's. */
uint64_t authlimitPending(void);

#endif
