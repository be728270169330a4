/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lake-get - stream FILE values back out of the managed stage, verified.
 *
 *   lake-get [-q] [-o DIR | --archive | --presign DURATION] [--no-verify]
 *            [--jobs N] [--part-size BYTES] [--stage URL] [REF...]
 *
 * A REF is a location, a FILE value, or a JSON row with exactly one FILE
 * value; without REF arguments they are read one per line from stdin.
 * A null FILE (a NULL FILE column) is skipped and counted in one warning.
 * Containment is checked before any I/O on a location.  The first failure
 * stops the run (a concatenated stdout stream with a hole in it would be
 * worse than none).  --archive writes one pax tar stream instead
 * (archive.c), which a failure leaves visibly truncated.  --presign
 * prints a URL per REF that anyone may GET the object with until it
 * expires (stagePresignGet), and reads no object byte.  --jobs and
 * --part-size say how an S3 object of known size is read: ranged GETs
 * in parallel.
 *
 * lake-get is a program of the public library (lake.h): its client is
 * lake_open's, every object is read through lake_open_file_opt and
 * lake_reader_read (verified there), every URL signed by lake_presign.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/command.h"

#include "catalog/names.h"
#include "core/cli.h"
#include "core/duration.h"
#include "core/fsutil.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "stage/stage.h"

#include "archive.h"
#include "names.h"

/* The longest REF line read from stdin (a FILE value is well under 4 KiB;
 * a JSON row may carry other columns). */
#define REF_LINE_MAX (1024 * 1024)
/* The bytes a read of an object asks for at a time. */
#define COPY_BUF (1024 * 1024)

enum { OPT_OUT = 'o', OPT_NO_VERIFY = 0x100, OPT_STAGE, OPT_PROGRESS, OPT_NO_PROGRESS,
       OPT_ARCHIVE, OPT_PRESIGN, OPT_JOBS, OPT_PART_SIZE };

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings or progress"},
    {OPT_OUT, 'o', "output", "DIR",
     "write each object to a file in DIR, named by the FILE value (-: stdout, even a terminal)"},
    {OPT_ARCHIVE, 0, "archive", NULL, "write one pax tar stream of the objects to stdout"},
    {OPT_PRESIGN, 0, "presign", "DURATION",
     "print a URL per REF that anyone may GET for DURATION (1s to 7d), read no object"},
    {OPT_NO_VERIFY, 0, "no-verify", NULL, "do not check sizes and SHA-256 digests"},
    {OPT_JOBS, 0, "jobs", "N", "S3: ranged GETs of an object at once (default 4; 1: one GET)"},
    {OPT_PART_SIZE, 0, "part-size", "BYTES", "S3: bytes per ranged GET (default 8MiB, at least 5MiB)"},
    {OPT_STAGE, 0, "stage", "URL", "the managed stage (overrides LAKE_STAGE)"},
    {OPT_PROGRESS, 0, "progress", NULL, "draw a progress bar even if stderr is no terminal"},
    {OPT_NO_PROGRESS, 0, "no-progress", NULL, "never draw a progress bar"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-q] [-o DIR | --archive | --presign DURATION] [--no-verify] [--jobs N] [--part-size BYTES]"
    " [--stage URL] [REF...]",
    "Stream objects out of the lake's managed stage, verifying SHA-256; REFs are "
    "locations, FILE values or JSON rows, as arguments or one per line on stdin.",
    options,
    0,
    1,
};

typedef struct getRun {
    lake_client *c;
    const char *const *ropt; /* lake_open_file_opt's options: --no-verify, --jobs, --part-size */
    const char *outdir;
    tarOut *tar;      /* --archive: the stream, else NULL */
    int64_t presign;  /* --presign: the URLs' lifetime in seconds, else 0 */
    int verify;
    progressMode progress;
    int tty;          /* stdout is a terminal and not forced (-o -): no binary */
    nameSet names;    /* -o: the names written in this run */
    long nulls;       /* REFs that were a null FILE, skipped */
} getRun;

/* The file name an object gets in -o DIR: the base name of its FILE name,
 * else of its key; never empty, "." or "..". */
static const char *baseName(const fileValue *fv) {
    const char *n = fv->name, *slash;
    if (n && (slash = strrchr(n, '/'))) n = slash + 1;
    if (!n || !*n || strcmp(n, ".") == 0 || strcmp(n, "..") == 0) {
        slash = strrchr(fv->location, '/');
        n = slash ? slash + 1 : fv->location;
    }
    return n;
}

/* 1 when a media type (parameters aside) is text a terminal can show:
 * any text type, JSON, XML, and a few scripting and data formats. */
static int textType(const char *ct) {
    static const char *const exact[] = {
        "application/json", "application/xml", "application/javascript",
        "application/x-ndjson", "application/csv", "application/sql", "application/x-sh",
        "application/x-shellscript", "application/yaml", "application/x-yaml",
        "application/toml", "inode/x-empty", "application/x-empty",
    };
    size_t n = strcspn(ct, "; \t");
    if (strncasecmp(ct, "text/", 5) == 0) return 1;
    if ((n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0) ||
        (n > 4 && strncasecmp(ct + n - 4, "+xml", 4) == 0))
        return 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strlen(exact[i]) == n && strncasecmp(ct, exact[i], n) == 0) return 1;
    return 0;
}

/* stdout on a terminal: the bytes go through unless a chunk holds a NUL
 * byte (curl's test for binary data), which stops the object there. */
typedef struct ttyWriter {
    int fd;
    int binary; /* a NUL byte was seen: nothing more written */
} ttyWriter;

static int ttyWrite(void *ctx, const void *buf, size_t len) {
    ttyWriter *t = ctx;
    if (memchr(buf, '\0', len)) {
        t->binary = 1;
        errno = EILSEQ;
        return -1;
    }
    return fdWrite(&t->fd, buf, len);
}

static int ttyRefuse(const fileValue *fv, const char *what, lakeError *err) {
    return errSet(err, LAKE_EUSAGE,
                  "%s: refusing to write %s to a terminal; use -o DIR, redirect stdout, "
                  "or -o - to write it anyway", fv->location, what);
}

/* --presign: one line, the URL of the object ref names.  No request for
 * the object itself; containment is lake_presign's first check. */
static int presignOne(getRun *run, const char *ref, lakeError *err) {
    char *url = NULL;
    int fd = STDOUT_FILENO, rc = 0;
    lake_error e;
    if (lake_presign(run->c, ref, run->presign, &url, &e)) rc = commandFailed(&e, err);
    else if (fdWrite(&fd, url, strlen(url)) < 0 || fdWrite(&fd, "\n", 1) < 0)
        rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    lake_free(url);
    return rc;
}

/* The bytes of an open object into w, counted on prog; a failed read
 * (a digest mismatch at the end included) is the reader's error. */
typedef struct copyJob {
    lake_reader *rd;
    progress *prog;
    char *buf;
} copyJob;

static int copyOut(void *ctx, lakeWriter *w, lakeError *err) {
    copyJob *j = ctx;
    lake_error e;
    ssize_t n;
    while ((n = lake_reader_read(j->rd, j->buf, COPY_BUF, &e)) > 0) {
        if (w->write(w->ctx, j->buf, (size_t)n) < 0) return errSetErrno(err, LAKE_EFAIL, errno, "%s", w->what);
        progressAdd(j->prog, n);
    }
    return n < 0 ? commandFailed(&e, err) : 0;
}

static int getOne(getRun *run, const fileValue *fv, const char *ref, lakeError *err) {
    int rc;
    lake_error e;
    if (run->presign) return presignOne(run, ref, err);
    copyJob job = {NULL, NULL, NULL};
    /* containment, before any I/O on the location, is the open's first check */
    if (lake_open_file_opt(run->c, ref, run->ropt, &job.rd, &e)) return commandFailed(&e, err);
    if (!run->tar && !run->outdir && run->tty && fv->content_type && !textType(fv->content_type)) {
        lake_reader_close(job.rd);
        return ttyRefuse(fv, fv->content_type, err);
    }
    if (!(job.buf = malloc(COPY_BUF))) {
        lake_reader_close(job.rd);
        return errSetErrno(err, LAKE_EFAIL, ENOMEM, "get");
    }
    progress prog;
    progressStart(&prog, run->progress, fv->name ? fv->name : baseName(fv), fv->size);
    job.prog = &prog;
    if (run->tar) {
        rc = tarAdd(run->tar, fv, copyOut, &job, err);
    } else if (!run->outdir && run->tty) {
        ttyWriter t = {STDOUT_FILENO, 0};
        lakeWriter w = {ttyWrite, &t, "stdout"};
        rc = copyOut(&job, &w, err);
        if (t.binary) rc = ttyRefuse(fv, "binary data", err);
    } else if (!run->outdir) {
        int fd = STDOUT_FILENO;
        lakeWriter w = {fdWrite, &fd, "stdout"};
        rc = copyOut(&job, &w, err);
    } else {
        atomicFile af;
        char *name = strdup(baseName(fv));
        if (!name || !(name = nameUnique(&run->names, name, "written"))) {
            rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "names");
            goto out;
        }
        if ((rc = atomicOpen(&af, run->outdir, name, 1, 0644, err))) goto out;
        lakeWriter w = {fdWrite, &af.fd, name};
        rc = copyOut(&job, &w, err);
        if (!rc) rc = atomicCommit(&af, err);
        atomicAbort(&af);
    out:
        free(name);
    }
    progressEnd(&prog);
    lake_reader_close(job.rd);
    free(job.buf);
    return rc;
}

static int getRef(getRun *run, const char *text, const char *where, lakeError *err) {
    fileValue fv;
    int rc = refParse(text, &fv, err);
    if (!rc && !fv.location) run->nulls++; /* a NULL FILE column: nothing to get */
    else if (!rc) rc = getOne(run, &fv, text, err);
    if (rc && where && rc == LAKE_EDATA && !strstr(err->msg, fv.location ? fv.location : "\1"))
        errPrefix(err, "%s", where);
    fileValueFree(&fv);
    return rc;
}

/* REFs one per line from stdin; blank lines are skipped.  A line longer
 * than REF_LINE_MAX is refused without being held in memory, and so is a
 * line with a NUL byte, which would cut the REF short where it is read as
 * a C string and leave the rest unseen. */
static int getStdin(getRun *run, lakeError *err) {
    char *line = malloc(REF_LINE_MAX + 1);
    int rc = 0, c = 0;
    long lineno = 0;
    if (!line) return errSetErrno(err, LAKE_EFAIL, ENOMEM, "stdin");
    while (!rc && c != EOF) {
        size_t n = 0;
        int nul = 0;
        while ((c = getc(stdin)) != EOF && c != '\n') {
            if (n == REF_LINE_MAX) break;
            nul |= c == '\0';
            line[n++] = (char)c;
        }
        if (c == EOF && n == 0) break;
        lineno++;
        if (n == REF_LINE_MAX && c != '\n' && c != EOF) {
            rc = errSet(err, LAKE_EDATA, "stdin:%ld: line longer than %d bytes", lineno,
                        REF_LINE_MAX);
            break;
        }
        if (nul) {
            rc = errSet(err, LAKE_EDATA, "stdin:%ld: a NUL byte in the line", lineno);
            break;
        }
        while (n && line[n - 1] == '\r') n--;
        line[n] = '\0';
        if (line[strspn(line, " \t")] == '\0') continue;
        char where[64];
        snprintf(where, sizeof where, "stdin:%ld", lineno);
        rc = getRef(run, line, where, err);
    }
    if (!rc && ferror(stdin)) rc = errSetErrno(err, LAKE_EFAIL, errno, "stdin");
    free(line);
    return rc;
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    getRun run = {.progress = PROGRESS_AUTO};
    const char *arg, *stageUrlOpt = NULL, *jobs = NULL, *part_size = NULL;
    int c, first, archive = 0, verify = 1;
    lakeError perr = {0};
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        int jobsN;
        int64_t bytes;
        switch (c) {
        case 'q': logSetQuiet(1); run.progress = PROGRESS_OFF; break;
        case OPT_OUT: run.outdir = arg; break;
        case OPT_ARCHIVE: archive = 1; break;
        case OPT_PRESIGN:
            if (durationParse(arg, STAGE_PRESIGN_MAX, &run.presign) || run.presign < 1)
                cliUsageError(&spec, "--presign: '%s' is not a duration of 1s to 7d (45s, 30m, 12h, 7d)",
                              arg);
            break;
        case OPT_NO_VERIFY: verify = 0; break;
        case OPT_JOBS:
            if (stageParseJobs(arg, &jobsN, &perr)) cliUsageError(&spec, "%s", perr.msg);
            jobs = arg;
            break;
        case OPT_PART_SIZE:
            if (stageParsePartSize(arg, &bytes, &perr)) cliUsageError(&spec, "%s", perr.msg);
            part_size = arg;
            break;
        case OPT_STAGE: stageUrlOpt = arg; break;
        case OPT_PROGRESS: if (!logQuiet()) run.progress = PROGRESS_ON; break;
        case OPT_NO_PROGRESS: run.progress = PROGRESS_OFF; break;
        }
    }
    const char *ropt[7], *copt[3] = {NULL, NULL, NULL};
    int n = 0;
    if (!verify) ropt[n++] = "verify", ropt[n++] = "0";
    if (jobs) ropt[n++] = "jobs", ropt[n++] = jobs;
    if (part_size) ropt[n++] = "part_size", ropt[n++] = part_size;
    ropt[n] = NULL;
    run.ropt = ropt;
    if (stageUrlOpt) copt[0] = "stage", copt[1] = stageUrlOpt;

    /* a stop signal erases the progress bar, removes a file of -o DIR
     * being written, says so and ends the run (core/interrupt.h) */
    interruptCatch(0);
    lakeError err = {0};
    struct stat sb;
    int rc = 0;
    if (archive && run.outdir) cliUsageError(&spec, "-o and --archive cannot be used together");
    if (run.presign && (archive || run.outdir))
        cliUsageError(&spec, "--presign cannot be used with %s", archive ? "--archive" : "-o");
    if (run.outdir && strcmp(run.outdir, "-") == 0) run.outdir = NULL; /* stdout, forced */
    else run.tty = isatty(STDOUT_FILENO);
    if (archive && isatty(STDOUT_FILENO))
        rc = errSet(&err, LAKE_EUSAGE, "refusing to write a tar stream to a terminal");
    if (!rc && run.outdir && (stat(run.outdir, &sb) < 0 || !S_ISDIR(sb.st_mode)))
        rc = errSet(&err, LAKE_ENOINPUT, "%s: no such directory", run.outdir);
    lake_error e;
    if (!rc && lake_open(&run.c, copt, &e)) rc = commandFailed(&e, &err);
    if (!rc) lake_set_warn(run.c, logWarnLine, NULL);
    /* remote mode: the stage lake-metasrv advertises, unless LAKE_STAGE
     * says, asked for by the first REF's open (lake_open_file_opt) */
    if (!rc && archive) rc = tarOpen(&run.tar, STDOUT_FILENO, &err);
    for (int i = first; !rc && i < argc; i++) rc = getRef(&run, argv[i], NULL, &err);
    if (!rc && first == argc) rc = getStdin(&run, &err);
    if (run.tar) {
        if (!rc) rc = tarClose(run.tar, &err);
        else tarAbort(run.tar);
    }
    if (rc) logError(&err);
    else if (run.nulls)
        logWarn("%ld %s no FILE (null): skipped", run.nulls, run.nulls == 1 ? "row had" : "rows had");
    lake_close(run.c);
    nameSetFree(&run.names);
    return rc;
}
