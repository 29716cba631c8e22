/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group.h - group commit (group.c): a connection's groupable requests run
 * in one store transaction with those of the other connections waiting
 * at the same time, and are acknowledged after its one commit.
 */
#ifndef PMKV_GROUP_H
#define PMKV_GROUP_H

#include "conn.h"

/* Run the groupable requests at the head of c's input in a group commit,
 * led by this thread or by another (G4), and settle them (conn.c N5):
 * on return their replies wait in c's output, after the commit, or they
 * are still in the input, for conn_run to run one by one (G3). */
void group_commit(struct server *srv, struct conn *c);

/* The most connections in one group. */
#define GROUP_CONNS 64

/* The same for n connections of one thread (an event loop, loop.c) at
 * once, n <= GROUP_CONNS: queued together, so that one group can take
 * them all (G6). */
void group_commit_many(struct server *srv, struct conn **cs, unsigned n);

#endif
