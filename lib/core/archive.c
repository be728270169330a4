/*
 * archive.c - binding libarchive at run time (see archive.h for why).
 */
#define LAKE_ARCHIVE_IMPL 1
#include "core/archive.h"

#include "core/dlib.h"

static lakeArchiveApi api;
static lakeDlib lib = LAKE_DLIB_INIT("libarchive.so.13", "libarchive 3.6 or later");
static pthread_once_t once = PTHREAD_ONCE_INIT;

void *lakeArchiveHandle(void) {
    return lakeDlibOpen(&lib);
}

#define SLOT(f) LAKE_DLIB_SLOT(api, f)
static void bindAll(void) {
    static const char *const names[] = {LAKE_ARCHIVE_FUNCS(LAKE_DLIB_NAME)};
    void **const slots[] = {LAKE_ARCHIVE_FUNCS(SLOT)};
    lakeDlibBind(&lib, sizeof names / sizeof names[0], names, slots);
}

const lakeArchiveApi *lakeArchiveLoad(void) {
    pthread_once(&once, bindAll);
    return &api;
}
