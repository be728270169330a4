/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_s3sign.c - the S3 requests lake sends are signed right: AWS's
 * published SigV4 examples for S3 ("Examples: Signature Calculations",
 * Authorization header, payload in a single chunk: GET Object, PUT Object,
 * GET Bucket Lifecycle, GET Bucket (List Objects)), reproduced byte for byte.
 *
 * The bats suites' S3 server (radosgw) checks every signature, but only
 * that client and server agree; AWS's own examples pin the algorithm down
 * byte for byte, here.  Each documented request is
 * built by the backend's own code (s3XferInit, s3XferHeader, s3XferBody,
 * s3XferArm: the same calls a put or get makes, so the same URL encoding,
 * canonical query and x-amz-content-sha256) with the documented keys,
 * bucket and region, and performed by libcurl against a throwaway listener
 * on loopback; the test reads the request head that arrived on the socket
 * and compares its Authorization header with the documented one.
 *
 * Two things differ from production on purpose:
 *  - the clock: the documented x-amz-date header (20130524T000000Z) is
 *    added as a request header, and libcurl signs with a date header it is
 *    given instead of reading the clock (libcurl 7.88 then also sends its
 *    own copy of that header, which does not matter here: lake never adds
 *    x-amz-date itself);
 *  - the scheme: http://examplebucket.s3.amazonaws.com with CURLOPT_CONNECT_TO
 *    pointing at the listener, so there is no TLS handshake to fake.  The
 *    scheme is not signed; test_s3.c checks that the AWS environment gives
 *    https://examplebucket.s3.amazonaws.com for this bucket in us-east-1.
 */
#include <arpa/inet.h>
#include "core/curl.h"
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "stage/s3.h"
#include "tap.h"

#define KEY_ID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define HOST "examplebucket.s3.amazonaws.com"
#define DATE_HEADER "x-amz-date: 20130524T000000Z"
#define CREDENTIAL "Credential=" KEY_ID "/20130524/us-east-1/s3/aws4_request"

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Perform the armed request on h until its head has arrived at the
 * listener; copy the head (up to the blank line) to out.  0 on success. */
static int captureHead(CURL *h, int lfd, char *out, size_t outlen) {
    CURLM *m = curl_multi_init();
    int cfd = -1, running = 1;
    size_t len = 0;
    out[0] = '\0';
    curl_multi_add_handle(m, h);
    for (double end = now() + 10; now() < end && running && !strstr(out, "\r\n\r\n");) {
        curl_multi_perform(m, &running);
        if (cfd < 0) cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd >= 0 && len + 1 < outlen) {
            ssize_t n = recv(cfd, out + len, outlen - 1 - len, 0);
            if (n > 0) len += (size_t)n;
            out[len] = '\0';
        }
        struct curl_waitfd w = {cfd >= 0 ? cfd : lfd, CURL_WAIT_POLLIN, 0};
        curl_multi_poll(m, &w, 1, 20, NULL);
    }
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    if (cfd >= 0) close(cfd);
    char *blank = strstr(out, "\r\n\r\n");
    if (!blank) return -1;
    blank[2] = '\0';
    return 0;
}

/* The value of header name in a request head (first occurrence), or "". */
static void headerOf(const char *head, const char *name, char *out, size_t outlen) {
    size_t nl = strlen(name);
    out[0] = '\0';
    for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, nl) == 0 && l[2 + nl] == ':') {
            const char *v = l + 3 + nl;
            while (*v == ' ') v++;
            size_t vl = strcspn(v, "\r");
            snprintf(out, outlen, "%.*s", (int)vl, v);
            return;
        }
    }
}

typedef struct example {
    const char *name;
    const char *method, *key, *query;
    const char *headers[3];
    const char *body;
    const char *request_line;   /* what must arrive first */
    const char *signed_headers; /* documented SignedHeaders */
    const char *signature;      /* documented Signature */
} example;

static const example examples[] = {
    {"GET Object", "GET", "test.txt", NULL, {"Range: bytes=0-9", DATE_HEADER, NULL}, NULL,
     "GET /test.txt HTTP/1.1", "host;range;x-amz-content-sha256;x-amz-date",
     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    {"PUT Object", "PUT", "test$file.text", NULL,
     {"Date: Fri, 24 May 2013 00:00:00 GMT", DATE_HEADER, "x-amz-storage-class: REDUCED_REDUNDANCY"},
     "Welcome to Amazon S3.", "PUT /test%24file.text HTTP/1.1",
     "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
     "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    {"GET Bucket Lifecycle", "GET", "", "lifecycle=", {DATE_HEADER, NULL, NULL}, NULL,
     "GET /?lifecycle= HTTP/1.1", "host;x-amz-content-sha256;x-amz-date",
     "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    {"GET Bucket (List Objects)", "GET", "", "max-keys=2&prefix=J", {DATE_HEADER, NULL, NULL}, NULL,
     "GET /?max-keys=2&prefix=J HTTP/1.1", "host;x-amz-content-sha256;x-amz-date",
     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

/* Build example e with the backend's calls, send it to the listener, and
 * return the request head in head. */
static int sendExample(s3Client *c, const example *e, int lfd, int port, char *head,
                       size_t headlen) {
    s3Xfer x;
    lakeError err = {0};
    char connect[64];
    int rc = s3XferInit(&x, c, c->easy, e->method, e->key, e->query, &err);
    for (int i = 0; !rc && i < 3 && e->headers[i]; i++) rc = s3XferHeader(&x, &err, "%s", e->headers[i]);
    if (!rc && e->body) s3XferBody(&x, e->body, strlen(e->body), NULL);
    if (!rc) rc = s3XferArm(&x, &err);
    struct curl_slist *to = NULL;
    if (!rc) {
        snprintf(connect, sizeof connect, "%s:80:127.0.0.1:%d", HOST, port);
        to = curl_slist_append(NULL, connect);
        curl_easy_setopt(c->easy, CURLOPT_CONNECT_TO, to);
        rc = captureHead(c->easy, lfd, head, headlen);
    }
    if (rc) fprintf(stderr, "# %s: %s\n", e->name, err.msg[0] ? err.msg : "no request arrived");
    curl_slist_free_all(to);
    s3XferFree(&x);
    return rc;
}

static void testExamples(s3Client *c, int lfd, int port) {
    char head[8192], auth[1024], value[256], want[512];
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        const example *e = &examples[i];
        int sent = sendExample(c, e, lfd, port, head, sizeof head) == 0;
        ok(sent && strncmp(head, e->request_line, strlen(e->request_line)) == 0,
           "%s: the request line is '%s'", e->name, e->request_line);
        headerOf(head, "Host", value, sizeof value);
        ok(sent && strcmp(value, HOST) == 0, "%s: Host is %s", e->name, HOST);
        headerOf(head, "x-amz-content-sha256", value, sizeof value);
        const char *payload = e->body ? "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
                                      : S3_EMPTY_SHA256;
        ok(sent && strcmp(value, payload) == 0,
           "%s: x-amz-content-sha256 is the body's real SHA-256 (%.16s...)", e->name, payload);
        headerOf(head, "Authorization", auth, sizeof auth);
        snprintf(want, sizeof want, "AWS4-HMAC-SHA256 %s, SignedHeaders=%s, Signature=%s", CREDENTIAL,
                 e->signed_headers, e->signature);
        ok(sent && strcmp(auth, want) == 0, "%s: Signature=%s as documented", e->name, e->signature);
        if (strcmp(auth, want) != 0) fprintf(stderr, "#   got:  %s\n#   want: %s\n", auth, want);
    }
}

/* The same request with another secret, or with a session token, is
 * signed otherwise: the comparison above can fail. */
static void testControls(s3Client *c, int lfd, int port) {
    char head[8192], auth[1024];
    char *secret = c->secret;
    c->secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz";
    int sent = sendExample(c, &examples[0], lfd, port, head, sizeof head) == 0;
    headerOf(head, "Authorization", auth, sizeof auth);
    ok(sent && strstr(auth, "Signature=") && !strstr(auth, examples[0].signature),
       "another secret gives another signature");
    c->secret = secret;

    c->token = "FQoGZXIvYXdzEXAMPLETOKEN";
    sent = sendExample(c, &examples[0], lfd, port, head, sizeof head) == 0;
    headerOf(head, "Authorization", auth, sizeof auth);
    char token[256];
    headerOf(head, "x-amz-security-token", token, sizeof token);
    ok(sent && strcmp(token, c->token) == 0 &&
           strstr(auth, "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token,"),
       "a session token is sent as x-amz-security-token and signed");
    c->token = NULL;
}

/* AWS's published example of a presigned URL ("Authenticating Requests:
 * Using Query Parameters": GET test.txt, 86400 s, 20130524T000000Z),
 * through s3Presign, byte for byte; then what changes it. */
static void testPresign(s3Client *c) {
    char *base = c->base;
    c->base = "https://examplebucket.s3.amazonaws.com";
    const time_t t = 1369353600; /* 2013-05-24T00:00:00Z */
    const char *want =
        "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    char *u = s3Presign(c, "GET", "test.txt", NULL, NULL, 0, 86400, t);
    ok(u && strcmp(u, want) == 0, "presigned GET as documented (Signature=aeeed9bb...)");
    if (u && strcmp(u, want) != 0) fprintf(stderr, "#   got:  %s\n#   want: %s\n", u, want);
    free(u);
    u = s3Presign(c, "GET", "test.txt", NULL, NULL, 0, 86400, t + 1);
    ok(u && !strstr(u, "aeeed9bb") && strstr(u, "X-Amz-Date=20130524T000001Z"),
       "another second gives another date and signature");
    free(u);
    const char *hdr[] = {"content-md5:1B2M2Y8AsgTpgAmY7PhCfg==", "content-length:0"};
    u = s3Presign(c, "PUT", "a b/c", "partNumber=2&uploadId=x%2By", hdr, 2, 900, t);
    ok(u && strstr(u, "/a%20b/c?") && strstr(u, "X-Amz-SignedHeaders=content-length%3Bcontent-md5%3Bhost&") &&
           strstr(u, "&partNumber=2&uploadId=x%2By&X-Amz-Signature="),
       "signed headers sorted with host, the part's query kept, the key encoded");
    free(u);
    c->token = "tok/en";
    u = s3Presign(c, "GET", "test.txt", NULL, NULL, 0, 60, t);
    ok(u && strstr(u, "&X-Amz-Security-Token=tok%2Fen&X-Amz-SignedHeaders=host"),
       "a session token rides in the query, in its canonical place");
    free(u);
    c->token = NULL;
    ok(!s3Presign(c, "GET", "k", NULL, NULL, 0, 0, t) &&
           !s3Presign(c, "GET", "k", NULL, NULL, 0, S3_PRESIGN_EXPIRES_MAX + 1, t),
       "an expiry of 0 s or over 7 days is refused");
    c->base = base;
}

int main(void) {
    int port = 0, lfd = listener(&port);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    s3Client c = {
        .bucket = "examplebucket",
        .base = "http://" HOST,
        .region = "us-east-1",
        .key_id = KEY_ID,
        .secret = SECRET,
        .sigv4 = "aws:amz:us-east-1:s3",
        .easy = curl_easy_init(),
    };
    ok(lfd >= 0 && c.easy, "a loopback listener and a curl handle");
    if (lfd >= 0 && c.easy) {
        testExamples(&c, lfd, port);
        testControls(&c, lfd, port);
    }
    testPresign(&c);
    curl_easy_cleanup(c.easy);
    if (lfd >= 0) close(lfd);
    curl_global_cleanup();
    return tapDone();
}
