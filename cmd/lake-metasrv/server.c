/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.c - lake-metasrv's HTTP front: libmicrohttpd in, the shared action
 * dispatcher (lib/catalog/actions) behind it.
 *
 * libmicrohttpd's threads (--threads) read requests and send answers, and
 * never touch the registry: a request that needs it is handed to a lane of
 * registry workers (regwork.h: reads and writes apart, each with its own
 * connections, opened on first need so the server starts and keeps
 * running while a PostgreSQL registry is away) and its connection
 * suspended until the answer is built; /v1/health is answered from the
 * state the registry probe keeps.  A request lives in a `request` struct
 * from its first byte to the completion callback, which writes the log
 * line, counts the metrics and returns a snapshot permit only once the
 * response has been sent.
 */
#include "server.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "catalog/actions.h"
#include "authlimit.h"
#include "catalog/gc.h"
#include "catalog/names.h"
#include "core/fsutil.h"
#include "core/id.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "core/version.h"
#include "deadline.h"
#include "regwork.h"
#include "stage/stage.h"
#include "tlscreds.h"

/* --- state shared by the worker threads -------------------------------- */

static const serverConfig *conf;
static stage *advertised;          /* for append's containment; immutable */
static atomic_int permitsFree;
static atomic_int inFlight;
static atomic_int fenceMutations;  /* test-only fault, see serverRun */
static int fenceFault;
static int killAfterAppend;        /* test-only fault */

/* --- metrics ------------------------------------------------------------ */

static const char *const metricActions[] = {"catalog_snapshot", "resolve", "history", "append", "compact", "rewrite", "rollback", "expire",
                                            "alter", "create_namespace", "create_table", "drop_table", "grant", "revoke", "grants",
                                            "whoami", "list_tables", "references", "gc", "presign_get", "upload_begin",
                                            "upload_parts", "upload_complete", "upload_abort", "actions",
                                            "health", "metrics", "other"};
#define NMA (sizeof metricActions / sizeof metricActions[0])
static const int metricStatuses[] = {200, 400, 401, 403, 404, 409, 410, 412, 413, 429, 500, 503};
#define NMS (sizeof metricStatuses / sizeof metricStatuses[0])
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
#define NB (sizeof buckets / sizeof buckets[0])

static pthread_mutex_t metricsMu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counts[NMA][NMS + 1];
static uint64_t histogram[NB + 1];
static double latencySum;
static uint64_t latencyCount;
static uint64_t bodyBytes; /* request body bytes received: objects never pass */

static size_t actionIndex(const char *a) {
    for (size_t i = 0; i < NMA - 1; i++)
        if (strcmp(metricActions[i], a) == 0) return i;
    return NMA - 1;
}

static void countRequest(const char *action, int status, double secs) {
    size_t s = NMS;
    for (size_t i = 0; i < NMS; i++)
        if (metricStatuses[i] == status) s = i;
    size_t b = NB;
    for (size_t i = 0; i < NB; i++)
        if (secs <= buckets[i]) { b = i; break; }
    pthread_mutex_lock(&metricsMu);
    counts[actionIndex(action)][s]++;
    histogram[b]++;
    latencySum += secs;
    latencyCount++;
    pthread_mutex_unlock(&metricsMu);
}

/* --- requests ----------------------------------------------------------- */

typedef struct request {
    regJob job;              /* its place in a registry lane; first */
    struct MHD_Connection *conn;
    char *url, *method, *auth; /* copies, for the registry worker */
    int deferred;            /* answered by a worker: respond() keeps the answer */
    char *answer;            /* the kept answer, its type */
    const char *answer_type;
    char id[ID_LEN + 1];
    struct timespec start;
    char *body;
    size_t len;
    int too_large;
    int permit;              /* holds a snapshot permit */
    int status;
    unsigned retry_after;    /* a 429's Retry-After, seconds */
    int held;                /* holds one of its address's allowance (authlimit.h) */
    struct sockaddr_storage from; /* the client's address */
    char principal[NAME_BUF];
    char action[48];
    char detail[800];        /* the unredacted cause, for the log only */
    char error[24];          /* the public error code sent, for the log */
    char *message;           /* the public message sent, JSON-quoted */
} request;

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void mutateBetween(void *ctx, int scan);

/* Wait (10 ms at a time, at most ticks times) until no request is in
 * flight. */
static void waitDrained(unsigned ticks) {
    for (unsigned waited = 0; atomic_load(&inFlight) > 0 && waited < ticks; waited++) {
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
}

static enum MHD_Result serveWith(struct MHD_Connection *c, request *rq, const char *url, const char *method,
                                 registry *reg, lakeError *err);

/* Queue the kept answer on c. */
static enum MHD_Result deliver(struct MHD_Connection *c, request *rq) {
    char *text = rq->answer;
    rq->answer = NULL;
    if (!text) return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", rq->answer_type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    char after[24];
    snprintf(after, sizeof after, "%u", rq->status == 429 ? rq->retry_after : 1);
    if (rq->status == 503 || rq->status == 429) MHD_add_response_header(resp, "Retry-After", after);
    deadlineAnswering(c);
    enum MHD_Result r = MHD_queue_response(c, (unsigned)rq->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* The one sink of every answer: body text (taken over), status and type.
 * A registry worker's answer is kept for the connection's resumption
 * (deliver); any other is queued at once. */
static enum MHD_Result respond(struct MHD_Connection *c, request *rq, int status, char *text,
                               const char *type) {
    rq->status = status;
    free(rq->answer);
    rq->answer = text;
    rq->answer_type = type;
    return rq->deferred ? MHD_YES : deliver(c, rq);
}

static enum MHD_Result respondJson(struct MHD_Connection *c, request *rq, int status, cJSON *j) {
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) return MHD_NO;
    /* cJSON's allocator is malloc, which MHD's MUST_FREE releases */
    return respond(c, rq, status, text, "application/json");
}

/* The redacted error answer: the client gets the stable code, a message
 * that names no path, SQL or token, and the request id; the log gets the
 * detail under the same id. */
static enum MHD_Result respondError(struct MHD_Connection *c, request *rq, const lakeError *err) {
    snprintf(rq->detail, sizeof rq->detail, "%s%s%s", err->msg, err->cause[0] ? " / " : "", err->cause);
    utf8OneLine(rq->detail);
    int http;
    cJSON *j = actionsErrorAnswer(err, rq->id, &http);
    if (!j) return MHD_NO;
    /* what the client is told goes to the log line too (quoted: one line) */
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    snprintf(rq->error, sizeof rq->error, "%s", errStatus(err));
    free(rq->message);
    rq->message = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "message"));
    return respondJson(c, rq, http, j);
}

static enum MHD_Result respondStatus(struct MHD_Connection *c, request *rq, const char *status,
                                     const char *msg) {
    lakeError err = {0};
    errSetStatus(&err, status, "%s", msg);
    return respondError(c, rq, &err);
}

/* Authenticate the bearer token: lk_<name>_<secret>.  The principal is
 * found by its (public) name and the token's SHA-256 compared with the
 * stored one in constant time.  A revoked or expired token is refused as
 * an unknown one.  p->name is set whenever the named principal exists;
 * claimed gets the name the token claims when it is a valid name, else "":
 * what the audit row of a failure records, apart from any principal. */
static int authenticate(const request *rq, registry *reg, registryPrincipal *p, char claimed[NAME_BUF],
                        lakeError *err) {
    const char *h = rq->auth;
    claimed[0] = '\0';
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return errSetStatus(err, "unauthenticated", "a bearer token is required");
    const char *tok = h + 7;
    const char *last = strrchr(tok, '_');
    if (strncmp(tok, "lk_", 3) != 0 || !last || last <= tok + 3 || (size_t)(last - tok - 3) >= NAME_BUF)
        return errSetStatus(err, "unauthenticated", "invalid token");
    char name[NAME_BUF];
    snprintf(name, sizeof name, "%.*s", (int)(last - tok - 3), tok + 3);
    if (nameIsValid(name)) snprintf(claimed, NAME_BUF, "%s", name);
    char hex[SHA256_HEX_LEN + 1];
    sha256Ctx *s = sha256New();
    if (!s) return errSetStatus(err, "internal", "out of memory");
    sha256Update(s, tok, strlen(tok));
    sha256FinalHex(s, hex);
    sha256Free(s);
    lakeError lookup = {0};
    int found = registryFindPrincipal(reg, name, p, &lookup) == 0;
    if (!found && lookup.code != LAKE_ENOINPUT) {
        *err = lookup;
        return err->code;
    }
    /* compare even when not found, so timing tells nothing */
    const char *stored = found ? p->token_sha256 : "0000000000000000000000000000000000000000000000000000000000000000";
    int same = strlen(stored) == SHA256_HEX_LEN && CRYPTO_memcmp(stored, hex, SHA256_HEX_LEN) == 0;
    long long expires;
    int expired = found && p->expires_at[0] &&
                  (rfc3339Parse(p->expires_at, &expires, NULL, NULL) || expires <= (long long)time(NULL));
    if (!found || !same || p->revoked || expired) return errSetStatus(err, "unauthenticated", "invalid token");
    return 0;
}

/* Record the token's use (registryTouchPrincipal: once a minute at most
 * per principal).  A failure costs the request nothing; it is logged at
 * most once a minute, as a registry that takes no writes would fail it on
 * every request. */
static void touchPrincipal(registry *reg, const registryPrincipal *p) {
    static atomic_llong lastLogged;
    lakeError err = {0};
    if (!registryTouchPrincipal(reg, p, &err)) return;
    long long now = (long long)time(NULL), last = atomic_load(&lastLogged);
    if (now - last >= 60 && atomic_compare_exchange_strong(&lastLogged, &last, now))
        logErrorf("%s's last use not recorded: %s / %s", p->name, err.msg, err.cause);
}

/* --- the audit trail (registry.h: registrySetAudit) ------------------------ */

static atomic_llong lastPrune; /* CLOCK_MONOTONIC seconds */
#define AUDIT_PRUNE_EVERY_S 3600

/* Delete the rows older than --audit-retention; logs what it did. */
static void auditPrune(registry *reg) {
    char before[32];
    int64_t removed;
    lakeError err = {0};
    long long now = (long long)time(NULL);
    rfc3339Format(before, now - conf->audit_retention < 0 ? 0 : now - conf->audit_retention);
    if (registryAuditPrune(reg, before, &removed, &err))
        logErrorf("audit trail not pruned: %s / %s", err.msg, err.cause);
    else if (removed > 0)
        logWarn("audit trail: %lld row(s) before %s pruned (--audit-retention)", (long long)removed, before);
}

/* Forget the uploads begun more than gc's grace ago (issue 41): each
 * object is by then its table's (read through it) or gc's. */
static void uploadsPrune(registry *reg) {
    char before[32];
    int64_t removed;
    lakeError err = {0};
    rfc3339Format(before, (long long)time(NULL) - GC_GRACE_DEFAULT);
    if (registryUploadsPrune(reg, before, &removed, &err))
        logErrorf("uploads not forgotten: %s / %s", err.msg, err.cause);
    else if (removed > 0)
        logWarn("uploads: %lld begun before %s forgotten (gc's grace)", (long long)removed, before);
}

/* At most once an hour, on whichever worker comes first: the audit
 * trail's and the uploads' pruning. */
static void auditPruneMaybe(registry *reg) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long last = atomic_load(&lastPrune);
    if (t.tv_sec - last >= AUDIT_PRUNE_EVERY_S &&
        atomic_compare_exchange_strong(&lastPrune, &last, (long long)t.tv_sec)) {
        auditPrune(reg);
        uploadsPrune(reg);
    }
}

/* The NS or NS.T the request's body names ("namespace" and "name"; a
 * grant's "on"), when they are valid names; else "".  Nothing else of the
 * body goes to the trail. */
static void auditTarget(const request *rq, char *out, size_t n) {
    out[0] = '\0';
    cJSON *req = rq->body && rq->len ? cJSON_ParseWithLength(rq->body, rq->len) : NULL;
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(req, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(req, "on");
    if (cJSON_IsString(ns) && nameIsValid(ns->valuestring)) {
        if (cJSON_IsString(name) && nameIsValid(name->valuestring))
            snprintf(out, n, "%s.%s", ns->valuestring, name->valuestring);
        else
            snprintf(out, n, "%s", ns->valuestring);
    } else if (cJSON_IsString(on)) {
        char a[NAME_MAX_LEN + 1], b[NAME_MAX_LEN + 1];
        if (nameTarget(on->valuestring, 1, a, b) == 0) snprintf(out, n, "%s", on->valuestring);
    }
    cJSON_Delete(req);
}

/* The request's record: who (p NULL: no one verified), what, on what (a
 * request of no one verified names nothing: its body is anyone's). */
static void auditRecord(const request *rq, const registryPrincipal *p, registryAudit *a) {
    memset(a, 0, sizeof *a);
    if (p) {
        snprintf(a->principal, sizeof a->principal, "%s", p->name);
        snprintf(a->role, sizeof a->role, "%s", p->role);
    }
    snprintf(a->action, sizeof a->action, "%s", rq->action);
    snprintf(a->request_id, sizeof a->request_id, "%s", rq->id);
    if (p && strcmp(rq->action, "other") && strcmp(rq->action, "actions") && strcmp(rq->action, "metrics"))
        auditTarget(rq, a->target, sizeof a->target);
}

/* A row on its own (a refusal, a failed mutating action, an idempotent
 * retry, a sum of 429s); a failure to write it is logged under the
 * request's id, with its target (a sum's count is only there). */
static void auditWrite(registry *reg, const registryAudit *a, const char *result) {
    lakeError err = {0};
    if (registryAuditWrite(reg, a, result, &err))
        logErrorf("request_id=%s: audit row (%s %s) not written%s%s: %s / %s", a->request_id, a->action, result,
                  a->target[0] ? " for " : "", a->target, err.msg, err.cause);
}

/* The error answer of a refusal: permission_denied is audited first. */
static enum MHD_Result refuse(struct MHD_Connection *c, request *rq, registry *reg, const registryPrincipal *p,
                              const lakeError *err) {
    const char *code = errStatus(err);
    if (strcmp(code, "permission_denied") == 0) {
        registryAudit a;
        auditRecord(rq, p, &a);
        auditWrite(reg, &a, code);
    }
    return respondError(c, rq, err);
}

/* rq is done with authentication (authlimit.h): failed or not, and what it
 * held of its address's allowance given back (once: a request let in that
 * never got as far is done when it completes). */
static void authDone(request *rq, int failed) {
    if (rq->held || failed) authlimitDone((const struct sockaddr *)&rq->from, rq->held, failed);
    rq->held = 0;
}

/* The answer to a failed authentication (err: unauthenticated, or the
 * registry's failure to look the token up).  An unauthenticated one takes
 * one of its address's allowance (authlimit.h) and is audited with no
 * principal: the name its token claimed, when it is one, and the address
 * go in target, "claimed=NAME from=ADDR". */
static enum MHD_Result refuseUnauthenticated(struct MHD_Connection *c, request *rq, registry *reg,
                                             const char *claimed, const lakeError *err) {
    if (strcmp(errStatus(err), "unauthenticated") == 0) {
        authDone(rq, 1);
        registryAudit a;
        auditRecord(rq, NULL, &a);
        char from[sizeof ((authlimitSummary *)0)->addr];
        authlimitAddress((const struct sockaddr *)&rq->from, from, sizeof from);
        snprintf(a.target, sizeof a.target, "%s%s%sfrom=%s", claimed[0] ? "claimed=" : "", claimed,
                 claimed[0] ? " " : "", from);
        auditWrite(reg, &a, "unauthenticated");
    }
    return respondError(c, rq, err);
}

/* The refusals of addresses over their allowance (authlimit.h), each
 * address's at most once every AUTHLIMIT_FOLD_S seconds, as rows of no
 * principal: action "authenticate", result resource_exhausted, target
 * "from=ADDR refused=N", the first refused request's id.  Every summary
 * due with all set (at shutdown).  A sum is taken out of the table before
 * it is written: one that cannot be written is in the log only
 * (auditWrite). */
static void auditRefusals(registry *reg, int all) {
    authlimitSummary due[16];
    size_t n;
    while ((n = authlimitDue(due, sizeof due / sizeof due[0], all)) > 0) {
        for (size_t i = 0; i < n; i++) {
            registryAudit a = {.action = "authenticate"};
            snprintf(a.target, sizeof a.target, "from=%.60s refused=%llu", due[i].addr,
                     (unsigned long long)due[i].refused);
            snprintf(a.request_id, sizeof a.request_id, "%s", due[i].id);
            auditWrite(reg, &a, "resource_exhausted");
        }
        if (!all) break; /* the rest on a later request: this one's client waits */
    }
}

/* At shutdown: every refusal not yet in the trail, on a connection of its
 * own (the workers' are gone); one that cannot be opened is logged. */
static void auditRefusalsLast(const char *db) {
    uint64_t pending = authlimitPending();
    if (!pending) return;
    registry *reg = NULL;
    lakeError err = {0};
    if (registryOpenUrl(db, REGISTRY_EXISTING, NULL, &reg, &err)) {
        logErrorf("%llu refusal(s) of the authentication limit not audited: %s / %s", (unsigned long long)pending,
                  err.msg, err.cause);
        return;
    }
    auditRefusals(reg, 1);
    registryClose(reg);
}

/* auditRefusals, at most once a second, on whichever worker comes first. */
static void auditRefusalsMaybe(registry *reg) {
    static atomic_llong lastFold; /* CLOCK_MONOTONIC seconds */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long last = atomic_load(&lastFold);
    if (t.tv_sec != last && atomic_compare_exchange_strong(&lastFold, &last, (long long)t.tv_sec))
        auditRefusals(reg, 0);
}

/* The test-only fence fault: raise the generation between a snapshot's
 * scan and its re-check, as DDL from another instance would. */
static void mutateBetween(void *ctx, int scan) {
    (void)ctx;
    (void)scan;
    if (atomic_fetch_sub(&fenceMutations, 1) <= 0) {
        atomic_fetch_add(&fenceMutations, 1);
        return;
    }
    registryTestRaiseGeneration(ctx);
}

static void dieAfterAppend(void) { raise(SIGKILL); }

/* The build's version and git revision as a Prometheus info metric (the
 * values are the build's own: no escaping needed beyond what they hold). */
static void printBuildInfo(FILE *f) {
    fprintf(f, "# HELP lake_metasrv_build_info The version and git revision of this build.\n"
               "# TYPE lake_metasrv_build_info gauge\n"
               "lake_metasrv_build_info{version=\"%s\",revision=\"%s\"} 1\n",
            LAKE_VERSION, versionRevision());
}

static enum MHD_Result serveMetrics(struct MHD_Connection *c, request *rq, registry *reg) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return MHD_NO;
    int64_t gen = -1;
    registryGeneration(reg, &gen, NULL);
    pthread_mutex_lock(&metricsMu);
    fputs("# HELP lake_requests_total Requests by action and HTTP status.\n"
          "# TYPE lake_requests_total counter\n", f);
    for (size_t a = 0; a < NMA; a++)
        for (size_t s = 0; s <= NMS; s++)
            if (counts[a][s] && s < NMS)
                fprintf(f, "lake_requests_total{action=\"%s\",status=\"%d\"} %llu\n", metricActions[a],
                        metricStatuses[s], (unsigned long long)counts[a][s]);
            else if (counts[a][s]) /* no answer was sent: the connection ended first */
                fprintf(f, "lake_requests_total{action=\"%s\",status=\"none\"} %llu\n", metricActions[a],
                        (unsigned long long)counts[a][s]);
    fputs("# HELP lake_request_duration_seconds Request latency.\n"
          "# TYPE lake_request_duration_seconds histogram\n", f);
    uint64_t cum = 0;
    for (size_t b = 0; b < NB; b++) {
        cum += histogram[b];
        fprintf(f, "lake_request_duration_seconds_bucket{le=\"%g\"} %llu\n", buckets[b], (unsigned long long)cum);
    }
    cum += histogram[NB];
    fprintf(f, "lake_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    fprintf(f, "lake_request_duration_seconds_sum %.6f\nlake_request_duration_seconds_count %llu\n",
            latencySum, (unsigned long long)latencyCount);
    fprintf(f, "# HELP lake_metasrv_request_body_bytes_total Request body bytes received.\n"
               "# TYPE lake_metasrv_request_body_bytes_total counter\nlake_metasrv_request_body_bytes_total %llu\n",
            (unsigned long long)bodyBytes);
    pthread_mutex_unlock(&metricsMu);
    fprintf(f, "# HELP lake_snapshot_permits_in_use Snapshot builds admitted now.\n"
               "# TYPE lake_snapshot_permits_in_use gauge\nlake_snapshot_permits_in_use %d\n",
            (int)conf->permits - atomic_load(&permitsFree));
    fprintf(f, "# HELP lake_registry_generation The catalog generation.\n"
               "# TYPE lake_registry_generation gauge\nlake_registry_generation %lld\n", (long long)gen);
    regworkState st;
    regworkRead(&st);
    static const char *const lane[LANES] = {"read", "write"};
    fputs("# HELP lake_registry_waiting_requests Requests queued for or running on the registry.\n"
          "# TYPE lake_registry_waiting_requests gauge\n", f);
    for (int i = 0; i < LANES; i++)
        fprintf(f, "lake_registry_waiting_requests{lane=\"%s\"} %u\n", lane[i], st.waiting[i]);
    fputs("# HELP lake_registry_oldest_wait_seconds How long the oldest of them has waited.\n"
          "# TYPE lake_registry_oldest_wait_seconds gauge\n", f);
    for (int i = 0; i < LANES; i++)
        fprintf(f, "lake_registry_oldest_wait_seconds{lane=\"%s\"} %.3f\n", lane[i], st.oldest_s[i]);
    fprintf(f, "# HELP lake_registry_refused_total Requests refused without waiting on the registry.\n"
               "# TYPE lake_registry_refused_total counter\n"
               "lake_registry_refused_total{reason=\"full\"} %llu\n"
               "lake_registry_refused_total{reason=\"stalled\"} %llu\n"
               "lake_registry_refused_total{reason=\"timeout\"} %llu\n",
            (unsigned long long)st.refused_full, (unsigned long long)st.refused_stalled,
            (unsigned long long)st.refused_timeout);
    fprintf(f, "# HELP lake_registry_cuts_total Times the registry's server stopped answering and its calls were cut.\n"
               "# TYPE lake_registry_cuts_total counter\nlake_registry_cuts_total %llu\n",
            (unsigned long long)st.cuts);
    printBuildInfo(f);
    if (fclose(f) != 0) {
        free(text);
        return MHD_NO;
    }
    return respond(c, rq, 200, text, "text/plain; version=0.0.4");
}

/* GET /v1/health: readiness, from the state the registry probe keeps
 * (regwork.h), never from a registry connection of its own.
 * 200 {"status":"ok","registry":"ok"} while the registry takes writes;
 * 200 {"status":"degraded","registry":"waiting",…} while requests have
 * waited on it longer than REGWORK_STALL_MS (reads are still answered);
 * otherwise 503 (with Retry-After) and "registry":"read_only" (its server
 * answers but is a standby) or "unavailable" (no server answers, or the
 * one there stopped answering), so a load balancer drains the instance
 * until a primary is back.  Any answer at all says the process is up. */
static enum MHD_Result serveHealth(struct MHD_Connection *c, request *rq) {
    regworkState st;
    regworkRead(&st);
    char *text = NULL;
    int r;
    double oldest = st.oldest_s[LANE_READ] > st.oldest_s[LANE_WRITE] ? st.oldest_s[LANE_READ] : st.oldest_s[LANE_WRITE];
    if (st.registry == REGISTRY_READ_ONLY)
        r = asprintf(&text, "{\"status\":\"unavailable\",\"registry\":\"read_only\","
                            "\"reason\":\"the registry's server takes no writes (a standby)\"}");
    else if (st.registry != REGISTRY_WRITABLE)
        r = asprintf(&text, "{\"status\":\"unavailable\",\"registry\":\"unavailable\",\"reason\":\"%s\"}",
                     st.silent ? "the registry's server stopped answering" : "the registry cannot be reached");
    else if (oldest * 1000 > REGWORK_STALL_MS)
        r = asprintf(&text, "{\"status\":\"degraded\",\"registry\":\"waiting\","
                            "\"reason\":\"%s have waited %.1f s on the registry\","
                            "\"waiting_reads\":%u,\"waiting_writes\":%u,\"oldest_wait_s\":%.3f}",
                     st.oldest_s[LANE_WRITE] >= st.oldest_s[LANE_READ] ? "writes" : "reads", oldest,
                     st.waiting[LANE_READ], st.waiting[LANE_WRITE], oldest);
    else
        r = asprintf(&text, "{\"status\":\"ok\",\"registry\":\"ok\"}");
    if (r < 0) return MHD_NO;
    return respond(c, rq, st.registry == REGISTRY_WRITABLE ? 200 : 503, text, "application/json");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **ctx) {
    (void)cls;
    (void)version;
    request *rq = *ctx;
    if (!rq) { /* headers are in; nothing of the body is read yet */
        rq = calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        *ctx = rq;
        atomic_fetch_add(&inFlight, 1);
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        if (idNew(rq->id, NULL)) snprintf(rq->id, sizeof rq->id, "-");
        snprintf(rq->principal, sizeof rq->principal, "-");
        /* only a known name reaches the log and the metrics: the URL is the
         * client's, and may hold anything, newlines included */
        const char *named = strncmp(url, "/v1/actions/", 12) == 0 && actionsKnown(url + 12) ? url + 12
                            : strcmp(url, "/v1/actions") == 0                                 ? "actions"
                            : strcmp(url, "/v1/metrics") == 0                                 ? "metrics"
                            : strcmp(url, "/v1/health") == 0                                  ? "health"
                                                                                               : "other";
        snprintf(rq->action, sizeof rq->action, "%s", named);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr)
            memcpy(&rq->from, ci->client_addr,
                   ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
        /* an address past its allowance of failed authentications is
         * refused from memory: no token checked, no registry touched */
        if (strcmp(named, "health") != 0 &&
            (rq->retry_after = authlimitRefused((const struct sockaddr *)&rq->from, rq->id, &rq->held)) > 0)
            return respondStatus(c, rq, "resource_exhausted",
                                 "too many failed authentications from this address; retry later");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > conf->max_body) {
            rq->too_large = 1;
            return respondStatus(c, rq, "payload_too_large", "request body too large");
        }
        return MHD_YES;
    }
    if (*upload_size) { /* body bytes, bounded */
        pthread_mutex_lock(&metricsMu);
        bodyBytes += *upload_size;
        pthread_mutex_unlock(&metricsMu);
        if (rq->too_large || rq->len + *upload_size > conf->max_body) {
            rq->too_large = 1;
        } else {
            char *b = realloc(rq->body, rq->len + *upload_size + 1);
            if (!b) return MHD_NO;
            memcpy(b + rq->len, upload, *upload_size);
            rq->body = b;
            rq->len += *upload_size;
            rq->body[rq->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->deferred) { /* resumed: a registry worker's answer is kept */
        rq->deferred = 0;
        return deliver(c, rq);
    }
    deadlineAnswering(c); /* the whole request is in: building the answer may take long */
    if (rq->status) return MHD_YES; /* answered already (413, 429) */
    if (rq->too_large) return respondStatus(c, rq, "payload_too_large", "request body too large");

    if (strcmp(url, "/v1/health") == 0 && strcmp(method, "GET") == 0) return serveHealth(c, rq);
    /* the rest needs the registry: to a lane, the connection suspended
     * until a worker has the answer */
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!(rq->url = strdup(url)) || !(rq->method = strdup(method)) || (auth && !(rq->auth = strdup(auth))))
        return MHD_NO;
    rq->conn = c;
    rq->job.lane = strncmp(url, "/v1/actions/", 12) == 0 && actionsWrites(url + 12) ? LANE_WRITE : LANE_READ;
    rq->deferred = 1;
    MHD_suspend_connection(c);
    lakeError err = {0};
    if (regworkSubmit(&rq->job, &err)) { /* refused at once */
        respondError(c, rq, &err);
        MHD_resume_connection(c);
    }
    return MHD_YES;
}

/* On a registry worker (regwork.h): build the answer, kept for deliver. */
static void runOnRegistry(regJob *job, registry *reg, const lakeError *refused) {
    request *rq = (request *)job;
    if (!reg) {
        respondError(rq->conn, rq, refused); /* redacted; detailed in the log */
        return;
    }
    registrySetScanHook(reg, fenceFault ? mutateBetween : NULL, reg);
    lakeError err = {0};
    serveWith(rq->conn, rq, rq->url, rq->method, reg, &err);
    if (job->lane == LANE_WRITE) auditPruneMaybe(reg);
    auditRefusalsMaybe(reg);
}

/* The worker is done with job: libmicrohttpd's thread sends the answer. */
static void resumeRequest(regJob *job) { MHD_resume_connection(((request *)job)->conn); }

/* The rest of a request, on a registry connection of its own. */
static enum MHD_Result serveWith(struct MHD_Connection *c, request *rq, const char *url, const char *method,
                                 registry *reg, lakeError *errp) {
    lakeError err = *errp;
    registryPrincipal p;
    memset(&p, 0, sizeof p);
    int isAction = strncmp(url, "/v1/actions/", 12) == 0 && strcmp(method, "POST") == 0;
    char claimed[NAME_BUF];
    if (authenticate(rq, reg, &p, claimed, &err)) return refuseUnauthenticated(c, rq, reg, claimed, &err);
    authDone(rq, 0);
    snprintf(rq->principal, sizeof rq->principal, "%s", p.name);
    touchPrincipal(reg, &p);

    if (strcmp(url, "/v1/actions") == 0 && strcmp(method, "GET") == 0) {
        cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "actions");
        const char *a;
        for (size_t i = 0; (a = actionsAt(i)); i++)
            if (actionsAllowed(p.role, a)) cJSON_AddItemToArray(list, cJSON_CreateString(a));
        return respondJson(c, rq, 200, j);
    }
    if (strcmp(url, "/v1/metrics") == 0 && strcmp(method, "GET") == 0) {
        if (strcmp(p.role, "admin") != 0 && strcmp(p.role, "metadata-peer") != 0) {
            errSetStatus(&err, "permission_denied", "metrics need the admin or metadata-peer role");
            return refuse(c, rq, reg, &p, &err);
        }
        return serveMetrics(c, rq, reg);
    }
    if (!isAction) return respondStatus(c, rq, "not_found", "no such resource");
    const char *action = url + 12;
    if (!actionsKnown(action)) return respondStatus(c, rq, "not_found", "no such action");
    if (!actionsAllowed(p.role, action)) {
        lakeError denied = {0};
        errSetStatus(&denied, "permission_denied", "role %s may not run %s", p.role, action);
        return refuse(c, rq, reg, &p, &denied);
    }

    if (strcmp(action, "catalog_snapshot") == 0) {
        /* admission: a permit is held until the response has been sent */
        if (atomic_fetch_sub(&permitsFree, 1) <= 0) {
            atomic_fetch_add(&permitsFree, 1);
            return respondStatus(c, rq, "unavailable", "too many snapshot requests; retry later");
        }
        rq->permit = 1;
    }
    actionContext actx = {
        .reg = reg,
        .stage = advertised,
        .stage_url = registryStage(reg),
        .principal = p.name,
        .role = p.role,
        .allow_unmarked = 0,
        .bounds = conf->bounds,
        .presign_default = conf->presign_default,
        .presign_max = conf->presign_max,
        .has_retention = 1,
        .retention = conf->retention,
        .after_append = killAfterAppend ? dieAfterAppend : NULL,
    };
    cJSON *answer = NULL;
    /* a mutating action's row is written by the commit of its change
     * (registrySetAudit); one that changed nothing, or failed, gets its
     * row on its own after */
    registryAudit audit;
    int mutating = actionsWrites(action);
    if (mutating) {
        auditRecord(rq, &p, &audit);
        registrySetAudit(reg, &audit);
    }
    int rc = actionsHandle(&actx, action, rq->body ? rq->body : "", rq->len, &answer, &err);
    int written = registryAuditWritten(reg);
    registrySetAudit(reg, NULL);
    if (mutating && (rc || !written)) auditWrite(reg, &audit, rc ? errStatus(&err) : "ok");
    if (rc) return mutating ? respondError(c, rq, &err) : refuse(c, rq, reg, &p, &err);
    return respondJson(c, rq, 200, answer);
}

/* Give freed memory back to the system, at most every TRIM_EVERY_S seconds.
 * The workers' malloc arenas keep what a request freed (a full snapshot's
 * tree, SQLite's page cache after another connection wrote) in holes that
 * glibc's own trimming of a heap's top never reaches: under a steady load
 * the server's RSS crept up by megabytes, all of it free memory. */
#define TRIM_EVERY_S 5
static atomic_llong lastTrim;

static void trimNow(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long last = atomic_load(&lastTrim);
    if (t.tv_sec - last >= TRIM_EVERY_S && atomic_compare_exchange_strong(&lastTrim, &last, (long long)t.tv_sec))
        malloc_trim(0);
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    deadlineAnswered(c);
    request *rq = *ctx;
    if (!rq) return;
    *ctx = NULL;
    if (rq->permit) atomic_fetch_add(&permitsFree, 1);
    authDone(rq, 0);
    double secs = since(&rq->start);
    int status = rq->status ? rq->status : 0;
    countRequest(rq->action, status, secs);
    char ts[32];
    rfc3339Now(ts);
    /* one line per request; never a token.  An error's line carries the
     * code and message its answer gave, then the unredacted detail. */
    int failed = rq->error[0] && rq->message;
    fprintf(stderr, "%s request_id=%s principal=%s action=%s status=%d duration_ms=%.3f%s%s%s%s%s%s%s\n",
            ts, rq->id, rq->principal, rq->action, status, secs * 1000,
            toe != MHD_REQUEST_TERMINATED_COMPLETED_OK ? " aborted=1" : "", failed ? " error=" : "",
            failed ? rq->error : "", failed ? " message=" : "", failed ? rq->message : "",
            rq->detail[0] ? " detail=" : "", rq->detail);
    free(rq->message);
    free(rq->body);
    free(rq->answer);
    free(rq->url);
    free(rq->method);
    free(rq->auth);
    free(rq);
    atomic_fetch_sub(&inFlight, 1);
    trimNow();
}

/* --- start-up and drain --------------------------------------------------- */

static int isLoopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return 0;
}

/* Parse a GnuTLS priority string as libmicrohttpd will (it gives no reason
 * when it fails); one GnuTLS refuses is a configuration error (78) naming
 * where GnuTLS stopped reading and why. */
static int checkTlsPriority(const char *prio, lakeError *err) {
    gnutls_priority_t p;
    const char *at = NULL;
    int g = gnutls_priority_init(&p, prio, &at);
    if (g == GNUTLS_E_SUCCESS) {
        gnutls_priority_deinit(p);
        return 0;
    }
    if (!at || !*at) return errSet(err, LAKE_ECONFIG, "--tls-priority '%s': %s", prio, gnutls_strerror(g));
    return errSet(err, LAKE_ECONFIG, "--tls-priority: GnuTLS refuses '%s': %s", at, gnutls_strerror(g));
}

/* Wait for SIGTERM or SIGINT, which it returns; each SIGHUP before reads
 * the certificate and key again (tlscreds.h: the next handshakes get
 * them; a pair that cannot be read is logged and the old one served on).
 * Tokens need no reload: every request looks its token up. */
static int waitForStop(const sigset_t *sigs, int insecure) {
    int sig = 0;
    while (sigwait(sigs, &sig) == 0 && sig == SIGHUP) {
        lakeError err = {0};
        if (insecure) logWarn("SIGHUP: no certificate to read again (--insecure-listen)");
        else if (tlsCredsReload(&err)) logErrorf("SIGHUP: still serving the previous certificate: %s", err.msg);
        else logWarn("SIGHUP: certificate and key read again");
    }
    return sig;
}

/* A freed block does not hand memory back at once: trimNow does, every
 * TRIM_EVERY_S.  glibc's own trimming of a worker arena's top (at 128 KiB
 * by default) cost a madvise and page faults on every request that made
 * SQLite build and drop a temporary b-tree (an IN list: a user's grant
 * check), which halved a user's resolve throughput. */
#define FREE_KEEP_BYTES (4 << 20)

int serverRun(const serverConfig *cfg, lakeError *err) {
    conf = cfg;
    authlimitInit(cfg->auth_failures);
    mallopt(M_TRIM_THRESHOLD, FREE_KEEP_BYTES);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV},
                    *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%u", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai) return errSet(err, LAKE_EUSAGE, "--listen %s: %s", cfg->host, gai_strerror(gai));
    if (cfg->insecure && !isLoopback(ai->ai_addr)) {
        freeaddrinfo(ai);
        return errSet(err, LAKE_EUSAGE, "--insecure-listen is refused on %s: not a loopback address", cfg->host);
    }
    if (!cfg->insecure && checkTlsPriority(cfg->tls_priority, err)) {
        freeaddrinfo(ai);
        return err->code;
    }

    /* the registry must be there and authoritative before we listen */
    registry *probe = NULL;
    char shown[1024];
    registryRedact(cfg->db, shown, sizeof shown);
    int rc = registryOpenUrl(cfg->db, REGISTRY_EXISTING, NULL, &probe, err);
    if (!rc && registryStage(probe)) rc = stageOpen(registryStage(probe), &advertised, err);
    int64_t gen = -1;
    if (!rc) rc = registryGeneration(probe, &gen, err);
    if (!rc && gen < 0) logWarn("%s: registry has no directory marker; snapshots will fail", shown);
    if (!rc) { /* the audit trail's retention: now, then hourly (auditPruneMaybe) */
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        atomic_store(&lastPrune, (long long)t.tv_sec);
        auditPrune(probe);
        uploadsPrune(probe);
    }
    registryClose(probe);
    if (!rc && !cfg->insecure) rc = tlsCredsLoad(cfg->tls_cert, cfg->tls_key, err);
    if (rc) {
        freeaddrinfo(ai);
        tlsCredsFree();
        return rc;
    }

    const char *fault = getenv("LAKE_TEST_SNAPSHOT_MUTATIONS");
    if (fault && *fault) {
        atomic_store(&fenceMutations, atoi(fault));
        fenceFault = 1;
        logErrorf("TEST FAULT: LAKE_TEST_SNAPSHOT_MUTATIONS=%s mutates the registry during snapshots", fault);
    }
    fault = getenv("LAKE_TEST_KILL_AFTER_APPEND");
    if (fault && *fault && strcmp(fault, "0") != 0) {
        killAfterAppend = 1;
        logErrorf("TEST FAULT: LAKE_TEST_KILL_AFTER_APPEND kills the server after an append commits");
    }
    atomic_store(&permitsFree, (int)cfg->permits);
    regworkConfig rw = {.db = cfg->db,
                        .workers = {cfg->pool / 2 ? cfg->pool / 2 : 1, cfg->pool - cfg->pool / 2},
                        .max_waiting = cfg->max_waiting,
                        .wait_ms = cfg->queue_wait_ms,
                        .run = runOnRegistry,
                        .finish = resumeRequest};
    if ((rc = regworkStart(&rw, err))) {
        freeaddrinfo(ai);
        tlsCredsFree();
        return rc;
    }

    /* signals are taken by sigwait in this thread only */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     (cfg->insecure ? 0 : MHD_USE_TLS) |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d;
    if (cfg->insecure)
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                             MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, MHD_OPTION_CONNECTION_LIMIT,
                             cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s,
                             MHD_OPTION_NOTIFY_CONNECTION, deadlineNotify, NULL,
                             MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    else
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                             MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, MHD_OPTION_CONNECTION_LIMIT,
                             cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s,
                             MHD_OPTION_NOTIFY_CONNECTION, deadlineNotify, NULL,
                             MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_HTTPS_CERT_CALLBACK,
                             tlsCredsRetrieve, MHD_OPTION_HTTPS_PRIORITIES, cfg->tls_priority,
                             MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        regworkStop();
        tlsCredsFree();
        return errSet(err, LAKE_EFAIL, "cannot listen on %s:%u (address in use?)",
                      cfg->host, cfg->port);
    }
    /* the idle timeout does not stop a client that trickles its request */
    if (deadlineStart(cfg->timeout_s, err)) {
        MHD_stop_daemon(d);
        regworkStop();
        tlsCredsFree();
        return err->code;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int v6 = strchr(cfg->host, ':') != NULL;
    printf("listening on %s://%s%s%s:%u\n", cfg->insecure ? "http" : "https", v6 ? "[" : "", cfg->host,
           v6 ? "]" : "", info ? info->port : cfg->port);
    fflush(stdout);

    int sig = waitForStop(&sigs, cfg->insecure);
    logWarn("signal %d: draining %d request(s)", sig, atomic_load(&inFlight));
    MHD_quiesce_daemon(d); /* no new connections */
    waitDrained(cfg->drain_s * 100);
    /* what still waits on the registry is refused or cut, and answered */
    regworkStop();
    waitDrained(100);
    MHD_stop_daemon(d);
    auditRefusalsLast(cfg->db);
    deadlineStop();
    stageClose(advertised);
    tlsCredsFree();
    return 0;
}
