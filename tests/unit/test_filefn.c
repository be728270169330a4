/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_filefn.c - unit tests of lib/query/filefn: the FILE functions of SQL
 * over a real object put into a temporary local stage.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "query/filefn.h"
#include "stage/stage.h"
#include "memreader.h"
#include "tap.h"


/* Run sql (one row, one column) and copy its text into out; returns the
 * SQLite result code of the step and leaves the error message in errmsg. */
static int one(sqlite3 *db, const char *sql, const char *arg, char *out, size_t n,
               char *errmsg, size_t en) {
    sqlite3_stmt *s = NULL;
    out[0] = errmsg[0] = '\0';
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        if (arg) sqlite3_bind_text(s, 1, arg, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(s, 0);
            snprintf(out, n, "%s", t ? (const char *)t : "<null>");
        }
    }
    if (rc != SQLITE_ROW) snprintf(errmsg, en, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return rc;
}

int main(void) {
    char dir[] = "/tmp/lake-filefn-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char url[256], cmd[300];
    snprintf(url, sizeof url, "file://%s/stage", dir);
    snprintf(cmd, sizeof cmd, "%s/stage", dir);
    lakeError err = {0};
    mkdirs(cmd, 0755, &err);

    stage *st = NULL;
    ok(stageOpen(url, &st, &err) == 0, "open a temporary local stage");
    const char body[] = "%PDF-1.4 a tiny pdf\n";
    memReader m = {body, sizeof body - 1, 0, 0};
    lakeReader r = {memRead, &m, "memory"};
    stagePutOptions po = {.name = "report.pdf", .expect_size = -1};
    fileValue fv;
    ok(stagePut(st, &r, &po, &fv, &err) == 0, "put an object (%s)", err.msg);
    char *json = fileValueToJson(&fv);

    sqlite3 *db;
    sqlite3_open(":memory:", &db);
    ok(fileFunctionsRegister(db, st, NULL, &err) == 0, "register the FILE functions");

    char out[1024], em[512], want[1024];
    ok(one(db, "SELECT fl_get_size(?)", json, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           atoll(out) == (long long)(sizeof body - 1),
       "fl_get_size is the object's size (%s)", out);
    ok(one(db, "SELECT typeof(fl_get_size(?))", json, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && strcmp(out, "integer") == 0,
       "fl_get_size is an INTEGER");
    ok(one(db, "SELECT fl_get_content_type(?)", json, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && strcmp(out, fv.content_type ? fv.content_type : "<null>") == 0,
       "fl_get_content_type (%s)", out);
    ok(one(db, "SELECT fl_get_etag(?)", json, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           strcmp(out, fv.sha256) == 0,
       "fl_get_etag is the sha256");
    ok(one(db, "SELECT fl_get_last_modified(?)", json, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && fv.last_modified && strcmp(out, fv.last_modified) == 0,
       "fl_get_last_modified (%s)", out);
    char *rel = stageRelativePath(st, fv.location);
    ok(one(db, "SELECT fl_get_relative_path(?)", json, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && rel && strcmp(out, rel) == 0 && strncmp(out, "files/", 6) == 0,
       "fl_get_relative_path is the key below the root (%s)", out);
    free(rel);
    ok(one(db, "SELECT fl_get_stage(?)", json, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           strcmp(out, url) == 0,
       "fl_get_stage is the stage URL");
    ok(one(db, "SELECT fl_get_file_name(?)", json, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && strcmp(out, "report.pdf") == 0,
       "fl_get_file_name is the value's name");

    /* NULL in, NULL out, for every function */
    static const char *const fns[] = {"fl_get_size",          "fl_get_content_type",
                                      "fl_get_etag",          "fl_get_last_modified",
                                      "fl_get_relative_path", "fl_get_stage",
                                      "fl_get_file_name",     "to_file"};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT %s(NULL) IS NULL", fns[i]);
        ok(one(db, sql, NULL, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
               strcmp(out, "1") == 0,
           "%s(NULL) is NULL", fns[i]);
        snprintf(sql, sizeof sql, "SELECT %s('{\"location\":')", fns[i]);
        ok(one(db, sql, NULL, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
               strncmp(em, fns[i], strlen(fns[i])) == 0 && strstr(em, "malformed JSON") &&
               !strchr(em, '\n'),
           "%s on malformed JSON is an SQL error (%s)", fns[i], em);
        snprintf(sql, sizeof sql, "SELECT %s(42)", fns[i]);
        ok(one(db, sql, NULL, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
               strstr(em, "not a FILE value"),
           "%s on a number is an SQL error (%s)", fns[i], em);
    }

    /* an absent optional field reads as NULL */
    snprintf(want, sizeof want, "{\"location\":\"%s\",\"size\":1,\"sha256\":\"%s\"}",
             fv.location, fv.sha256);
    ok(one(db, "SELECT fl_get_file_name(?) IS NULL AND fl_get_content_type(?1) IS NULL AND "
               "fl_get_last_modified(?1) IS NULL",
           want, out, sizeof out, em, sizeof em) == SQLITE_ROW && strcmp(out, "1") == 0,
       "absent name, content type and time read as NULL");

    /* to_file */
    ok(one(db, "SELECT to_file(?)", json, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           strcmp(out, json) == 0,
       "to_file accepts a valid value and returns its canonical text");
    snprintf(want, sizeof want,
             "{ \"name\": \"report.pdf\", \"sha256\": \"%s\", \"size\": %zu, "
             "\"location\": \"%s\", \"extra\": 1 }",
             fv.sha256, sizeof body - 1, fv.location);
    fileValue plain = fv;
    plain.content_type = NULL;
    plain.last_modified = NULL;
    char *canon = fileValueToJson(&plain);
    ok(one(db, "SELECT to_file(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           strcmp(out, canon) == 0,
       "to_file prints canonically: key order, no spaces, unknown keys dropped");
    free(canon);
    ok(one(db, "SELECT to_file('{\"location\": ')", NULL, out, sizeof out, em, sizeof em) ==
               SQLITE_ERROR && strstr(em, "to_file: ") == em && strstr(em, "malformed JSON"),
       "to_file refuses malformed JSON (%s)", em);
    snprintf(want, sizeof want, "{\"location\":\"file:///etc/passwd\",\"size\":1,\"sha256\":\"%s\"}",
             fv.sha256);
    ok(one(db, "SELECT to_file(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "outside the managed stage"),
       "to_file refuses a location outside the stage (%s)", em);
    ok(one(db, "SELECT fl_get_stage(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "outside the managed stage"),
       "fl_get_stage refuses a location outside the stage");
    ok(one(db, "SELECT fl_get_relative_path(?)", want, out, sizeof out, em, sizeof em) ==
               SQLITE_ERROR && strstr(em, "outside the managed stage"),
       "fl_get_relative_path refuses a location outside the stage");
    ok(one(db, "SELECT fl_get_size(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ROW &&
           strcmp(out, "1") == 0,
       "fl_get_size reads a well-formed value outside the stage");
    snprintf(want, sizeof want, "{\"location\":\"%s/../../x\",\"size\":1,\"sha256\":\"%s\"}", url,
             fv.sha256);
    ok(one(db, "SELECT to_file(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "outside the managed stage"),
       "to_file refuses a .. escape from the stage");
    snprintf(want, sizeof want, "{\"location\":\"%s\",\"size\":1,\"sha256\":\"abc\"}",
             fv.location);
    ok(one(db, "SELECT to_file(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "sha256"),
       "to_file refuses a bad sha256 (%s)", em);
    snprintf(want, sizeof want, "{\"location\":\"%s\",\"size\":-3,\"sha256\":\"%s\"}",
             fv.location, fv.sha256);
    ok(one(db, "SELECT to_file(?)", want, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "size"),
       "to_file refuses a negative size (%s)", em);
    ok(one(db, "SELECT to_file('[1,2]')", NULL, out, sizeof out, em, sizeof em) ==
               SQLITE_ERROR && strstr(em, "not a JSON object"),
       "to_file refuses JSON that is not an object (%s)", em);
    ok(one(db, "SELECT to_file(x'7b7d')", NULL, out, sizeof out, em, sizeof em) ==
               SQLITE_ERROR && strstr(em, "not text"),
       "to_file refuses a BLOB");

    /* the C check of a FILE column */
    char *c = NULL;
    ok(fileColumnCheck(st, json, strlen(json), &c, &err) == 0 && c && strcmp(c, json) == 0,
       "fileColumnCheck accepts a valid value inside the stage");
    free(c);
    ok(fileColumnCheck(st, "nonsense", 8, &c, &err) == LAKE_EDATA && !c,
       "fileColumnCheck refuses malformed JSON with 65 (%s)", err.msg);
    snprintf(want, sizeof want, "{\"location\":\"file:///etc/passwd\",\"size\":1,\"sha256\":\"%s\"}",
             fv.sha256);
    ok(fileColumnCheck(st, want, strlen(want), &c, &err) == LAKE_EDATA && !c &&
           strstr(err.msg, "outside the managed stage"),
       "fileColumnCheck refuses a location outside the stage with 65");
    /* strict JSON: a NUL byte after the object, a repeated key, a number
     * RFC 8259 refuses, \u0000 in a string (issue 15) */
    char bad[2048];
    int n = snprintf(bad, sizeof bad, "%s", json);
    bad[n] = '\0';
    memcpy(bad + n + 1, "junk", 5);
    ok(fileColumnCheck(st, bad, (size_t)n + 5, &c, &err) == LAKE_EDATA && !c &&
           strstr(err.msg, "malformed JSON"),
       "fileColumnCheck refuses text after a NUL byte (%s)", err.msg);
    snprintf(bad, sizeof bad, "{\"location\":\"file:///etc/passwd\",%s", json + 1);
    ok(fileColumnCheck(st, bad, strlen(bad), &c, &err) == LAKE_EDATA && !c &&
           strstr(err.msg, "a key repeated"),
       "fileColumnCheck refuses a repeated key (%s)", err.msg);
    snprintf(bad, sizeof bad, "{\"location\":\"%s\",\"size\":5.,\"sha256\":\"%s\"}", fv.location,
             fv.sha256);
    ok(fileColumnCheck(st, bad, strlen(bad), &c, &err) == LAKE_EDATA && !c &&
           strstr(err.msg, "digits after its '.'"),
       "fileColumnCheck refuses the number 5. (%s)", err.msg);
    snprintf(bad, sizeof bad, "{\"location\":\"%s\\u0000x\",\"size\":5,\"sha256\":\"%s\"}",
             fv.location, fv.sha256);
    ok(fileColumnCheck(st, bad, strlen(bad), &c, &err) == LAKE_EDATA && !c &&
           strstr(err.msg, "\\u0000"),
       "fileColumnCheck refuses \\u0000 in the location (%s)", err.msg);
    ok(one(db, "SELECT to_file(CAST(x'7b7d00' AS TEXT))", NULL, out, sizeof out, em, sizeof em) ==
               SQLITE_ERROR && strstr(em, "malformed JSON"),
       "to_file refuses JSON text with a NUL byte (%s)", em);

    /* the flags: usable in an index expression and a CHECK constraint */
    ok(sqlite3_exec(db,
                    "CREATE TABLE t(f TEXT CHECK (to_file(f) IS f));"
                    "CREATE INDEX t_size ON t(fl_get_size(f));",
                    NULL, NULL, NULL) == SQLITE_OK,
       "deterministic: allowed in CHECK and an index on an expression (%s)", sqlite3_errmsg(db));

    /* fl_get_presigned_url: NULL in, NULL out; its arguments refused as
     * SQL errors; a local stage an SQL error whose code (78) reaches the
     * sink; never in a schema (SQLITE_DIRECTONLY) */
    lakeError sink = {0};
    sqlite3 *db2;
    sqlite3_open(":memory:", &db2);
    ok(fileFunctionsRegister(db2, st, &sink, &err) == 0, "register with a failure sink");
    ok(one(db2, "SELECT quote(fl_get_presigned_url(NULL, 60))", NULL, out, sizeof out, em, sizeof em) ==
               SQLITE_ROW && strcmp(out, "NULL") == 0,
       "fl_get_presigned_url(NULL, 60) is NULL (%s)", out);
    ok(one(db2, "SELECT fl_get_presigned_url(?, 0)", json, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strcmp(em, "fl_get_presigned_url: seconds must be an integer from 1 to 604800") == 0 && !sink.code,
       "seconds 0 is an SQL error, not for the sink (%s)", em);
    ok(one(db2, "SELECT fl_get_presigned_url(?, '60')", json, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "seconds must be an integer") && !sink.code,
       "seconds as text is an SQL error (%s)", em);
    ok(one(db2, "SELECT fl_get_presigned_url('{', 60)", NULL, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "fl_get_presigned_url: ") && !sink.code,
       "malformed JSON is an SQL error (%s)", em);
    ok(one(db2, "SELECT fl_get_presigned_url(?, 60)", json, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "presigned URLs need an S3 stage") && sink.code == LAKE_ECONFIG &&
           strncmp(sink.msg, "fl_get_presigned_url: ", 22) == 0,
       "a local stage: an SQL error, 78 in the sink (%s / %s)", em, sink.msg);
    ok(sqlite3_exec(db2, "CREATE VIEW v AS SELECT fl_get_presigned_url('x', 60) AS u", NULL, NULL, NULL) ==
               SQLITE_OK &&
           one(db2, "SELECT u FROM v", NULL, out, sizeof out, em, sizeof em) == SQLITE_ERROR &&
           strstr(em, "unsafe use of"),
       "not callable from a view (%s)", em);
    sqlite3_close(db2);

    sqlite3_close(db);
    free(json);
    fileValueFree(&fv);
    stageClose(st);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tapDone();
}
