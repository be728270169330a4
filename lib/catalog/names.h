/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * names.h - lake names and table schemas (DESIGN §6, §9).
 *
 * Names match [A-Za-z_][A-Za-z0-9_]* and are at most NAME_MAX_LEN bytes.
 * A schema is written "col TYPE, col TYPE, ..." with the types INTEGER,
 * REAL, TEXT, BLOB, BOOLEAN, TIMESTAMP and FILE (any case); its canonical
 * form is the JSON array [{"name":"col","type":"TYPE"},...] with types in
 * upper case.  Column names are unique ignoring case, as in SQLite.  A
 * column may carry its stable "id" (catalog/schema.h): then every column
 * does, and the canonical text leaves them out when they are 1 to n.
 */
#ifndef LAKE_NAMES_H
#define LAKE_NAMES_H

#include <stdint.h>

#include "core/error.h"

#define NAME_MAX_LEN 128
#define SCHEMA_MAX_COLUMNS 1000
/* The largest column id (ids are never reused: a table can add columns
 * this many times). */
#define SCHEMA_MAX_ID 1000000

/* 1 when s is a valid lake name. */
int nameIsValid(const char *s);

/* Split "ns.table" into its two names (caller frees both); 64 when either
 * part breaks the naming rule. */
int nameSplitTable(const char *qualified, char **ns, char **table, lakeError *err);

/* A grant's target (or list_tables' after): "*" (when star), NS or NS.T;
 * ns and name get its parts ("" when absent; both "" for "*").  0 when it
 * is one, -1 when not. */
int nameTarget(const char *s, int star, char ns[NAME_MAX_LEN + 1], char name[NAME_MAX_LEN + 1]);

/* Parse a schema definition into canonical JSON text (caller frees).
 * Fails with 64 naming the offending column. */
int schemaParse(const char *definition, char **json, lakeError *err);

/* Validate schema JSON (as stored or received) and return its canonical
 * text (caller frees).  Fails with 65. */
int schemaCanonical(const char *json, char **canonical, lakeError *err);

/* Change canonical schema json by op: "add-column" a = "NAME TYPE" (the
 * new column takes id next_id), "rename-column" a to b, "drop-column" a.
 * *out is the new canonical schema (caller frees).  64 for a name clash,
 * a bad name or type, the last column dropped or an unknown op; 66 for a
 * column that does not exist. */
int schemaAlter(const char *json, const char *op, const char *a, const char *b, int64_t next_id, char **out,
                lakeError *err);

/* lake-catalog alter's arguments checked before any call, as the command
 * and liblake's lake_catalog_alter both check them: op one of
 * "add-column" (column "NAME TYPE", to NULL), "rename-column" (column
 * and to names) or "drop-column" (column a name, to NULL); table NS.T,
 * split into *ns and *name (caller frees; NULL on failure).  64 with the
 * message lake-catalog(1) gives, in the order it checks. */
int schemaAlterCheck(const char *table, const char *op, const char *column, const char *to, char **ns, char **name,
                     lakeError *err);

#endif
