/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * source_local.c - the local CatalogSource: the registry file in-process.
 *
 * The registry is opened (and created, with its directory) on the first
 * call, so commands answered from a fresh cache never touch it.  The caller
 * is the local principal, "local:<user>", with the admin role.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/actions.h"
#include "catalog/registry.h"
#include "catalog/source_impl.h"
#include "core/fsutil.h"

/* The local authority's bounds on a snapshot (lake.7). */
#define LOCAL_MAX_ENTRIES 1000000
#define LOCAL_MAX_BYTES (256LL * 1024 * 1024)

typedef struct localSource {
    catalogSource base;
    char *path;
    char *stage_url;
    registry *reg;
    stage *stage;
    char principal[64];
    int has_retention;
    int64_t retention; /* seconds: expire without an age (lake.conf retention) */
} localSource;

void sourceMakeKey(char out[40], const char *kind, const char *text) {
    /* two zlib checksums make 64 bits: distinct lakes never share a cache
     * directory in practice, and no OpenSSL start-up on the hot path */
    uLong a = crc32(0, (const Bytef *)text, (uInt)strlen(text));
    uLong b = adler32(1, (const Bytef *)text, (uInt)strlen(text));
    snprintf(out, 40, "%.16s-%08lx%08lx", kind, a & 0xffffffffUL, b & 0xffffffffUL);
}

int sourceLocalRegistry(catalogSource *s, registry **reg, lakeError *err) {
    localSource *ls = (localSource *)s;
    if (!ls->reg) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", ls->path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            if (mkdirs(dir, 0700, err)) return err->code; /* the embedded lake is private */
        }
        if (registryOpen(ls->path, REGISTRY_CREATE | REGISTRY_EMBEDDED, ls->stage_url, &ls->reg, err))
            return err->code;
    }
    *reg = ls->reg;
    return 0;
}

static int localCall(catalogSource *s, const char *action, const cJSON *req, cJSON **answer,
                     lakeError *err) {
    localSource *ls = (localSource *)s;
    registry *reg;
    if (sourceLocalRegistry(s, &reg, err)) return err->code;
    if (!ls->stage && ls->stage_url && stageOpen(ls->stage_url, &ls->stage, err)) return err->code;
    actionContext ctx = {
        .reg = reg,
        .stage = ls->stage,
        .stage_url = ls->stage_url,
        .principal = ls->principal,
        .role = "admin",
        .allow_unmarked = 1,
        .bounds = {LOCAL_MAX_ENTRIES, LOCAL_MAX_BYTES, LOCAL_MAX_BYTES},
        .has_retention = ls->has_retention,
        .retention = ls->retention,
    };
    return actionsDispatch(&ctx, action, req, answer, err);
}

void sourceLocalRetention(catalogSource *s, int64_t seconds) {
    localSource *ls = (localSource *)s;
    ls->has_retention = 1;
    ls->retention = seconds;
}

static void localClose(catalogSource *s) {
    localSource *ls = (localSource *)s;
    registryClose(ls->reg);
    stageClose(ls->stage);
    free(ls->path);
    free(ls->stage_url);
    free(ls->base.name);
    free(ls->base.key);
    free(ls);
}

static const sourceOps localOps = {localCall, localClose, NULL, NULL, NULL};

int sourceLocalOpen(const char *path, const char *stage_url, catalogSource **out, lakeError *err) {
    *out = NULL;
    localSource *ls = calloc(1, sizeof *ls);
    size_t n = strlen(path) + sizeof "local:";
    char key[40];
    sourceMakeKey(key, "local", path);
    if (!ls || !(ls->path = strdup(path)) || (stage_url && !(ls->stage_url = strdup(stage_url))) ||
        !(ls->base.name = malloc(n)) || !(ls->base.key = strdup(key))) {
        if (ls) {
            ls->base.ops = &localOps;
            localClose(&ls->base);
        }
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "source");
    }
    snprintf(ls->base.name, n, "local:%s", path);
    ls->base.ops = &localOps;
    char user[256];
    const char *who = userName(getuid(), user, sizeof user) ? "unknown" : user;
    snprintf(ls->principal, sizeof ls->principal, "local:%.56s", who);
    *out = &ls->base;
    return 0;
}
