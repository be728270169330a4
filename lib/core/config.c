/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.c - resolving lakeConfig from options, environment, file, defaults.
 *
 * Each layer only fills what a higher layer has not set, so the layers are
 * applied highest first: options, then environment, then the file, then the
 * defaults (some derived from other keys: the local stage lives in home).
 */
#include "core/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/log.h"

#define CONFIG_LINE_MAX 4096
#define CATALOG_TTL_MAX 1000000000L /* about 31 years */

typedef struct keySpec {
    const char *key;
    const char *env;
    size_t offset; /* of the char * field; TTL_SLOT for catalog_ttl */
} keySpec;

#define FIELD(f) offsetof(lakeConfig, f)
#define TTL_SLOT ((size_t)-1) /* parsed apart: numbers */
#define MAXRESP_SLOT ((size_t)-2)
#define CONNECT_SLOT ((size_t)-3)
#define COMPACT_SLOT ((size_t)-4)
#define RETRY_SLOT ((size_t)-5)
#define RETENTION_SLOT ((size_t)-6)
#define MAX_STALE_SLOT ((size_t)-7)
#define SEG_AGE_SLOT ((size_t)-8)
#define COMPACT_THRESHOLD_MAX 1000000L
#define CONNECT_TIMEOUT_MAX 3600L
static const keySpec keys[] = {
    {"metasrv", "LAKE_METASRV", FIELD(metasrv)},
    {"home", "LAKE_HOME", FIELD(home)},
    {"token", "LAKE_TOKEN", FIELD(token)},
    {"token_file", "LAKE_TOKEN_FILE", FIELD(token_file)},
    {"ca_file", "LAKE_CA_FILE", FIELD(ca_file)},
    {"stage", "LAKE_STAGE", FIELD(stage)},
    {"cache_dir", "LAKE_CACHE_DIR", FIELD(cache_dir)},
    {"s3_access", "LAKE_S3_ACCESS", FIELD(s3_access)},
    {"catalog_ttl", "LAKE_CATALOG_TTL", TTL_SLOT},
    {"max_response", "LAKE_MAX_RESPONSE", MAXRESP_SLOT},
    {"connect_timeout", "LAKE_CONNECT_TIMEOUT", CONNECT_SLOT},
    {"compact_threshold", "LAKE_COMPACT_THRESHOLD", COMPACT_SLOT},
    {"retry_deadline", "LAKE_RETRY_DEADLINE", RETRY_SLOT},
    {"retention", "LAKE_RETENTION", RETENTION_SLOT},
    {"catalog_max_stale", "LAKE_CATALOG_MAX_STALE", MAX_STALE_SLOT},
    {"segment_cache_max_age", "LAKE_SEGMENT_CACHE_MAX_AGE", SEG_AGE_SLOT},
};
#define NKEYS (sizeof keys / sizeof keys[0])

typedef struct layerState {
    char *ttl;     /* catalog_ttl as text until validated */
    char *maxresp; /* max_response likewise */
    char *connect; /* connect_timeout likewise */
    char *compact; /* compact_threshold likewise */
    char *retry;   /* retry_deadline likewise */
    char *retention; /* retention likewise (a duration) */
    char *max_stale; /* catalog_max_stale likewise */
    char *seg_age;   /* segment_cache_max_age likewise */
    int layer;     /* 1 options, 2 environment, 3 file */
    int layer_of_token;
} layerState;

static const keySpec *findKey(const char *key) {
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].key, key) == 0) return &keys[i];
    return NULL;
}

int configKnownKey(const char *key) {
    return key && findKey(key) != NULL;
}

/* Set key to value unless a higher layer already did.  Returns -1 on OOM. */
static int setIfUnset(lakeConfig *cfg, layerState *st, const keySpec *k,
                      const char *value) {
    /* token and token_file are one setting: a higher layer's either one
     * hides both of a lower layer */
    if ((strcmp(k->key, "token") == 0 || strcmp(k->key, "token_file") == 0) &&
        (cfg->token || cfg->token_file) && st->layer_of_token != st->layer)
        return 0;
    if (strcmp(k->key, "token") == 0 || strcmp(k->key, "token_file") == 0) st->layer_of_token = st->layer;
    char **slot = k->offset == TTL_SLOT       ? &st->ttl
                  : k->offset == MAXRESP_SLOT ? &st->maxresp
                  : k->offset == CONNECT_SLOT ? &st->connect
                  : k->offset == COMPACT_SLOT ? &st->compact
                  : k->offset == RETRY_SLOT   ? &st->retry
                  : k->offset == RETENTION_SLOT ? &st->retention
                  : k->offset == MAX_STALE_SLOT ? &st->max_stale
                  : k->offset == SEG_AGE_SLOT ? &st->seg_age
                                              : (char **)((char *)cfg + k->offset);
    if (*slot) return 0;
    *slot = strdup(value);
    return *slot ? 0 : -1;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
                 s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Read one config file layer.  A missing default file is fine; a missing
 * file named by $LAKE_CONFIG is an error. */
static int readFile(lakeConfig *cfg, layerState *st, const char *path,
                    int explicit, lakeError *err) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && !explicit) return 0;
        return errSetErrno(err, LAKE_ECONFIG, errno, "%s", path);
    }
    cfg->config_file = strdup(path);
    char line[CONFIG_LINE_MAX];
    char *vals[NKEYS] = {0};
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = errSet(err, LAKE_ECONFIG, "%s:%d: line too long", path, lineno);
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = errSet(err, LAKE_ECONFIG, "%s:%d: expected 'key = value'",
                        path, lineno);
            break;
        }
        *eq = '\0';
        /* "#" after white space starts a comment, as in shell */
        for (char *h = eq + 1; *h; h++)
            if (*h == '#' && (h[-1] == ' ' || h[-1] == '\t')) { *h = '\0'; break; }
        char *key = trim(s), *value = trim(eq + 1);
        const keySpec *k = findKey(key);
        if (!k) {
            rc = errSet(err, LAKE_ECONFIG, "%s:%d: unknown key '%s'", path,
                        lineno, key);
            break;
        }
        /* within the file the last assignment wins */
        free(vals[k - keys]);
        if (!(vals[k - keys] = strdup(value))) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
            break;
        }
    }
    for (size_t i = 0; i < NKEYS; i++) {
        if (!rc && vals[i] && setIfUnset(cfg, st, &keys[i], vals[i]) < 0)
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
        free(vals[i]);
    }
    if (!rc && ferror(f)) rc = errSetErrno(err, LAKE_ECONFIG, errno, "%s", path);
    fclose(f);
    return rc;
}

char *configXdgDir(const char *var, const char *fallback, const char *direct, lakeError *err) {
    const char *v = getenv(var);
    char buf[PATH_MAX];
    if (v && v[0] == '/') {
        snprintf(buf, sizeof buf, "%s", v);
    } else {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/') {
            errSet(err, LAKE_ECONFIG, "neither %s nor HOME is set to an absolute path; set %s (or one of them)",
                   var, direct);
            return NULL;
        }
        snprintf(buf, sizeof buf, "%s/%s", home, fallback);
    }
    return strdup(buf);
}

int configWholeIn(const char *text, long long min, long long max, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(text, &end, 10);
    return errno || end == text || *end || *v < min || *v > max ? -1 : 0;
}

/* text, a setting's value when it was set (NULL: keep *out), as a whole
 * number of unit from min to max into *out; 78 naming key otherwise. */
static int wholeSetting(const char *key, const char *text, long min, long max, const char *unit, long *out,
                        lakeError *err) {
    long long v;
    if (!text) return 0;
    if (configWholeIn(text, min, max, &v))
        return errSet(err, LAKE_ECONFIG, "%s: '%s' is not a number of %s from %ld to %ld", key, text, unit, min,
                      max);
    *out = (long)v;
    return 0;
}

static int applyDefaults(lakeConfig *cfg, layerState *st, lakeError *err) {
    if (!cfg->metasrv) cfg->metasrv = strdup("local");
    if (!cfg->home) {
        char *d = configXdgDir("XDG_DATA_HOME", ".local/share", "LAKE_HOME", err);
        if (!d) return err->code;
        size_t n = strlen(d) + sizeof "/lake";
        cfg->home = malloc(n);
        if (cfg->home) snprintf(cfg->home, n, "%s/lake", d);
        free(d);
    }
    if (!cfg->cache_dir) {
        char *d = configXdgDir("XDG_CACHE_HOME", ".cache", "LAKE_CACHE_DIR", err);
        if (!d) return err->code;
        size_t n = strlen(d) + sizeof "/lake";
        cfg->cache_dir = malloc(n);
        if (cfg->cache_dir) snprintf(cfg->cache_dir, n, "%s/lake", d);
        free(d);
    }
    if (!cfg->metasrv || !cfg->home || !cfg->cache_dir)
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
    if (cfg->cache_dir[0] != '/')
        return errSet(err, LAKE_ECONFIG, "cache_dir: '%s' is not an absolute path", cfg->cache_dir);
    if (cfg->home[0] != '/')
        return errSet(err, LAKE_ECONFIG, "home: '%s' is not an absolute path",
                      cfg->home);
    if (cfg->s3_access && strcmp(cfg->s3_access, "keys") != 0 && strcmp(cfg->s3_access, "vended") != 0)
        return errSet(err, LAKE_ECONFIG, "s3_access: '%s' is neither keys nor vended", cfg->s3_access);
    if (!cfg->stage && configIsLocal(cfg)) {
        size_t n = strlen(cfg->home) + sizeof "file:///stage";
        cfg->stage = malloc(n);
        if (!cfg->stage) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
        snprintf(cfg->stage, n, "file://%s/stage", cfg->home);
    }
    long long v;
    cfg->catalog_ttl = 5;
    if (st->ttl) {
        if (configWholeIn(st->ttl, 0, CATALOG_TTL_MAX, &v))
            return errSet(err, LAKE_ECONFIG,
                          "catalog_ttl: '%s' is not a number of seconds", st->ttl);
        cfg->catalog_ttl = (long)v;
    }
    cfg->max_response = 72LL * 1024 * 1024;
    if (st->maxresp) {
        if (configWholeIn(st->maxresp, 1024, 1LL << 32, &v))
            return errSet(err, LAKE_ECONFIG, "max_response: '%s' is not a number of bytes from 1024 to 2^32",
                          st->maxresp);
        cfg->max_response = v;
    }
    cfg->connect_timeout = 0; /* unset: 2 s, or 1 s per endpoint of several (core/http.h) */
    cfg->compact_threshold = CONFIG_COMPACT_THRESHOLD_DEFAULT;
    cfg->retry_deadline = CONFIG_RETRY_DEADLINE_DEFAULT;
    if (wholeSetting("connect_timeout", st->connect, 1, CONNECT_TIMEOUT_MAX, "seconds", &cfg->connect_timeout,
                     err) ||
        wholeSetting("compact_threshold", st->compact, 0, COMPACT_THRESHOLD_MAX, "segments",
                     &cfg->compact_threshold, err) ||
        wholeSetting("retry_deadline", st->retry, 0, CONFIG_RETRY_DEADLINE_MAX, "seconds", &cfg->retry_deadline,
                     err))
        return err->code;
    cfg->retention = CONFIG_RETENTION_DEFAULT;
    if (st->retention && durationParse(st->retention, CONFIG_RETENTION_MAX, &cfg->retention))
        return errSet(err, LAKE_ECONFIG, "retention: '%s' is not a duration (seconds, or 45s, 30m, 12h, 7d)",
                      st->retention);
    /* a host serves no cached registration longer than a version lives */
    cfg->catalog_max_stale = cfg->retention;
    if (st->max_stale && durationParse(st->max_stale, CONFIG_RETENTION_MAX, &cfg->catalog_max_stale))
        return errSet(err, LAKE_ECONFIG,
                      "catalog_max_stale: '%s' is not a duration (seconds, or 45s, 30m, 12h, 7d)", st->max_stale);
    cfg->segment_cache_max_age = CONFIG_SEGMENT_CACHE_MAX_AGE_DEFAULT;
    if (st->seg_age && (durationParse(st->seg_age, CONFIG_RETENTION_MAX, &cfg->segment_cache_max_age) ||
                        cfg->segment_cache_max_age <= 0))
        return errSet(err, LAKE_ECONFIG,
                      "segment_cache_max_age: '%s' is not a positive duration (seconds, or 45s, 30m, 12h, 7d)",
                      st->seg_age);
    return 0;
}

int configLoad(lakeConfig *cfg, const configOverride *ov, int n, lakeError *err) {
    memset(cfg, 0, sizeof *cfg);
    layerState st = {0};
    int rc = 0;

    st.layer = 1;
    for (int i = 0; i < n; i++) {
        const keySpec *k = findKey(ov[i].key);
        if (!k || !ov[i].value) continue;
        if (setIfUnset(cfg, &st, k, ov[i].value) < 0) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
            goto out;
        }
    }
    st.layer = 2;
    for (size_t i = 0; i < NKEYS; i++) {
        const char *v = getenv(keys[i].env);
        if (v && *v && setIfUnset(cfg, &st, &keys[i], v) < 0) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "config");
            goto out;
        }
    }
    st.layer = 3;
    const char *explicit = getenv("LAKE_CONFIG");
    if (explicit && *explicit) {
        rc = readFile(cfg, &st, explicit, 1, err);
    } else {
        char *dir = configXdgDir("XDG_CONFIG_HOME", ".config", "LAKE_CONFIG", NULL);
        if (dir) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/lake/config", dir);
            free(dir);
            rc = readFile(cfg, &st, path, 0, err);
        }
    }
    if (!rc) rc = applyDefaults(cfg, &st, err);
out:
    free(st.ttl);
    free(st.maxresp);
    free(st.connect);
    free(st.compact);
    free(st.retry);
    free(st.retention);
    free(st.max_stale);
    free(st.seg_age);
    return rc;
}

int configIsLocal(const lakeConfig *cfg) {
    return !cfg->metasrv || strcmp(cfg->metasrv, "local") == 0;
}

/* 1 when url is http(s)://host[:port] with an optional trailing slash;
 * *loopback tells whether host is a loopback name or address. */
static int endpointOk(const char *url, int *https, int *loopback) {
    const char *host;
    if (strncmp(url, "https://", 8) == 0) { *https = 1; host = url + 8; }
    else if (strncmp(url, "http://", 7) == 0) { *https = 0; host = url + 7; }
    else return 0;
    size_t n = strcspn(host, "/?#");
    if (n == 0 || (host[n] && strcmp(host + n, "/") != 0) || memchr(host, '@', n)) return 0;
    /* the host alone, without the port: [v6] or up to the colon */
    char name[256];
    size_t hl = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":/");
    if (hl >= sizeof name || hl > n) return 0;
    memcpy(name, host, hl);
    name[hl] = '\0';
    struct in_addr v4;
    struct in6_addr v6;
    if (name[0] == '[') { /* [v6 literal] */
        char inner[256];
        snprintf(inner, sizeof inner, "%.*s", (int)(hl - 2), name + 1);
        if (hl < 3 || name[hl - 1] != ']' || inet_pton(AF_INET6, inner, &v6) != 1) return 0;
    } else if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != hl) {
        return 0;
    }
    /* an optional :port of 1 to 65535 */
    const char *rest = host + hl;
    if (*rest == ':') {
        size_t digits = strspn(rest + 1, "0123456789");
        long port = digits && digits <= 5 ? strtol(rest + 1, NULL, 10) : 0;
        if (port < 1 || port > 65535 || (rest[1 + digits] && rest[1 + digits] != '/')) return 0;
    } else if (*rest && *rest != '/') {
        return 0;
    }
    *loopback = strcmp(name, "localhost") == 0 || strcmp(name, "[::1]") == 0 ||
                (inet_pton(AF_INET, name, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
    return 1;
}

int configEndpoints(const lakeConfig *cfg, char *out[CONFIG_MAX_ENDPOINTS], size_t *n,
                    lakeError *err) {
    *n = 0;
    const char *p = cfg->metasrv ? cfg->metasrv : "";
    int rc = 0;
    for (;;) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, ",");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        char *url = strndup(p, len);
        int https = 0, loopback = 0;
        if (!url) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "metasrv");
            break;
        }
        if (len && url[len - 1] == '/') url[len - 1] = '\0';
        if (*n == CONFIG_MAX_ENDPOINTS)
            rc = errSet(err, LAKE_ECONFIG, "metasrv: more than %d endpoints", CONFIG_MAX_ENDPOINTS);
        else if (!endpointOk(url, &https, &loopback))
            rc = errSet(err, LAKE_ECONFIG, "metasrv: '%s' is not https://HOST:PORT", url);
        else if (!https && !loopback)
            rc = errSet(err, LAKE_ECONFIG, "metasrv: '%s': plain http is allowed only to a loopback host",
                        url);
        for (size_t i = 0; !rc && i < *n; i++)
            if (strcmp(out[i], url) == 0) rc = errSet(err, LAKE_ECONFIG, "metasrv: '%s' is named twice", url);
        if (rc) {
            free(url);
            break;
        }
        out[(*n)++] = url;
        p += strcspn(p, ",");
        if (!*p++) return 0;
    }
    while (*n) free(out[--*n]);
    return rc;
}

/* A token file that others on the host may read (or change) is warned
 * about, as ssh does for keys, but still used: the warning names the file
 * and the fix.  Once per process, however often the token is read. */
static void warnTokenMode(FILE *f, const char *path) {
    static int warned;
    struct stat st;
    if (warned || fstat(fileno(f), &st) != 0 || !(st.st_mode & (S_IRWXG | S_IRWXO))) return;
    warned = 1;
    logWarn("token_file: %s is accessible by group or others (mode %04o); chmod 600 %s", path,
            (unsigned)(st.st_mode & 07777), path);
}

int configRemote(const lakeConfig *cfg, char **token, lakeError *err) {
    *token = NULL;
    char *endpoints[CONFIG_MAX_ENDPOINTS];
    size_t n;
    if (configEndpoints(cfg, endpoints, &n, err)) return err->code;
    while (n) free(endpoints[--n]);
    if (cfg->ca_file && access(cfg->ca_file, R_OK) != 0)
        return errSetErrno(err, LAKE_ECONFIG, errno, "ca_file: %s", cfg->ca_file);
    if (cfg->token && *cfg->token) {
        *token = strdup(cfg->token);
    } else if (cfg->token_file && *cfg->token_file) {
        FILE *f = fopen(cfg->token_file, "r");
        if (!f) return errSetErrno(err, LAKE_ECONFIG, errno, "token_file: %s", cfg->token_file);
        char line[512] = "";
        if (!fgets(line, sizeof line, f)) line[0] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0]) warnTokenMode(f, cfg->token_file);
        fclose(f);
        if (!line[0]) return errSet(err, LAKE_ECONFIG, "token_file: %s is empty", cfg->token_file);
        *token = strdup(line);
        memset(line, 0, sizeof line);
    } else {
        return errSet(err, LAKE_ECONFIG,
                      "remote mode (metasrv = %s) needs a token: set LAKE_TOKEN or LAKE_TOKEN_FILE",
                      cfg->metasrv);
    }
    return *token ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "token");
}

void configFree(lakeConfig *cfg) {
    free(cfg->metasrv);
    free(cfg->home);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->ca_file);
    free(cfg->stage);
    free(cfg->cache_dir);
    free(cfg->s3_access);
    free(cfg->config_file);
    memset(cfg, 0, sizeof *cfg);
}
