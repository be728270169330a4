/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * progress.c - the stderr progress bar.
 */
#include "core/progress.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* A bar is drawn and not yet erased (read by the interrupt handler). */
static volatile sig_atomic_t onScreen;

int progressOnScreen(void) { return onScreen; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progressStart(progress *p, progressMode mode, const char *label, int64_t total) {
    if (mode == PROGRESS_AUTO && !isatty(STDERR_FILENO)) mode = PROGRESS_OFF;
    p->mode = mode;
    p->label = label;
    p->total = total;
    p->done = 0;
    p->rows = -1;
    p->start = p->last_draw = mode == PROGRESS_OFF ? 0 : now();
    p->drawn = 0;
}

static void human(char *buf, size_t n, double v) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (v >= 1024 && i < 4) { v /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void draw(progress *p, double t) {
    char done[32], rate[32], rows[40] = "";
    double secs = t - p->start;
    if (p->rows >= 0)
        snprintf(rows, sizeof rows, "%lld row%s ", (long long)p->rows, p->rows == 1 ? "" : "s");
    human(done, sizeof done, (double)p->done);
    human(rate, sizeof rate, secs > 0 ? (double)p->done / secs : 0);
    if (p->total > 0) {
        int pct = (int)(100.0 * (double)p->done / (double)p->total);
        int width = 30, fill = pct * width / 100;
        char bar[31];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        fprintf(stderr, "\r%-20.20s [%s] %3d%% %s%s %s/s\033[K", p->label, bar, pct,
                rows, done, rate);
    } else {
        fprintf(stderr, "\r%-20.20s %s%s %s/s\033[K", p->label, rows, done, rate);
    }
    p->drawn = 1;
    onScreen = 1;
    p->last_draw = t;
}

void progressAdd(progress *p, int64_t n) {
    p->done += n;
    if (p->mode == PROGRESS_OFF) return;
    double t = now();
    if (p->mode == PROGRESS_AUTO && t - p->start < 1.0) return;
    if (p->drawn && t - p->last_draw < 0.1) return;
    draw(p, t);
}

void progressRows(progress *p, int64_t n) {
    if (p->rows < 0) p->rows = 0;
    p->rows += n;
    progressAdd(p, 0);
}

void progressEnd(progress *p) {
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        onScreen = 0;
    }
    p->drawn = 0;
}
