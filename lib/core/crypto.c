/*
 * crypto.c - binding libcrypto at run time (see crypto.h for why).
 */
#define LAKE_CRYPTO_IMPL 1
#include "core/crypto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/log.h"

static lakeCryptoApi api;
static void *handle;
static pthread_once_t openOnce = PTHREAD_ONCE_INIT, bindOnce = PTHREAD_ONCE_INIT;

static const char *openError;

static void openLib(void) {
    handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!handle) openError = dlerror();
}

void *lakeCryptoHandle(void) {
    pthread_once(&openOnce, openLib);
    return handle;
}

/* POSIX: a function pointer is stored through a void * lvalue. */
#define BIND(field, symbol)                                                          \
    do {                                                                             \
        *(void **)(&api.field) = dlsym(h, symbol);                                   \
        if (!api.field) missing = symbol;                                            \
    } while (0)

static void bindLib(void) {
    const char *missing = NULL;
    void *h = lakeCryptoHandle();
    if (!h) {
        logErrorf("cannot load libcrypto: %s", openError ? openError : "unknown error");
        exit(1);
    }
    BIND(md_ctx_new, "EVP_MD_CTX_new");
    BIND(md_ctx_free, "EVP_MD_CTX_free");
    BIND(digest_init_ex, "EVP_DigestInit_ex");
    BIND(digest_update, "EVP_DigestUpdate");
    BIND(digest_final_ex, "EVP_DigestFinal_ex");
    BIND(digest, "EVP_Digest");
    BIND(sha256, "EVP_sha256");
    BIND(md5, "EVP_md5");
    BIND(encode_block, "EVP_EncodeBlock");
    BIND(hmac, "HMAC");
    BIND(memcmp, "CRYPTO_memcmp");
    BIND(cleanse, "OPENSSL_cleanse");
    if (missing) {
        logErrorf("libcrypto.so.3 has no %s (OpenSSL 3 is needed)", missing);
        exit(1);
    }
}

const lakeCryptoApi *lakeCryptoLoad(void) {
    pthread_once(&bindOnce, bindLib);
    return &api;
}
