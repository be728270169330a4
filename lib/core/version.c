/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * version.c - what --version prints: the program's version, the git
 * revision it was built from, and the versions of the libraries it links,
 * as curl -V does.
 *
 * A library is listed when the running process has it loaded: its version
 * function is looked up with dlsym(RTLD_DEFAULT), so this module links
 * none of them and every program lists exactly what it carries (lake-get
 * libarchive, lake-metasrv libmicrohttpd, GnuTLS and libpq, and so on).
 * libcurl, which the programs load only when they need it (curl.h), is
 * loaded here to ask it, when the program has the loader at all; so are
 * libcrypto (crypto.h), libarchive (archive.h) and libmagic (stage/ctype.c),
 * loaded on first use too (dlib.h), and asked through their handles.
 */
#include "core/version.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

#ifndef LAKE_GIT_REV
#define LAKE_GIT_REV ""
#endif

/* curl.c's, when the program links it (weak: this reference alone does
 * not pull it in). */
const char *lakeCurlVersion(void) __attribute__((weak));
/* The same for the libraries loaded on first use: their dlopen() handles. */
void *lakeCryptoHandle(void) __attribute__((weak));
void *lakeMagicHandle(void) __attribute__((weak));
void *lakeArchiveHandle(void) __attribute__((weak));

typedef enum { V_TEXT, V_TEXT_WORD2, V_MAGIC, V_PQ, V_OPENSSL, V_GNUTLS } versionKind;

static const struct {
    const char *label;
    const char *symbol;
    versionKind kind;
    void *(*handle)(void); /* loaded on first use: its handle, when linked */
} libs[] = {
    {"OpenSSL", "OpenSSL_version", V_OPENSSL, lakeCryptoHandle}, /* "OpenSSL 3.0.15 3 Sep 2024" */
    {"SQLite", "sqlite3_libversion", V_TEXT, NULL},
    {"cJSON", "cJSON_Version", V_TEXT, NULL},
    {"libarchive", "archive_version_string", V_TEXT_WORD2, lakeArchiveHandle}, /* "libarchive 3.6.2" */
    {"libmagic", "magic_version", V_MAGIC, lakeMagicHandle},      /* 545: 5.45 */
    {"zlib", "zlibVersion", V_TEXT, NULL},
    {"libmicrohttpd", "MHD_get_version", V_TEXT, NULL},
    {"GnuTLS", "gnutls_check_version", V_GNUTLS, NULL},        /* (NULL): "3.7.9" */
    {"libpq", "PQlibVersion", V_PQ, NULL},                     /* 150010: 15.10 */
};

/* The version text of libs[i], or NULL when the process does not have it. */
static const char *libVersion(size_t i, char *buf, size_t n) {
    void *sym = dlsym(RTLD_DEFAULT, libs[i].symbol);
    void *h = !sym && libs[i].handle ? libs[i].handle() : NULL;
    if (h) sym = dlsym(h, libs[i].symbol);
    const char *s;
    if (!sym) return NULL;
    switch (libs[i].kind) {
    case V_MAGIC:
    case V_PQ: {
        int (*fn)(void);
        *(void **)(&fn) = sym;
        int v = fn();
        if (libs[i].kind == V_MAGIC) snprintf(buf, n, "%d.%02d", v / 100, v % 100);
        else if (v >= 100000) snprintf(buf, n, "%d.%d", v / 10000, v % 10000);
        else snprintf(buf, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
        return buf;
    }
    case V_OPENSSL: {
        const char *(*fn)(int);
        *(void **)(&fn) = sym;
        s = fn(0); /* OPENSSL_VERSION */
        if (s && strncmp(s, "OpenSSL ", 8) == 0) s += 8;
        break;
    }
    case V_GNUTLS: {
        const char *(*fn)(const char *);
        *(void **)(&fn) = sym;
        s = fn(NULL);
        break;
    }
    default: {
        const char *(*fn)(void);
        *(void **)(&fn) = sym;
        s = fn();
        if (s && libs[i].kind == V_TEXT_WORD2 && strchr(s, ' ')) s = strchr(s, ' ') + 1;
    }
    }
    if (!s) return NULL;
    snprintf(buf, n, "%.*s", (int)strcspn(s, " "), s);
    return buf;
}

const char *versionRevision(void) { return LAKE_GIT_REV; }

void versionPrint(FILE *f) {
    char buf[64];
    fprintf(f, "%s %s", logProgname(), LAKE_VERSION);
    if (LAKE_GIT_REV[0]) fprintf(f, " (git %s)", LAKE_GIT_REV);
    fputc('\n', f);
    const char *sep = "";
    /* before libcurl is loaded, which brings libraries of its own */
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        const char *v = libVersion(i, buf, sizeof buf);
        if (!v) continue;
        fprintf(f, "%s%s/%s", sep, libs[i].label, v);
        sep = " ";
    }
    if (lakeCurlVersion) {
        const char *v = lakeCurlVersion();
        fprintf(f, "%slibcurl/", sep);
        if (v && strncmp(v, "libcurl/", 8) == 0) fprintf(f, "%.*s", (int)strcspn(v + 8, " "), v + 8);
        else fputs("missing", f);
        sep = " ";
    }
    if (*sep) fputc('\n', f);
}
