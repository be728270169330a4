/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.h - the monotonic clock in the forms the programs use: whole
 * milliseconds to measure waits and deadlines, and an absolute timespec a
 * condition variable waits until.
 */
#ifndef LAKE_CORE_CLOCK_H
#define LAKE_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC: only differences mean anything. */
int64_t clockMs(void);
/* *t = now on clock id (the clock a condition variable waits on) plus ms. */
void clockAfterMs(struct timespec *t, clockid_t id, long ms);

#endif
