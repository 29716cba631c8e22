/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mailbox.c - a connection's wake-up by other threads. A session that
 * may be given something by another thread (its first SUBSCRIBE, or its
 * first blocked command) gets an eventfd, kept until the connection
 * closes. The other thread leaves what it gives in a place of its own
 * (pubsub.c's mailbox, a blocked command's waiter in blocking.c) and
 * rings the eventfd; the connection's thread polls it beside the socket
 * (conn.c N6) or its event loop watches it (loop.c L6), and
 * mailbox_take moves what waits into the replies, as it does before each
 * request. One mechanism, so that both server modes wake the same way
 * for pub/sub and for blocked commands.
 *
 * Invariants
 *  MB1. s->mail and s->mailfd are written by the session's own thread
 *       only, before any other thread can reach the eventfd (the
 *       registry that hands it out, pubsub.c's or blocking.c's, is
 *       given it after mailbox_open), and the eventfd closes only after
 *       both registries have let the session go (conn_free's order).
 *  MB2. A ring is never lost: the eventfd counts, and the thread resets
 *       it before it takes what waits, so a ring after the reset wakes
 *       it again.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "blocking.h"
#include "mailbox.h"
#include "pubsub.h"

int mailbox_open(struct session *s)
{
	if (s->mail)
		return 0;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -1;
	s->mailfd = fd;
	s->mail = 1;
	return 0;
}

void mailbox_close(struct session *s)
{
	if (!s->mail)
		return;
	close(s->mailfd);
	s->mail = 0;
}

int mailbox_fd(const struct session *s)
{
	return s->mail ? s->mailfd : -1;
}

void mailbox_ring(int efd)
{
	uint64_t one = 1;
	ssize_t k = write(efd, &one, sizeof(one));
	(void)k; /* EAGAIN: the counter is full, a wake-up is due anyway */
}

void mailbox_woken(struct session *s)
{
	uint64_t v;
	ssize_t k = read(s->mailfd, &v, sizeof(v)); /* MB2 */
	(void)k;
}

int mailbox_take(struct session *s, struct resp_out *out)
{
	if (s->ps && pubsub_drain(s, out))
		return -1;
	if (s->blocked)
		blocked_take(s, out);
	return 0;
}
