/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlib.h - a shared library loaded on first use, not linked.
 *
 * The programs link only what every run needs; a library that only some
 * commands use (libcrypto: core/crypto.h, libarchive: core/archive.h,
 * libmagic: stage/ctype.c) is dlopen()ed by the first call that needs it,
 * so that a command that never does pays nothing for it at start-up.
 */
#ifndef LAKE_DLIB_H
#define LAKE_DLIB_H

#include <pthread.h>
#include <stddef.h>

typedef struct lakeDlib {
    const char *soname; /* "libcrypto.so.3" */
    const char *need;   /* what a missing symbol means is needed: "OpenSSL 3" */
    pthread_mutex_t mu;
    int tried;
    int bound; /* read without the lock (atomic): set once all are bound */
    int missing; /* loaded, but a name is missing (error says which) */
    void *handle;
    char error[320]; /* why it failed: "cannot load SONAME: dlerror()" or "SONAME has no NAME ..." */
} lakeDlib;

#define LAKE_DLIB_INIT(soname, need) {(soname), (need), PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL, ""}

/* l's handle, dlopen()ed (RTLD_LOCAL) on the first call, thread-safe; NULL
 * when it cannot be loaded (then l->error says why).  Never exits. */
void *lakeDlibOpen(lakeDlib *l);

/* Loads l and stores the address of names[i] in *slots[i] for each of the
 * n names, the first time (thread-safe): 0 when every name is bound, -1
 * when the library or a name is missing (l->error says which), never
 * exiting.  The public library (liblake(3)) asks this of what a client
 * needs when it opens one, so that no later call exits behind a
 * program's back. */
int lakeDlibTry(lakeDlib *l, size_t n, const char *const names[], void **const slots[]);

/* Loads l and stores the address of names[i] in *slots[i] for each of the
 * n names (a slot is a function pointer, written through a void *: POSIX
 * dlsym's rule), the first time; later calls return at once (thread-safe).
 * When the library or a name is missing (lakeDlibTry), prints one line and exits 1:
 * nothing can be done without it, and no caller meets a half-bound
 * library. */
void lakeDlibBind(lakeDlib *l, size_t n, const char *const names[], void **const slots[]);

/* For an X-macro list of function names: the names lakeDlibBind takes. */
#define LAKE_DLIB_NAME(f) #f,

/* Defines a library's loader (one a file) for T, a struct whose fields are
 * pointers to the functions of the X-macro list FUNCS, with their names:
 * `const T *LOAD(void)`, which binds them on the first call and returns
 * them, `void *HANDLE(void)`, the library's handle or NULL, never
 * exiting (for --version), and `const char *READY(void)`, which binds
 * them without exiting: NULL when done, else the line saying why not.
 * core/crypto.c and core/archive.c. */
#define LAKE_DLIB_SLOT(f) (void **)&lakeDlibApi.f,
#define LAKE_DLIB_DEFINE(T, FUNCS, soname, need, LOAD, HANDLE, READY)                \
    static T lakeDlibApi;                                                            \
    static lakeDlib lakeDlibLib = LAKE_DLIB_INIT(soname, need);                      \
    static const char *const lakeDlibNames[] = {FUNCS(LAKE_DLIB_NAME)};              \
    static void **const lakeDlibSlots[] = {FUNCS(LAKE_DLIB_SLOT)};                   \
    enum { lakeDlibN = sizeof lakeDlibNames / sizeof lakeDlibNames[0] };             \
    void *HANDLE(void) {                                                             \
        return lakeDlibOpen(&lakeDlibLib);                                           \
    }                                                                                \
    const T *LOAD(void) {                                                            \
        lakeDlibBind(&lakeDlibLib, lakeDlibN, lakeDlibNames, lakeDlibSlots);         \
        return &lakeDlibApi;                                                         \
    }                                                                                \
    const char *READY(void) {                                                        \
        return lakeDlibTry(&lakeDlibLib, lakeDlibN, lakeDlibNames, lakeDlibSlots)    \
                   ? lakeDlibLib.error                                               \
                   : NULL;                                                           \
    }

#endif
