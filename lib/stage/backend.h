/*
 * backend.h - what a stage backend provides (private to lib/stage).
 */
#ifndef LAKE_STAGE_BACKEND_H
#define LAKE_STAGE_BACKEND_H

#include "stage/stage.h"

typedef struct stageOps {
    int (*put)(stage *s, lakeReader *r, const stagePutOptions *opt,
               fileValue *out, lakeError *err);
    int (*get)(stage *s, const fileValue *fv, lakeWriter *w, int verify,
               progress *prog, lakeError *err);
    /* The key below the root, or NULL when outside; no I/O. */
    char *(*relative)(const stage *s, const char *location);
    void (*close)(stage *s);
} stageOps;

struct stage {
    const stageOps *ops;
    char *url; /* normalised */
};

int localStageOpen(const char *url, stage **out, lakeError *err);

/* Shared by the backends: the streaming unit and the time stamp format. */
#define STAGE_BUF_SIZE (1024 * 1024)
/* "2026-12-02T13:08:02Z" for t. */
void stageTimestamp(char out[32], long long t);
/* "files/2026/12/" for t. */
void stageKeyDir(char out[32], long long t);

/* Detected content type of the first bytes of an object; never NULL (falls
 * back to application/octet-stream).  Caller frees. */
char *contentTypeDetect(const void *buf, size_t len);

#endif
