/*
 * listing.h - the list_tables action (issue 29): the tables a principal
 * may read, a bounded page at a time.
 *
 * A user (role user) may not take the bulk catalog_snapshot, yet should
 * see what it may read: list_tables answers the live tables it holds
 * read on (grants on '*', the namespace or the table, to it, to
 * role:user or to PUBLIC), sorted by (namespace, name), paged by `after`
 * and bounded in entries and bytes, with a conditional form
 * (known_generation) that costs one read of the marker.  The other roles
 * see every table (a metadata-peer holds the whole snapshot anyway).
 */
#ifndef LAKE_LISTING_H
#define LAKE_LISTING_H

#include "catalog/actions.h"

struct cJSON;

/* Tables in one page at most, and bytes of their JSON text. */
#define LIST_TABLES_MAX_LIMIT 1000
#define LIST_TABLES_MAX_BYTES (4LL * 1024 * 1024)

/* list_tables for ctx's caller with request req (fields checked by the
 * dispatcher): {"after":"NS.T","limit":N,"namespace":NS,
 * "known_generation":G}, each optional; limit is capped at
 * LIST_TABLES_MAX_LIMIT.  The answer is registryListTables'; a malformed
 * field is invalid_argument. */
int listingTables(const actionContext *ctx, const struct cJSON *req, struct cJSON **answer, lakeError *err);

#endif
