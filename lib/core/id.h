/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * id.h - time-ordered unique ids.
 *
 * 26 characters of Crockford base32 (the ULID layout): 48 bits of
 * milliseconds since the epoch, then 80 bits from RAND_bytes.  Ids sort by
 * creation time as strings; two ids never collide in practice, across
 * processes and hosts, so stage keys never need coordination.
 */
#ifndef LAKE_ID_H
#define LAKE_ID_H

#include "core/error.h"

#define ID_LEN 26

/* Fill out with a new id and a NUL.  Fails only if the RNG fails. */
int idNew(char out[ID_LEN + 1], lakeError *err);

#endif
