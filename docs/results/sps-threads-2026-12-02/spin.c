/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spin.c - how much CPU N spinning threads of one process get in 2 s
 * (README, "What the machine gave"):
 *   cc -O2 -pthread spin.c -o spin
 *   /usr/bin/time -f "%e s wall %U s user" ./spin 1   (then ./spin 2)
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;

static void *spin(void *arg)
{
	unsigned long x = 0;
	while (!stop)
		x++;
	return (void *)(x + (unsigned long)arg);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t t[8];
	n = n < 1 ? 1 : n > 8 ? 8 : n;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	nanosleep(&(struct timespec){2, 0}, NULL);
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
