/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * handles.h - the handles liblake has given the program and it has not
 * yet closed, by address and kind.
 *
 * Every entry point asks here before it touches a handle, so that a
 * handle closed twice, or used after its close, is misuse (64) found by
 * comparing addresses: freed memory is never read.  What stays
 * undefined is a stale pointer whose address malloc has since given to a
 * new handle of the same kind: it then names that handle.
 */
#ifndef LAKE_API_HANDLES_H
#define LAKE_API_HANDLES_H

enum { HANDLE_CLIENT = 1, HANDLE_ROWS, HANDLE_READER };

/* Record p, of kind, as live; 0, or -1 (no memory). */
int handleAdd(const void *p, int kind);
/* Is p a live handle of kind? */
int handleLive(const void *p, int kind);
/* p no longer live: 1 when it was (the caller closes it), 0 when it was
 * not (closed already, or never given). */
int handleDrop(const void *p, int kind);

#endif
