/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlscreds.h - the certificate and key lake-metasrv serves, read again on
 * SIGHUP without dropping a connection.
 *
 * libmicrohttpd asks tlsCredsRetrieve for the credentials at every TLS
 * handshake (MHD_OPTION_HTTPS_CERT_CALLBACK), so a reload changes what the
 * next handshake gets; connections already up keep the session they have.
 * A reload that fails (a file missing, not PEM, a key that is not the
 * certificate's) changes nothing: the previous pair is served on.
 */
#ifndef LAKE_METASRV_TLSCREDS_H
#define LAKE_METASRV_TLSCREDS_H

#include <gnutls/abstract.h>

#include "core/error.h"

/* Read the PEM certificate chain at cert and the private key at key, check
 * that they belong together, and make them the pair served.  The paths are
 * kept (not copied) for tlsCredsReload.  0, or LAKE_ECONFIG naming the file
 * and what is wrong with it. */
int tlsCredsLoad(const char *cert, const char *key, lakeError *err);

/* Read the files tlsCredsLoad was given again, as it does; on an error
 * the pair served is unchanged. */
int tlsCredsReload(lakeError *err);

/* The gnutls_certificate_retrieve_function2 that libmicrohttpd calls at
 * each handshake: the pair served now (owned here). */
int tlsCredsRetrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                     const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                     unsigned int *pcert_length, gnutls_privkey_t *privkey);

/* Free every pair loaded; only once no handshake can run (after
 * MHD_stop_daemon). */
void tlsCredsFree(void);

#endif
