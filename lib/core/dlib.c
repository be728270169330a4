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
            snprintf(l->error, sizeof l->error, "cannot load %s: %s", l->soname, e ? e : "unknown error");
        }
    }
    pthread_mutex_unlock(&l->mu);
    return l->handle;
}

int lakeDlibTry(lakeDlib *l, size_t n, const char *const names[], void **const slots[]) {
    if (__atomic_load_n(&l->bound, __ATOMIC_ACQUIRE)) return 0;
    void *h = lakeDlibOpen(l);
    pthread_mutex_lock(&l->mu);
    if (h && !l->bound && !l->missing) {
        for (size_t i = 0; i < n; i++) {
            void *sym = dlsym(h, names[i]);
            if (!sym) {
                snprintf(l->error, sizeof l->error, "%s has no %s (%s is needed)", l->soname, names[i], l->need);
                l->missing = 1;
                break;
            }
            *slots[i] = sym;
        }
        if (!l->missing) __atomic_store_n(&l->bound, 1, __ATOMIC_RELEASE);
    }
    int rc = l->bound ? 0 : -1;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

void lakeDlibBind(lakeDlib *l, size_t n, const char *const names[], void **const slots[]) {
    if (lakeDlibTry(l, n, names, slots) == 0) return;
    logErrorf("%s", l->error);
    exit(1);
}
