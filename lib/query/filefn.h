/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filefn.h - FILE values in SQL (DESIGN §3): the fl_get_* accessors and
 * to_file, registered on a SQLite connection, and the check a FILE column
 * applies to what is inserted into it.
 *
 * SQL surface (every function but fl_get_presigned_url takes one argument):
 *   fl_get_size(f)           INTEGER  bytes
 *   fl_get_content_type(f)   TEXT     NULL when the value has none
 *   fl_get_etag(f)           TEXT     the SHA-256, 64 lowercase hex digits
 *   fl_get_last_modified(f)  TEXT     RFC 3339 UTC, NULL when absent
 *   fl_get_relative_path(f)  TEXT     the key below the stage root
 *   fl_get_stage(f)          TEXT     the stage URL
 *   fl_get_file_name(f)      TEXT     the value's name, NULL when absent
 *   to_file(json)            TEXT     the canonical FILE JSON text
 *   fl_get_presigned_url(f, seconds)
 *                            TEXT     a URL anyone may GET the object with
 *                                     for seconds (1..STAGE_PRESIGN_MAX)
 *
 * Promises:
 *  - NULL in, NULL out: every function returns NULL for a NULL argument
 *    (SQL's norm; a FILE column may hold NULL).
 *  - Anything else that is not a valid FILE value (not text, malformed JSON,
 *    a missing or bad field) raises an SQL error whose message is one line
 *    "<function>: <problem>", e.g. "to_file: FILE value: sha256 is not 64
 *    hex digits".  Never a crash, never a silent NULL.
 *  - to_file, fl_get_stage and fl_get_relative_path also refuse a value whose
 *    location is outside the managed stage ("... outside the managed
 *    stage"); the other accessors only read the value's own fields, so they
 *    work on any well-formed FILE value.
 *  - No function but fl_get_presigned_url does I/O: they read the JSON
 *    text only (containment is stageContains, which is lexical).  All of
 *    them are SQLITE_DETERMINISTIC and SQLITE_INNOCUOUS.
 *  - fl_get_presigned_url takes what lake-get takes as a REF (a FILE value,
 *    a location, a row with one FILE value) and an INTEGER of seconds, and
 *    returns stagePresignGet's URL; it never reads the object.  NULL in
 *    either argument, or a null FILE, gives NULL.  It is neither
 *    deterministic (a URL carries its signing time) nor innocuous (it may
 *    ask a vendor, lake-metasrv): SQLITE_DIRECTONLY, so no view, trigger or
 *    schema can call it.  Arguments it refuses (not text, malformed, outside
 *    the stage, seconds not an integer 1..STAGE_PRESIGN_MAX) are SQL errors
 *    as above; any other failure (a local stage: 78; the vendor
 *    unreachable, busy or refusing; no memory) is an SQL error too, with
 *    the lake error copied to the failure sink given at registration.
 */
#ifndef LAKE_QUERY_FILEFN_H
#define LAKE_QUERY_FILEFN_H

#include <sqlite3.h>

#include "core/error.h"
#include "stage/stage.h"

/* Register the functions above on db for the managed stage st.  st is
 * borrowed: it must outlive db (or at least every statement that calls the
 * functions).  failure (may be NULL; borrowed likewise) receives, prefixed
 * "fl_get_presigned_url: ", the lake error behind an SQL error that
 * fl_get_presigned_url raises for a reason other than its arguments, so
 * that the caller can exit with that error's code.  Fails with 1
 * (SQLite's message in err) if SQLite refuses a registration. */
int fileFunctionsRegister(sqlite3 *db, stage *st, lakeError *failure, lakeError *err);

/* The check of a FILE column's INSERT path: text (n bytes, a NUL among them
 * refused as malformed JSON) must be a valid FILE value
 * (fileValueFromJson) whose location lies inside st (stageContains).  On
 * success *canonical is its canonical JSON text (caller frees) and 0 is
 * returned.  On failure *canonical is NULL and the return is 65 with a
 * one-line message naming the problem (malformed JSON, the bad field, or
 * "<location>: outside the managed stage"); 1 when out of memory. */
int fileColumnCheck(const stage *st, const char *text, size_t n, char **canonical, lakeError *err);

#endif
