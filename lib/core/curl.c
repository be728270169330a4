/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * curl.c - binding libcurl at run time (see curl.h for why).
 */
#define LAKE_CURL_IMPL 1
#include "core/curl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"

lakeCurlApi lakeCurl;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[320]; /* set once by load() when libcurl is not usable */

/* POSIX: a function pointer is stored through a void * lvalue. */
#define BIND(field, symbol)                                                          \
    do {                                                                             \
        *(void **)(&lakeCurl.field) = dlsym(h, symbol);                              \
        if (!lakeCurl.field && !missing) missing = symbol;                          \
    } while (0)

static void load(void) {
    const char *missing = NULL;
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load libcurl: %s", e ? e : "unknown error");
        return;
    }
    BIND(global_init, "curl_global_init");
    BIND(global_cleanup, "curl_global_cleanup");
    BIND(easy_init, "curl_easy_init");
    BIND(easy_setopt, "curl_easy_setopt");
    BIND(easy_perform, "curl_easy_perform");
    BIND(easy_getinfo, "curl_easy_getinfo");
    BIND(easy_cleanup, "curl_easy_cleanup");
    BIND(easy_reset, "curl_easy_reset");
    BIND(easy_strerror, "curl_easy_strerror");
    BIND(slist_append, "curl_slist_append");
    BIND(slist_free_all, "curl_slist_free_all");
    BIND(multi_init, "curl_multi_init");
    BIND(multi_add_handle, "curl_multi_add_handle");
    BIND(multi_remove_handle, "curl_multi_remove_handle");
    BIND(multi_perform, "curl_multi_perform");
    BIND(multi_poll, "curl_multi_poll");
    BIND(multi_wakeup, "curl_multi_wakeup");
    BIND(multi_info_read, "curl_multi_info_read");
    BIND(multi_cleanup, "curl_multi_cleanup");
    BIND(url, "curl_url");
    BIND(url_set, "curl_url_set");
    BIND(url_get, "curl_url_get");
    BIND(url_cleanup, "curl_url_cleanup");
    BIND(free, "curl_free");
    if (missing) snprintf(why, sizeof why, "libcurl.so.4 has no %s (libcurl 7.81 or later is needed)", missing);
}

const char *lakeCurlReady(void) {
    pthread_once(&once, load);
    return why[0] ? why : NULL;
}

const lakeCurlApi *lakeCurlLoad(void) {
    if (lakeCurlReady()) {
        logErrorf("%s", why);
        exit(1);
    }
    return &lakeCurl;
}

const char *lakeCurlVersion(void) {
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    char *(*fn)(void);
    if (!h) return NULL;
    *(void **)(&fn) = dlsym(h, "curl_version");
    return fn ? fn() : NULL; /* h stays open: the text lives in it */
}
