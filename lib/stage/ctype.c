/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctype.c - content types from the first bytes, through libmagic.
 *
 * The magic database is loaded on first use, and only when a put did not
 * state --content-type; it stays loaded until contentTypeRelease.  libmagic
 * itself (and the xz and bzip2 libraries it links, whose start-up probes
 * the CPU) is dlopen()ed then too, not linked: a program that never
 * detects a type does not pay for loading it (core/dlib.h).
 */
#include "stage/backend.h"

#include <errno.h>
#include <magic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/dlib.h"

#define MAGIC_FUNCS(X) X(magic_open) X(magic_load) X(magic_buffer) X(magic_close)
static struct {
#define FIELD(f) __typeof__(f) *f;
    MAGIC_FUNCS(FIELD)
#undef FIELD
} lm;
#define SLOT(f) (void **)&lm.f,
static lakeDlib lib = LAKE_DLIB_INIT("libmagic.so.1", "libmagic 5");
static magic_t cookie;
static int loaded; /* 1 ok, -1 failed */
/* libmagic's cookie serves one thread at a time: puts on several threads
 * (lake-put's detector, the public library's clients) take turns */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void *lakeMagicHandle(void) {
    return lakeDlibOpen(&lib);
}

static const char *const magicNames[] = {MAGIC_FUNCS(LAKE_DLIB_NAME)};
static void **const magicSlots[] = {MAGIC_FUNCS(SLOT)};
#define MAGIC_N (sizeof magicNames / sizeof magicNames[0])

int stageContentTypeLoad(lakeError *err) {
    return lakeDlibTry(&lib, MAGIC_N, magicNames, magicSlots) ? errSet(err, LAKE_EFAIL, "%s", lib.error) : 0;
}

int contentTypeDetect(const void *buf, size_t len, char **type, lakeError *err) {
    const char *t = NULL;
    pthread_mutex_lock(&mu);
    /* an empty input has no type to find: libmagic is not loaded for it */
    if (len > 0 && !loaded) {
        if (stageContentTypeLoad(err)) {
            pthread_mutex_unlock(&mu);
            *type = NULL;
            return LAKE_EFAIL;
        }
        cookie = lm.magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR);
        loaded = cookie && lm.magic_load(cookie, NULL) == 0 ? 1 : -1;
    }
    if (loaded > 0 && len > 0) t = lm.magic_buffer(cookie, buf, len);
    if (!t || strcmp(t, "application/x-empty") == 0) t = "application/octet-stream";
    *type = strdup(t);
    pthread_mutex_unlock(&mu);
    return *type ? 0 : errSetErrno(err, LAKE_EFAIL, ENOMEM, "content type");
}

char *stageDetectContentType(const void *buf, size_t len) {
    char *t;
    return contentTypeDetect(buf, len, &t, &(lakeError){0}) ? NULL : t;
}

void contentTypeRelease(void) {
    pthread_mutex_lock(&mu);
    if (loaded > 0) lm.magic_close(cookie);
    cookie = NULL;
    loaded = 0;
    pthread_mutex_unlock(&mu);
}
