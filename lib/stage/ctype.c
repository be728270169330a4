/*
 * ctype.c - content types from the first bytes, through libmagic.
 *
 * The magic database is loaded on first use, and only when a put did not
 * state --content-type; it stays loaded until contentTypeRelease.  libmagic
 * itself (and the xz and bzip2 libraries it links, whose start-up probes
 * the CPU) is dlopen()ed then too, not linked: a program that never
 * detects a type does not pay for loading it (see core/crypto.h).  When
 * libmagic.so.1 cannot be loaded it is as when its database cannot be:
 * every type is application/octet-stream.
 */
#include "stage/backend.h"

#include <dlfcn.h>
#include <magic.h>
#include <stdlib.h>
#include <string.h>

static struct {
    magic_t (*open)(int);
    int (*load)(magic_t, const char *);
    const char *(*buffer)(magic_t, const void *, size_t);
    void (*close)(magic_t);
} lm;
static void *handle;
static magic_t cookie;
static int loaded; /* 1 ok, -1 failed */

void *lakeMagicHandle(void) {
    if (!handle) handle = dlopen("libmagic.so.1", RTLD_NOW | RTLD_LOCAL);
    return handle;
}

/* Binds lm from libmagic.so.1; 0, or -1 when it cannot be loaded. */
static int bindMagic(void) {
    void *h = lakeMagicHandle();
    if (!h) return -1;
    *(void **)(&lm.open) = dlsym(h, "magic_open");
    *(void **)(&lm.load) = dlsym(h, "magic_load");
    *(void **)(&lm.buffer) = dlsym(h, "magic_buffer");
    *(void **)(&lm.close) = dlsym(h, "magic_close");
    return lm.open && lm.load && lm.buffer && lm.close ? 0 : -1;
}

char *contentTypeDetect(const void *buf, size_t len) {
    const char *t = NULL;
    if (!loaded) {
        cookie = bindMagic() == 0 ? lm.open(MAGIC_MIME_TYPE | MAGIC_ERROR) : NULL;
        loaded = cookie && lm.load(cookie, NULL) == 0 ? 1 : -1;
    }
    if (loaded > 0 && len > 0) t = lm.buffer(cookie, buf, len);
    if (!t || strcmp(t, "application/x-empty") == 0) t = "application/octet-stream";
    return strdup(t);
}

char *stageDetectContentType(const void *buf, size_t len) {
    return contentTypeDetect(buf, len);
}

void contentTypeRelease(void) {
    if (loaded > 0) lm.close(cookie);
    cookie = NULL;
    loaded = 0;
}
