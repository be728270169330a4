/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake.h - liblake, the lake client as a C library (liblake(3)).
 *
 * The one public header: every name it declares begins with lake_ (or
 * LIBLAKE_ for the macros), and nothing of the library's internals (lib/)
 * is reachable through it.  The ABI is that of liblake.so.0: a minor
 * release may add functions, error codes and option keys; it never
 * changes or removes what is here (liblake(3), STABILITY).
 *
 * Conventions (as SQLite's and libcurl's):
 *  - Handles are opaque (lake_client, lake_file, lake_reader, lake_rows).  Each is
 *    freed by its own function, which accepts NULL and may be called at
 *    any point, whatever is still open: a reader, or a statement's rows,
 *    keeps what it needs of its client alive until it is closed.
 *  - A function that can fail returns 0 on success, else the exit status
 *    the lake commands give for the same failure (lake(7)), and fills the
 *    lake_error it is given (which may be NULL).  NULL handles and other
 *    misuse are errors (64, code "usage"), never a crash.  The library
 *    keeps the set of clients, readers and rows it gave out and the
 *    program has not closed, and looks a handle up there (by address,
 *    never reading its memory) before it uses it: a handle closed twice
 *    is nothing the second time, and used after its close is 64 (an
 *    accessor's "none" answer: -1, NULL, 0).  What stays undefined: a
 *    stale pointer whose address has since been given to a new handle
 *    of the same kind (it then names that handle); lake_interrupt on a
 *    closed client (it must stay async-signal-safe, so it looks nothing
 *    up); a lake_file used after lake_file_free, or a lake_rows_file
 *    value after its row; a handle closed on one thread while another
 *    uses it.
 *  - The library never calls exit(), never installs a signal handler and
 *    never writes to stdout or stderr: warnings the commands print go to
 *    the callback lake_set_warn installs, or nowhere.  The one exception
 *    is a trace asked for with LAKE_TRACE in the environment (lake(7)).
 *  - No global state to set up: lake_open reads lake.conf(5) and the
 *    environment per client.
 *  - Thread safety is stated per function below.
 */
#ifndef LAKE_H
#define LAKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; lake_version() is the library's. */
#define LIBLAKE_VERSION "0.1.0"
#define LIBLAKE_VERSION_MAJOR 0
#define LIBLAKE_VERSION_MINOR 1
#define LIBLAKE_VERSION_PATCH 0
#define LIBLAKE_VERSION_NUMBER                                                    \
    ((LIBLAKE_VERSION_MAJOR << 16) | (LIBLAKE_VERSION_MINOR << 8) | LIBLAKE_VERSION_PATCH)

typedef struct lake_client lake_client;
typedef struct lake_file lake_file;
typedef struct lake_reader lake_reader;
typedef struct lake_rows lake_rows;

/* What went wrong.  exit_status is 0 after success, else the exit status
 * of lake(7) the commands give for the same failure (1, 64..78); code a
 * stable lower-case word for it ("usage", "data", "no_input", "expired",
 * "unavailable", "temporary", "permission", "config", "failed",
 * "interrupted", "exists"; a minor release may add codes); message one line of
 * UTF-8 with no credential in it, as a command would print it. */
typedef struct lake_error {
    int exit_status;
    const char *code;      /* static storage, never NULL after a call */
    char message[512];
} lake_error;

/* The library's version, "0.1.0".  Thread-safe. */
const char *lake_version(void);

/* Where warnings go: lake_set_warn, lake_open_v2. */
typedef void (*lake_warn_fn)(void *ctx, const char *line);

/* Open a client: lake.conf(5) and the environment, read exactly as the
 * commands read them (LAKE_CONFIG, LAKE_HOME, LAKE_METASRV, LAKE_STAGE,
 * ...), embedded or remote.  options is NULL or a NULL-terminated list of
 * key, value pairs of lake.conf(5) keys that win over both, as a
 * command's options do: {"stage", "file:///srv/lake/stage", NULL}.  An
 * unknown key is 64; a bad configuration 78.  *out is NULL on failure.
 * Thread-safe (each call makes a client of its own). */
int lake_open(lake_client **out, const char *const *options, lake_error *e);

/* As lake_open, with the warnings callback of lake_set_warn (fn NULL:
 * nowhere) set before anything is read, so that lake_open's own
 * warnings (a token_file others may read) reach it too.  Three keys
 * beyond lake.conf(5)'s are taken here and by lake_open (a bad value is
 * 64): "catalog_offline", "0" (the default) or "1": the catalog calls
 * answer from the snapshot alone, never asking the metadata source
 * (lake-catalog --offline); "catalog_strict", "0" or "1": they fail (69)
 * rather than serve a stale snapshot (lake-catalog --strict);
 * "catalog_max_age", a whole number of seconds: the snapshot is served
 * while younger than that, in place of catalog_ttl, which is still read
 * and checked (lake-catalog --max-age S).  Thread-safe, as lake_open. */
int lake_open_v2(lake_client **out, const char *const *options, lake_warn_fn fn, void *ctx, lake_error *e);

/* Free a client.  Readers still open stay usable until they are closed.
 * First, as the commands do at their end, each table the client appended
 * to (lake_query, lake_import) that now holds more small segments than
 * lake.conf(5)'s compact_threshold is compacted (as lake_catalog_compact;
 * a failure is a warning); lake_interrupt(c), before or meanwhile, stops
 * that with nothing more committed and no warning.  NULL is fine, and so
 * is a second close of c (nothing); every other call on a closed c is 64.
 * Not to be called while another thread uses c. */
void lake_close(lake_client *c);

/* Where warnings go (a stale catalog served, a digest not recorded...):
 * fn is called with one line, without a newline, on the thread that
 * made the call that warns (or a reader's); NULL (the default): nowhere,
 * as are lake_open's own warnings (before there is a client:
 * lake_open_v2 takes fn up front).  A reader, or a statement's rows,
 * already open keeps warning where warnings went when it was opened (its
 * threads too), so that a change here never races them.  64 for a NULL
 * c.  Not to be called while another thread uses c. */
int lake_set_warn(lake_client *c, lake_warn_fn fn, void *ctx);

/* Ask the put, statement (lake_query), import (lake_import) or
 * compaction (lake_catalog_compact, lake_close's) running on c, or the
 * next one, to give up: a put cleans up as lake-put does on SIGINT (no
 * object is left; an S3 upload is aborted), a statement, an import or a
 * compaction commits nothing, and each fails with code "interrupted"
 * (lake_close, which returns nothing, only stops).  A put or import
 * waiting for input on a pipe, FIFO, socket or terminal wakes at once:
 * it waits on the descriptor and on this request together (poll(2));
 * a regular file or block device never waits (poll says it is always
 * ready), so its read returns and the request is seen before the next.
 * The request is used up by the call it stops.  Async-signal-safe (it stores one flag): a program that wants
 * ^C to stop a long put calls it from its own SIGINT handler.  NULL is
 * fine.  Callable from any thread. */
void lake_interrupt(lake_client *c);

/* The managed stage c puts into, as a URL ("file:///...", "s3://...").
 * Valid until lake_close; NULL for a NULL c, or when a remote lake's
 * stage, asked of lake-metasrv on first need, cannot be had (the call
 * that needs it says why).  Threads: as lake_put_fd. */
const char *lake_stage_url(const lake_client *c);

/* Stream what fd reads, to its end, into the stage as one new object
 * named name (may be NULL), with its SHA-256 computed on the way and its
 * content type detected, as lake-put does; *out is its FILE value, once
 * the object is durable.  fd is read, not closed; a descriptor that is
 * not open, or open for writing only, is 64.  Memory is bounded (a
 * part at a time), whatever the size.  One thread at a time per client;
 * different clients in parallel. */
int lake_put_fd(lake_client *c, int fd, const char *name, lake_file **out, lake_error *e);

/* A source of bytes: up to len bytes into buf; returns how many, 0 at
 * the end, -1 (errno set) on failure. */
typedef ssize_t (*lake_read_fn)(void *ctx, void *buf, size_t len);
/* Progress: done bytes of total (-1 when not known) read so far.  A
 * non-zero return stops the put, as lake_interrupt does. */
typedef int (*lake_progress_fn)(void *ctx, int64_t done, int64_t total);

/* As lake_put_fd, the bytes from read(read_ctx, ...); total is the size
 * to report to progress (-1: unknown), which may be NULL.  Threads: as
 * lake_put_fd. */
int lake_put_cb(lake_client *c, lake_read_fn read, void *read_ctx, const char *name, int64_t total,
                lake_progress_fn progress, void *progress_ctx, lake_file **out, lake_error *e);

/* As lake_put_cb, with options: NULL or a NULL-terminated list of key,
 * value pairs, as lake-put's options read:
 *   "label"        what messages call the input (default: name, else
 *                  "input"), as lake-put says "stdin" or the path given;
 *   "content_type" the FILE value's content type (default: detected);
 *   "size"         fail (65, no object) unless exactly this many bytes
 *                  are read (lake-put --size);
 *   "sha256"       fail (65, no object) unless the bytes have this
 *                  SHA-256, 64 hex digits (lake-put --sha256);
 *   "part_size"    S3: bytes per part, 5MiB..5GiB, suffixes as lake-put
 *                  --part-size takes them (default 8MiB);
 *   "jobs"         S3: parts sent at once, 1..64 (lake-put --jobs;
 *                  default 1).
 * An unknown key or a bad value is 64.  lake-put puts a file or stdin
 * through this call.  Threads: as lake_put_fd. */
int lake_put_opt(lake_client *c, lake_read_fn read, void *read_ctx, const char *name, int64_t total,
                 const char *const *options, lake_progress_fn progress, void *progress_ctx, lake_file **out,
                 lake_error *e);

/* A FILE value from its JSON text, or from anything lake-get takes as a
 * REF (a location, a JSON row with one FILE value).  65 for malformed
 * text or a null FILE.  Thread-safe. */
int lake_file_from_json(const char *json, lake_file **out, lake_error *e);

/* The canonical JSON text of f (what lake-put prints), valid until
 * lake_file_free; NULL for a NULL f.  A bare location
 * (lake_file_from_json("file:///...")) has no size or SHA-256 to write
 * into JSON: its text is the location itself, which every call that
 * takes a FILE value takes.  Its parts: the location, the size
 * (-1 for a bare location), the SHA-256 in hex ("" when not known), the
 * name and content type (NULL when absent).  Thread-safe on a given f. */
const char *lake_file_json(const lake_file *f);
const char *lake_file_location(const lake_file *f);
int64_t lake_file_size(const lake_file *f);
const char *lake_file_sha256(const lake_file *f);
const char *lake_file_name(const lake_file *f);
const char *lake_file_content_type(const lake_file *f);
/* NULL is fine. */
void lake_file_free(lake_file *f);

/* Open the object a FILE value (JSON text, or any REF as above) names
 * for reading, verified: its location must lie in c's stage (65, before
 * any I/O).  Thread-safe against other calls on c: the reader has a
 * stage handle of its own. */
int lake_open_file(lake_client *c, const char *file_json, lake_reader **out, lake_error *e);

/* As lake_open_file, with options: NULL or a NULL-terminated list of
 * key, value pairs, as lake-get's options read:
 *   "verify"    "1" (the default), or "0": neither size nor SHA-256 is
 *               checked (lake-get --no-verify);
 *   "jobs"      an S3 object of known size is read by this many ranged
 *               GETs at once, 1..64 (lake-get --jobs; default 4);
 *   "part_size" bytes per ranged GET, 5MiB..5GiB, suffixes as lake-get
 *               --part-size takes them (default 8MiB).
 * An unknown key or a bad value is 64.  lake-get reads every object
 * through this call.  Threads: as lake_open_file. */
int lake_open_file_opt(lake_client *c, const char *file_json, const char *const *options, lake_reader **out,
                       lake_error *e);

/* Read up to len bytes: how many, 0 at the end of an object whose size
 * and SHA-256 matched its FILE value, -1 with e filled otherwise: a
 * mismatch is 65 at the end, after the bytes (a program that publishes
 * what it reads writes to a temporary name first, as lake-get -o does).
 * One thread at a time per reader. */
ssize_t lake_reader_read(lake_reader *r, void *buf, size_t len, lake_error *e);

/* Stop reading and free r, at any point.  NULL is fine, and so is a
 * second close (nothing). */
void lake_reader_close(lake_reader *r);

/* A URL anyone may GET the object a FILE value (JSON text, or any REF as
 * lake_open_file takes) names with, for seconds (1..604800), as lake-get
 * --presign prints it: signed with the stage's keys, or by lake-metasrv
 * for a vended S3 stage; the object is not read.  78 ("config") for a
 * local stage, which has no URLs; 65 outside the stage; 64 for seconds
 * out of range.  *url is freed with lake_free.  One thread at a time per
 * client. */
int lake_presign(lake_client *c, const char *file_json, int64_t seconds, char **url, lake_error *e);

/* The catalog, as lake-catalog(1) reads it, through the same on-disk
 * snapshot cache, with the same TTL and the same behaviour when the
 * metadata server is unreachable (a stale snapshot served with a
 * warning, within its limits).  Each call reads it as a new lake-catalog
 * process would: what another process changed on this host since the
 * last call is seen, and the metadata server is asked as catalog_ttl
 * says.  One thread at a time per client. */

/* The tables, of namespace ns when not NULL, as the JSON array
 * lake-catalog --json list prints: [{"namespace":"docs","name":"scans"}].
 * 66 for an unknown namespace, 64 for an invalid name.  *json is freed
 * with lake_free. */
int lake_catalog_list(lake_client *c, const char *ns, char **json, lake_error *e);

/* The registration of table ("NS.T") at version (the current one when
 * negative), the JSON lake-catalog resolve prints.  66 for an unknown
 * table or version, 67 for an expired one.  *json is freed with
 * lake_free. */
int lake_resolve(lake_client *c, const char *table, int64_t version, char **json, lake_error *e);

/* The columns of table ("NS.T") as the JSON array lake-catalog --json
 * show prints: [{"name":"path","type":"TEXT"},...].  66 for an unknown
 * table.  *json is freed with lake_free. */
int lake_catalog_show(lake_client *c, const char *table, char **json, lake_error *e);

/* Changes, as lake-catalog(1) makes them (the same statuses: 64 for a
 * bad name or column list, 66 for an unknown namespace or table, 77 when
 * the principal may not; 1, code "exists", for a namespace or table that
 * exists already), each visible at once to the next call on this host.  columns is what lake-catalog create takes: "path TEXT, f FILE"
 * (lake-catalog(1), create).  One thread at a time per client. */
int lake_catalog_create_namespace(lake_client *c, const char *ns, lake_error *e);
int lake_catalog_create(lake_client *c, const char *table, const char *columns, lake_error *e);
int lake_catalog_drop(lake_client *c, const char *table, lake_error *e);

/* lake_catalog_create_v2 and lake_catalog_create_namespace_v2's flag:
 * what exists already is success, as lake-catalog create
 * --if-not-exists: a namespace, or a table with the same columns (names
 * and types, in order); a table with other columns is 1, code "exists",
 * the message naming its columns. */
#define LIBLAKE_IF_NOT_EXISTS 1

/* As lake_catalog_create_namespace and lake_catalog_create, with flags 0
 * or LIBLAKE_IF_NOT_EXISTS (another bit is 64). */
int lake_catalog_create_namespace_v2(lake_client *c, const char *ns, int flags, lake_error *e);
int lake_catalog_create_v2(lake_client *c, const char *table, const char *columns, int flags, lake_error *e);

/* Change table's columns as lake-catalog alter does, as one new version
 * (no data rewritten): action "add-column" with arg1 "COL TYPE",
 * "rename-column" with arg1 COL and arg2 NEW, or "drop-column" with arg1
 * COL; arg2 is NULL but for rename-column.  The same statuses and
 * messages: 64 for another action, a wrong number of arguments, a bad
 * name or type, a clash or the last column dropped; 66 for an unknown
 * table or column; 77 when the principal may not.  One thread at a time
 * per client. */
int lake_catalog_alter(lake_client *c, const char *table, const char *action, const char *arg1, const char *arg2,
                       lake_error *e);
/* As lake_catalog_alter; *new_version (new_version may be NULL) the
 * version it made, -1 on failure. */
int lake_catalog_alter_v2(lake_client *c, const char *table, const char *action, const char *arg1, const char *arg2,
                          int64_t *new_version, lake_error *e);

/* A new version of table ("NS.T") holding version to_version's rows and
 * columns, as lake-catalog rollback NS.T --to-version N makes it.  The
 * same statuses and messages: 64 for a bad name or a negative
 * to_version, 66 for an unknown table, 65 for a version it never had, 67
 * for an expired version, 77 when the principal may not.  One thread at a time per
 * client. */
int lake_catalog_rollback(lake_client *c, const char *table, int64_t to_version, lake_error *e);
/* As lake_catalog_rollback; *new_version (new_version may be NULL) the
 * version it made, -1 on failure. */
int lake_catalog_rollback_v2(lake_client *c, const char *table, int64_t to_version, int64_t *new_version,
                             lake_error *e);

/* The versions of table ("NS.T"), oldest first, as the JSON array
 * lake-catalog --json history prints: [{"version":1,"committed_at":...,
 * "principal":...,"operation":...,"rows_added":...,...},...], asked of
 * the catalog's source each time (never from the snapshot).  64 for a
 * bad name, 66 for an unknown table.  *json is freed with lake_free.  One thread at a time
 * per client. */
int lake_catalog_history(lake_client *c, const char *table, char **json, lake_error *e);

/* Expire the versions of table ("NS.T"; NULL: of every table) whose next
 * version was committed older_than ago or longer, as lake-catalog expire
 * [NS.T] [--older-than DURATION] does: older_than is the duration text
 * the command takes (seconds, or 45s, 30m, 12h, 7d), NULL for the
 * retention (lake.conf's, or lake-metasrv's --retention).  The current
 * version never expires.  64 for a bad name or duration, 66 for an
 * unknown table, 77 when the principal may not (expire is an admin's).
 * One thread at a time per client. */
int lake_catalog_expire(lake_client *c, const char *table, const char *older_than, lake_error *e);
/* As lake_catalog_expire; *expired (expired may be NULL) how many
 * versions expired, 0 on failure. */
int lake_catalog_expire_v2(lake_client *c, const char *table, const char *older_than, int64_t *expired,
                           lake_error *e);

/* Rewrite table's ("NS.T") small segments into few large ones of at most
 * target_size bytes (0: the default, 64 MiB), committed as one new
 * version with the same rows, as lake-catalog compact NS.T
 * [--target-size SIZE] does; fewer than two small segments is nothing to
 * do: 0, and a warning saying so (lake_set_warn).  64 for a bad name or
 * a target_size below 2 (but 0), 66 for an unknown table, 75 after
 * losing to other compactions, 77 when the principal may not.  The
 * segments are read and written through the client's stage.
 * lake_interrupt(c) stops it, as SIGINT stops lake-catalog compact,
 * between two segments or before the commit: "interrupted", 1, nothing
 * committed (segments already uploaded are left unreferenced, for
 * lake-catalog gc).  One thread at a time per client. */
int lake_catalog_compact(lake_client *c, const char *table, int64_t target_size, lake_error *e);
/* As lake_catalog_compact; what it did, each pointer may be NULL:
 * *replaced the segments rewritten, *written the segments written in
 * their place, *new_version the version committed; 0, 0 and -1 when
 * there was nothing to do or on failure. */
int lake_catalog_compact_v2(lake_client *c, const char *table, int64_t target_size, int64_t *replaced,
                            int64_t *written, int64_t *new_version, lake_error *e);

/* SQL, as lake-query(1) runs it (lake_query(3)): SQLite's engine over
 * lake tables named NS.T, with the FILE functions; a statement means
 * here what it means in lake-query, and fails with the same status.
 * One thread at a time per client; the rows of one statement at a time
 * (lake_rows_close, or LIBLAKE_DONE, ends one). */

/* lake_rows_next's answers; failure is -1. */
#define LIBLAKE_ROW 100
#define LIBLAKE_DONE 101

/* lake_rows_type's answers (SQLite's numbers, and FILE). */
#define LIBLAKE_INTEGER 1
#define LIBLAKE_FLOAT 2
#define LIBLAKE_TEXT 3
#define LIBLAKE_BLOB 4
#define LIBLAKE_NULL 5
#define LIBLAKE_FILE 6

/* Compile sql, exactly one statement (a SELECT, an INSERT, a DELETE or
 * UPDATE, a statement over temp tables...), into *out, to bind and step.
 * 64 for no statement or more than one, or a statement still open on c
 * (close it first); SQL's own errors 65, an unknown table 66, DDL on lake
 * tables 64, as lake-query.  Nothing runs yet, except that an aggregate
 * lake-query splits by segment (with no parameter) computes its partial
 * rows now.  The rows keep c alive until they are closed.  One thread at
 * a time per client. */
int lake_query(lake_client *c, const char *sql, lake_rows **out, lake_error *e);

/* Bind parameter index (1-based, as SQLite's: ?, ?NNN, :name) before the
 * first lake_rows_next: text is copied (a FILE value is bound as its JSON
 * text); a blob of len bytes.  64 for a NULL q, an index out of range or
 * a statement already stepped.  One thread at a time per q. */
int lake_rows_bind_text(lake_rows *q, int index, const char *text, lake_error *e);
int lake_rows_bind_int64(lake_rows *q, int index, int64_t v, lake_error *e);
int lake_rows_bind_double(lake_rows *q, int index, double v, lake_error *e);
int lake_rows_bind_blob(lake_rows *q, int index, const void *blob, size_t len, lake_error *e);
int lake_rows_bind_null(lake_rows *q, int index, lake_error *e);
/* The number of parameters of q; -1 for a NULL q. */
int lake_rows_params(const lake_rows *q);

/* Step: LIBLAKE_ROW with the next row current, LIBLAKE_DONE when there
 * is none (an INSERT, DELETE or UPDATE has then committed its one new
 * table version), -1 with e filled on failure (nothing committed; a
 * DELETE or UPDATE that lost a race is run again, as lake-query does,
 * and 75 after five tries).  After LIBLAKE_DONE it is LIBLAKE_DONE
 * again, after a failure the same failure: the statement never runs
 * twice.  lake_interrupt(c) stops it ("interrupted", 1).  One thread at
 * a time per q. */
int lake_rows_next(lake_rows *q, lake_error *e);

/* The columns of q's statement (0 for one that returns none, -1 for a
 * NULL q), and the name of column i (0-based; NULL out of range), valid
 * until lake_rows_close. */
int lake_rows_columns(const lake_rows *q);
const char *lake_rows_name(const lake_rows *q, int i);

/* The type of column i of the current row: LIBLAKE_NULL,
 * LIBLAKE_INTEGER, LIBLAKE_FLOAT, LIBLAKE_TEXT, LIBLAKE_BLOB, or
 * LIBLAKE_FILE for a column declared FILE holding a valid FILE value
 * (what lake-query -f json prints as an object).  -1 with no current row or i out of range.  The accessors
 * below give 0, 0.0 or NULL (*len 0) then. */
int lake_rows_type(const lake_rows *q, int i);
/* Column i as lake-query -f tsv shows it, unescaped: an INTEGER in
 * decimal, a FLOAT the shortest text that reads back as the same double,
 * TEXT and FILE their text, a BLOB its lowercase hex; NULL for NULL.
 * Valid until the next lake_rows_next or lake_rows_close.  *len (len may
 * be NULL) its length in bytes (TEXT may hold NUL bytes). */
const char *lake_rows_text(lake_rows *q, int i, size_t *len);
/* Column i as a number, converted as SQLite converts (TEXT "12" is 12). */
int64_t lake_rows_int64(lake_rows *q, int i);
double lake_rows_double(lake_rows *q, int i);
/* Column i's bytes (a BLOB's own, another type's text), *len their
 * number; valid as lake_rows_text's. */
const void *lake_rows_blob(lake_rows *q, int i, size_t *len);
/* Column i's FILE value, decoded, when its type is LIBLAKE_FILE, else
 * NULL; owned by q, valid until the next lake_rows_next or
 * lake_rows_close (a program that keeps it copies lake_file_json's
 * text). */
const lake_file *lake_rows_file(lake_rows *q, int i);

/* Free q at any point: a statement not run to LIBLAKE_DONE is abandoned
 * and changes nothing (an INSERT appends no version).  NULL is fine, and
 * so is a second close (nothing).
 * One thread at a time per client (q holds it). */
void lake_rows_close(lake_rows *q);

/* Append the rows fd reads, to its end, to table ("NS.T") as exactly
 * one new version, as lake-query --import does (lake_query(3), IMPORT):
 * format "csv" (a header row naming the columns), "csv-strict" (--csv
 * --strict: a quote or lone CR in an unquoted field is an error, not
 * data), "jsonl", or NULL for the command's default (JSON Lines when the
 * first non-blank byte is '{', else CSV).  Streamed: memory is bounded
 * by one record (16 MiB at most), whatever the size.  No rows appends
 * nothing and is no error.  The same statuses and messages: 64 for no
 * NS.T, 66 for an unknown table, 65 for malformed input or a column the
 * table lacks, naming the line ("stdin: line 3: ..." when fd is 0,
 * "input: line 3: ..." otherwise); nothing is appended on any failure.
 * lake_interrupt(c) stops it ("interrupted", 1; nothing appended), from
 * any thread, also while it waits for input (as lake_put_fd).  fd is
 * read, not closed (not open, or write-only: 64).  64 while a statement's rows are open on c.  One
 * thread at a time per client. */
int lake_import(lake_client *c, const char *table, int fd, const char *format, lake_error *e);

/* Free what the library allocated for the program (JSON text).  NULL is
 * fine.  Thread-safe. */
void lake_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
