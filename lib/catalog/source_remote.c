/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * source_remote.c - the remote CatalogSource: lake-metasrv over HTTPS.
 *
 * Every call is POST /v1/actions/NAME with one JSON object; the answer is
 * one JSON object or an error object whose code becomes the exit status
 * (core/http).  Connections are opened lazily, so a command answered from
 * a fresh cache makes no connection at all.
 *
 * With several endpoints (instances serving one catalog) a call tries the
 * preferred one, then the rest in order, each with a short connect timeout
 * (source.h says when it moves on).  An endpoint that fails stays in the
 * order: the next call tries it again, because a client process is short.
 *
 * When every endpoint tried answered 503 unavailable (its registry down or
 * failing over) or was lost mid-call, a call that is safe to repeat goes
 * round them again, with backoff and jitter, for up to retry_deadline
 * seconds (lake.conf(5)); then it fails 75, saying so in words a user
 * understands.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog/source_impl.h"
#include "core/http.h"
#include "core/clock.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/retry.h"
#include "core/sha256.h"

typedef struct remoteSource {
    catalogSource base;
    char *endpoints[CONFIG_MAX_ENDPOINTS]; /* without a trailing slash */
    httpClient *http[CONFIG_MAX_ENDPOINTS];
    size_t n;
    size_t first;    /* tried first: the preferred endpoint */
    int answered;    /* index of the endpoint that answered last, or -1 */
    char *token;
    char *ca_file;
    size_t max_response;
    long connect_timeout_ms; /* 0: the default for the number of endpoints */
    long retry_deadline_ms;  /* how long a call goes on retrying a catalog answering 503 */
    int no_retry;            /* sourceNoRetry: one round, whatever the deadline */
} remoteSource;

/* Calls whose repetition adds nothing: asking another instance after a
 * lost answer or a 503 cannot do anything twice (append, compact: DESIGN §5). */
static int repeatable(const char *action) {
    static const char *const safe[] = {"catalog_snapshot", "list_tables", "resolve", "whoami", "references", "append", "compact", "rewrite", "history", "expire",
                                       "presign_get", "upload_parts", "upload_complete", "upload_abort"};
    for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
        if (strcmp(action, safe[i]) == 0) return 1;
    return 0;
}

static int callOne(remoteSource *rs, size_t i, const char *action, const cJSON *req, cJSON **answer,
                   lakeError *err) {
    if (!rs->http[i]) {
        httpOptions opt = {.ca_file = rs->ca_file, .token = rs->token, .max_response = rs->max_response,
                           .connect_timeout_ms = rs->connect_timeout_ms};
        if (!opt.connect_timeout_ms && rs->n > 1) opt.connect_timeout_ms = HTTP_FAILOVER_CONNECT_TIMEOUT_MS;
        if (httpOpen(rs->endpoints[i], &opt, &rs->http[i], err)) return err->code;
    }
    char path[128];
    snprintf(path, sizeof path, "/v1/actions/%s", action);
    return httpPostJson(rs->http[i], path, req, answer, err);
}

/* What one round of endpoints came to. */
typedef struct roundOutcome {
    int again;        /* a later round may succeed: an endpoint answered 503
                         unavailable, or was lost mid-call, to a repeatable action */
    int busy;         /* one answered 503 unavailable */
    long retry_after; /* the least Retry-After of those 503s, seconds; 0: none */
    char said[512];   /* the last 503's message: the server's, redacted */
} roundOutcome;

/* Each endpoint once, the preferred one first, moving on as source.h
 * says.  Returns the last endpoint's rc (0: *answer is set). */
static int callRound(remoteSource *rs, const char *action, const cJSON *req, cJSON **answer,
                     roundOutcome *out, lakeError *err) {
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (size_t k = 0; k < rs->n; k++) {
        size_t i = k == 0 ? rs->first : (k <= rs->first ? k - 1 : k);
        errClear(err);
        rc = callOne(rs, i, action, req, answer, err);
        if (!rc) {
            rs->answered = (int)i;
            return 0;
        }
        int unreached = rs->http[i] && !httpReached(rs->http[i]);
        int busy = err->status && strcmp(err->status, "unavailable") == 0;
        if (busy) {
            long after = httpRetryAfter(rs->http[i]);
            if (!out->busy || after < out->retry_after) out->retry_after = after;
            out->busy = 1;
            snprintf(out->said, sizeof out->said, "%s", err->msg);
        }
        if (!(rc == LAKE_EUNAVAIL && unreached) && !(repeatable(action) && (rc == LAKE_EUNAVAIL || busy))) {
            /* a failure that another round would not change; the
             * call's outcome unless it is a 503 itself */
            out->again = 0;
            out->busy = busy;
            return rc;
        }
        if (!unreached) out->again = 1;
        if (k + 1 < rs->n)
            traceLine("source", "%s at %s -> error %s, trying the next endpoint", action, rs->endpoints[i],
                      rc == LAKE_EUNAVAIL ? "unreachable" : errStatus(err));
    }
    if (rc == LAKE_EUNAVAIL && rs->n > 1 && !out->busy) /* each was tried */
        errSet(err, LAKE_EUNAVAIL, "%s: none of the %zu endpoints answered", rs->base.name, rs->n);
    return rc;
}

/* Rounds of endpoints until one answers, or a failure that another round
 * would not change, or retry_deadline: an instance whose registry is
 * failing over answers 503 until the standby is promoted.  The pauses
 * between rounds follow core/retry.h, at least the Retry-After asked for.
 * No endpoint reached at all is not retried: that is 69 at once, and the
 * snapshot cache serves its last good answer. */
static int remoteCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer,
                      lakeError *err) {
    remoteSource *rs = (remoteSource *)s;
    int64_t deadline = clockMs() + (rs->no_retry ? 0 : rs->retry_deadline_ms);
    static unsigned seed; /* a draw of its own per process: clients turned away together spread out */
    if (!seed) seed = (unsigned)deadline ^ ((unsigned)getpid() << 16) ^ 1u;
    roundOutcome out;
    int rc;
    for (int round = 1;; round++) {
        rc = callRound(rs, action, req, answer, &out, err);
        int64_t left = deadline - clockMs();
        if (!rc || !out.again || left <= 0 || interruptPending()) break;
        long pause = retryPauseMs(round, (unsigned long)rand_r(&seed), out.retry_after * 1000, (long)left);
        traceLine("source", "%s at %s -> error %s (%s), round %d; trying again in %ld ms", action, rs->base.name,
                  out.busy ? "unavailable" : "unreachable", out.busy ? out.said : err->msg, round, pause);
        if (retrySleep(pause, interruptFlag())) break;
    }
    /* (a call stopped by a signal gave nothing up: its error stands) */
    if (rc && out.busy && !interruptPending()) {
        /* the server's own words ("registry unreachable: …") are for the
         * trace and its log; the user is told what it means and what
         * was done about it */
        char done[96] = "";
        if (!repeatable(action))
            snprintf(done, sizeof done, "; %s is not retried: retry later", action);
        else if (rs->retry_deadline_ms && !rs->no_retry)
            snprintf(done, sizeof done, "; gave up after %ld s (retry_deadline)", rs->retry_deadline_ms / 1000);
        else if (!rs->no_retry)
            snprintf(done, sizeof done, "; not retried (retry_deadline = 0)");
        rc = errSetStatus(err, "unavailable", "%s: the catalog is temporarily unavailable (its registry may be "
                          "failing over)%s", rs->base.name, done);
        snprintf(err->cause, sizeof err->cause, "server: %.240s", out.said);
    }
    return rc;
}

static const char *remoteEndpoint(const catalogSource *s) {
    const remoteSource *rs = (const remoteSource *)s;
    return rs->answered >= 0 ? rs->endpoints[rs->answered] : NULL;
}

static void remotePrefer(catalogSource *s, const char *endpoint) {
    remoteSource *rs = (remoteSource *)s;
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->endpoints[i], endpoint) == 0) rs->first = i;
}

static void remoteNoRetry(catalogSource *s, int on) {
    ((remoteSource *)s)->no_retry = on;
}

static void remoteClose(catalogSource *s) {
    remoteSource *rs = (remoteSource *)s;
    for (size_t i = 0; i < rs->n; i++) {
        httpClose(rs->http[i]);
        free(rs->endpoints[i]);
    }
    if (rs->token) memset(rs->token, 0, strlen(rs->token));
    free(rs->token);
    free(rs->ca_file);
    free(rs->base.name);
    free(rs->base.key);
    free(rs);
}

static const sourceOps remoteOps = {remoteCall, remoteClose, remoteEndpoint, remotePrefer, remoteNoRetry};

static int byText(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a,b,c" (caller frees), NULL when out of memory */
static char *joined(char *const *list, size_t n) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%s", i ? "," : "", list[i]);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* 64 hex digits of SHA-256 over a label and the token: names the
 * principal in the cache directory without holding anything that would
 * authenticate (nor the hash the registry keeps of the token). */
static int principalHash(const char *token, char hex[SHA256_HEX_LEN + 1]) {
    static const char label[] = "lake cache principal\n";
    sha256Ctx *h = sha256New();
    if (!h) return -1;
    sha256Update(h, label, sizeof label - 1);
    sha256Update(h, token, strlen(token));
    sha256FinalHex(h, hex);
    sha256Free(h);
    return 0;
}

int sourceRemoteOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err) {
    *out = NULL;
    char *token = NULL;
    if (configRemote(cfg, &token, err)) return err->code;
    remoteSource *rs = calloc(1, sizeof *rs);
    if (!rs) {
        free(token);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    rs->base.ops = &remoteOps;
    rs->token = token;
    rs->answered = -1;
    rs->max_response = (size_t)cfg->max_response;
    if (configEndpoints(cfg, rs->endpoints, &rs->n, err)) {
        remoteClose(&rs->base);
        return err->code;
    }
    /* name: the endpoints as given; key: the same set in any order names
     * the same catalog, and the principal (a hash of its token, never the
     * token) its own cache, so that no principal is served what another's
     * call returned (DESIGN §5) */
    char *sorted[CONFIG_MAX_ENDPOINTS], key[40], principal[SHA256_HEX_LEN + 1], both[96];
    memcpy(sorted, rs->endpoints, rs->n * sizeof *sorted);
    qsort(sorted, rs->n, sizeof *sorted, byText);
    char *set = joined(sorted, rs->n);
    rs->base.name = joined(rs->endpoints, rs->n);
    if (set && principalHash(token, principal) == 0) {
        sourceMakeKey(key, "remote", set);
        snprintf(both, sizeof both, "%s-%.16s", key, principal);
        rs->base.key = strdup(both);
    }
    free(set);
    if (cfg->ca_file) rs->ca_file = strdup(cfg->ca_file);
    rs->connect_timeout_ms = cfg->connect_timeout * 1000;
    rs->retry_deadline_ms = cfg->retry_deadline * 1000;
    if (!rs->base.name || !rs->base.key || (cfg->ca_file && !rs->ca_file)) {
        remoteClose(&rs->base);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    *out = &rs->base;
    return 0;
}
