/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * source_impl.h - what a CatalogSource implementation provides (private
 * to lib/catalog).
 */
#ifndef LAKE_SOURCE_IMPL_H
#define LAKE_SOURCE_IMPL_H

#include "catalog/source.h"

typedef struct sourceOps {
    int (*call)(catalogSource *s, const char *action, const struct cJSON *req,
                struct cJSON **answer, lakeError *err);
    void (*close)(catalogSource *s);
    /* optional (remote): sourceEndpoint, sourcePrefer, sourceNoRetry */
    const char *(*endpoint)(const catalogSource *s);
    void (*prefer)(catalogSource *s, const char *endpoint);
    void (*no_retry)(catalogSource *s, int on);
} sourceOps;

struct catalogSource {
    const sourceOps *ops;
    char *name; /* for people: "local:/path" or the endpoint */
    char *key;  /* for the cache directory */
    int unconditional; /* the source refused a conditional resolve (an older server) */
};

/* "kind-<16 hex digits of a checksum of text>" into out (40 bytes). */
void sourceMakeKey(char out[40], const char *kind, const char *text);

/* The remote source over cfg->metasrv (configRemote checks first: 78). */
int sourceRemoteOpen(const lakeConfig *cfg, catalogSource **out, lakeError *err);

#endif
