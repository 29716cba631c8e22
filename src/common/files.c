/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * files.c - what several layers do to files: make a directory entry
 * durable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int pmtx__sync_dir_of(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return ENOMEM;
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 || fsync(fd) ? errno : 0;
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc == EINVAL ? 0 : rc; /* a directory that cannot be synced */
}
