/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlib.c - loading and binding a library on first use (see dlib.h).
 */
#include "core/dlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"

void *lakeDlibOpen(lakeDlib *l) {
    pthread_mutex_lock(&l->mu);
    if (!l->tried) {
        l->tried = 1;
        l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
        if (!l->handle) {
            const char *e = dlerror();
            snprintf(l->error, sizeof l->error, "%s", e ? e : "unknown error");
        }
    }
    pthread_mutex_unlock(&l->mu);
    return l->handle;
}

void lakeDlibBind(lakeDlib *l, size_t n, const char *const names[], void **const slots[]) {
    if (__atomic_load_n(&l->bound, __ATOMIC_ACQUIRE)) return;
    void *h = lakeDlibOpen(l);
    if (!h) {
        logErrorf("cannot load %s: %s", l->soname, l->error);
        exit(1);
    }
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < n && !l->bound; i++) {
        *slots[i] = dlsym(h, names[i]);
        if (!*slots[i]) {
            logErrorf("%s has no %s (%s is needed)", l->soname, names[i], l->need);
            exit(1);
        }
    }
    __atomic_store_n(&l->bound, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&l->mu);
}
