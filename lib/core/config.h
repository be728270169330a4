/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.h - where a lake is and how to reach it (DESIGN §2).
 *
 * Precedence, highest first: command-line option > environment > config file
 * ($LAKE_CONFIG, else $XDG_CONFIG_HOME/lake/config) > default.  The config
 * file holds "key = value" lines and "#" comments (lake.conf(5)); an unknown
 * key or a malformed line is a configuration error (78) naming file and line,
 * because a silently ignored typo would send data to the wrong place.
 */
#ifndef LAKE_CONFIG_H
#define LAKE_CONFIG_H

#include <stdint.h>

#include "core/error.h"

typedef struct lakeConfig {
    char *metasrv;     /* "local", or https://host:port[,https://host:port…] */
    char *home;        /* embedded lake: registry.db and stage/ */
    char *token;
    char *token_file;
    char *ca_file;
    char *stage;       /* file:///abs/dir or s3://bucket/prefix */
    char *cache_dir;
    char *s3_access;   /* "keys", "vended", or NULL: decided by the AWS keys */
    long catalog_ttl;  /* seconds */
    long long max_response; /* bytes of one answer from the metadata server */
    long connect_timeout; /* seconds to connect to it, TLS handshake included; 0: unset */
    long retry_deadline;  /* seconds a call to it may go on retrying while it answers 503
                             (source_remote.c); 0: one round of endpoints, no retry */
    long compact_threshold; /* compact a table after an append once it holds more small
                               segments than this (query/compact.h); 0: never */
    int64_t retention; /* seconds: the embedded lake's versions expire this long after
                          the next one (lake-catalog gc, expire); a server has its own */
    int64_t catalog_max_stale; /* seconds: the oldest cached registration served while the
                                  source is unreachable or --offline (catalog/cache.h) */
    int64_t segment_cache_max_age; /* seconds a cached segment may go unused (query/segcache.h) */
    char *config_file; /* the file that was read, or NULL */
} lakeConfig;

#define CONFIG_COMPACT_THRESHOLD_DEFAULT 32
/* Rides over a failover with room to spare: an automatic promotion takes
 * about 2 s from a dead primary to the first answered append (bench/RESULTS.md),
 * one run by a person or a slower cluster manager tens of seconds. */
#define CONFIG_RETRY_DEADLINE_DEFAULT 30
#define CONFIG_RETRY_DEADLINE_MAX 3600
/* As Delta's VACUUM keeps: a week to read, roll back to, or recover from. */
#define CONFIG_RETENTION_DEFAULT (7LL * 86400)
#define CONFIG_RETENTION_MAX (36500LL * 86400)
/* As long as the default retention keeps a version readable. */
#define CONFIG_SEGMENT_CACHE_MAX_AGE_DEFAULT (7LL * 86400)

/* One option given on the command line, applied last. */
typedef struct configOverride {
    const char *key;   /* a config key, e.g. "stage" */
    const char *value;
} configOverride;

/* Resolve the configuration.  overrides may be NULL; n is its length.
 * Fills every field (defaults applied, paths made absolute where derived
 * from XDG).  On failure returns 78 (or 66 for a named $LAKE_CONFIG that
 * does not exist) and leaves cfg safe to configFree. */
int configLoad(lakeConfig *cfg, const configOverride *overrides, int n,
               lakeError *err);

/* True when key is one of lake.conf(5)'s (an override's key must be). */
int configKnownKey(const char *key);

/* True when the configuration selects the embedded (local) mode. */
int configIsLocal(const lakeConfig *cfg);

/* metasrv may name several instances of one catalog, comma-separated, at
 * most CONFIG_MAX_ENDPOINTS; clients try them in order (source_remote.c). */
#define CONFIG_MAX_ENDPOINTS 8

/* The endpoints of cfg->metasrv, each checked (https://HOST[:PORT], http://
 * only to a loopback host, no path, no repeat) and without a trailing
 * slash, into out[0..*n-1] (caller frees each).  78 on any bad one. */
int configEndpoints(const lakeConfig *cfg, char *out[CONFIG_MAX_ENDPOINTS], size_t *n,
                    lakeError *err);

/* Remote mode's prerequisites, checked before any other work: metasrv is
 * one or more https:// URLs (configEndpoints), a token is
 * given (token, else the first line of token_file), and ca_file, when set,
 * is readable.  On success *token is the token (caller frees).  Fails with
 * 78; never falls back to local mode. */
int configRemote(const lakeConfig *cfg, char **token, lakeError *err);

void configFree(lakeConfig *cfg);

/* text as a whole decimal number in [min, max] into *v: 0, or -1 (a
 * setting's value, from a file or the environment). */
int configWholeIn(const char *text, long long min, long long max, long long *v);

/* $VAR if set and absolute, else $HOME/fallback (malloc'd); when neither
 * is, NULL and an error naming the setting that answers directly (direct:
 * LAKE_HOME, LAKE_CACHE_DIR, ...). */
char *configXdgDir(const char *var, const char *fallback, const char *direct, lakeError *err);

#endif
