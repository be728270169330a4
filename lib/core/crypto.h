/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * crypto.h - libcrypto (OpenSSL), loaded on first use.
 *
 * Include this instead of <openssl/evp.h>, <openssl/hmac.h> and
 * <openssl/crypto.h>.  libcrypto's load is most of a short command's
 * start-up: its size (relocations) and its constructor, which probes the
 * CPU with cpuid (a trap to the hypervisor on a virtual machine), cost
 * about 0.6 ms on every run, half of what `sqlite3 :memory: 'SELECT 1'`
 * takes in all.  A listing, a catalog command or a query that hashes nothing
 * should not pay it.  So the programs do not link libcrypto: the first
 * call of one of the functions below dlopen()s libcrypto.so.3 and binds
 * them all; the names are redirected to those bindings.  If libcrypto is
 * missing the process prints one line and exits 1 (core/dlib.h).
 */
#ifndef LAKE_CRYPTO_H
#define LAKE_CRYPTO_H

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Every libcrypto function the library calls. */
#define LAKE_CRYPTO_FUNCS(X)                                                         \
    X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestInit_ex) X(EVP_DigestUpdate)    \
    X(EVP_DigestFinal_ex) X(EVP_Digest) X(EVP_sha256) X(EVP_md5) X(EVP_EncodeBlock)  \
    X(HMAC) X(CRYPTO_memcmp) X(OPENSSL_cleanse)

typedef struct lakeCryptoApi {
#define LAKE_CRYPTO_FIELD(f) __typeof__(f) *f;
    LAKE_CRYPTO_FUNCS(LAKE_CRYPTO_FIELD)
#undef LAKE_CRYPTO_FIELD
} lakeCryptoApi;

/* The bound functions, loaded on the first call (once, thread-safe:
 * core/dlib.h). */
const lakeCryptoApi *lakeCryptoLoad(void);
/* libcrypto.so.3's handle, loading it, or NULL when it cannot be loaded;
 * never exits (for --version). */
void *lakeCryptoHandle(void);
/* Binds libcrypto without exiting: NULL when it is usable, else the line
 * saying why not (liblake(3)'s lake_open). */
const char *lakeCryptoReady(void);

#ifndef LAKE_CRYPTO_IMPL
/* (a macro is not expanded again inside itself: the field keeps its name) */
#define EVP_MD_CTX_new (lakeCryptoLoad()->EVP_MD_CTX_new)
#define EVP_MD_CTX_free (lakeCryptoLoad()->EVP_MD_CTX_free)
#define EVP_DigestInit_ex (lakeCryptoLoad()->EVP_DigestInit_ex)
#define EVP_DigestUpdate (lakeCryptoLoad()->EVP_DigestUpdate)
#define EVP_DigestFinal_ex (lakeCryptoLoad()->EVP_DigestFinal_ex)
#define EVP_Digest (lakeCryptoLoad()->EVP_Digest)
#define EVP_sha256 (lakeCryptoLoad()->EVP_sha256)
#define EVP_md5 (lakeCryptoLoad()->EVP_md5)
#define EVP_EncodeBlock (lakeCryptoLoad()->EVP_EncodeBlock)
#define HMAC (lakeCryptoLoad()->HMAC)
#define CRYPTO_memcmp (lakeCryptoLoad()->CRYPTO_memcmp)
#define OPENSSL_cleanse (lakeCryptoLoad()->OPENSSL_cleanse)
#endif

#endif
