/*
 * lake-put - stream bytes into the managed stage, one FILE value per object.
 *
 *   lake-put [-q] [--name NAME] [--content-type TYPE] [--size BYTES]
 *            [--sha256 HEX] [--stage URL] [FILE|-]...
 *
 * Inputs are put in order; each FILE value is printed (one JSON line) as
 * soon as its object is durable.  The first failure stops the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/config.h"
#include "core/log.h"
#include "core/progress.h"
#include "stage/stage.h"

enum { OPT_NAME = 0x100, OPT_CTYPE, OPT_SIZE, OPT_SHA, OPT_STAGE, OPT_PROGRESS,
       OPT_NO_PROGRESS };

static const cliOption options[] = {
    {'q', 'q', "quiet", NULL, "print no warnings or progress"},
    {OPT_NAME, 0, "name", "NAME", "the FILE value's name (default: the file's base name)"},
    {OPT_CTYPE, 0, "content-type", "TYPE", "content type (default: detected)"},
    {OPT_SIZE, 0, "size", "BYTES", "fail unless the input is exactly BYTES long"},
    {OPT_SHA, 0, "sha256", "HEX", "fail unless the input has this SHA-256"},
    {OPT_STAGE, 0, "stage", "URL", "the managed stage (overrides LAKE_STAGE)"},
    {OPT_PROGRESS, 0, "progress", NULL, "draw a progress bar even if stderr is no terminal"},
    {OPT_NO_PROGRESS, 0, "no-progress", NULL, "never draw a progress bar"},
    {0, 0, NULL, NULL, NULL},
};

static const cliSpec spec = {
    "[-q] [--name NAME] [--content-type TYPE] [--size BYTES] [--sha256 HEX]\n"
    "[--stage URL] [FILE|-]...",
    "Stream files or stdin into the lake's managed stage; print one FILE value "
    "(JSON) per object.",
    options,
    0,
};

typedef struct putArgs {
    const char *name, *content_type, *sha256, *stage;
    long long size;
    progressMode progress;
} putArgs;

static long long parseSize(const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > FILE_SIZE_MAX)
        cliUsageError(&spec, "--size: '%s' is not a number of bytes", s);
    return v;
}

/* Put one input ("-" is stdin) and print its FILE value. */
static int putOne(stage *st, const putArgs *a, const char *input, lakeError *err) {
    int fd = STDIN_FILENO, rc;
    const char *what = "stdin", *name = a->name;
    struct stat sb;
    if (strcmp(input, "-") != 0) {
        fd = open(input, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errSetErrno(err, errCodeForErrno(errno), errno, "%s", input);
        what = input;
        if (!name) {
            const char *slash = strrchr(input, '/');
            name = slash ? slash + 1 : input;
        }
    }
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        rc = errSet(err, LAKE_ENOINPUT, "%s: is a directory", what);
        goto out;
    }
    int64_t total = a->size >= 0 ? a->size : S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
    progress prog;
    progressStart(&prog, a->progress, name ? name : what, total);
    lakeReader r = {fdRead, &fd, what};
    stagePutOptions opt = {name, a->content_type, a->size, a->sha256, &prog};
    fileValue fv;
    rc = stagePut(st, &r, &opt, &fv, err);
    progressEnd(&prog);
    if (rc) goto out;
    char *json = fileValueToJson(&fv);
    if (!json) rc = errSetErrno(err, LAKE_EFAIL, ENOMEM, "%s", what);
    else if (printf("%s\n", json) < 0 || fflush(stdout) == EOF)
        rc = errSetErrno(err, LAKE_EFAIL, errno, "stdout");
    free(json);
    fileValueFree(&fv);
out:
    if (fd != STDIN_FILENO) close(fd);
    return rc;
}

int main(int argc, char **argv) {
    logInit(argv[0]);
    putArgs a = {.size = -1, .progress = PROGRESS_AUTO};
    const char *arg;
    int c, first;
    while ((c = cliNext(&spec, argc, argv, &arg, &first)) != -1) {
        switch (c) {
        case 'q': logSetQuiet(1); a.progress = PROGRESS_OFF; break;
        case OPT_NAME: a.name = arg; break;
        case OPT_CTYPE: a.content_type = arg; break;
        case OPT_SIZE: a.size = parseSize(arg); break;
        case OPT_SHA:
            if (!sha256IsHex(arg)) cliUsageError(&spec, "--sha256: '%s' is not 64 hex digits", arg);
            a.sha256 = arg;
            break;
        case OPT_STAGE: a.stage = arg; break;
        case OPT_PROGRESS: if (!logQuiet()) a.progress = PROGRESS_ON; break;
        case OPT_NO_PROGRESS: a.progress = PROGRESS_OFF; break;
        }
    }
    int ninputs = argc - first;
    if (ninputs > 1 && (a.name || a.size >= 0 || a.sha256))
        cliUsageError(&spec, "--name, --size and --sha256 describe one input, not %d", ninputs);
    if (a.content_type && !*a.content_type) cliUsageError(&spec, "--content-type is empty");

    lakeError err = {0};
    lakeConfig cfg = {0};
    configOverride ov[] = {{"stage", a.stage}};
    stage *st = NULL;
    int rc = configLoad(&cfg, ov, 1, &err);
    if (!rc && !configIsLocal(&cfg))
        rc = errSet(&err, LAKE_ECONFIG, "remote mode (metasrv = %s) is not supported yet",
                    cfg.metasrv);
    if (!rc && !cfg.stage) rc = errSet(&err, LAKE_ECONFIG, "no stage configured");
    if (!rc) rc = stageOpen(cfg.stage, &st, &err);
    for (int i = first; !rc && i < argc; i++) rc = putOne(st, &a, argv[i], &err);
    if (!rc && ninputs == 0) rc = putOne(st, &a, "-", &err);
    if (rc) logError(&err);
    stageClose(st);
    configFree(&cfg);
    return rc;
}
