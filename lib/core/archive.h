/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive.h - libarchive, loaded on first use.
 *
 * Include this instead of <archive.h> and <archive_entry.h>.  libarchive
 * brings a dozen libraries of its own (ICU, libxml2, libstdc++, the
 * compressors, nettle) whose loading and relocation cost every lake-put
 * and lake-get about a millisecond and some resident memory, while only
 * `lake-put --archive` and an archive written by lake-get use it.  So the
 * programs do not link it: the first call of one of the functions below
 * dlopen()s libarchive.so.13 and binds them all (as crypto.h does for
 * libcrypto); the names are redirected to those bindings.  If libarchive
 * is missing the process prints one line and exits 1.
 */
#ifndef LAKE_ARCHIVE_H
#define LAKE_ARCHIVE_H

#include <archive.h>
#include <archive_entry.h>

/* Every libarchive function the programs call. */
#define LAKE_ARCHIVE_FUNCS(X)                                                        \
    X(archive_entry_copy_pathname) X(archive_entry_filetype) X(archive_entry_free)   \
    X(archive_entry_hardlink) X(archive_entry_new) X(archive_entry_pathname)         \
    X(archive_entry_pathname_utf8) X(archive_entry_set_filetype)                     \
    X(archive_entry_set_mtime) X(archive_entry_set_perm) X(archive_entry_set_size)   \
    X(archive_entry_size) X(archive_entry_size_is_set) X(archive_errno)              \
    X(archive_error_string) X(archive_filter_count) X(archive_format)                \
    X(archive_read_data_block) X(archive_read_free) X(archive_read_new)              \
    X(archive_read_next_header) X(archive_read_open1)                                \
    X(archive_read_set_callback_data) X(archive_read_set_read_callback)              \
    X(archive_read_set_seek_callback) X(archive_read_set_skip_callback)              \
    X(archive_read_support_filter_bzip2) X(archive_read_support_filter_compress)     \
    X(archive_read_support_filter_gzip) X(archive_read_support_filter_lz4)           \
    X(archive_read_support_filter_xz) X(archive_read_support_filter_zstd)            \
    X(archive_read_support_format_7zip) X(archive_read_support_format_cpio)          \
    X(archive_read_support_format_empty) X(archive_read_support_format_iso9660)      \
    X(archive_read_support_format_tar) X(archive_read_support_format_zip)            \
    X(archive_set_error) X(archive_write_close) X(archive_write_data)                \
    X(archive_write_finish_entry) X(archive_write_free) X(archive_write_header)      \
    X(archive_write_new) X(archive_write_open) X(archive_write_set_bytes_per_block)  \
    X(archive_write_set_format_pax_restricted)

typedef struct lakeArchiveApi {
#define LAKE_ARCHIVE_FIELD(f) __typeof__(f) *f;
    LAKE_ARCHIVE_FUNCS(LAKE_ARCHIVE_FIELD)
#undef LAKE_ARCHIVE_FIELD
} lakeArchiveApi;

/* The bound functions, loaded on the first call (once, thread-safe:
 * core/dlib.h). */
const lakeArchiveApi *lakeArchiveLoad(void);
/* libarchive.so.13's handle, loading it, or NULL when it cannot be loaded;
 * never exits (for --version). */
void *lakeArchiveHandle(void);
/* Binds libarchive without exiting: NULL when it is usable, else the
 * line saying why not. */
const char *lakeArchiveReady(void);

#ifndef LAKE_ARCHIVE_IMPL
/* (a macro is not expanded again inside itself: the field keeps its name) */
#define archive_entry_copy_pathname (lakeArchiveLoad()->archive_entry_copy_pathname)
#define archive_entry_filetype (lakeArchiveLoad()->archive_entry_filetype)
#define archive_entry_free (lakeArchiveLoad()->archive_entry_free)
#define archive_entry_hardlink (lakeArchiveLoad()->archive_entry_hardlink)
#define archive_entry_new (lakeArchiveLoad()->archive_entry_new)
#define archive_entry_pathname (lakeArchiveLoad()->archive_entry_pathname)
#define archive_entry_pathname_utf8 (lakeArchiveLoad()->archive_entry_pathname_utf8)
#define archive_entry_set_filetype (lakeArchiveLoad()->archive_entry_set_filetype)
#define archive_entry_set_mtime (lakeArchiveLoad()->archive_entry_set_mtime)
#define archive_entry_set_perm (lakeArchiveLoad()->archive_entry_set_perm)
#define archive_entry_set_size (lakeArchiveLoad()->archive_entry_set_size)
#define archive_entry_size (lakeArchiveLoad()->archive_entry_size)
#define archive_entry_size_is_set (lakeArchiveLoad()->archive_entry_size_is_set)
#define archive_errno (lakeArchiveLoad()->archive_errno)
#define archive_error_string (lakeArchiveLoad()->archive_error_string)
#define archive_filter_count (lakeArchiveLoad()->archive_filter_count)
#define archive_format (lakeArchiveLoad()->archive_format)
#define archive_read_data_block (lakeArchiveLoad()->archive_read_data_block)
#define archive_read_free (lakeArchiveLoad()->archive_read_free)
#define archive_read_new (lakeArchiveLoad()->archive_read_new)
#define archive_read_next_header (lakeArchiveLoad()->archive_read_next_header)
#define archive_read_open1 (lakeArchiveLoad()->archive_read_open1)
#define archive_read_set_callback_data (lakeArchiveLoad()->archive_read_set_callback_data)
#define archive_read_set_read_callback (lakeArchiveLoad()->archive_read_set_read_callback)
#define archive_read_set_seek_callback (lakeArchiveLoad()->archive_read_set_seek_callback)
#define archive_read_set_skip_callback (lakeArchiveLoad()->archive_read_set_skip_callback)
#define archive_read_support_filter_bzip2 (lakeArchiveLoad()->archive_read_support_filter_bzip2)
#define archive_read_support_filter_compress (lakeArchiveLoad()->archive_read_support_filter_compress)
#define archive_read_support_filter_gzip (lakeArchiveLoad()->archive_read_support_filter_gzip)
#define archive_read_support_filter_lz4 (lakeArchiveLoad()->archive_read_support_filter_lz4)
#define archive_read_support_filter_xz (lakeArchiveLoad()->archive_read_support_filter_xz)
#define archive_read_support_filter_zstd (lakeArchiveLoad()->archive_read_support_filter_zstd)
#define archive_read_support_format_7zip (lakeArchiveLoad()->archive_read_support_format_7zip)
#define archive_read_support_format_cpio (lakeArchiveLoad()->archive_read_support_format_cpio)
#define archive_read_support_format_empty (lakeArchiveLoad()->archive_read_support_format_empty)
#define archive_read_support_format_iso9660 (lakeArchiveLoad()->archive_read_support_format_iso9660)
#define archive_read_support_format_tar (lakeArchiveLoad()->archive_read_support_format_tar)
#define archive_read_support_format_zip (lakeArchiveLoad()->archive_read_support_format_zip)
#define archive_set_error (lakeArchiveLoad()->archive_set_error)
#define archive_write_close (lakeArchiveLoad()->archive_write_close)
#define archive_write_data (lakeArchiveLoad()->archive_write_data)
#define archive_write_finish_entry (lakeArchiveLoad()->archive_write_finish_entry)
#define archive_write_free (lakeArchiveLoad()->archive_write_free)
#define archive_write_header (lakeArchiveLoad()->archive_write_header)
#define archive_write_new (lakeArchiveLoad()->archive_write_new)
#define archive_write_open (lakeArchiveLoad()->archive_write_open)
#define archive_write_set_bytes_per_block (lakeArchiveLoad()->archive_write_set_bytes_per_block)
#define archive_write_set_format_pax_restricted (lakeArchiveLoad()->archive_write_set_format_pax_restricted)
#endif

#endif
