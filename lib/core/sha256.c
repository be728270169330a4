/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sha256.c - SHA-256 through OpenSSL's EVP interface (libcrypto loaded on
 * the first hash: core/crypto.h).
 */
#include "core/sha256.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"

struct sha256Ctx {
    EVP_MD_CTX *md;
};

sha256Ctx *sha256New(void) {
    sha256Ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->md = EVP_MD_CTX_new();
    if (!c->md || EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c->md);
        free(c);
        return NULL;
    }
    return c;
}

void sha256Update(sha256Ctx *c, const void *buf, size_t len) {
    EVP_DigestUpdate(c->md, buf, len);
}

void sha256FinalHex(sha256Ctx *c, char hex[SHA256_HEX_LEN + 1]) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char digits[] = "0123456789abcdef";
    EVP_DigestFinal_ex(c->md, d, &n);
    for (unsigned int i = 0; i < n && i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[SHA256_HEX_LEN] = '\0';
}

void sha256Free(sha256Ctx *c) {
    if (!c) return;
    EVP_MD_CTX_free(c->md);
    free(c);
}

int sha256IsHex(const char *s) {
    size_t i;
    for (i = 0; s[i]; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return i == SHA256_HEX_LEN;
}
