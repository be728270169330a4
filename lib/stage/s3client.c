/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3client.c - talking to S3: the AWS environment, one signed request and
 * its outcome as a lake exit code, retries with backoff, XML answers.
 *
 * A request (s3Xfer) is set up on a libcurl easy handle that the caller
 * owns, so the same code serves the blocking requests of the main thread
 * (s3XferRun) and the parts a multi handle drives (s3put.c).  Signing is
 * libcurl's: see s3.h for what that asks of the headers and the query.
 *
 * Failures map to DESIGN §1: a missing bucket or object is 66, a 401/403
 * is 77, an endpoint that cannot be reached (after retries) is 69, 5xx and
 * throttling that outlast the retries are 75, anything else S3 refuses is
 * 1.  Only network failures, timeouts, 5xx, 429 and S3's RequestTimeout,
 * SlowDown and InternalError are retried; other 4xx never are.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "core/retry.h"
#include "stage/backend.h"
#include "stage/s3.h"

/* A stalled transfer: less than this many bytes a second for this long is a
 * timeout (retried).  Connecting has its own limit. */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SECONDS 60L
#define CONNECT_TIMEOUT_MS 10000L
/* libcurl's buffers: an object read and a part sent move in larger
 * pieces than libcurl's defaults (16 and 64 KiB); every part in flight has
 * its own, so they count in a put's memory bound. */
#define RECV_BUFFER (256L * 1024)
#define SEND_BUFFER (128L * 1024)

/* An environment variable, NULL when unset or empty. */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* True when s could not travel in a header or a URL unchanged. */
static int unsafeText(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x21 || *p == 0x7f) return 1;
    return 0;
}

static int validRegion(const char *r) {
    size_t n = strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-");
    return n > 0 && n <= 32 && r[n] == '\0';
}

void s3ClientFree(s3Client *c) {
    if (!c) return;
    free(c->bucket);
    free(c->base);
    free(c->region);
    free(c->key_id);
    free(c->secret);
    free(c->token);
    free(c->ca_file);
    free(c->sigv4);
    if (c->easy) curl_easy_cleanup(c->easy);
    memset(c, 0, sizeof *c);
}

/* The base URL of a custom endpoint: http(s)://host[:port][/path], checked
 * by libcurl's URL parser (no I/O), without a trailing slash, then the
 * bucket (path-style addressing). */
static int endpointBase(s3Client *c, const char *endpoint, const char *stage_url,
                        lakeError *err) {
    const char *which = env("AWS_ENDPOINT_URL_S3") ? "AWS_ENDPOINT_URL_S3" : "AWS_ENDPOINT_URL";
    CURLU *u = curl_url();
    char *query = NULL, *frag = NULL;
    int ok = u && (strncmp(endpoint, "http://", 7) == 0 || strncmp(endpoint, "https://", 8) == 0) &&
             !unsafeText(endpoint) && curl_url_set(u, CURLUPART_URL, endpoint, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_NO_QUERY &&
             curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0) == CURLUE_NO_FRAGMENT;
    curl_free(query);
    curl_free(frag);
    curl_url_cleanup(u);
    if (!ok)
        return errSet(err, LAKE_ECONFIG, "%s: %s '%s' is not an http:// or https:// URL",
                      stage_url, which, endpoint);
    size_t n = strlen(endpoint);
    while (n && endpoint[n - 1] == '/') n--;
    if (asprintf(&c->base, "%.*s/%s", (int)n, endpoint, c->bucket) < 0) {
        c->base = NULL;
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    return 0;
}

int s3ClientInit(s3Client *c, const char *bucket, const char *stage_url, lakeError *err) {
    memset(c, 0, sizeof *c);
    const char *region = env("AWS_REGION");
    if (!region) region = env("AWS_DEFAULT_REGION");
    if (!region) region = "us-east-1";
    const char *endpoint = env("AWS_ENDPOINT_URL_S3");
    if (!endpoint) endpoint = env("AWS_ENDPOINT_URL");
    const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    const char *token = env("AWS_SESSION_TOKEN"), *ca = env("AWS_CA_BUNDLE");

    if (!id || !secret)
        return errSet(err, LAKE_ECONFIG,
                      "%s: no S3 credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
                      stage_url);
    if (unsafeText(id) || (token && unsafeText(token)))
        return errSet(err, LAKE_ECONFIG,
                      "%s: AWS_ACCESS_KEY_ID or AWS_SESSION_TOKEN holds white space or "
                      "control characters", stage_url);
    if (!validRegion(region))
        return errSet(err, LAKE_ECONFIG, "%s: region '%s' is not a region name", stage_url, region);

    c->bucket = strdup(bucket);
    c->region = strdup(region);
    c->key_id = strdup(id);
    c->secret = strdup(secret);
    c->token = token ? strdup(token) : NULL;
    c->ca_file = ca ? strdup(ca) : NULL;
    c->easy = curl_easy_init();
    if (asprintf(&c->sigv4, "aws:amz:%s:s3", region) < 0) c->sigv4 = NULL;
    if (!c->bucket || !c->region || !c->key_id || !c->secret || (token && !c->token) ||
        (ca && !c->ca_file) || !c->easy || !c->sigv4) {
        s3ClientFree(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    int rc = 0;
    if (endpoint) {
        rc = endpointBase(c, endpoint, stage_url, err);
    } else {
        /* AWS itself: virtual-host addressing, but path style for a dotted
         * bucket, whose name would not match the TLS certificate.
         * us-east-1 uses the global endpoint. */
        const char *dot = strcmp(region, "us-east-1") == 0 ? "" : ".";
        const char *reg = *dot ? region : "";
        int n = strchr(bucket, '.')
                    ? asprintf(&c->base, "https://s3%s%s.amazonaws.com/%s", dot, reg, bucket)
                    : asprintf(&c->base, "https://%s.s3%s%s.amazonaws.com", bucket, dot, reg);
        if (n < 0) {
            c->base = NULL;
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
        }
    }
    if (rc) s3ClientFree(c);
    return rc;
}

int s3ClientInitVended(s3Client *c, const char *bucket, lakeError *err) {
    s3ClientFree(c);
    memset(c, 0, sizeof *c);
    const char *ca = env("AWS_CA_BUNDLE");
    c->bucket = strdup(bucket);
    c->ca_file = ca ? strdup(ca) : NULL;
    c->easy = curl_easy_init();
    if (!c->bucket || (ca && !c->ca_file) || !c->easy) {
        s3ClientFree(c);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stage");
    }
    return 0;
}

/* The start of every request: x cleared, h reset. */
static void xferReset(s3Xfer *x, const s3Client *c, CURL *h, const char *method) {
    memset(x, 0, sizeof *x);
    x->h = h;
    x->c = c;
    x->method = method;
    x->length = x->range_total = -1;
    curl_easy_reset(h);
}

int s3XferInitUrl(s3Xfer *x, const s3Client *c, CURL *h, const char *method, const char *url,
                  const char *what, lakeError *err) {
    xferReset(x, c, h, method);
    x->presigned = 1;
    x->url = strdup(url);
    x->what = strdup(what);
    if (!x->url || !x->what) {
        s3XferFree(x);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    }
    return 0;
}

/* --- one request ---------------------------------------------------------- */

static size_t onSend(char *buf, size_t size, size_t n, void *ctx) {
    s3Xfer *x = ctx;
    size_t len = size * n, left = x->send_len - x->send_off;
    if (len > left) len = left;
    memcpy(buf, x->send + x->send_off, len);
    x->send_off += len;
    return len;
}

/* libcurl rewinds the body when it resends a request on a new connection. */
static int onSeek(void *ctx, curl_off_t offset, int origin) {
    s3Xfer *x = ctx;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > x->send_len)
        return CURL_SEEKFUNC_CANTSEEK;
    x->send_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* Copy the value of header line buf if it is called name (any case). */
static int headerValue(const char *buf, size_t len, const char *name, char *out,
                       size_t outlen) {
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(buf, name, nl) != 0 || buf[nl] != ':') return 0;
    const char *v = buf + nl + 1, *end = buf + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    size_t vl = (size_t)(end - v);
    if (vl >= outlen) vl = outlen - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
    return 1;
}

static size_t onHeader(char *buf, size_t size, size_t n, void *ctx) {
    s3Xfer *x = ctx;
    size_t len = size * n;
    char num[32], cr[96];
    if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) { /* a new answer (after 100) */
        x->etag[0] = x->meta_sha256[0] = '\0';
        x->length = x->range_total = -1;
    } else if (headerValue(buf, len, "content-length", num, sizeof num)) {
        char *end;
        long long v = strtoll(num, &end, 10);
        x->length = (end != num && *end == '\0' && v >= 0) ? v : -1;
    } else if (headerValue(buf, len, "content-range", cr, sizeof cr)) {
        /* "bytes A-B/TOTAL" */
        const char *slash = strchr(cr, '/');
        char *end;
        long long v = slash ? strtoll(slash + 1, &end, 10) : -1;
        x->range_total = (slash && end != slash + 1 && *end == '\0' && v >= 0) ? v : -1;
    } else if (!headerValue(buf, len, "etag", x->etag, sizeof x->etag)) {
        char sha[SHA256_HEX_LEN + 2];
        if (headerValue(buf, len, "x-amz-meta-sha256", sha, sizeof sha) && sha256IsHex(sha))
            for (int i = 0; i <= SHA256_HEX_LEN; i++)
                x->meta_sha256[i] = (sha[i] >= 'A' && sha[i] <= 'F') ? (char)(sha[i] + 32) : sha[i];
    }
    return len;
}

static size_t onBody(char *buf, size_t size, size_t n, void *ctx) {
    s3Xfer *x = ctx;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
    x->status = status; /* for the sink: a 200 or a 206 */
    if (x->sink && status >= 200 && status < 300) {
        if (x->sink(x->sink_ctx, buf, len) < 0) {
            x->sink_failed = 1;
            return 0;
        }
        return len;
    }
    size_t keep = len;
    if (x->body_len + keep > S3_BODY_MAX) keep = S3_BODY_MAX - x->body_len;
    if (keep) {
        char *b = realloc(x->body, x->body_len + keep + 1);
        if (!b) return len; /* the answer is judged by its status alone */
        memcpy(b + x->body_len, buf, keep);
        x->body = b;
        x->body_len += keep;
        b[x->body_len] = '\0';
    }
    return len;
}

static int onProgress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    s3Xfer *x = ctx;
    (void)dt, (void)dn, (void)ut, (void)un;
    if ((x->stop && *x->stop) || (x->cancel && atomic_load(x->cancel))) {
        x->stopped = 1;
        return 1;
    }
    return 0;
}

int s3XferInit(s3Xfer *x, const s3Client *c, CURL *h, const char *method, const char *key,
               const char *query, lakeError *err) {
    xferReset(x, c, h, method);
    char *enc = stagePercentEncode(key), *loc = s3Location(c->bucket, key);
    int ok = enc && loc;
    if (ok && asprintf(&x->url, "%s/%s%s%s", c->base, enc, query ? "?" : "", query ? query : "") < 0) {
        x->url = NULL;
        ok = 0;
    }
    if (ok && asprintf(&x->what, "%s%s%s", loc, query ? "?" : "", query ? query : "") < 0) {
        x->what = NULL;
        ok = 0;
    }
    free(enc);
    free(loc);
    if (!ok) {
        s3XferFree(x);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    }
    return 0;
}

int s3XferHeader(s3Xfer *x, lakeError *err, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        return errSet(err, LAKE_EFAIL, "%s: header too long", x->what);
    struct curl_slist *l = curl_slist_append(x->headers, line);
    if (!l) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
    x->headers = l;
    return 0;
}

void s3XferBody(s3Xfer *x, const void *buf, size_t len, const char *sha256_hex) {
    x->send = buf;
    x->send_len = len;
    if (sha256_hex) {
        memcpy(x->send_sha, sha256_hex, SHA256_HEX_LEN + 1);
    } else {
        sha256Ctx *h = sha256New();
        if (!h) return; /* s3XferArm notices the missing digest */
        sha256Update(h, buf, len);
        sha256FinalHex(h, x->send_sha);
        sha256Free(h);
    }
}

int s3XferArm(s3Xfer *x, lakeError *err) {
    const s3Client *c = x->c;
    CURL *h = x->h;
    int hasBody = strcmp(x->method, "PUT") == 0 || strcmp(x->method, "POST") == 0;
    if (x->presigned) {
        /* the URL carries the signature; the signed headers were added */
    } else {
        if (hasBody && !x->send_sha[0]) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "request");
        if (s3XferHeader(x, err, "x-amz-content-sha256: %s", hasBody ? x->send_sha : S3_EMPTY_SHA256) ||
            (c->token && s3XferHeader(x, err, "x-amz-security-token: %s", c->token)))
            return err->code;
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->key_id);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->secret);
    }
    curl_easy_setopt(h, CURLOPT_URL, x->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_SECONDS);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, onProgress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (x->sink) curl_easy_setopt(h, CURLOPT_BUFFERSIZE, RECV_BUFFER);
    if (c->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (hasBody) {
        curl_easy_setopt(h, CURLOPT_READFUNCTION, onSend);
        curl_easy_setopt(h, CURLOPT_READDATA, x);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, onSeek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
        curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, SEND_BUFFER);
        if (strcmp(x->method, "PUT") == 0) {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->send_len);
        } else {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->send_len);
        }
    } else if (strcmp(x->method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(x->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->method);
    }
    return 0;
}

void s3XferRestart(s3Xfer *x) {
    x->send_off = 0;
    x->status = 0;
    x->length = x->range_total = -1;
    x->etag[0] = x->meta_sha256[0] = '\0';
    free(x->body);
    x->body = NULL;
    x->body_len = 0;
    x->sink_failed = 0;
    x->errbuf[0] = '\0';
}

void s3XferFree(s3Xfer *x) {
    curl_slist_free_all(x->headers);
    free(x->url);
    free(x->what);
    free(x->body);
    x->headers = NULL;
    x->url = x->what = x->body = NULL;
}

lakeCode s3ErrorCode(long status, const char *code, int *retryable) {
    static const char *const transient[] = {"RequestTimeout", "SlowDown", "InternalError",
                                            "ServiceUnavailable"};
    /* 501: the store does not implement it, and will not tomorrow */
    *retryable = (status >= 500 && status != 501) || status == 429;
    for (size_t i = 0; code && i < sizeof transient / sizeof transient[0]; i++)
        if (strcmp(code, transient[i]) == 0) *retryable = 1;
    if (*retryable) return LAKE_ETEMP;
    if (status == 401 || status == 403) return LAKE_EPERM;
    if (code && (strcmp(code, "ExpiredToken") == 0 || strcmp(code, "InvalidToken") == 0 ||
                 strcmp(code, "InvalidAccessKeyId") == 0))
        return LAKE_EPERM;
    if (status == 404 && !(code && strcmp(code, "NoSuchUpload") == 0)) return LAKE_ENOINPUT;
    return LAKE_EFAIL;
}

int s3XferUploadGone(const s3Xfer *x) {
    if (x->status != 404 || !x->body) return 0;
    char *code = s3XmlText(x->body, x->body_len, "Code");
    int gone = code && strcmp(code, "NoSuchUpload") == 0;
    free(code);
    return gone;
}

/* The message of an S3 error answer. */
static int s3Refused(s3Xfer *x, lakeError *err) {
    char *code = x->body ? s3XmlText(x->body, x->body_len, "Code") : NULL;
    char *msg = x->body ? s3XmlText(x->body, x->body_len, "Message") : NULL;
    lakeCode rc = s3ErrorCode(x->status, code, &x->retryable);
    char detail[256];
    /* radosgw answers an empty <Message/>: the code alone then */
    int has_msg = msg && msg[0];
    snprintf(detail, sizeof detail, "HTTP %ld%s%s%s%.160s", x->status, code ? " " : "",
             code ? code : "", has_msg ? ": " : "", has_msg ? msg : "");
    if (rc == LAKE_ENOINPUT && code && strcmp(code, "NoSuchBucket") == 0)
        errSet(err, rc, "%s: bucket '%s' does not exist (%s)", x->what, x->c->bucket, detail);
    else if (rc == LAKE_ENOINPUT)
        errSet(err, rc, "%s: no such object (%s)", x->what, detail);
    else if (rc == LAKE_EPERM)
        errSet(err, rc, "%s: access denied (%s)", x->what, detail);
    else if (rc == LAKE_ETEMP)
        errSet(err, rc, "%s: the object store is failing or busy (%s); retry later", x->what, detail);
    else
        errSet(err, rc, "%s: refused by the object store (%s)", x->what, detail);
    snprintf(err->cause, sizeof err->cause, "HTTP %ld %s", x->status, code ? code : "");
    free(code);
    free(msg);
    return rc;
}

/* The message of a transfer that failed below HTTP. */
static int s3Failed(s3Xfer *x, CURLcode cc, lakeError *err) {
    const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc);
    int rc;
    x->retryable = 0;
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SEND_FAIL_REWIND:
        x->retryable = 1;
        rc = errSet(err, LAKE_EUNAVAIL, "%s: the object store is unreachable (%s)", x->what, why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        rc = errSet(err, LAKE_EUNAVAIL, "%s: the object store's certificate is not trusted (%s)",
                    x->what, why);
        break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        rc = errSet(err, LAKE_ECONFIG, "%s: bad endpoint URL (%s)", x->what, why);
        break;
    default:
        rc = errSet(err, LAKE_EFAIL, "%s: %s", x->what, why);
    }
    snprintf(err->cause, sizeof err->cause, "curl %d", (int)cc);
    return rc;
}

int s3XferOutcome(s3Xfer *x, CURLcode cc, lakeError *err) {
    x->attempts++;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
    int rc = 0;
    x->retryable = 0;
    if (x->sink_failed) {
        rc = err->code ? err->code : LAKE_EFAIL; /* the sink said why */
    } else if (x->stopped) {
        rc = errSet(err, LAKE_EFAIL, "%s: interrupted", x->what);
    } else if (cc != CURLE_OK) {
        rc = s3Failed(x, cc, err);
    } else if (x->status < 200 || x->status > 299) {
        rc = s3Refused(x, err);
    }
    if (traceEnabled()) {
        char bytes[48] = "";
        if (x->send_len) snprintf(bytes, sizeof bytes, " bytes=%zu", x->send_len);
        if (x->stopped)
            traceLine("stage", "%s %s%s -> interrupted", x->method, x->what, bytes);
        else if (cc == CURLE_OK || x->sink_failed)
            traceLine("stage", "%s %s%s -> %ld", x->method, x->what, bytes, x->status);
        else
            traceLine("stage", "%s %s%s -> curl %d (%s)", x->method, x->what, bytes, (int)cc,
                      x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
    }
    return rc;
}

int s3XferRun(s3Xfer *x, lakeError *err) {
    int rc = s3XferArm(x, err);
    while (!rc) {
        s3XferRestart(x);
        rc = s3XferOutcome(x, curl_easy_perform(x->h), err);
        if (!rc || !x->retryable || x->attempts >= (x->max_attempts ? x->max_attempts : S3_ATTEMPTS))
            break;
        if (retrySleep(s3BackoffMs(x->attempts), x->stop))
            return errSet(err, LAKE_EFAIL, "%s: interrupted", x->what);
        rc = 0;
    }
    if (rc == LAKE_ETEMP || (rc == LAKE_EUNAVAIL && x->retryable)) s3NoteAttempts(err, x->attempts);
    return rc;
}

void s3NoteAttempts(lakeError *err, int attempts) {
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " after %d attempts", attempts);
}

long s3BackoffMs(int attempt) {
    static _Thread_local unsigned seed;
    if (!seed) seed = (unsigned)time(NULL) ^ (unsigned)clock();
    long d = retryCeilingMs(attempt);
    return d / 2 + rand_r(&seed) % (d / 2 + 1);
}

/* --- XML answers ----------------------------------------------------------- */

/* S3's answers are small flat documents (<Error><Code>…</Code>…,
 * <InitiateMultipartUploadResult>…<UploadId>…): lake needs the text of a
 * few leaf elements and the name of the root.  A library parser would
 * cost more memory than the whole bound of a put (libxml2 pulls in ICU),
 * so this reads just that, strictly: an element with markup inside is not
 * a leaf and yields nothing. */

/* Decode the five predefined entities and character references (ASCII
 * only) of s[0..n); NULL on anything else. */
static char *xmlDecode(const char *s, size_t n) {
    static const struct { const char *ent; char ch; } ents[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''},
    };
    char *out = malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '&') { *o++ = s[i]; continue; }
        size_t k, rest = n - i - 1;
        for (k = 0; k < sizeof ents / sizeof ents[0]; k++) {
            size_t el = strlen(ents[k].ent);
            if (rest >= el && memcmp(s + i + 1, ents[k].ent, el) == 0) {
                *o++ = ents[k].ch;
                i += el;
                break;
            }
        }
        if (k < sizeof ents / sizeof ents[0]) continue;
        char *end;
        long c = -1;
        if (rest > 2 && s[i + 1] == '#')
            c = s[i + 2] == 'x' ? strtol(s + i + 3, &end, 16) : strtol(s + i + 2, &end, 10);
        if (c <= 0 || c > 0x7e || end >= s + n || *end != ';') {
            free(out);
            return NULL;
        }
        *o++ = (char)c;
        i = (size_t)(end - s);
    }
    *o = '\0';
    return out;
}

/* True when s (length n) opens the tag of name: "<name>" or "<name ...>". */
static int startTag(const char *s, const char *end, const char *name) {
    size_t nl = strlen(name);
    return (size_t)(end - s) > nl + 1 && s[0] == '<' && memcmp(s + 1, name, nl) == 0 &&
           (s[nl + 1] == '>' || s[nl + 1] == ' ' || s[nl + 1] == '\t' || s[nl + 1] == '\n' ||
            s[nl + 1] == '\r');
}

char *s3XmlText(const char *xml, size_t len, const char *name) {
    if (!xml) return NULL;
    const char *end = xml + len, *p = xml;
    size_t nl = strlen(name);
    while ((p = memchr(p, '<', (size_t)(end - p)))) {
        if (!startTag(p, end, name)) { p++; continue; }
        const char *gt = memchr(p, '>', (size_t)(end - p));
        if (!gt || gt[-1] == '/') return NULL; /* cut short, or <name/> */
        const char *text = gt + 1, *lt = memchr(text, '<', (size_t)(end - text));
        if (!lt || (size_t)(end - lt) < nl + 3 || lt[1] != '/' || memcmp(lt + 2, name, nl) != 0 ||
            lt[nl + 2] != '>')
            return NULL;
        return xmlDecode(text, (size_t)(lt - text));
    }
    return NULL;
}

int s3XmlRootIs(const char *xml, size_t len, const char *name) {
    const char *end = xml ? xml + len : NULL, *p = xml;
    while (p && (p = memchr(p, '<', (size_t)(end - p)))) {
        if (p + 1 < end && (p[1] == '?' || p[1] == '!')) { /* declaration, comment */
            p++;
            continue;
        }
        return startTag(p, end, name);
    }
    return 0;
}
