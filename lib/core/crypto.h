/*
 * crypto.h - libcrypto (OpenSSL), loaded on first use.
 *
 * Include this instead of <openssl/evp.h>, <openssl/hmac.h> and
 * <openssl/crypto.h>.  libcrypto's load is most of a short command's
 * start-up: its size (relocations) and its constructor, which probes the
 * CPU with cpuid (a trap to the hypervisor on a virtual machine), cost
 * about 0.6 ms on every run, more than `sqlite3 :memory: 'SELECT 1'` takes
 * in all.  A listing, a catalog command or a query that hashes nothing
 * should not pay it.  So the programs do not link libcrypto: the first
 * call of one of the functions below dlopen()s libcrypto.so.3 and binds
 * them all; the names are redirected to those bindings.  If libcrypto is
 * missing the process prints one line and exits 1 (as curl.h does).
 */
#ifndef LAKE_CRYPTO_H
#define LAKE_CRYPTO_H

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

typedef struct lakeCryptoApi {
    EVP_MD_CTX *(*md_ctx_new)(void);
    void (*md_ctx_free)(EVP_MD_CTX *);
    int (*digest_init_ex)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
    int (*digest_update)(EVP_MD_CTX *, const void *, size_t);
    int (*digest_final_ex)(EVP_MD_CTX *, unsigned char *, unsigned int *);
    int (*digest)(const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *);
    const EVP_MD *(*sha256)(void);
    const EVP_MD *(*md5)(void);
    int (*encode_block)(unsigned char *, const unsigned char *, int);
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
                           unsigned char *, unsigned int *);
    int (*memcmp)(const void *, const void *, size_t);
    void (*cleanse)(void *, size_t);
} lakeCryptoApi;

/* The bound functions, loaded on the first call (once, thread-safe). */
const lakeCryptoApi *lakeCryptoLoad(void);
/* libcrypto.so.3's handle, loading it, or NULL when it cannot be loaded;
 * never exits (for --version). */
void *lakeCryptoHandle(void);

#ifndef LAKE_CRYPTO_IMPL
#define EVP_MD_CTX_new (lakeCryptoLoad()->md_ctx_new)
#define EVP_MD_CTX_free (lakeCryptoLoad()->md_ctx_free)
#define EVP_DigestInit_ex (lakeCryptoLoad()->digest_init_ex)
#define EVP_DigestUpdate (lakeCryptoLoad()->digest_update)
#define EVP_DigestFinal_ex (lakeCryptoLoad()->digest_final_ex)
#define EVP_Digest (lakeCryptoLoad()->digest)
#define EVP_sha256 (lakeCryptoLoad()->sha256)
#define EVP_md5 (lakeCryptoLoad()->md5)
#define EVP_EncodeBlock (lakeCryptoLoad()->encode_block)
#define HMAC (lakeCryptoLoad()->hmac)
#define CRYPTO_memcmp (lakeCryptoLoad()->memcmp)
#define OPENSSL_cleanse (lakeCryptoLoad()->cleanse)
#endif

#endif
