/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * names.h - the names one lake-get run writes, unique within the run, for
 * -o DIR and --archive alike.
 *
 * One rule for both: a name already written gets the smallest number that
 * makes it unique, before its last extension, so the type still shows:
 * "a.txt", "a.1.txt", "a.2.txt"; "x.tar.gz" becomes "x.tar.1.gz"; a name
 * without an extension, or a dot file, gets the number at the end
 * ("README.1", ".profile.1").  A name also clashes with a directory of a
 * name taken ("a" against "a/b") and the other way round.
 */
#ifndef LAKE_GET_NAMES_H
#define LAKE_GET_NAMES_H

#include <stddef.h>

typedef struct nameSet {
    char **slot;
    size_t cap, n; /* cap a power of two, n <= cap / 2 */
} nameSet;         /* zero-initialised: empty */

/* Make name unique in ns and take it.  Takes name (malloc'd); returns the
 * name to write (caller frees), or NULL when out of memory.  A changed
 * name is warned about: "NAME: name already WHERE; writing NEW". */
char *nameUnique(nameSet *ns, char *name, const char *where);

void nameSetFree(nameSet *ns);

#endif
