/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h - one option table per program feeds parsing, --help and the
 * completion checks, so the three cannot drift.
 *
 * Parsing is GNU-style getopt_long (permuted operands, "--" ends options,
 * unambiguous prefixes of long options accepted).  -h/--help and --version
 * are handled here: they print to stdout and exit 0 (a spec may define its
 * own "version" option, which then wins).  The first call also makes the
 * exit check stdout: a failed write or close of it (a full disk, /dev/full)
 * prints "prog: stdout: <reason>" and exits 1 unless an error was already
 * reported.  Parsing a second spec (a
 * command's options after the command word) restarts getopt.  A bad option prints
 * one line, "prog: unknown option '--x' (see 'prog --help')", and exits 64.
 */
#ifndef LAKE_CLI_H
#define LAKE_CLI_H

typedef struct cliOption {
    int id;            /* returned by cliNext; a char for short options */
    char shortname;    /* 0 when long only */
    const char *name;  /* long name without "--" */
    const char *arg;   /* argument placeholder, NULL when it takes none */
    const char *help;
} cliOption;

typedef struct cliSpec {
    const char *synopsis;   /* lines after "usage: ", '\n'-separated, one per form; a
                               line starting with a blank continues the form above */
    const char *summary;    /* one line: what the program does */
    const cliOption *opts;  /* terminated by an entry with id 0 */
    int stop_at_operand;    /* options end at the first operand (a command) */
    int man_section;        /* where --help points: prog(N); 0 means 1 */
} cliSpec;

/* Parse the next option.  Returns its id, or -1 when options are done
 * (then *optind_out is the index of the first operand).  *arg receives the
 * option's argument.  Exits for --help (0), --version (0), errors (64). */
int cliNext(const cliSpec *spec, int argc, char **argv, const char **arg,
            int *optind_out);

/* One-line usage error on stderr, then exit 64 (for operand errors). */
void cliUsageError(const cliSpec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
