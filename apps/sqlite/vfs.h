/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfs.h - what vfs.c takes from config.c: the options a database URI
 * gives, and the pragmas the VFS answers itself. Both speak SQLite.
 */
#ifndef PSQ_VFS_H
#define PSQ_VFS_H

#include <stddef.h>

#include "dbfile.h"

/* The region options from the URI parameters of name (runtime, domain,
 * backend, barrier_ns, size, max_size): 0, or PMTX_E_INVAL with msg. */
int vfs_config(const char *name, struct psq_config *c, char *msg,
               size_t len);
/* SQLITE_FCNTL_PRAGMA: arg[1] is the pragma, arg[2] its value or NULL;
 * the result or error message goes to arg[0]. SQLITE_NOTFOUND for a
 * pragma SQLite should run itself. */
int vfs_pragma(struct psq_db *db, char **arg);
/* Register the VFS (once the default VFS is known). */
int vfs_register(int make_default);

#endif /* PSQ_VFS_H */
