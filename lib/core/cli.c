/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.c - getopt_long driven by a cliSpec.
 */
#include "core/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/version.h"

enum { CLI_HELP = 0x10000, CLI_VERSION };

static const cliOption builtins[] = {
    {CLI_HELP, 'h', "help", NULL, "show this help and exit"},
    {CLI_VERSION, 0, "version", NULL, "show the version and the versions of the libraries, and exit"},
};

/* At exit: stdout must have reached its file whole.  A write that failed
 * late (--help to /dev/full, the last buffered rows) makes the exit status
 * 1 with one line, as GNU's close_stdout does; after an error already
 * reported the status it chose stands. */
static void closeStdout(void) {
    int bad = fflush(stdout) != 0 || ferror(stdout), e = errno;
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (!bad || logErrored()) return;
    fprintf(stderr, "%s: stdout: %s\n", logProgname(), strerror(e ? e : EIO));
    _exit(1);
}

/* 1 when the spec defines a long option of this name itself. */
static int ownOption(const cliSpec *spec, const char *name) {
    for (const cliOption *o = spec->opts; o->id; o++)
        if (strcmp(o->name, name) == 0) return 1;
    return 0;
}

/* One line per form of the command; a line that starts with a blank goes
 * on the form above it, aligned under its first argument. */
static void printSynopsis(FILE *f, const char *synopsis) {
    const char *p = synopsis;
    int first = 1;
    while (*p) {
        size_t n = strcspn(p, "\n");
        if (!first && *p == ' ') {
            size_t b = strspn(p, " ");
            fprintf(f, "       %*s %.*s\n", (int)strlen(logProgname()), "", (int)(n - b), p + b);
        } else {
            fprintf(f, "%s%s %.*s\n", first ? "usage: " : "       ", logProgname(), (int)n, p);
        }
        first = 0;
        p += n;
        if (*p) p++;
    }
}

static void printOption(const cliOption *o) {
    char left[80];
    if (o->shortname)
        snprintf(left, sizeof left, "-%c, --%s%s%s", o->shortname, o->name,
                 o->arg ? " " : "", o->arg ? o->arg : "");
    else
        snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
    /* the help column starts after the longest option, or on its own line */
    if (strlen(left) > 32) printf("  %s\n  %-32s %s\n", left, "", o->help);
    else printf("  %-32s %s\n", left, o->help);
}

static void help(const cliSpec *spec) {
    printSynopsis(stdout, spec->synopsis);
    printf("\n%s\n\noptions:\n", spec->summary);
    for (const cliOption *o = spec->opts; o->id; o++) printOption(o);
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!ownOption(spec, builtins[i].name)) printOption(&builtins[i]);
    printf("\nSee %s(%d) for details and exit statuses.\n", logProgname(),
           spec->man_section ? spec->man_section : 1);
    exit(0);
}

void cliUsageError(const cliSpec *spec, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    (void)spec;
    logErrorf("%s (see '%s --help')", line, logProgname());
    exit(64);
}

int cliNext(const cliSpec *spec, int argc, char **argv, const char **arg,
            int *optind_out) {
    static struct option longs[64];
    static char shorts[128];
    static const cliSpec *built;
    static int registered;
    if (!registered) registered = atexit(closeStdout) == 0;
    if (built != spec) {
        size_t nl = 0, ns = 0;
        const cliOption *lists[2] = {spec->opts, builtins};
        size_t counts[2] = {0, sizeof builtins / sizeof builtins[0]};
        for (const cliOption *o = spec->opts; o->id; o++) counts[0]++;
        if (spec->stop_at_operand) shorts[ns++] = '+';
        shorts[ns++] = ':'; /* report a missing argument as ':' */
        for (int l = 0; l < 2; l++)
            for (size_t i = 0; i < counts[l] && nl < 63; i++) {
                const cliOption *o = &lists[l][i];
                if (l == 1 && ownOption(spec, o->name)) continue;
                longs[nl++] = (struct option){o->name, o->arg ? required_argument : no_argument,
                                              NULL, o->id};
                if (o->shortname && ns < sizeof shorts - 3) {
                    shorts[ns++] = o->shortname;
                    if (o->arg) shorts[ns++] = ':';
                }
            }
        longs[nl] = (struct option){0, 0, 0, 0};
        shorts[ns] = '\0';
        built = spec;
        opterr = 0;
        optind = 0; /* a new spec parses a new argument vector from the start */
    }
    int c = getopt_long(argc, argv, shorts, longs, NULL);
    *arg = optarg;
    *optind_out = optind;
    if (c == -1) return -1;
    if (c == 'h' || c == CLI_HELP) help(spec);
    if (c == CLI_VERSION) {
        versionPrint(stdout);
        exit(0);
    }
    const char *bad = argv[optind - 1];
    if (c == '?') {
        if (optopt > 0 && optopt < 128)
            cliUsageError(spec, "unknown option '-%c'", optopt);
        cliUsageError(spec, "unknown option '%s'", bad);
    }
    if (c == ':') {
        cliUsageError(spec, "option '%s' needs an argument", bad);
    }
    /* a short option maps to the table entry with that letter */
    for (const cliOption *o = spec->opts; o->id; o++)
        if (o->shortname == c) return o->id;
    return c;
}
