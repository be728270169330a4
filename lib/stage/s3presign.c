/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3presign.c - SigV4 query-signed URLs ("presigned"): AWS's
 * "Authenticating Requests: Using Query Parameters".
 *
 * The URL carries the algorithm, the credential scope, the date, the
 * expiry, the names of the signed headers and the signature as query
 * parameters; the payload is UNSIGNED-PAYLOAD.  Whoever holds the URL may
 * make exactly that request (method, key, query, and the signed headers
 * with exactly the signed values) until it expires, and nothing else: no
 * key material is in it.  tests/unit/test_s3sign.c checks the result
 * against AWS's published example byte for byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/crypto.h"
#include "stage/backend.h"
#include "stage/s3.h"

static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32]) {
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n);
}

static void hexOf(const unsigned char *b, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* The host (with its port, as curl sends it in Host:) and the path of the
 * client's base URL: "https://HOST[:PORT][/PATH]". */
static int splitBase(const char *base, char *host, size_t hn, const char **path) {
    const char *h = strstr(base, "://");
    if (!h) return -1;
    h += 3;
    const char *slash = strchr(h, '/');
    size_t n = slash ? (size_t)(slash - h) : strlen(h);
    if (n == 0 || n >= hn) return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    *path = slash ? slash : "";
    return 0;
}

static int byName(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *s3Presign(const s3Client *c, const char *method, const char *key, const char *query,
                const char *const *headers, size_t nheaders, int64_t expires, time_t now) {
    char host[256], amzdate[17], day[9];
    const char *path;
    if (splitBase(c->base, host, sizeof host, &path) || nheaders > S3_PRESIGN_HEADERS_MAX ||
        expires < 1 || expires > S3_PRESIGN_EXPIRES_MAX)
        return NULL;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm);
    memcpy(day, amzdate, 8);
    day[8] = '\0';

    /* the signed headers, host among them, sorted by name */
    char hostLine[300];
    snprintf(hostLine, sizeof hostLine, "host:%s", host);
    const char *lines[S3_PRESIGN_HEADERS_MAX + 1];
    size_t nl = 0;
    lines[nl++] = hostLine;
    for (size_t i = 0; i < nheaders; i++) lines[nl++] = headers[i];
    qsort(lines, nl, sizeof *lines, byName);

    char *enc = stagePercentEncode(key), *cred = NULL, *credEnc = NULL, *tokenEnc = NULL;
    char *canonHeaders = NULL, *signedNames = NULL, *q = NULL, *creq = NULL, *sts = NULL, *url = NULL;
    size_t chLen = 0, snLen = 0;
    FILE *ch = open_memstream(&canonHeaders, &chLen), *sn = open_memstream(&signedNames, &snLen);
    if (!ch || !sn) goto out;
    for (size_t i = 0; i < nl; i++) {
        const char *colon = strchr(lines[i], ':');
        if (!colon) goto out;
        fprintf(ch, "%s\n", lines[i]);
        fprintf(sn, "%s%.*s", i ? ";" : "", (int)(colon - lines[i]), lines[i]);
    }
    if (fclose(ch) | fclose(sn)) { ch = sn = NULL; goto out; }
    ch = sn = NULL;
    char *snEnc = stageQueryEncode(signedNames);
    if (asprintf(&cred, "%s/%s/%s/s3/aws4_request", c->key_id, day, c->region) < 0) cred = NULL;
    credEnc = cred ? stageQueryEncode(cred) : NULL;
    tokenEnc = c->token ? stageQueryEncode(c->token) : NULL;
    if (!enc || !snEnc || !credEnc || (c->token && !tokenEnc)) { free(snEnc); goto out; }
    /* canonical query: the X-Amz- names sort before the lower-case ones */
    int n = asprintf(&q,
                     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s&X-Amz-Date=%s&X-Amz-Expires=%lld"
                     "%s%s&X-Amz-SignedHeaders=%s%s%s",
                     credEnc, amzdate, (long long)expires, tokenEnc ? "&X-Amz-Security-Token=" : "",
                     tokenEnc ? tokenEnc : "", snEnc, query ? "&" : "", query ? query : "");
    free(snEnc);
    if (n < 0) { q = NULL; goto out; }
    if (asprintf(&creq, "%s\n%s/%s\n%s\n%s\n%s\nUNSIGNED-PAYLOAD", method, path, enc, q, canonHeaders,
                 signedNames) < 0) {
        creq = NULL;
        goto out;
    }
    sha256Ctx *h = sha256New();
    if (!h) goto out;
    char creqHash[SHA256_HEX_LEN + 1];
    sha256Update(h, creq, strlen(creq));
    sha256FinalHex(h, creqHash);
    sha256Free(h);
    if (asprintf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", amzdate, day, c->region,
                 creqHash) < 0) {
        sts = NULL;
        goto out;
    }
    /* the signing key: HMAC chain from "AWS4" + secret */
    unsigned char k[32], sig[32];
    char *seed = NULL, sigHex[65];
    if (asprintf(&seed, "AWS4%s", c->secret) < 0) goto out;
    hmac(seed, strlen(seed), day, k);
    OPENSSL_cleanse(seed, strlen(seed));
    free(seed);
    hmac(k, 32, c->region, k);
    hmac(k, 32, "s3", k);
    hmac(k, 32, "aws4_request", k);
    hmac(k, 32, sts, sig);
    OPENSSL_cleanse(k, sizeof k);
    hexOf(sig, 32, sigHex);
    if (asprintf(&url, "%s/%s?%s&X-Amz-Signature=%s", c->base, enc, q, sigHex) < 0) url = NULL;
out:
    if (ch) fclose(ch);
    if (sn) fclose(sn);
    free(enc);
    free(cred);
    free(credEnc);
    free(tokenEnc);
    free(canonHeaders);
    free(signedNames);
    free(q);
    free(creq);
    free(sts);
    return url;
}

void s3UploadTicket(const s3Client *c, const char *location, const char *upload_id,
                    char out[STAGE_TICKET_LEN + 1]) {
    unsigned char k[32], mac[32];
    /* a key of its own, derived from the secret: a ticket is no signature
     * S3 would take */
    hmac(c->secret, strlen(c->secret), "lake upload ticket v1", k);
    char *msg = NULL;
    if (asprintf(&msg, "%s\n%s", location, upload_id) < 0) {
        out[0] = '\0';
        return;
    }
    hmac(k, sizeof k, msg, mac);
    OPENSSL_cleanse(k, sizeof k);
    free(msg);
    hexOf(mac, sizeof mac, out);
}

int s3Md5Base64(const void *buf, size_t len, char out[STAGE_MD5_B64_LEN + 1]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = '\0';
    if (EVP_Digest(buf, len, md, &n, EVP_md5(), NULL) != 1 || n != 16) return -1;
    EVP_EncodeBlock((unsigned char *)out, md, 16);
    return 0;
}
