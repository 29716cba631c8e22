/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * locks.c - SQLite's lock levels within one process (locks.h).
 *
 * Invariants
 *  K1. shared counts the connections at SHARED or above.
 *  K2. exclusive != NULL implies pending == exclusive == reserved-or-NULL
 *      holder, and shared == 1: nobody else reads while a writer writes,
 *      so the database's DRAM overlay (dbfile.c) is seen by its writer
 *      alone until the commit.
 */
#include <errno.h>
#include <stddef.h>

#include "locks.h"

static int lock_exclusive(struct psq_locks *l, const void *who, int *level)
{
	if (l->pending && l->pending != who)
		return EBUSY;
	if (l->reserved && l->reserved != who)
		return EBUSY;
	l->pending = who;
	*level = LK_PENDING;
	if (l->shared > 1)
		return EBUSY; /* wait for the readers that are in */
	l->reserved = who;
	l->exclusive = who;
	*level = LK_EXCLUSIVE;
	return 0;
}

int lk_lock(struct psq_locks *l, const void *who, int *level, int want)
{
	if (*level >= want)
		return 0;
	switch (want) {
	case LK_SHARED:
		if (l->pending || l->exclusive)
			return EBUSY;
		l->shared++;
		break;
	case LK_RESERVED:
		if (*level < LK_SHARED || (l->reserved && l->reserved != who))
			return EBUSY;
		l->reserved = who;
		break;
	case LK_EXCLUSIVE:
		if (*level < LK_SHARED)
			return EBUSY;
		return lock_exclusive(l, who, level);
	default:
		return EINVAL; /* PENDING is never asked for */
	}
	*level = want;
	return 0;
}

void lk_unlock(struct psq_locks *l, const void *who, int *level, int want)
{
	if (*level <= want)
		return;
	if (l->reserved == who)
		l->reserved = NULL;
	if (l->pending == who)
		l->pending = NULL;
	if (l->exclusive == who)
		l->exclusive = NULL;
	if (want == LK_NONE)
		l->shared--;
	*level = want;
}

int lk_reserved(const struct psq_locks *l)
{
	return l->reserved || l->pending;
}
