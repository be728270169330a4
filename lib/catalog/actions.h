/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * actions.h - the action protocol of DESIGN §5, served over a registry.
 *
 * One dispatcher for every way an action reaches the registry: the local
 * source calls it in-process, lake-metasrv calls it per HTTP request.  It
 * checks the caller's role, validates the request object, runs the
 * registry call and returns exactly one answer object, or an error whose
 * status (errStatus) is one of the protocol's codes.
 */
#ifndef LAKE_ACTIONS_H
#define LAKE_ACTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/registry.h"
#include "core/error.h"
#include "stage/stage.h"

struct cJSON;

typedef struct actionContext {
    registry *reg;
    const stage *stage;      /* containment for append; may be NULL */
    const char *stage_url;   /* advertised by whoami */
    const char *principal;   /* caller's name */
    const char *role;        /* admin, query-service, metadata-peer, user */
    int allow_unmarked;      /* local development path only */
    snapshotBounds bounds;   /* the authority's snapshot caps */
    int64_t presign_default; /* seconds a vended URL lasts when none is asked (0: STAGE_PRESIGN_DEFAULT) */
    int64_t presign_max;     /* seconds a vended URL may last at most (0: STAGE_PRESIGN_MAX) */
    int has_retention;       /* 0: expire without older_than uses CONFIG_RETENTION_DEFAULT */
    int64_t retention;       /* seconds: the deployment's retention (expire without older_than) */
    void (*after_append)(void); /* test-only fault hook, NULL normally */
} actionContext;

/* Run action with request req (a JSON object; NULL means {}).  On success
 * *answer is a new object the caller frees. */
int actionsDispatch(const actionContext *ctx, const char *action, const struct cJSON *req,
                    struct cJSON **answer, lakeError *err);

/* One request as lake-metasrv receives it: body is len bytes (body[len]
 * must be '\0'; len 0 means {}) that must be exactly one JSON object, no
 * more; then actionsDispatch.  A body that is not is invalid_argument. */
int actionsHandle(const actionContext *ctx, const char *action, const char *body, size_t len,
                  struct cJSON **answer, lakeError *err);

/* The error answer of DESIGN §5 for err, and its HTTP status in *http:
 * {"error":{"code","message","request_id"}}.  An internal error's message
 * is redacted to "internal error" (the detail belongs in the server's
 * log).  NULL when out of memory. */
struct cJSON *actionsErrorAnswer(const lakeError *err, const char *request_id, int *http);

/* 1 when role may run action (an unknown action or role: 0). */
int actionsAllowed(const char *role, const char *action);

/* The privilege a user needs on the table action names (issue 29: read,
 * write or modify), NULL when grants do not scope it. */
const char *actionsPrivilege(const char *action);

/* 1 when action is one of the protocol's actions. */
int actionsKnown(const char *action);
/* The i-th of the protocol's actions (from 0), NULL past the last. */
const char *actionsAt(size_t i);
/* 1 when action changes the registry (append, compact, rewrite,
 * rollback, expire, gc, create_*, drop_table). */
int actionsWrites(const char *action);

#endif
