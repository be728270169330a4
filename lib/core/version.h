/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * version.h - the text of --version (cli.c prints it).
 */
#ifndef LAKE_VERSION_H
#define LAKE_VERSION_H

#include <stdio.h>

/* Two lines to f: "prog 0.1.0 (git abc1234)" (the revision when the build
 * knew it), then the libraries the process links, "Name/version" each,
 * separated by blanks, libcurl last ("libcurl/8.5.0", loaded to ask it, or
 * "libcurl/missing" when it cannot be loaded). */
void versionPrint(FILE *f);

/* The git revision the build was made from ("abc1234", "abc1234-dirty"),
 * or "" when the build did not know it (lake-metasrv's build-info
 * metric). */
const char *versionRevision(void);

#endif
