/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_s3.c - unit tests of the S3 stage's string work: stage URLs,
 * locations and containment (before any request), the part-size plan, the
 * AWS environment, XML answers and the mapping of S3 errors to exit codes.
 */
#include <stdlib.h>
#include <string.h>

#include "stage/backend.h"
#include "stage/s3.h"
#include "stage/stage.h"
#include "tap.h"

#define MIB (1024LL * 1024)

static void clearAwsEnv(void) {
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void testStageUrls(void) {
    static const struct { const char *url, *bucket, *prefix; } good[] = {
        {"s3://acme-lake/stage", "acme-lake", "stage"},
        {"s3://acme-lake/stage/", "acme-lake", "stage"},
        {"s3://acme-lake/stage///", "acme-lake", "stage"},
        {"s3://a.b-c/x/y/z", "a.b-c", "x/y/z"},
        {"s3://abc/a%20b", "abc", "a b"},
        {"s3://abc/st%61ge", "abc", "stage"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char *b = NULL, *p = NULL;
        lakeError err = {0};
        int rc = s3ParseStage(good[i].url, &b, &p, &err);
        ok(rc == 0 && b && p && strcmp(b, good[i].bucket) == 0 && strcmp(p, good[i].prefix) == 0,
           "stage %s is bucket %s, prefix '%s'", good[i].url, good[i].bucket, good[i].prefix);
        free(b);
        free(p);
    }
    static const char *const bad[] = {
        "s3://acme-lake",        "s3://acme-lake/",       "s3://acme-lake//",
        "s3:///stage",           "s3://ab/stage",         "s3://Acme/stage",
        "s3://acme_lake/stage",  "s3://-acme/stage",      "s3://acme-/stage",
        "s3://a..b/stage",       "s3://acme/a//b",        "s3://acme/./b",
        "s3://acme/a/..",        "s3://acme/%2e%2e/b",    "s3://acme/a%2Fb",
        "s3://acme/a%00b",       "s3://acme/a%zz",        "s3://acme/a?x=1",
        "s3://acme/a#frag",      "s3://acme/a%0Ab",       "s3:/acme/stage",
        "file:///acme/stage",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = NULL, *p = NULL;
        lakeError err = {0};
        int rc = s3ParseStage(bad[i], &b, &p, &err);
        ok(rc == LAKE_ECONFIG && !b && !p && strstr(err.msg, bad[i]),
           "stage %s is refused (78) naming the URL", bad[i]);
    }
}

static void testContainment(void) {
    static const struct { const char *loc; const char *rel; } cases[] = {
        {"s3://acme-lake/stage/files/2026/12/01ABC", "files/2026/12/01ABC"},
        {"s3://acme-lake/stage/tables/t1/seg", "tables/t1/seg"},
        {"s3://acme-lake/st%61ge/files/x", "files/x"},       /* the same key spelled otherwise */
        {"s3://acme-lake/stage/a%20b", "a b"},
        {"s3://acme-lake/stage", NULL},                       /* the prefix itself */
        {"s3://acme-lake/stage/", NULL},                      /* empty key below it */
        {"s3://acme-lake/stage2/x", NULL},                    /* sibling prefix */
        {"s3://acme-lake/stage-old/x", NULL},
        {"s3://acme-lake/stag/x", NULL},
        {"s3://acme-lake2/stage/x", NULL},                    /* wrong bucket */
        {"s3://acme/stage/x", NULL},
        {"s3://ACME-LAKE/stage/x", NULL},
        {"s3://acme-lake/stage/../x", NULL},                  /* .. */
        {"s3://acme-lake/stage/files/../../x", NULL},
        {"s3://acme-lake/stage/%2e%2e/x", NULL},              /* encoded .. */
        {"s3://acme-lake/stage/%2E%2E/x", NULL},
        {"s3://acme-lake/stage/files/%2e%2e/%2e%2e/x", NULL},
        {"s3://acme-lake/stage/./x", NULL},
        {"s3://acme-lake/stage//x", NULL},
        {"s3://acme-lake/stage/x/", NULL},
        {"s3://acme-lake/stage%2fx", NULL},                   /* encoded slash */
        {"s3://acme-lake/stage%2Fx", NULL},
        {"s3://acme-lake/stage/x%00y", NULL},                 /* encoded NUL */
        {"s3://acme-lake/stage/x%0ay", NULL},                 /* control character */
        {"s3://acme-lake/stage/x%zz", NULL},                  /* bad escape */
        {"s3://acme-lake/stage/x%4", NULL},
        {"s3://acme-lake/stage/x?versionId=1", NULL},         /* a query */
        {"s3://acme-lake/stage/x#y", NULL},
        {"s3://acme-lake%2fstage/x", NULL},
        {"s3:/acme-lake/stage/x", NULL},
        {"S3://acme-lake/stage/x", NULL},
        {"file:///acme-lake/stage/x", NULL},
        {"https://acme-lake.s3.amazonaws.com/stage/x", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *rel = s3Relative("acme-lake", "stage", cases[i].loc);
        int good = cases[i].rel ? rel && strcmp(rel, cases[i].rel) == 0 : rel == NULL;
        ok(good, "%s is %s%s", cases[i].loc, cases[i].rel ? "inside: " : "outside",
           cases[i].rel ? cases[i].rel : "");
        free(rel);
    }
    char *rel = s3Relative("acme-lake", "a/b", "s3://acme-lake/a/b/c");
    ok(rel && strcmp(rel, "c") == 0, "a prefix of two components contains its keys");
    free(rel);
    ok(!s3Relative("acme-lake", "a/b", "s3://acme-lake/a/bc/d"), "...but not a sibling's");

    char *loc = s3Location("acme-lake", "stage/files/2026/12/a b+c$d~e");
    ok(loc && strcmp(loc, "s3://acme-lake/stage/files/2026/12/a%20b%2Bc%24d~e") == 0,
       "locations percent-encode all but unreserved characters and '/'");
    free(loc);
}

/* Through the stage interface: stageOpen dispatches s3://, normalises the
 * URL, and stageContains answers with 65 (credentials are fake: no request
 * is ever made here). */
static void testStageInterface(void) {
    stage *st = NULL;
    lakeError err = {0};
    clearAwsEnv();
    /* without credentials: containment works, a get is 78 before any
     * request (the endpoint is a closed port: a request would be 69) */
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
    ok(stageOpen("s3://acme-lake/stage/", &st, &err) == 0, "an S3 stage opens without credentials");
    ok(st && stageContains(st, "s3://acme-lake/stage/files/X", &err) == 0 &&
           stageContains(st, "s3://acme-lake/stage2/x", &err) == LAKE_EDATA,
       "...and tells inside from outside");
    fileValue fv = {.location = "s3://acme-lake/stage/files/X", .size = -1};
    int fd = -1;
    lakeWriter w = {fdWrite, &fd, "nowhere"};
    ok(st && stageGet(st, &fv, &w, 1, NULL, &err) == LAKE_ECONFIG && strstr(err.msg, "AWS_ACCESS_KEY_ID"),
       "...but a get is a configuration error (78): %s", err.msg);
    stageClose(st);
    unsetenv("AWS_ENDPOINT_URL");
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    ok(stageOpen("s3://acme-lake/stage/", &st, &err) == 0, "open an s3:// stage");
    ok(st && strcmp(stageUrl(st), "s3://acme-lake/stage") == 0, "a trailing slash is normalised away");
    ok(stageContains(st, "s3://acme-lake/stage/files/2026/12/X", &err) == 0, "inside the stage");
    ok(stageContains(st, "s3://acme-lake/stage2/x", &err) == LAKE_EDATA &&
           strcmp(err.msg, "s3://acme-lake/stage2/x: outside the managed stage") == 0,
       "a sibling prefix is outside the managed stage (65)");
    ok(stageContains(st, "file:///acme-lake/stage/x", &err) == LAKE_EDATA,
       "a file:// location is outside an S3 stage");
    char *rel = stageRelativePath(st, "s3://acme-lake/stage/files/2026/12/X");
    ok(rel && strcmp(rel, "files/2026/12/X") == 0, "the relative path is the key below the prefix");
    free(rel);
    stageClose(st);
    st = NULL;
    ok(stageOpen("s3://acme-lake/stage%2Fx", &st, &err) == LAKE_ECONFIG, "an encoded slash in a stage URL is refused");
    ok(stageOpen("s3://acme-lake", &st, &err) == LAKE_ECONFIG, "a stage needs a prefix");
    clearAwsEnv();
}

static void testPartSize(void) {
    ok(s3PartSize(0, -1) == 8 * MIB, "the default part size is 8 MiB");
    ok(s3PartSize(5 * MIB, -1) == 5 * MIB, "a stated part size is kept");
    ok(s3PartSize(0, 8 * MIB * 10000) == 8 * MIB, "10,000 parts of 8 MiB fit 78.1 GiB");
    ok(s3PartSize(0, 8 * MIB * 10000 + 1) == 9 * MIB, "one byte more grows the part to 9 MiB");
    ok(s3PartSize(5 * MIB, 100LL * 1024 * MIB) == 11 * MIB,
       "100 GiB in parts of at least 5 MiB: 11 MiB (10.24 rounded up to a whole MiB)");
    int64_t p = s3PartSize(0, S3_OBJECT_MAX);
    ok(p * 10000 >= S3_OBJECT_MAX && p <= STAGE_PART_MAX && p % MIB == 0,
       "5 TiB fits in 10,000 whole-MiB parts under 5 GiB (%lld)", (long long)p);
    ok(s3PartSize(64 * MIB, 1000) == 64 * MIB, "a small stated size never shrinks the part");
}

static void testClient(void) {
    s3Client c;
    lakeError err = {0};
    clearAwsEnv();
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == LAKE_ECONFIG &&
           strstr(err.msg, "AWS_SECRET_ACCESS_KEY"),
       "a key id without a secret is a configuration error");
    setenv("AWS_SECRET_ACCESS_KEY", "", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == LAKE_ECONFIG, "an empty secret counts as unset");
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);

    ok(s3ClientInit(&c, "examplebucket", "s3://examplebucket/p", &err) == 0, "credentials from the environment");
    ok(strcmp(c.base, "https://examplebucket.s3.amazonaws.com") == 0 &&
           strcmp(c.sigv4, "aws:amz:us-east-1:s3") == 0 && !c.token,
       "AWS, us-east-1 by default: virtual-host style on the global endpoint (%s)", c.base);
    s3ClientFree(&c);

    setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == 0 &&
           strcmp(c.base, "https://acme.s3.eu-west-1.amazonaws.com") == 0 &&
           strcmp(c.sigv4, "aws:amz:eu-west-1:s3") == 0,
       "AWS_DEFAULT_REGION picks the regional endpoint (%s)", c.base);
    s3ClientFree(&c);
    setenv("AWS_REGION", "ap-south-2", 1);
    ok(s3ClientInit(&c, "my.dotted.bucket", "s3://my.dotted.bucket/p", &err) == 0 &&
           strcmp(c.base, "https://s3.ap-south-2.amazonaws.com/my.dotted.bucket") == 0,
       "AWS_REGION wins; a dotted bucket uses path style (%s)", c.base);
    s3ClientFree(&c);
    setenv("AWS_REGION", "eu-west-1\r\nX: y", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == LAKE_ECONFIG, "a region that is no region name is refused");
    unsetenv("AWS_REGION");

    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == 0 && strcmp(c.base, "http://127.0.0.1:9000/acme") == 0,
       "a custom endpoint uses path-style addressing (%s)", c.base);
    s3ClientFree(&c);
    setenv("AWS_ENDPOINT_URL_S3", "https://minio.example:9443", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == 0 &&
           strcmp(c.base, "https://minio.example:9443/acme") == 0,
       "AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL");
    s3ClientFree(&c);
    static const char *const badEndpoints[] = {"ftp://x", "127.0.0.1:9000", "http://a b/",
                                               "http://x/?q=1", "http://x/#f", "http://"};
    for (size_t i = 0; i < sizeof badEndpoints / sizeof badEndpoints[0]; i++) {
        setenv("AWS_ENDPOINT_URL_S3", badEndpoints[i], 1);
        ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == LAKE_ECONFIG &&
               strstr(err.msg, "AWS_ENDPOINT_URL_S3"),
           "endpoint '%s' is a configuration error naming the variable", badEndpoints[i]);
    }
    unsetenv("AWS_ENDPOINT_URL_S3");
    setenv("AWS_SESSION_TOKEN", "tok\nen", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == LAKE_ECONFIG, "a session token with a newline is refused");
    setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzE", 1);
    ok(s3ClientInit(&c, "acme", "s3://acme/p", &err) == 0 && c.token && strcmp(c.token, "FQoGZXIvYXdzE") == 0,
       "a session token is taken");
    s3ClientFree(&c);
    clearAwsEnv();
}

static void testXml(void) {
    const char *err = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
                      "exist &amp; never did &#x41;&#66;</Message><BucketName>x</BucketName></Error>";
    char *t = s3XmlText(err, strlen(err), "Code");
    ok(t && strcmp(t, "NoSuchBucket") == 0, "the Code of an error document");
    free(t);
    t = s3XmlText(err, strlen(err), "Message");
    ok(t && strcmp(t, "The specified bucket does not exist & never did AB") == 0,
       "entities and character references are decoded");
    free(t);
    ok(s3XmlRootIs(err, strlen(err), "Error") && !s3XmlRootIs(err, strlen(err), "Code"),
       "the root element is told, past the declaration");
    const char *init = "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                       "<Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE&quot;x</UploadId>"
                       "</InitiateMultipartUploadResult>";
    t = s3XmlText(init, strlen(init), "UploadId");
    ok(t && strcmp(t, "VXBsb2FkIElE\"x") == 0, "the UploadId of an answer");
    free(t);
    ok(!s3XmlText(init, strlen(init), "Upload"), "a name is matched whole, not as a prefix");
    static const char *const bad[] = {"<Code>x", "<Code>a<b/></Code>", "<Code/>", "<Code>&bogus;</Code>",
                                      "<Code>&#0;</Code>", "<Code>a</Cod>", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = s3XmlText(bad[i], strlen(bad[i]), "Code");
        ok(!t, "no text from '%s'", bad[i]);
        free(t);
    }
    ok(!s3XmlText(NULL, 0, "Code") && !s3XmlRootIs(NULL, 0, "Error"), "no document, no text");
}

static void testErrorCodes(void) {
    static const struct { long status; const char *code; lakeCode want; int retry; } cases[] = {
        {404, "NoSuchBucket", LAKE_ENOINPUT, 0},
        {404, "NoSuchKey", LAKE_ENOINPUT, 0},
        {404, NULL, LAKE_ENOINPUT, 0},
        {404, "NoSuchUpload", LAKE_EFAIL, 0},
        {403, "AccessDenied", LAKE_EPERM, 0},
        {403, "InvalidAccessKeyId", LAKE_EPERM, 0},
        {403, "SignatureDoesNotMatch", LAKE_EPERM, 0},
        {401, NULL, LAKE_EPERM, 0},
        {400, "ExpiredToken", LAKE_EPERM, 0},
        {400, "InvalidArgument", LAKE_EFAIL, 0},
        {400, "RequestTimeout", LAKE_ETEMP, 1},
        {405, "MethodNotAllowed", LAKE_EFAIL, 0},
        {409, "BucketAlreadyExists", LAKE_EFAIL, 0},
        {429, NULL, LAKE_ETEMP, 1},
        {500, "InternalError", LAKE_ETEMP, 1},
        {503, "SlowDown", LAKE_ETEMP, 1},
        {502, NULL, LAKE_ETEMP, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int retry = -1;
        lakeCode got = s3ErrorCode(cases[i].status, cases[i].code, &retry);
        ok(got == cases[i].want && retry == cases[i].retry, "HTTP %ld %s is %d, %s", cases[i].status,
           cases[i].code ? cases[i].code : "", cases[i].want, cases[i].retry ? "retried" : "not retried");
    }
    int ok1 = 1;
    for (int a = 1; a < 12; a++) {
        long d = s3BackoffMs(a), cap = 100L << (a > 5 ? 5 : a - 1);
        if (cap > 2000) cap = 2000;
        if (d < cap / 2 || d > cap) ok1 = 0;
    }
    ok(ok1, "backoff doubles from 100 ms, capped at 2 s, with jitter in its upper half");
}

int main(void) {
    testStageUrls();
    testContainment();
    testStageInterface();
    testPartSize();
    testClient();
    testXml();
    testErrorCodes();
    return tapDone();
}
