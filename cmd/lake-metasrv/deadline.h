/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * deadline.h - cut off connections whose request does not arrive in time.
 *
 * libmicrohttpd's connection timeout counts idle time only: a client that
 * sends one byte a second is never idle, so it could hold a connection
 * (and, many of them, the whole connection limit) for as long as it likes.
 * Here each connection has a clock that starts when it is accepted and
 * again when an answer has been sent; a watchdog thread shuts down, once a
 * second, every connection whose clock has run longer than the limit while
 * the server was waiting for it (TLS handshake, headers, body).  Time spent
 * producing and sending an answer does not count (that is the idle
 * timeout's business).
 */
#ifndef LAKE_METASRV_DEADLINE_H
#define LAKE_METASRV_DEADLINE_H

#include <microhttpd.h>

#include "core/error.h"

/* Start the watchdog with a limit of seconds; 0 or an error set. */
int deadlineStart(unsigned seconds, lakeError *err);

/* Stop the watchdog and wait for it; connections are left to MHD. */
void deadlineStop(void);

/* The MHD_OPTION_NOTIFY_CONNECTION callback: tracks every connection from
 * accept to close. */
void deadlineNotify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode code);

/* The request on c has arrived and is being answered: its clock stops. */
void deadlineAnswering(struct MHD_Connection *c);

/* The answer on c has been sent (or abandoned): the clock of the next
 * request on the connection starts now. */
void deadlineAnswered(struct MHD_Connection *c);

#endif
