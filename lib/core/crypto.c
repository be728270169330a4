/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * crypto.c - binding libcrypto at run time (see crypto.h for why).
 */
#define LAKE_CRYPTO_IMPL 1
#include "core/crypto.h"

#include "core/dlib.h"

LAKE_DLIB_DEFINE(lakeCryptoApi, LAKE_CRYPTO_FUNCS, "libcrypto.so.3", "OpenSSL 3", lakeCryptoLoad,
                 lakeCryptoHandle, lakeCryptoReady)
