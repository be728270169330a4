/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.c - binding libarchive at run time (see archive.h for why).
 */
#define LAKE_ARCHIVE_IMPL 1
#include "core/archive.h"

#include "core/dlib.h"

LAKE_DLIB_DEFINE(lakeArchiveApi, LAKE_ARCHIVE_FUNCS, "libarchive.so.13", "libarchive 3.6 or later",
                 lakeArchiveLoad, lakeArchiveHandle, lakeArchiveReady)
