/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loop.h - --io-threads: event-loop threads that serve connections
 * (loop.c), instead of a thread per client.
 */
#ifndef PMKV_LOOP_H
#define PMKV_LOOP_H

#include "server.h"

/* Start n workers: 0, or -1. */
int loop_start(struct server *srv, unsigned n);
/* Give an accepted socket to the next worker: 0, or -1. */
int loop_hand(int fd);
/* Stop the workers (after every connection has closed: L3). */
void loop_stop(void);

#endif
