/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_explore_open.c - how the crash-state explorer opens a crash image
 * (src/explore/check.c K5): a lock that another process releases soon is
 * waited for, and one held past the wait is reported as a failed open.
 */
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "explore/explore.h"

static char path[128];

static void options(pmtx_options *o)
{
	pmtx_options_init(o);
	o->backend = PMTX_BACKEND_EMULATED;
	o->domain = PMTX_PDOM2;
}

static int setup(void **state)
{
	pmtx_options o;
	pmtx_region *r;
	options(&o);
	snprintf(path, sizeof(path), "%s", tu_path());
	assert_int_equal(pmtx_create(path, 8u << 20, &o, &r), 0);
	assert_int_equal(pmtx_close(r), 0);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

/* A child that holds an exclusive flock on the region file for ms
 * milliseconds, as an open region does; returns once it holds it. */
static pid_t hold_lock(int ms)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = tu_fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0 || flock(fd, LOCK_EX) || write(p[1], "x", 1) != 1)
			_exit(1);
		usleep((useconds_t)ms * 1000);
		_exit(0);
	}
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	close(p[1]);
	return pid;
}

static void a_lock_released_soon_is_waited_for(void **state)
{
	pmtx_options o;
	pmtx_region *r;
	options(&o);
	pid_t pid = hold_lock(100);
	/* the lock is real: a plain open is refused */
	assert_int_equal(pmtx_open(path, &o, &r), PMTX_E_LOCKED);
	assert_int_equal(explore_open_image(path, &o, &r), 0);
	assert_int_equal(pmtx_close(r), 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void a_lock_held_past_the_wait_is_a_failed_open(void **state)
{
	pmtx_options o;
	pmtx_region *r = NULL;
	options(&o);
	pid_t pid = hold_lock(10000);
	assert_int_equal(explore_open_image(path, &o, &r), PMTX_E_LOCKED);
	assert_null(r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			a_lock_released_soon_is_waited_for, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_lock_held_past_the_wait_is_a_failed_open, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
