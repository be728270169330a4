/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * names.c - the names one lake-get run writes (see names.h).
 */
#include "names.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

/* Keys are "f" + a name or "d" + a directory that names imply. */

/* FNV-1a of kind followed by the len bytes of name. */
static uint64_t nameHash(char kind, const char *name, size_t len) {
    uint64_t h = (1469598103934665603ULL ^ (unsigned char)kind) * 1099511628211ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    return h;
}

static int nameHas(const nameSet *ns, char kind, const char *name, size_t len) {
    if (!ns->cap) return 0;
    for (size_t i = nameHash(kind, name, len) & (ns->cap - 1); ns->slot[i];
         i = (i + 1) & (ns->cap - 1)) {
        const char *k = ns->slot[i];
        if (k[0] == kind && strncmp(k + 1, name, len) == 0 && k[len + 1] == '\0') return 1;
    }
    return 0;
}

static int nameInsert(nameSet *ns, char *key) {
    if (2 * (ns->n + 1) > ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 64;
        char **slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t j = 0; j < ns->cap; j++) {
            if (!ns->slot[j]) continue;
            size_t i = nameHash(ns->slot[j][0], ns->slot[j] + 1, strlen(ns->slot[j] + 1)) & (cap - 1);
            while (slot[i]) i = (i + 1) & (cap - 1);
            slot[i] = ns->slot[j];
        }
        free(ns->slot);
        ns->slot = slot;
        ns->cap = cap;
    }
    size_t i = nameHash(key[0], key + 1, strlen(key + 1)) & (ns->cap - 1);
    while (ns->slot[i]) {
        if (strcmp(ns->slot[i], key) == 0) { free(key); return 0; }
        i = (i + 1) & (ns->cap - 1);
    }
    ns->slot[i] = key;
    ns->n++;
    return 0;
}

static int nameAdd(nameSet *ns, char kind, const char *name, size_t len) {
    char *key = malloc(len + 2);
    if (!key) return -1;
    key[0] = kind;
    memcpy(key + 1, name, len);
    key[len + 1] = '\0';
    return nameInsert(ns, key);
}

void nameSetFree(nameSet *ns) {
    for (size_t i = 0; i < ns->cap; i++) free(ns->slot[i]);
    free(ns->slot);
}

/* True when name cannot be an entry: it is taken, is a directory of a
 * taken name, or one of its directories is a taken name. */
static int nameClashes(const nameSet *ns, const char *name) {
    size_t len = strlen(name);
    if (nameHas(ns, 'f', name, len) || nameHas(ns, 'd', name, len)) return 1;
    for (const char *p = name; (p = strchr(p, '/')); p++)
        if (nameHas(ns, 'f', name, (size_t)(p - name))) return 1;
    return 0;
}

static int nameClaim(nameSet *ns, const char *name) {
    for (const char *p = name; (p = strchr(p, '/')); p++)
        if (nameAdd(ns, 'd', name, (size_t)(p - name))) return -1;
    return nameAdd(ns, 'f', name, strlen(name));
}

/* The smallest numbered form of name that does not clash: the number
 * goes before the last extension of the last component ("a.1.txt"); a
 * name without one, or a dot file, gets ".N" at the end. */
char *nameUnique(nameSet *ns, char *name, const char *where) {
    char *cand = name;
    if (nameClashes(ns, name)) {
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        const char *dot = strrchr(base, '.');
        size_t stem = dot && dot != base && dot[1] ? (size_t)(dot - name) : strlen(name);
        size_t len = strlen(name) + 24;
        if (!(cand = malloc(len))) goto fail;
        for (unsigned long k = 1;; k++) {
            snprintf(cand, len, "%.*s.%lu%s", (int)stem, name, k, name + stem);
            if (!nameClashes(ns, cand)) break;
        }
        logWarn("%s: name already %s; writing %s", name, where, cand);
        free(name);
        name = NULL;
    }
    if (nameClaim(ns, cand) == 0) return cand;
fail:
    free(name);
    if (cand != name) free(cand);
    return NULL;
}
