/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vend.h - opening a command's stage, with vended access when the client
 * holds no S3 keys (DESIGN §2 s3_access, §4 "Vended access").
 */
#ifndef LAKE_CATALOG_VEND_H
#define LAKE_CATALOG_VEND_H

#include "catalog/cache.h"
#include "core/config.h"
#include "core/error.h"
#include "stage/stage.h"

/* The stage a command uses (catalogStageUrl: LAKE_STAGE, else what the
 * metadata server advertises), opened.  In remote mode an S3 stage asks
 * lake-metasrv for presigned URLs (a stageVendor on a connection of its
 * own) when s3_access is "vended", or when it is unset and the
 * environment holds no AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; with
 * keys it signs itself.  s3_access=vended in embedded mode is 78.  cache
 * may be NULL (one is opened for the stage URL when needed).  table (NS.T,
 * may be NULL) is the table the command's new files are for: vended, the
 * server needs the write privilege on it of a user (issue 29). */
int catalogStageOpen(const lakeConfig *cfg, catalogCache *cache, const char *table, stage **out, lakeError *err);

#endif
