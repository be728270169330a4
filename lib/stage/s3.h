/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * s3.h - the parts of the s3:// stage backend (private to lib/stage).
 *
 *   s3url.c     stage URLs, locations and keys: string work only, no I/O
 *   s3client.c  the AWS environment, one signed request (s3Xfer) and its
 *               outcome as a lake exit code, retries with backoff, XML
 *   s3presign.c SigV4 query-signed URLs (presigned), for keyless clients
 *   s3put.c     the multipart upload engine: parts in flight on a libcurl
 *               multi handle, driven by a thread of its own
 *   s3get.c     parallel ranged GETs of one object, taken in order
 *   s3.c        the backend: put (one PUT or a multipart upload), get,
 *               containment
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4).  libcurl 7.88 signs the Host
 * header, every header the caller adds (CURLOPT_HTTPHEADER) and the query
 * string as given, and takes the payload hash from an x-amz-content-sha256
 * header when there is one.  So: every request carries the real SHA-256 of
 * its body in x-amz-content-sha256, queries are built in canonical form
 * ("uploads=", "partNumber=1&uploadId=…", names sorted, values encoded),
 * and no header is added that is not sent (curl would sign an empty
 * "Expect:" and then drop it).  tests/unit/test_s3sign.c checks this
 * against AWS's published examples.
 */
#ifndef LAKE_STAGE_S3_H
#define LAKE_STAGE_S3_H

#include "core/curl.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/error.h"
#include "core/sha256.h"
#include "stage/backend.h"

#define S3_MAX_PARTS STAGE_PARTS_MAX
/* S3's largest object: 5 TiB. */
#define S3_OBJECT_MAX (5LL * 1024 * 1024 * 1024 * 1024)
/* The most of a response body kept in memory (error documents, XML
 * answers); S3's are a few hundred bytes. */
#define S3_BODY_MAX (64 * 1024)
/* Attempts per request: the first and up to four retries. */
#define S3_ATTEMPTS 5
#define S3_ETAG_MAX 128
/* SHA-256 of no bytes: the payload hash of a request without a body. */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* --- s3url.c: names, no I/O ---------------------------------------------- */

/* Parse and normalise a stage URL, "s3://BUCKET/PREFIX" with or without a
 * trailing slash.  BUCKET follows S3's rules for DNS-compatible names (3 to
 * 63 of a-z 0-9 . -, a letter or digit at each end, no ".."); PREFIX is not
 * empty, its percent escapes are decoded, and its components are neither
 * empty, "." nor "..", nor hold control characters.  On success *bucket and
 * *prefix (decoded, no leading or trailing slash) belong to the caller.
 * Fails with 78 naming the URL. */
int s3ParseStage(const char *url, char **bucket, char **prefix, lakeError *err);

/* "s3://BUCKET/" + the percent-encoded key; caller frees (NULL: OOM). */
char *s3Location(const char *bucket, const char *key);

/* The key below PREFIX that location names ("files/2026/12/…"), decoded;
 * caller frees.  NULL when location is not "s3://BUCKET/PREFIX/REST" with
 * exactly this bucket, REST non-empty with clean components, no control
 * characters, no query or fragment, and well-formed escapes (an encoded
 * '/' or NUL is refused, so "%2e%2e" is "..", and refused too). */
char *s3Relative(const char *bucket, const char *prefix, const char *location);

/* The part size of a put: requested (0: STAGE_PART_DEFAULT), grown when a
 * stated size (expect >= 0) would need more than S3_MAX_PARTS parts, to
 * the smallest whole MiB that fits.  Never below what was asked. */
int64_t s3PartSize(int64_t requested, int64_t expect);

/* --- s3client.c: requests ------------------------------------------------- */

/* Where and as whom requests go; filled by s3ClientInit from the AWS
 * environment (DESIGN §2).  Every string is owned. */
typedef struct s3Client {
    char *bucket;
    char *base;    /* the URL that "/" + an encoded key follows: either
                      https://BUCKET.s3[.REGION].amazonaws.com (virtual
                      host) or ENDPOINT/BUCKET (path style) */
    char *region;
    char *key_id;
    char *secret;
    char *token;   /* AWS_SESSION_TOKEN, or NULL */
    char *ca_file; /* AWS_CA_BUNDLE, or NULL */
    char *sigv4;   /* "aws:amz:REGION:s3" for CURLOPT_AWS_SIGV4 */
    CURL *easy;    /* the handle of the calling thread's requests, kept
                      so that they reuse one connection */
} s3Client;

/* Read the AWS environment for bucket: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (both required), AWS_SESSION_TOKEN,
 * AWS_REGION / AWS_DEFAULT_REGION (default us-east-1),
 * AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (a custom endpoint: path-style
 * addressing), AWS_CA_BUNDLE.  An empty variable counts as unset.  No I/O.
 * Fails with 78 naming stage_url.  c is safe to s3ClientFree either way. */
int s3ClientInit(s3Client *c, const char *bucket, const char *stage_url,
                 lakeError *err);
void s3ClientFree(s3Client *c);
/* A client for vended access: the bucket, AWS_CA_BUNDLE and a handle, no
 * keys (its requests go to presigned URLs: s3XferInitUrl). */
int s3ClientInitVended(s3Client *c, const char *bucket, lakeError *err);

/* One request and its answer.  The life of one:
 *   s3XferInit, then s3XferHeader / s3XferBody as needed, s3XferArm; then
 *   per attempt s3XferRestart, a curl perform, s3XferOutcome (or all of
 *   that through s3XferRun); finally s3XferFree. */
typedef struct s3Xfer {
    CURL *h;                  /* borrowed; reset by s3XferInit */
    const s3Client *c;
    const char *method;
    struct curl_slist *headers;
    char *url;
    char *what;               /* location[?query], for messages and traces */
    char errbuf[CURL_ERROR_SIZE];
    /* the request body, sent from memory */
    const char *send;
    size_t send_len, send_off;
    char send_sha[SHA256_HEX_LEN + 1];
    /* the answer */
    long status;
    int64_t length;           /* Content-Length, -1 when absent */
    int64_t range_total;      /* the size after the '/' of Content-Range
                                 (a ranged answer), -1 when absent */
    char etag[S3_ETAG_MAX];
    char meta_sha256[SHA256_HEX_LEN + 1]; /* x-amz-meta-sha256 */
    char *body;               /* a non-2xx answer, or any answer without a
                                 sink; at most S3_BODY_MAX bytes */
    size_t body_len;
    /* 2xx body bytes go here when set; returns 0, or -1 having recorded
     * its own error (the transfer then fails with sink_failed set) */
    int (*sink)(void *ctx, const char *buf, size_t len);
    void *sink_ctx;
    int sink_failed;
    /* giving up: the transfer stops when either is set */
    const volatile sig_atomic_t *stop;
    atomic_int *cancel;
    int stopped;              /* it did stop for that reason */
    int retryable;            /* the last outcome may succeed if tried again */
    int attempts;             /* made so far */
    int max_attempts;         /* s3XferRun's limit; 0 for S3_ATTEMPTS */
    int presigned;            /* the URL carries its signature (s3XferInitUrl) */
} s3Xfer;

/* Prepare a request: method on the object key ("" for the bucket), with
 * query (canonical form, or NULL).  Resets h.  Fails only on OOM (1). */
int s3XferInit(s3Xfer *x, const s3Client *c, CURL *h, const char *method,
               const char *key, const char *query, lakeError *err);
/* The same for a presigned URL (s3presign.c): nothing is signed here, and
 * the headers the URL signed must be added as it signed them.  what names
 * the request in messages and traces, never the URL (its signature is a
 * secret of sorts). */
int s3XferInitUrl(s3Xfer *x, const s3Client *c, CURL *h, const char *method, const char *url,
                  const char *what, lakeError *err);
/* Add a header ("Name: value") to send and sign. */
int s3XferHeader(s3Xfer *x, lakeError *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The body to send (PUT, POST) and its SHA-256 (hex; NULL: computed
 * here).  buf must outlive the transfer. */
void s3XferBody(s3Xfer *x, const void *buf, size_t len, const char *sha256_hex);
/* Finish the set-up; after this the easy handle is ready to perform. */
int s3XferArm(s3Xfer *x, lakeError *err);
/* Forget the last answer before another attempt. */
void s3XferRestart(s3Xfer *x);
/* Judge a finished attempt (cc is curl's result): 0 for a 2xx answer, else
 * the exit code with err set and x->retryable telling whether to try
 * again.  Prints the LAKE_TRACE line of the request. */
int s3XferOutcome(s3Xfer *x, CURLcode cc, lakeError *err);
/* Perform x on its own (blocking), up to S3_ATTEMPTS times while the
 * failure is retryable, backing off between attempts. */
int s3XferRun(s3Xfer *x, lakeError *err);
void s3XferFree(s3Xfer *x);

/* Say in err's message that the request was tried attempts times. */
void s3NoteAttempts(lakeError *err, int attempts);
/* Milliseconds to wait before attempt number attempt + 1 (attempt >= 1):
 * retryCeilingMs (core/retry.h) with equal jitter (half of it at least). */
long s3BackoffMs(int attempt);

/* The text of the first element called name in an XML answer, entities
 * decoded, or NULL (none, not a leaf element, malformed, OOM).  Caller
 * frees.  Reads S3's small flat answers only: see s3client.c. */
char *s3XmlText(const char *xml, size_t len, const char *name);
/* True when the document's root element is called name. */
int s3XmlRootIs(const char *xml, size_t len, const char *name);

/* The exit code of an S3 error answer (HTTP status and S3 error code, the
 * latter may be NULL), and whether trying again may help: 5xx (but 501,
 * not implemented), 429 and S3's RequestTimeout, SlowDown, InternalError
 * and ServiceUnavailable may. */
lakeCode s3ErrorCode(long status, const char *code, int *retryable);
/* The answer of a finished request x was 404 NoSuchUpload: the upload an
 * abort (or a part) named is gone already, which is what an abort is for. */
int s3XferUploadGone(const s3Xfer *x);

/* --- the backend's state (s3.c, s3vend.c) ---------------------------------- */

typedef struct s3Stage {
    stage base;
    char *bucket;
    char *prefix;       /* decoded, no slash at either end */
    s3Client client;
    lakeError unusable; /* why the AWS environment is unusable, or code 0 */
    stageVendor vendor; /* vended access: set when vendor.get is */
    atomic_llong keys_ok_until; /* the holder's keys were accepted: until then, ms */
} s3Stage;

/* 0 when requests can be made with the stage's own keys; else the
 * configuration error, in err. */
int s3Usable(const s3Stage *ss, lakeError *err);
/* The key of a new object below the stage: PREFIX/KEYDIR/ID (key_dir as
 * for stagePutInto; NULL: files/YYYY/MM).  Caller frees. */
int s3NewKey(const s3Stage *ss, const char *key_dir, char **key, lakeError *err);

/* --- s3vend.c: vended access ------------------------------------------------ */

extern const struct stageVendOps s3VendOps;

/* --- s3presign.c: URLs signed for someone else ------------------------------ */

/* A presigned URL lives at most 7 days (SigV4's own limit). */
#define S3_PRESIGN_EXPIRES_MAX (7 * 24 * 3600)
#define S3_PRESIGN_HEADERS_MAX 8

/* A SigV4 query-signed URL for method on key (below the bucket, decoded),
 * with query (canonical form: names sorted, values encoded, every name
 * starting with a lower-case letter; NULL for none), valid expires seconds
 * (1..S3_PRESIGN_EXPIRES_MAX) from now.  It signs Host and the nheaders
 * headers given as lower-case "name:value" (no spaces around ':'), which the
 * request must then carry with exactly those values; the payload is
 * UNSIGNED-PAYLOAD.  Caller frees; NULL on bad arguments or OOM. */
char *s3Presign(const s3Client *c, const char *method, const char *key, const char *query,
                const char *const *headers, size_t nheaders, int64_t expires, time_t now);

/* The base64 MD5 of buf (a Content-MD5 header's value); -1 when MD5 is
 * not available (a FIPS build of OpenSSL). */
int s3Md5Base64(const void *buf, size_t len, char out[STAGE_MD5_B64_LEN + 1]);

/* The ticket of an upload begun for someone else: a MAC over location and
 * upload id with a key derived from the secret (stage.h).  "" on OOM. */
void s3UploadTicket(const s3Client *c, const char *location, const char *upload_id,
                    char out[STAGE_TICKET_LEN + 1]);

/* --- s3get.c: parallel ranged reads ----------------------------------------- */

/* Read the object at key (location names it in messages; vended: through
 * the stage's vendor) of size bytes, more than part_size, as ranged GETs
 * of part_size bytes, up to jobs at once on connections of their own,
 * into jobs + 1 buffers of part_size bytes; the bytes go to w in order,
 * exactly once, hashed into sha (NULL: not).  Every answer must give the
 * object's size as size (else 65).  *meta_sha256 gets the object's
 * x-amz-meta-sha256 ("" when none).  *written gets the bytes given to w.
 * 0, or the code of the first part that failed for good (the writer has
 * then seen a prefix of the object).  0 with *written < size: a part was
 * answered 200 with the whole object (the store ignores Range); the
 * caller reads the rest as one stream. */
int s3GetParts(s3Stage *ss, const char *key, const char *location, int64_t size, size_t part_size,
               int jobs, lakeWriter *w, sha256Ctx *sha, progress *prog,
               char meta_sha256[SHA256_HEX_LEN + 1], int64_t *written, lakeError *err);

/* --- s3put.c: multipart uploads -------------------------------------------- */

typedef struct s3Upload s3Upload;

/* An upload engine for key with jobs parts in flight and jobs + 1 buffers
 * of part_size bytes (allocated when first used).  Sends nothing yet.
 * NULL when out of memory. */
s3Upload *s3UploadNew(const s3Client *c, const char *key, size_t part_size,
                      int jobs, const volatile sig_atomic_t *stop);
/* Vended access: the holder v begins, signs, completes and aborts the
 * upload, under a key it generates in key_dir (NULL: files/YYYY/MM).
 * Call before s3UploadBegin.  The parts carry Content-MD5. */
int s3UploadVend(s3Upload *u, const stageVendor *v, const char *key_dir, lakeError *err);
/* Vended: the location the holder gave the object (after s3UploadBegin). */
const char *s3UploadLocation(const s3Upload *u);
/* A free part buffer, waiting while all are in use; *slot names it.  NULL
 * with err set when the upload has failed or was told to stop. */
char *s3UploadBuffer(s3Upload *u, int *slot, lakeError *err);
/* Give back an unused buffer. */
void s3UploadRelease(s3Upload *u, int slot);
/* 0 while the upload is well, else the code of the part that failed for
 * good, with err set to its error. */
int s3UploadError(s3Upload *u, lakeError *err);
/* CreateMultipartUpload (with the object's content type and, if known, its
 * SHA-256 as x-amz-meta-sha256), then start sending. */
int s3UploadBegin(s3Upload *u, const char *content_type, const char *sha256_hex,
                  lakeError *err);
/* Queue len bytes of buffer slot as the next part (numbered from 1). */
int s3UploadSubmit(s3Upload *u, int slot, size_t len, lakeError *err);
/* Wait for every part, then CompleteMultipartUpload.  total is the
 * object's size (to recognise a completion that succeeded although its
 * answer was lost). */
int s3UploadFinish(s3Upload *u, int64_t total, lakeError *err);
/* After a failure: stop sending, AbortMultipartUpload (and, if a
 * completion was attempted, delete the key), keeping err as it is but for
 * a note when the abort itself failed.  Then free u.  NULL is fine. */
void s3UploadAbort(s3Upload *u, lakeError *err);
/* Free a finished upload. */
void s3UploadFree(s3Upload *u);

/* The requests of a multipart upload, one at a time on handle h (the
 * engine's, or a holder's for someone else: s3vend.c). */
/* CreateMultipartUpload: *upload_id (caller frees). */
int s3CreateUpload(const s3Client *c, CURL *h, const char *key, const char *content_type,
                   const char *sha256_hex, const volatile sig_atomic_t *stop, char **upload_id,
                   lakeError *err);
/* CompleteMultipartUpload of parts 1..nparts; total (or -1) recognises a
 * completion whose answer was lost. */
int s3CompleteUpload(const s3Client *c, CURL *h, const char *key, const char *upload_id, int nparts,
                     char *const *etags, int64_t total, const volatile sig_atomic_t *stop,
                     lakeError *err);
/* AbortMultipartUpload (and, when completing, a DELETE of the key): 0, or
 * nonzero with the failure's detail in note.  An upload gone is done. */
int s3AbortUpload(const s3Client *c, CURL *h, const char *key, const char *upload_id, int attempts,
                  int completing, char *note, size_t notelen);

#endif
