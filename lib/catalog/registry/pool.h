/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pool.h - a bounded pool of registry connections shared by a server's
 * worker threads (lake-metasrv: one pool per lane, a connection per
 * worker).
 *
 * At most size connections are open at once; they are opened on first
 * need (so a server starts, and keeps serving, while its database is
 * away) and reused afterwards.  A caller that finds none free gets
 * `unavailable` at once; a database that cannot be reached is
 * `unavailable` too (503 to clients, never a restart: the next acquire
 * tries again).  Thread-safe.
 */
#ifndef LAKE_REGISTRY_POOL_H
#define LAKE_REGISTRY_POOL_H

#include "catalog/registry.h"
#include "core/error.h"

typedef struct registryPool registryPool;

/* A pool over url (sqlite:PATH or postgresql://…), nothing opened yet.
 * url is copied. */
int registryPoolNew(const char *url, unsigned size, registryPool **out, lakeError *err);
/* A connection for this caller alone until registryPoolRelease; NULL with
 * err set on failure. */
registry *registryPoolAcquire(registryPool *p, lakeError *err);
void registryPoolRelease(registryPool *p, registry *r);
/* From any thread: cut the call in progress on every connection in use
 * (registryCut), for a registry server that stopped answering. */
void registryPoolCut(registryPool *p);
/* Close every connection; none may be in use. */
void registryPoolFree(registryPool *p);

#endif
