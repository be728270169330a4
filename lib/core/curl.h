/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * curl.h - libcurl, loaded on first use.
 *
 * Include this instead of <curl/curl.h>.  The programs do not link
 * libcurl: it and the thirty-odd libraries it needs (TLS, HTTP/2, Kerberos,
 * LDAP…) cost a local `lake-put` several MiB of resident memory and a few
 * milliseconds of start-up that the embedded lake never uses.  Instead the
 * first call of a curl function that makes something (a handle, a list, a
 * URL, global set-up) dlopen()s libcurl.so.4 and binds every function used
 * here; the names below are redirected to those bindings.  If libcurl is
 * missing the process prints one line and exits 1: nothing can be done
 * without it, and no caller can meet a half-loaded state.
 */
#ifndef LAKE_CURL_H
#define LAKE_CURL_H

#define CURL_DISABLE_TYPECHECK 1 /* curl_easy_setopt is a pointer here */
#include <curl/curl.h>

typedef struct lakeCurlApi {
    CURLcode (*global_init)(long);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLU *(*url)(void);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*url_cleanup)(CURLU *);
    void (*free)(void *);
} lakeCurlApi;

/* The bound functions; lakeCurlLoad() fills them (once, thread-safe), and
 * exits 1 after one line when libcurl is not usable. */
extern lakeCurlApi lakeCurl;
const lakeCurlApi *lakeCurlLoad(void);
/* The same without exiting: NULL when libcurl is usable, else the line
 * saying why not (liblake(3)'s lake_open asks it first). */
const char *lakeCurlReady(void);
/* curl_version() of libcurl.so.4 ("libcurl/8.5.0 OpenSSL/…"), or NULL when
 * it cannot be loaded; never exits (for --version). */
const char *lakeCurlVersion(void);

#ifndef LAKE_CURL_IMPL
/* the makers load the library; the rest take what the makers made */
#undef curl_easy_setopt /* curl.h's argument-count check, replaced here */
#undef curl_easy_getinfo
#define curl_global_init (lakeCurlLoad()->global_init)
#define curl_global_cleanup (lakeCurl.global_cleanup)
#define curl_easy_init (lakeCurlLoad()->easy_init)
#define curl_easy_setopt (lakeCurl.easy_setopt)
#define curl_easy_perform (lakeCurl.easy_perform)
#define curl_easy_getinfo (lakeCurl.easy_getinfo)
#define curl_easy_cleanup (lakeCurl.easy_cleanup)
#define curl_easy_reset (lakeCurl.easy_reset)
#define curl_easy_strerror (lakeCurlLoad()->easy_strerror)
#define curl_slist_append (lakeCurlLoad()->slist_append)
#define curl_slist_free_all (lakeCurlLoad()->slist_free_all)
#define curl_multi_init (lakeCurlLoad()->multi_init)
#define curl_multi_add_handle (lakeCurl.multi_add_handle)
#define curl_multi_remove_handle (lakeCurl.multi_remove_handle)
#define curl_multi_perform (lakeCurl.multi_perform)
#define curl_multi_poll (lakeCurl.multi_poll)
#define curl_multi_wakeup (lakeCurl.multi_wakeup)
#define curl_multi_info_read (lakeCurl.multi_info_read)
#define curl_multi_cleanup (lakeCurl.multi_cleanup)
#define curl_url (lakeCurlLoad()->url)
#define curl_url_set (lakeCurl.url_set)
#define curl_url_get (lakeCurl.url_get)
#define curl_url_cleanup (lakeCurl.url_cleanup)
#define curl_free (lakeCurlLoad()->free)
#endif

#endif
