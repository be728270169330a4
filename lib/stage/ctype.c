/*
 * ctype.c - content types from the first bytes, through libmagic.
 *
 * The magic database is loaded on first use, and only when a put did not
 * state --content-type; it stays loaded until contentTypeRelease.
 */
#include "stage/backend.h"

#include <magic.h>
#include <stdlib.h>
#include <string.h>

static magic_t cookie;
static int loaded; /* 1 ok, -1 failed */

char *contentTypeDetect(const void *buf, size_t len) {
    const char *t = NULL;
    if (!loaded) {
        cookie = magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR);
        loaded = cookie && magic_load(cookie, NULL) == 0 ? 1 : -1;
    }
    if (loaded > 0 && len > 0) t = magic_buffer(cookie, buf, len);
    if (!t || strcmp(t, "application/x-empty") == 0) t = "application/octet-stream";
    return strdup(t);
}

char *stageDetectContentType(const void *buf, size_t len) {
    return contentTypeDetect(buf, len);
}

void contentTypeRelease(void) {
    if (loaded > 0) magic_close(cookie);
    cookie = NULL;
    loaded = 0;
}
