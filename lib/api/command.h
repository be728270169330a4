/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * command.h - what a lake command needs to be a program of the public
 * library (lake.h) and still speak as a command: not exported from
 * liblake.so.0 (liblake.map), linked into the commands from liblake.a.
 */
#ifndef LAKE_API_COMMAND_H
#define LAKE_API_COMMAND_H

#include "lake.h"

#include "core/error.h"

/* A failed library call's error as the command's own (the same status
 * and message, for logError); returns the status. */
int commandFailed(const lake_error *e, lakeError *err);

#endif
