/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlscreds.c - the certificate and key served, reloadable (see tlscreds.h).
 *
 * Each load makes a new pair; the pointer to the current one is swapped
 * atomically.  A pair replaced is not freed at once, since a handshake
 * that began before the swap may still be using it: every pair stays on a
 * list until tlsCredsFree (a reload is a rare, operator-driven event, and
 * a pair is a few kilobytes).
 */
#include "tlscreds.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fsutil.h"

#define PEM_MAX (1024 * 1024)
#define CHAIN_MAX 16

typedef struct pair {
    gnutls_pcert_st chain[CHAIN_MAX];
    unsigned n;
    gnutls_privkey_t key;
    struct pair *older; /* every pair loaded, for tlsCredsFree */
} pair;

static const char *certPath, *keyPath;
static _Atomic(pair *) current;
static pair *loaded; /* the list of every pair, newest first */
static pthread_mutex_t loadMu = PTHREAD_MUTEX_INITIALIZER;

/* The whole file at path, NUL-terminated, in *out (the caller frees
 * out->data); LAKE_ECONFIG naming path on failure. */
static int readPem(const char *path, gnutls_datum_t *out, lakeError *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    unsigned char *buf = NULL;
    int rc = 0;
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = errSetErrno(err, LAKE_ECONFIG, errno, "%s", path);
    } else if (st.st_size <= 0 || st.st_size > PEM_MAX) {
        rc = errSet(err, LAKE_ECONFIG, "%s: not a PEM file of at most %d bytes", path, PEM_MAX);
    } else if (!(buf = malloc((size_t)st.st_size + 1)) || readFull(fd, buf, (size_t)st.st_size) != st.st_size) {
        rc = errSetErrno(err, LAKE_ECONFIG, errno ? errno : EIO, "%s", path);
        free(buf);
        buf = NULL;
    } else {
        buf[st.st_size] = '\0';
        out->data = buf;
        out->size = (unsigned)st.st_size;
    }
    if (fd >= 0) close(fd);
    return rc;
}

static void pairFree(pair *p) {
    for (unsigned i = 0; i < p->n; i++) gnutls_pcert_deinit(&p->chain[i]);
    if (p->key) gnutls_privkey_deinit(p->key);
    free(p);
}

/* A new pair from the PEM texts; NULL and err set when GnuTLS refuses
 * them, or when the key is not the certificate's. */
static pair *pairNew(const gnutls_datum_t *cert, const gnutls_datum_t *key, lakeError *err) {
    gnutls_certificate_credentials_t check = NULL;
    pair *p = calloc(1, sizeof *p);
    int g;
    if (!p) {
        errSet(err, LAKE_EFAIL, "out of memory");
        goto fail;
    }
    /* the credentials check that the key matches the certificate */
    if ((g = gnutls_certificate_allocate_credentials(&check)) ||
        (g = gnutls_certificate_set_x509_key_mem2(check, cert, key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        errSet(err, LAKE_ECONFIG, "%s, %s: %s", certPath, keyPath, gnutls_strerror(g));
        goto fail;
    }
    p->n = CHAIN_MAX;
    if ((g = gnutls_pcert_list_import_x509_raw(p->chain, &p->n, cert, GNUTLS_X509_FMT_PEM, 0)) < 0) {
        p->n = 0;
        errSet(err, LAKE_ECONFIG, "%s: %s", certPath, gnutls_strerror(g));
        goto fail;
    }
    if ((g = gnutls_privkey_init(&p->key)) ||
        (g = gnutls_privkey_import_x509_raw(p->key, key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        errSet(err, LAKE_ECONFIG, "%s: %s", keyPath, gnutls_strerror(g));
        goto fail;
    }
    gnutls_certificate_free_credentials(check);
    return p;
fail:
    if (check) gnutls_certificate_free_credentials(check);
    if (p) pairFree(p);
    return NULL;
}

int tlsCredsReload(lakeError *err) {
    gnutls_datum_t cert = {0}, key = {0};
    int rc = 0;
    pthread_mutex_lock(&loadMu);
    pair *p = NULL;
    if ((rc = readPem(certPath, &cert, err)) || (rc = readPem(keyPath, &key, err))) goto out;
    if (!(p = pairNew(&cert, &key, err))) {
        rc = err->code;
        goto out;
    }
    p->older = loaded;
    loaded = p;
    atomic_store(&current, p);
out:
    pthread_mutex_unlock(&loadMu);
    free(cert.data);
    free(key.data);
    return rc;
}

int tlsCredsLoad(const char *cert, const char *key, lakeError *err) {
    certPath = cert;
    keyPath = key;
    return tlsCredsReload(err);
}

int tlsCredsRetrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                     const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                     unsigned int *pcert_length, gnutls_privkey_t *privkey) {
    (void)session;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    pair *p = atomic_load(&current);
    if (!p) return -1;
    *pcert = p->chain;
    *pcert_length = p->n;
    *privkey = p->key;
    return 0;
}

void tlsCredsFree(void) {
    pthread_mutex_lock(&loadMu);
    atomic_store(&current, NULL);
    while (loaded) {
        pair *next = loaded->older;
        pairFree(loaded);
        loaded = next;
    }
    pthread_mutex_unlock(&loadMu);
}
