/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sha256.h - streaming SHA-256 over OpenSSL EVP.
 *
 * Bytes are hashed as they stream past, never in a second pass.
 */
#ifndef LAKE_SHA256_H
#define LAKE_SHA256_H

#include <stddef.h>

#include "core/error.h"

#define SHA256_HEX_LEN 64

typedef struct sha256Ctx sha256Ctx;

/* Returns NULL only when out of memory. */
sha256Ctx *sha256New(void);
void sha256Update(sha256Ctx *c, const void *buf, size_t len);
/* Writes 64 lowercase hex digits and a NUL to hex. */
void sha256FinalHex(sha256Ctx *c, char hex[SHA256_HEX_LEN + 1]);
void sha256Free(sha256Ctx *c);

/* True when s is exactly 64 hex digits (either case). */
int sha256IsHex(const char *s);

#endif
