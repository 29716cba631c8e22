/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * thread.c - the worker threads: one libevent loop each, fed new
 * connections by the main thread through a pipe (memcached's design).
 *
 * Invariants:
 *  1. Worker i's pending-reclamation slot is i (server.h 2); there are at
 *     most MC_NPENDING workers (settings.c).
 *  2. A connection fd crosses the pipe once and is then owned by the
 *     worker; if it cannot be handed over it is closed and uncounted.
 *  3. threads_stop returns only after every worker's loop has ended, so
 *     the store is closed with no transaction running.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

struct handoff {
	int fd;
	int is_unix;
};

static _Atomic unsigned next_worker;

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct handoff h;
	(void)what;
	while (read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h))
		conn_new(w, h.fd, h.is_unix != 0);
}

static void on_udp(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	conn_udp_datagram(arg, fd);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

static int worker_init(struct worker *w, unsigned id)
{
	w->id = id;
	w->base = event_base_new();
	if (!w->base || pipe2(w->notify, O_NONBLOCK | O_CLOEXEC))
		return errno ? errno : ENOMEM;
	w->notify_ev = event_new(w->base, w->notify[0], EV_READ | EV_PERSIST,
	                         on_notify, w);
	if (!w->notify_ev || event_add(w->notify_ev, NULL))
		return ENOMEM;
	if (id == 0 && server.udp_fd >= 0) {
		w->udp_ev = event_new(w->base, server.udp_fd,
		                      EV_READ | EV_PERSIST, on_udp, w);
		if (!w->udp_ev || event_add(w->udp_ev, NULL))
			return ENOMEM;
	}
	return 0;
}

int threads_start(unsigned n)
{
	server.workers = calloc(n, sizeof(*server.workers));
	if (!server.workers)
		return ENOMEM;
	server.nworkers = n;
	for (unsigned i = 0; i < n; i++) {
		int rc = worker_init(&server.workers[i], i);
		if (!rc)
			rc = pthread_create(&server.workers[i].thread, NULL,
			                    worker_main, &server.workers[i]);
		if (rc)
			return rc;
	}
	return 0;
}

void threads_dispatch(int fd, bool is_unix)
{
	unsigned i = atomic_fetch_add(&next_worker, 1) % server.nworkers;
	struct handoff h = {fd, is_unix};
	if (write(server.workers[i].notify[1], &h, sizeof(h)) !=
	    (ssize_t)sizeof(h)) {
		close(fd);
		atomic_fetch_sub(&server.curr_conns, 1);
	}
}

void threads_stop(void)
{
	for (unsigned i = 0; i < server.nworkers; i++)
		event_base_loopexit(server.workers[i].base, NULL);
	for (unsigned i = 0; i < server.nworkers; i++)
		pthread_join(server.workers[i].thread, NULL);
}
