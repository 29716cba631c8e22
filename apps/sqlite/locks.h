/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * locks.h - SQLite's five lock levels (NONE, SHARED, RESERVED, PENDING,
 * EXCLUSIVE) among the connections of one process that share a database.
 * Only one process can have a region open (pmtx locks the file), so these
 * are all the locks there are. The caller holds the lock that guards
 * struct psq_locks; the functions only decide.
 *
 * The rules are SQLite's (lockingv3): any number of SHARED; one RESERVED,
 * beside SHAREDs; a PENDING writer lets the SHAREDs it has finish but
 * admits no new one; EXCLUSIVE once no other SHARED is left.
 */
#ifndef PSQ_LOCKS_H
#define PSQ_LOCKS_H

enum { LK_NONE = 0, LK_SHARED, LK_RESERVED, LK_PENDING, LK_EXCLUSIVE };

struct psq_locks {
	int shared;            /* connections holding SHARED or more */
	const void *reserved;  /* the one holding RESERVED or more, or NULL */
	const void *pending;   /* the one holding PENDING or EXCLUSIVE */
	const void *exclusive; /* the one holding EXCLUSIVE */
};

/* Raise *level (who's) to want: 0, or EBUSY (*level may then have become
 * PENDING, as SQLite expects). */
int lk_lock(struct psq_locks *l, const void *who, int *level, int want);
/* Lower *level to want (SHARED or NONE). */
void lk_unlock(struct psq_locks *l, const void *who, int *level, int want);
/* Does any connection hold RESERVED or more? */
int lk_reserved(const struct psq_locks *l);

#endif /* PSQ_LOCKS_H */
