/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake-metasrv - the metadata authority: an authenticated, bounded HTTP +
 * JSON action server over a durable registry: a SQLite file, or a
 * PostgreSQL database that several instances share.
 *
 *   lake-metasrv init (--db PATH | --registry URL) [--stage URL]
 *   lake-metasrv serve (--db PATH | --registry URL) --listen HOST:PORT
 *                [--tls-cert F --tls-key F [--tls-priority S] | --insecure-listen] [limits]
 *   lake-metasrv token create|list|revoke (--db PATH | --registry URL) [--role ROLE] [--name NAME]
 *                [--expires DURATION]
 *   lake-metasrv audit (--db PATH | --registry URL) [--since DURATION|TIME] [--principal P]
 *                [--action A] [--result R] [--json]
 *
 * Tokens are "lk_<name>_<64 hex digits>" from OpenSSL's RNG, printed once,
 * stored only as their SHA-256.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/names.h"
#include "catalog/registry.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/sha256.h"
#include "authlimit.h"
#include "server.h"
#include "stage/stage.h"

enum { OPT_DB = 0x100, OPT_STAGE, OPT_LISTEN, OPT_CERT, OPT_KEY, OPT_INSECURE, OPT_ROLE, OPT_NAME,
       OPT_THREADS, OPT_MAXCONN, OPT_TIMEOUT, OPT_MAXBODY, OPT_PERMITS, OPT_MAXENTRIES, OPT_MAXBYTES,
       OPT_MAXSCHEMA, OPT_JSON, OPT_REGISTRY, OPT_POOL, OPT_PRIORITY, OPT_PRESIGN_EXPIRES,
       OPT_PRESIGN_MAX, OPT_MAXWAITING, OPT_RETENTION, OPT_AUDIT_RETENTION, OPT_EXPIRES, OPT_SINCE,
       OPT_PRINCIPAL, OPT_ACTION, OPT_RESULT, OPT_HEADER, OPT_AUTH_FAILURES };

#define AUDIT_RETENTION_DEFAULT (90LL * 86400)
#define TOKEN_EXPIRES_MAX (3650LL * 86400)

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings"},
    {OPT_DB, 0, "db", "PATH", "the registry: a SQLite file (as --registry sqlite:PATH)"},
    {OPT_REGISTRY, 0, "registry", "URL", "the registry: sqlite:PATH or postgresql://USER@HOST/DB"},
    {OPT_STAGE, 0, "stage", "URL", "init: the stage to advertise (file:///dir or s3://bucket/prefix)"},
    {OPT_LISTEN, 0, "listen", "HOST:PORT", "serve: address to listen on (port 0: any free port)"},
    {OPT_CERT, 0, "tls-cert", "FILE", "serve: TLS certificate chain (PEM)"},
    {OPT_KEY, 0, "tls-key", "FILE", "serve: TLS private key (PEM)"},
    {OPT_PRIORITY, 0, "tls-priority", "STRING", "serve: GnuTLS priorities instead of the default of lake-metasrv(8)"},
    {OPT_INSECURE, 0, "insecure-listen", NULL, "serve: plain HTTP, refused unless on loopback"},
    {OPT_THREADS, 0, "threads", "N", "serve: threads reading requests and sending answers (default 4)"},
    {OPT_MAXCONN, 0, "max-connections", "N", "serve: open connections at most (default 512)"},
    {OPT_TIMEOUT, 0, "timeout", "S", "serve: close a connection idle, or still sending its request, after S seconds (default 30)"},
    {OPT_MAXBODY, 0, "max-body", "BYTES", "serve: largest request body (default 1048576)"},
    {OPT_POOL, 0, "pool", "N", "serve: registry workers, each with its connection: half read, half write (default 8)"},
    {OPT_MAXWAITING, 0, "max-waiting", "N", "serve: requests waiting on the registry per lane, then 503 at once (default 256)"},
    {OPT_PERMITS, 0, "snapshot-permits", "N", "serve: concurrent snapshot builds (default 4)"},
    {OPT_MAXENTRIES, 0, "max-entries", "N", "serve: entries in a snapshot at most (default 1000000)"},
    {OPT_MAXBYTES, 0, "max-bytes", "BYTES", "serve: bytes of a snapshot at most (default 67108864)"},
    {OPT_MAXSCHEMA, 0, "max-schema-bytes", "BYTES", "serve: bytes of one table's schema (default 262144)"},
    {OPT_PRESIGN_EXPIRES, 0, "presign-expires", "DURATION", "serve: how long a vended URL lasts when the client asks none (default 15m)"},
    {OPT_PRESIGN_MAX, 0, "presign-max", "DURATION", "serve: the longest expiry a client may ask of a vended URL (default 1d, at most 7d)"},
    {OPT_RETENTION, 0, "retention", "DURATION", "serve: versions expire this long after the next one, when expire or gc names no age (default 7d)"},
    {OPT_AUTH_FAILURES, 0, "auth-failures", "N", "serve: failed authentications a minute per client address, then 429 (default 30; 0: no limit)"},
    {OPT_AUDIT_RETENTION, 0, "audit-retention", "DURATION", "serve: audit rows older than this are pruned, at start and hourly (default 90d)"},
    {OPT_ROLE, 0, "role", "ROLE", "token create: admin, query-service, metadata-peer or user"},
    {OPT_NAME, 0, "name", "NAME", "token create/revoke: the principal's name"},
    {OPT_EXPIRES, 0, "expires", "DURATION", "token create: the token stops authenticating after this long (default never)"},
    {OPT_SINCE, 0, "since", "WHEN", "audit: rows of the last DURATION (1h, 7d), or since an RFC 3339 time"},
    {OPT_PRINCIPAL, 0, "principal", "NAME", "audit: rows of this principal only"},
    {OPT_ACTION, 0, "action", "ACTION", "audit: rows of this action only"},
    {OPT_RESULT, 0, "result", "RESULT", "audit: rows of this result only (ok, permission_denied, ...)"},
    {OPT_JSON, 0, "json", NULL, "token list, audit: print JSON instead of TSV"},
    {OPT_HEADER, 'H', "header", NULL, "token list, audit: print a header row before TSV output"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "init (--db PATH | --registry URL) [--stage URL]\n"
    "serve (--db PATH | --registry URL) --listen HOST:PORT\n"
    "      [--tls-cert FILE --tls-key FILE | --insecure-listen]\n"
    "token create|list|revoke (--db PATH | --registry URL) [--role ROLE] [--name NAME]\n"
    "      [--expires DURATION]\n"
    "audit (--db PATH | --registry URL) [--since DURATION|TIME] [--principal NAME]\n"
    "      [--action ACTION] [--result RESULT] [--json | --header]",
    "The lake's metadata authority: create a registry, serve it over HTTPS, manage tokens, read the audit trail.",
    options,
    0,
    8,
};

typedef struct args {
    const char *db, *registry, *stage, *listen, *cert, *key, *priority, *role, *name;
    char url[4096]; /* the registry as a URL */
    int insecure, json, header;
    char expires_at[32]; /* token create --expires: RFC 3339, or "" */
    char since[32];      /* audit --since: RFC 3339, or "" */
    const char *principal, *action, *result; /* audit's filters */
    serverConfig srv;
} args;

static unsigned long long number(const char *opt, const char *s, unsigned long long min,
                                 unsigned long long max) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
        cliUsageError(&spec, "%s: '%s' is not a number from %llu to %llu", opt, s, min, max);
    return v;
}

/* A DURATION option: 1 s to 7 days (SigV4's limit). */
static int64_t duration(const char *opt, const char *s) {
    int64_t v;
    if (durationParse(s, STAGE_PRESIGN_MAX, &v) || v < 1)
        cliUsageError(&spec, "%s: '%s' is not a duration from 1s to 7d (e.g. 900, 15m, 12h, 1d)", opt, s);
    return v;
}

/* A new token for name: lk_<name>_<64 hex>; *sha gets its SHA-256. */
static int newToken(const char *name, char **token, char sha[SHA256_HEX_LEN + 1], lakeError *err) {
    unsigned char r[32];
    if (RAND_bytes(r, sizeof r) != 1) return errSet(err, LAKE_EFAIL, "random number generator failed");
    size_t n = strlen(name) + 4 + 2 * sizeof r + 1;
    if (!(*token = malloc(n))) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "token");
    int k = snprintf(*token, n, "lk_%s_", name);
    for (size_t i = 0; i < sizeof r; i++) k += snprintf(*token + k, n - (size_t)k, "%02x", r[i]);
    sha256Ctx *c = sha256New();
    if (!c) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "token");
    sha256Update(c, *token, strlen(*token));
    sha256FinalHex(c, sha);
    sha256Free(c);
    return 0;
}

/* Create the principal and print its token once. */
static int issueToken(registry *reg, const char *name, const char *role, const char *expires_at, lakeError *err) {
    char *token = NULL, sha[SHA256_HEX_LEN + 1];
    int rc = newToken(name, &token, sha, err);
    if (!rc) rc = registryAddPrincipal(reg, name, role, sha, expires_at, err);
    if (!rc && (printf("%s\n", token) < 0 || fflush(stdout) == EOF))
        rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    if (token) memset(token, 0, strlen(token));
    free(token);
    return rc;
}

static int cmdInit(const args *a, lakeError *err) {
    struct stat st;
    if (a->db && stat(a->db, &st) == 0)
        return errSet(err, LAKE_EFAIL, "%s exists; init never touches an existing registry", a->db);
    if (a->stage) {
        stage *s = NULL;
        int rc = stageOpen(a->stage, &s, err);
        stageClose(s);
        if (rc) return rc;
    }
    registry *reg;
    int rc = registryOpenUrl(a->url, REGISTRY_NEW, a->stage, &reg, err);
    if (rc) return rc;
    rc = issueToken(reg, "admin", "admin", NULL, err);
    registryClose(reg);
    return rc;
}

/* A list of objects as JSON (one line) or TSV of columns, null as "-",
 * with --header a first row of the column names. */
static int printRows(const cJSON *list, const char *const *columns, const args *a, lakeError *err) {
    if (a->json) {
        char *text = cJSON_PrintUnformatted(list);
        if (!text) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "output");
        puts(text);
        cJSON_free(text);
        return 0;
    }
    if (a->header)
        for (int i = 0; columns[i]; i++) printf("%s%c", columns[i], columns[i + 1] ? '\t' : '\n');
    const cJSON *row;
    cJSON_ArrayForEach(row, list) {
        for (int i = 0; columns[i]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, columns[i]);
            if (cJSON_IsString(v)) fputs(v->valuestring, stdout);
            else if (cJSON_IsNumber(v)) printf("%.0f", v->valuedouble);
            else putchar('-');
            putchar(columns[i + 1] ? '\t' : '\n');
        }
    }
    return 0;
}

/* The audit trail, oldest first, filtered. */
static int cmdAudit(const args *a, lakeError *err) {
    registry *reg;
    int rc = registryOpenUrl(a->url, REGISTRY_EXISTING, NULL, &reg, err);
    if (rc) return rc;
    registryAuditFilter f = {a->since[0] ? a->since : NULL, a->principal, a->action, a->result};
    cJSON *list = NULL;
    static const char *const columns[] = {"at", "principal", "role", "action", "target", "result", "request_id",
                                          NULL};
    rc = registryAuditList(reg, &f, &list, err);
    if (!rc) rc = printRows(list, columns, a, err);
    cJSON_Delete(list);
    registryClose(reg);
    return rc;
}

static int cmdToken(const char *sub, const args *a, lakeError *err) {
    registry *reg;
    int rc = registryOpenUrl(a->url, REGISTRY_EXISTING, NULL, &reg, err);
    if (rc) return rc;
    if (strcmp(sub, "create") == 0) {
        rc = issueToken(reg, a->name, a->role, a->expires_at[0] ? a->expires_at : NULL, err);
    } else if (strcmp(sub, "revoke") == 0) {
        rc = registryRevokePrincipal(reg, a->name, err);
    } else {
        cJSON *list = NULL;
        rc = registryListPrincipals(reg, &list, err);
        static const char *const columns[] = {"name", "role", "created_at", "revoked_at", "expires_at",
                                              "last_used_at", NULL};
        if (!rc) rc = printRows(list, columns, a, err);
        cJSON_Delete(list);
    }
    registryClose(reg);
    return rc;
}

/* An audit filter's value: a word of [A-Za-z0-9_-], as names, actions
 * and error codes are. */
static void filterWord(const char *opt, const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n >= NAME_BUF || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != n)
        cliUsageError(&spec, "%s: '%s' is not a name", opt, s);
}

/* --expires and --since as RFC 3339 times, the filters checked: a bad
 * value is a usage error whatever the command (the options of another
 * command are otherwise ignored, as every option of lake-metasrv's). */
static void checkCommandOptions(args *a, const char *expires, const char *since) {
    if (a->json && a->header) cliUsageError(&spec, "--header is for TSV output, not --json");
    long long now = (long long)time(NULL);
    if (expires) {
        int64_t v;
        /* a token that expires at once (0) or is already past is refused */
        if (durationParse(expires, TOKEN_EXPIRES_MAX, &v) || v < 1)
            cliUsageError(&spec, "--expires: '%s' is not a duration from 1s to 3650d (e.g. 90d, 12h)", expires);
        rfc3339Format(a->expires_at, now + v);
    }
    if (since) {
        int64_t v;
        long long t;
        if (durationParse(since, CONFIG_RETENTION_MAX, &v) == 0) t = now - v;
        else if (rfc3339Parse(since, &t, NULL, NULL) != 0)
            cliUsageError(&spec, "--since: '%s' is neither a duration (e.g. 1h, 7d) nor an RFC 3339 time", since);
        rfc3339Format(a->since, t < 0 ? 0 : t);
    }
    if (a->principal) filterWord("--principal", a->principal);
    if (a->action) filterWord("--action", a->action);
    if (a->result) filterWord("--result", a->result);
}

/* HOST:PORT or [V6]:PORT into host (in buf) and port. */
static void splitListen(const char *s, char *buf, size_t n, serverConfig *srv) {
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s) cliUsageError(&spec, "--listen: '%s' is not HOST:PORT", s);
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= n) cliUsageError(&spec, "--listen: '%s' is not HOST:PORT", s);
    memcpy(buf, h, hl);
    buf[hl] = '\0';
    srv->host = buf;
    srv->port = (unsigned)number("--listen port", colon + 1, 0, 65535);
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    registryEnablePostgres();
    args a = {0};
    a.srv = (serverConfig){.threads = 4, .max_connections = 512, .timeout_s = 30, .max_body = 1 << 20,
                           .permits = 4, .bounds = {1000000, 64LL << 20, 256 << 10}, .drain_s = 30,
                           .pool = 8, .queue_wait_ms = 10000, .max_waiting = 256, .presign_max = 24 * 3600,
                           .retention = CONFIG_RETENTION_DEFAULT, .audit_retention = AUDIT_RETENTION_DEFAULT,
                           .auth_failures = AUTHLIMIT_DEFAULT};
    const char *presignExpires = NULL, *expires = NULL, *since = NULL;
    const char *arg;
    int c, first;
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        switch (c) {
        case 'q': logSetQuiet(1); break;
        case OPT_DB: a.db = arg; break;
        case OPT_REGISTRY: a.registry = arg; break;
        case OPT_POOL: a.srv.pool = (unsigned)number("--pool", arg, 1, 1024); break;
        case OPT_MAXWAITING: a.srv.max_waiting = (unsigned)number("--max-waiting", arg, 1, 65536); break;
        case OPT_STAGE: a.stage = arg; break;
        case OPT_LISTEN: a.listen = arg; break;
        case OPT_CERT: a.cert = arg; break;
        case OPT_KEY: a.key = arg; break;
        case OPT_PRIORITY: a.priority = arg; break;
        case OPT_INSECURE: a.insecure = 1; break;
        case OPT_ROLE: a.role = arg; break;
        case OPT_NAME: a.name = arg; break;
        case OPT_JSON: a.json = 1; break;
        case OPT_HEADER: a.header = 1; break;
        case OPT_EXPIRES: expires = arg; break;
        case OPT_SINCE: since = arg; break;
        case OPT_PRINCIPAL: a.principal = arg; break;
        case OPT_ACTION: a.action = arg; break;
        case OPT_RESULT: a.result = arg; break;
        case OPT_AUDIT_RETENTION:
            if (durationParse(arg, CONFIG_RETENTION_MAX, &a.srv.audit_retention) || a.srv.audit_retention < 1)
                cliUsageError(&spec, "--audit-retention: '%s' is not a duration from 1s (e.g. 90d, 12h)", arg);
            break;
        case OPT_AUTH_FAILURES: a.srv.auth_failures = (unsigned)number("--auth-failures", arg, 0, 1000000); break;
        case OPT_THREADS: a.srv.threads = (unsigned)number("--threads", arg, 1, 256); break;
        case OPT_MAXCONN: a.srv.max_connections = (unsigned)number("--max-connections", arg, 1, 100000); break;
        case OPT_TIMEOUT: a.srv.timeout_s = (unsigned)number("--timeout", arg, 1, 86400); break;
        case OPT_MAXBODY: a.srv.max_body = (size_t)number("--max-body", arg, 1024, 1ULL << 30); break;
        case OPT_PERMITS: a.srv.permits = (unsigned)number("--snapshot-permits", arg, 1, 1024); break;
        case OPT_MAXENTRIES: a.srv.bounds.max_entries = (int64_t)number("--max-entries", arg, 1, 100000000); break;
        case OPT_MAXBYTES: a.srv.bounds.max_bytes = (int64_t)number("--max-bytes", arg, 1024, 1ULL << 32); break;
        case OPT_PRESIGN_EXPIRES:
            presignExpires = arg;
            a.srv.presign_default = duration("--presign-expires", arg);
            break;
        case OPT_PRESIGN_MAX: a.srv.presign_max = duration("--presign-max", arg); break;
        case OPT_RETENTION:
            /* 0 is allowed: every version but the current one expires at gc */
            if (durationParse(arg, CONFIG_RETENTION_MAX, &a.srv.retention))
                cliUsageError(&spec, "--retention: '%s' is not a duration (seconds, or 45s, 30m, 12h, 7d)", arg);
            break;
        case OPT_MAXSCHEMA:
            a.srv.bounds.max_schema_bytes = (int64_t)number("--max-schema-bytes", arg, 64, 1ULL << 30);
            break;
        }
    }
    if (first >= argc) cliUsageError(&spec, "a command is needed: init, serve, token or audit");
    const char *cmd = argv[first], *sub = first + 1 < argc ? argv[first + 1] : NULL;
    if (strcmp(cmd, "init") && strcmp(cmd, "serve") && strcmp(cmd, "token") && strcmp(cmd, "audit"))
        cliUsageError(&spec, "unknown command '%s' (init, serve, token or audit)", cmd);
    checkCommandOptions(&a, expires, since);
    int extra = argc - first - (strcmp(cmd, "token") == 0 ? 2 : 1);
    if (extra > 0) cliUsageError(&spec, "unexpected argument '%s'", argv[argc - extra]);
    if (!a.db == !a.registry) cliUsageError(&spec, "one of --db PATH or --registry URL is required");
    if (a.registry && registryUrlKind(a.registry) < 0) {
        char shown[1024];
        registryRedact(a.registry, shown, sizeof shown);
        cliUsageError(&spec, "--registry: '%s' is not sqlite:PATH or postgresql://…", shown);
    }
    if ((size_t)snprintf(a.url, sizeof a.url, "%s%s", a.db ? "sqlite:" : "", a.db ? a.db : a.registry) >=
        sizeof a.url)
        cliUsageError(&spec, "the registry's name is too long");
    if (registryUrlKind(a.url) == 1 && !a.db) a.db = a.url + 7;

    lakeError err = {0};
    int rc;
    char host[256];
    if (strcmp(cmd, "init") == 0) {
        rc = cmdInit(&a, &err);
    } else if (strcmp(cmd, "serve") == 0) {
        if (!a.listen) cliUsageError(&spec, "serve needs --listen HOST:PORT");
        if (a.insecure && (a.cert || a.key || a.priority))
            cliUsageError(&spec, "--insecure-listen takes no certificate or TLS priorities");
        if (!a.insecure && (!a.cert || !a.key))
            cliUsageError(&spec, "serve needs --tls-cert and --tls-key (or --insecure-listen on loopback)");
        /* the default never exceeds the cap: one asked for is refused */
        if (presignExpires && a.srv.presign_default > a.srv.presign_max)
            cliUsageError(&spec, "--presign-expires %s is longer than --presign-max (%lld s)", presignExpires,
                          (long long)a.srv.presign_max);
        if (!presignExpires)
            a.srv.presign_default =
                STAGE_PRESIGN_DEFAULT < a.srv.presign_max ? STAGE_PRESIGN_DEFAULT : a.srv.presign_max;
        splitListen(a.listen, host, sizeof host, &a.srv);
        a.srv.db = a.url;
        a.srv.tls_cert = a.cert;
        a.srv.tls_key = a.key;
        a.srv.tls_priority = a.insecure ? NULL : a.priority ? a.priority : SERVER_TLS_PRIORITY;
        a.srv.insecure = a.insecure;
        rc = serverRun(&a.srv, &err);
    } else if (strcmp(cmd, "audit") == 0) {
        rc = cmdAudit(&a, &err);
    } else { /* token */
        if (!sub || (strcmp(sub, "create") && strcmp(sub, "list") && strcmp(sub, "revoke")))
            cliUsageError(&spec, "token needs create, list or revoke");
        if (strcmp(sub, "list") != 0 && !nameIsValid(a.name))
            cliUsageError(&spec, "token %s needs --name NAME ([A-Za-z_][A-Za-z0-9_]*)", sub);
        if (strcmp(sub, "create") == 0 &&
            (!a.role || (strcmp(a.role, "admin") && strcmp(a.role, "query-service") &&
                         strcmp(a.role, "metadata-peer") && strcmp(a.role, "user"))))
            cliUsageError(&spec, "token create needs --role admin|query-service|metadata-peer|user");
        /* PUBLIC is every principal's grantee (lake-catalog grant), so no
         * principal may be called that, in any case (as PostgreSQL's) */
        if (strcmp(sub, "create") == 0 && strcasecmp(a.name, "PUBLIC") == 0)
            cliUsageError(&spec, "token create: --name %s: the name PUBLIC is reserved for grants to everyone", a.name);
        rc = cmdToken(sub, &a, &err);
    }
    if (rc) logError(&err);
    return rc;
}
