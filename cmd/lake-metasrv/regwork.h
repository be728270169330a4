/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * regwork.h - lake-metasrv's registry work, off the threads that accept
 * connections and answer requests.
 *
 * A request that needs the registry is handed to a lane, and its
 * connection suspended until a worker of that lane has built the answer.
 * There are two lanes, reads and writes, each with its own workers and
 * its own registry connections, so writes waiting on the registry (a
 * synchronous standby that is gone, another process's write lock) never
 * hold up reads, and neither holds up /v1/health, which is answered from
 * the state a probe keeps.  What may wait is bounded:
 *   - at most max_waiting requests per lane, queued or running; past it a
 *     request is refused at once (503 unavailable, Retry-After);
 *   - a request queued for wait_ms without a worker starting it is
 *     refused (nothing of it ran);
 *   - while the probe has waited REGWORK_STALL_MS for an answer, a read
 *     is refused at once: the registry is not answering reads;
 *   - a running request is never given up while the registry's server
 *     answers (a commit that waits may commit); but when the probe has had
 *     no answer for REGWORK_READ_CUT_MS the reads in progress are cut
 *     (registryCut: they answer 503, and changed nothing), and for
 *     REGWORK_DEAD_MS the server is taken for gone: every call in progress
 *     is cut and answers 503, and connections are made again once it
 *     answers.
 */
#ifndef LAKE_METASRV_REGWORK_H
#define LAKE_METASRV_REGWORK_H

#include <stdint.h>
#include <time.h>

#include "catalog/registry.h"
#include "core/error.h"

#define REGWORK_STALL_MS 1000   /* a probe unanswered this long refuses reads at once; a request
                                   waiting this long makes /v1/health say "waiting" */
#define REGWORK_PROBE_MS 1000   /* the probe asks the registry this often */
#define REGWORK_READ_CUT_MS 2000 /* a probe unanswered this long: reads in progress are cut */
#define REGWORK_DEAD_MS 10000   /* a probe unanswered this long: the server is gone */

enum { LANE_READ, LANE_WRITE, LANES };

/* A request's place in a lane, embedded in the caller's own request. */
typedef struct regJob {
    struct regJob *next;
    int64_t queued;         /* clockMs() when it was queued */
    int lane;
} regJob;

/* run builds the answer on a worker with reg (NULL with refused set when
 * the job is refused after it was queued: answer that).  finish is called
 * after, once the lane has let the job go: it hands the answer back (and
 * may free the job). */
typedef void (*regRun)(regJob *job, registry *reg, const lakeError *refused);
typedef void (*regFinish)(regJob *job);

typedef struct regworkConfig {
    const char *db;
    unsigned workers[LANES];
    unsigned max_waiting;   /* per lane */
    unsigned wait_ms;       /* longest wait in a queue */
    regRun run;
    regFinish finish;
} regworkConfig;

/* Start the lanes' workers and the probe.  Nothing is opened yet. */
int regworkStart(const regworkConfig *cfg, lakeError *err);
/* Queue job on its lane (job->lane): 0, and run and finish follow on a
 * worker; else unavailable in err, to answer at once. */
int regworkSubmit(regJob *job, lakeError *err);

/* What /v1/health and /v1/metrics say. */
typedef struct regworkState {
    int registry;              /* REGISTRY_WRITABLE, _READ_ONLY, _UNAVAILABLE */
    int silent;                /* the probe has had no answer for REGWORK_DEAD_MS */
    unsigned waiting[LANES];   /* queued or running */
    double oldest_s[LANES];    /* the longest any of them has waited */
    uint64_t refused_full, refused_stalled, refused_timeout, cuts;
} regworkState;
void regworkRead(regworkState *s);

/* Refuse what is queued, cut what runs, and join the workers. */
void regworkStop(void);

#endif
