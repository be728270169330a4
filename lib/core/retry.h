/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * retry.h - how long to wait before trying again: exponential backoff
 * with full jitter, as AWS's "Exponential Backoff and Jitter" describes.
 *
 * The ceiling of the pause doubles from RETRY_BASE_MS with every attempt
 * up to RETRY_CAP_MS; the pause itself is drawn uniformly below it, so
 * that clients turned away at the same moment do not all come back
 * together.  Pure functions of their arguments (the caller brings the
 * random number), so that the schedule can be tested.
 */
#ifndef LAKE_RETRY_H
#define LAKE_RETRY_H

#include <signal.h>

#define RETRY_BASE_MS 100L
#define RETRY_CAP_MS 2000L

/* The ceiling of the pause after attempt number attempt (>= 1):
 * RETRY_BASE_MS doubled attempt - 1 times, at most RETRY_CAP_MS. */
long retryCeilingMs(int attempt);

/* The pause after attempt (>= 1) before the next: a draw from random in
 * [0, retryCeilingMs(attempt)], raised to floor_ms (what the server asked
 * for in Retry-After; 0 for nothing), then cut to left_ms (what the
 * caller's deadline leaves; never below 0). */
long retryPauseMs(int attempt, unsigned long random, long floor_ms, long left_ms);

/* Sleep ms milliseconds in slices of 50 ms, waking early (returning 1)
 * once *stop is set (stop may be NULL); 0 after the whole pause. */
int retrySleep(long ms, const volatile sig_atomic_t *stop);

#endif
