/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filefn.c - the FILE functions of SQL, over filevalue.h and stage.h.
 *
 * Each call parses its argument's JSON text afresh with cJSON: a FILE value
 * is a few hundred bytes, and parsing keeps the functions free of state.
 * fl_get_presigned_url is the one that may do I/O (a keyless client asks
 * lake-metasrv): it is neither deterministic nor innocuous.
 */
#include "query/filefn.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonstrict.h"
#include "stage/filevalue.h"

/* Parse text as a FILE value into fv (caller frees fv whatever happens).
 * 65 on malformed JSON or a bad field. */
static int parseFileValue(const char *text, size_t n, fileValue *fv, lakeError *err) {
    memset(fv, 0, sizeof *fv);
    fv->size = -1;
    cJSON *j = jsonStrictLoad(text, n, "not a FILE value", err);
    if (!j) return err->code;
    int rc = fileValueFromJson(j, fv, err);
    cJSON_Delete(j);
    return rc;
}

int fileColumnCheck(const stage *st, const char *text, size_t n, char **canonical, lakeError *err) {
    fileValue fv;
    *canonical = NULL;
    int rc = parseFileValue(text, n, &fv, err);
    if (!rc) rc = stageContains(st, fv.location, err);
    if (!rc && !(*canonical = fileValueToJson(&fv)))
        rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "FILE value");
    fileValueFree(&fv);
    return rc;
}

/* Raise err as the SQL error of the function being called: one line,
 * "<function>: <message>". */
static void resultError(sqlite3_context *ctx, const char *fn, const lakeError *err) {
    char msg[640];
    snprintf(msg, sizeof msg, "%s: %s", fn, err->msg);
    if (err->code == LAKE_EFAIL) /* the only plain failure here is ENOMEM */
        sqlite3_result_error_nomem(ctx);
    else
        sqlite3_result_error(ctx, msg, -1);
}

/* Which field an accessor returns; the names index fnNames. */
enum field { F_SIZE, F_CTYPE, F_ETAG, F_MODIFIED, F_RELPATH, F_STAGE, F_NAME, F_COUNT };
static const char *const fnNames[F_COUNT] = {
    "fl_get_size", "fl_get_content_type", "fl_get_etag", "fl_get_last_modified",
    "fl_get_relative_path", "fl_get_stage", "fl_get_file_name",
};

/* Optional text: NULL when absent. */
static void resultText(sqlite3_context *ctx, const char *s) {
    if (s) sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
    else sqlite3_result_null(ctx);
}

/* The body of every accessor: sqlite3_user_data is the stage, f the field
 * (one thin wrapper per SQL function below passes it). */
static void accessor(sqlite3_context *ctx, enum field f, int argc, sqlite3_value **argv) {
    const stage *st = sqlite3_user_data(ctx);
    lakeError err = {0};
    fileValue fv;
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
        errSet(&err, LAKE_EDATA, "not a FILE value: not text");
        resultError(ctx, fnNames[f], &err);
        return;
    }
    if (parseFileValue((const char *)sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]),
                       &fv, &err)) {
        resultError(ctx, fnNames[f], &err);
        fileValueFree(&fv);
        return;
    }
    char *rel = NULL;
    switch (f) {
    case F_SIZE: sqlite3_result_int64(ctx, fv.size); break;
    case F_CTYPE: resultText(ctx, fv.content_type); break;
    case F_ETAG: resultText(ctx, fv.sha256); break;
    case F_MODIFIED: resultText(ctx, fv.last_modified); break;
    case F_NAME: resultText(ctx, fv.name); break;
    case F_RELPATH:
    case F_STAGE:
        if (stageContains(st, fv.location, &err)) {
            resultError(ctx, fnNames[f], &err);
        } else if (f == F_STAGE) {
            resultText(ctx, stageUrl(st));
        } else if (!(rel = stageRelativePath(st, fv.location))) {
            sqlite3_result_error_nomem(ctx);
        } else {
            resultText(ctx, rel);
        }
        break;
    case F_COUNT: break;
    }
    free(rel);
    fileValueFree(&fv);
}

#define ACCESSOR(fn, f) \
    static void fn(sqlite3_context *c, int n, sqlite3_value **v) { accessor(c, f, n, v); }
ACCESSOR(flSize, F_SIZE)
ACCESSOR(flContentType, F_CTYPE)
ACCESSOR(flEtag, F_ETAG)
ACCESSOR(flLastModified, F_MODIFIED)
ACCESSOR(flRelativePath, F_RELPATH)
ACCESSOR(flStage, F_STAGE)
ACCESSOR(flFileName, F_NAME)

/* to_file(json): NULL in, NULL out; else fileColumnCheck's verdict. */
static void toFile(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const stage *st = sqlite3_user_data(ctx);
    lakeError err = {0};
    char *canonical = NULL;
    (void)argc;
    int type = sqlite3_value_type(argv[0]);
    if (type == SQLITE_NULL) {
        sqlite3_result_null(ctx);
    } else if (type != SQLITE_TEXT) {
        errSet(&err, LAKE_EDATA, "not a FILE value: not text");
        resultError(ctx, "to_file", &err);
    } else if (fileColumnCheck(st, (const char *)sqlite3_value_text(argv[0]),
                               (size_t)sqlite3_value_bytes(argv[0]), &canonical, &err)) {
        resultError(ctx, "to_file", &err);
    } else {
        sqlite3_result_text(ctx, canonical, -1, free);
    }
}

/* What fl_get_presigned_url needs: the stage, and where a failure that is
 * not about its arguments goes (see filefn.h). */
typedef struct presignCtx {
    stage *st;
    lakeError *failure;
} presignCtx;

#define PRESIGN_FN "fl_get_presigned_url"

/* fl_get_presigned_url(file, seconds): a FILE value or a location (a REF
 * as lake-get reads it) and a lifetime; NULL in, NULL out. */
static void flPresignedUrl(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const presignCtx *pc = sqlite3_user_data(ctx);
    lakeError err = {0};
    fileValue fv = {0};
    char *url = NULL;
    (void)argc;
    int type = sqlite3_value_type(argv[0]);
    if (type == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    const char *text = type == SQLITE_TEXT ? (const char *)sqlite3_value_text(argv[0]) : NULL;
    sqlite3_int64 secs = sqlite3_value_int64(argv[1]);
    if (!text) {
        errSet(&err, LAKE_EDATA, "not a FILE value or a location: not text");
    } else if (strlen(text) != (size_t)sqlite3_value_bytes(argv[0])) {
        errSet(&err, LAKE_EDATA, "not a FILE value or a location: a NUL byte in it");
    } else if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || secs < 1 || secs > STAGE_PRESIGN_MAX) {
        errSet(&err, LAKE_EDATA, "seconds must be an integer from 1 to %d", STAGE_PRESIGN_MAX);
    } else if (!refParse(text, &fv, &err) && fv.location) {
        stagePresignGet(pc->st, fv.location, secs, &url, &err);
    }
    if (url) {
        sqlite3_result_text(ctx, url, -1, free);
    } else if (!err.code) {
        sqlite3_result_null(ctx); /* the text null, or a row whose FILE is null */
    } else {
        /* a refusal of the arguments is SQL's bad input (65); any other
         * failure (a local stage, the vendor unreachable or refusing, no
         * memory) keeps its own code through the failure sink */
        char msg[640];
        snprintf(msg, sizeof msg, "%s: %s", PRESIGN_FN, err.msg);
        if (pc->failure && err.code != LAKE_EDATA && err.code != LAKE_EUSAGE) {
            *pc->failure = err;
            errPrefix(pc->failure, "%s", PRESIGN_FN);
        }
        sqlite3_result_error(ctx, msg, -1);
    }
    fileValueFree(&fv);
}

int fileFunctionsRegister(sqlite3 *db, stage *st, lakeError *failure, lakeError *err) {
    static const struct {
        const char *name;
        void (*fn)(sqlite3_context *, int, sqlite3_value **);
    } fns[] = {
        {"fl_get_size", flSize},
        {"fl_get_content_type", flContentType},
        {"fl_get_etag", flEtag},
        {"fl_get_last_modified", flLastModified},
        {"fl_get_relative_path", flRelativePath},
        {"fl_get_stage", flStage},
        {"fl_get_file_name", flFileName},
        {"to_file", toFile},
    };
    const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        int rc = sqlite3_create_function_v2(db, fns[i].name, 1, flags, (void *)st, fns[i].fn,
                                            NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            errSet(err, LAKE_EFAIL, "register %s: %s", fns[i].name, sqlite3_errmsg(db));
            snprintf(err->cause, sizeof err->cause, "sqlite %d", rc);
            return err->code;
        }
    }
    /* the same stage, mutable (a vendor's requests), and the sink */
    presignCtx *pc = malloc(sizeof *pc);
    if (!pc) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "register %s", PRESIGN_FN);
    *pc = (presignCtx){st, failure};
    int rc = sqlite3_create_function_v2(db, PRESIGN_FN, 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, pc,
                                        flPresignedUrl, NULL, NULL, free);
    if (rc != SQLITE_OK) { /* SQLite has called free(pc) */
        errSet(err, LAKE_EFAIL, "register %s: %s", PRESIGN_FN, sqlite3_errmsg(db));
        snprintf(err->cause, sizeof err->cause, "sqlite %d", rc);
        return err->code;
    }
    return 0;
}
