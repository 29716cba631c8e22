/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_explore.h - the power-failure crash-state explorer, for any program
 * built on pmtx.
 *
 * A program describes its persistent data structure as a WORKLOAD: how to
 * fill a fresh region (setup), how to run operation i of thread t (run),
 * what the data holds (observe), what it must hold after the first k
 * operations (model), and which heap blocks it owns (walk). The explorer
 * runs the workload in a child process over a simulated persistence
 * backend that follows the x86 persistency model (a cache line persists a
 * prefix of its stores, 8-byte words are atomic, a barrier makes durable
 * only the lines its own thread flushed, non-temporal stores count after
 * the next barrier; under PMTX_PDOM2 the image is a prefix of the global
 * store order). At every persist barrier it builds the crash images a
 * power failure could leave, opens each one (recovery), and checks:
 *
 *   1. recovery succeeds;
 *   2. failure atomicity: each thread's observed data equals the model
 *      after some k of its operations, done <= k <= started, where `done`
 *      counts the operations that had returned before the crash and
 *      `started` those begun;
 *   3. pmtx_heap_check passes;
 *   4. no leak: the blocks pmtx_heap_walk reports are exactly the blocks
 *      the workload's walk reaches;
 *   5. recovery is complete: opening the region again issues no barrier.
 *
 * Some images are also crashed again at each barrier of their own recovery
 * (depth 2) and checked the same way. Every violation is reported with a
 * one-line reproducer that replays just that image.
 *
 * The smallest program (examples/explore_stack.c is a whole one):
 *
 *     static const pmtx_explore_workload stack = {
 *         .name = "stack", .help = "push and pop",
 *         .root_size = sizeof(struct root),
 *         .setup = stack_setup, .run = stack_run,
 *         .observe = stack_observe, .model = stack_model,
 *         .walk = stack_walk,
 *     };
 *     int main(int argc, char **argv)
 *     {
 *         const pmtx_explore_workload *w[] = {&stack};
 *         return pmtx_explore_main(argc, argv, w, 1);
 *     }
 *
 * Conventions are those of pmtx.h: functions return 0, a positive errno
 * value or a negative PMTX_E_* status (pmtx_strerror); out-parameters come
 * last. The explorer forks, so call it from a single-threaded process and
 * not while a region is open; it sets SIGPIPE to be ignored (a child that
 * ended must not kill the explorer).
 *
 * Determinism. A reproducer names an image by (seed, crash point, image).
 * It replays only if the workload reaches the same barriers in the same
 * order on every run: its choices must come from env->seed, the thread
 * and the operation number alone. Several threads are explored in
 * whatever interleaving a run takes; their reproducers may not replay.
 */
#ifndef PMTX_EXPLORE_H
#define PMTX_EXPLORE_H
/* The library is built with -fvisibility=hidden: what is declared here,
 * and only that, is exported from libpmtx.so. */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#include "pmtx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads a workload may have. */
#define PMTX_EXPLORE_MAX_THREADS 8

/* The runtime value of cache-line transactions (pmtx_cltx.h), which are
 * not a pmtx_begin runtime but are explored like one. */
#define PMTX_EXPLORE_RT_CLTX ((pmtx_runtime)100)

/* Which runtimes a workload applies to: a mask of these bits. */
enum {
	PMTX_EXPLORE_UNDO = 1u << 0,
	PMTX_EXPLORE_REDO = 1u << 1,
	PMTX_EXPLORE_REDO_ASYNC = 1u << 2,
	PMTX_EXPLORE_COW = 1u << 3,
	PMTX_EXPLORE_CLTX = 1u << 4,
	/* PMTX_RT_AUTO, explored with PMTX_OPEN_AUTO_ROTATE: its transactions
	 * take undo, redo and redo-async in turn. */
	PMTX_EXPLORE_AUTO = 1u << 5,
	/* PMTX_RT_TWIN, explored in a twin region (pmtx_options.runtime =
	 * PMTX_RT_TWIN) of twice region_size bytes, so that it holds about
	 * the heap the other runtimes' regions hold. A twin region has a
	 * fixed size: a workload with max_size cannot be explored under it.
	 * Every transaction of a twin region is twin: setup must begin its
	 * transactions with PMTX_RT_DEFAULT (or e->runtime), never another
	 * runtime. */
	PMTX_EXPLORE_TWIN = 1u << 6,
	/* The runtimes under which pmtx_write works in an ordinary region
	 * (one that may grow, and may mix these runtimes). Twin is not
	 * among them: it needs a twin region, so a workload asks for it
	 * (PMTX_EXPLORE_ALL includes it). */
	PMTX_EXPLORE_LOGGING = PMTX_EXPLORE_UNDO | PMTX_EXPLORE_REDO |
	                       PMTX_EXPLORE_REDO_ASYNC | PMTX_EXPLORE_AUTO,
	PMTX_EXPLORE_ALL = PMTX_EXPLORE_LOGGING | PMTX_EXPLORE_COW |
	                   PMTX_EXPLORE_CLTX | PMTX_EXPLORE_TWIN,
};

typedef struct pmtx_explore_workload pmtx_explore_workload;

/* What a workload's functions know of the run. */
typedef struct pmtx_explore_env {
	const pmtx_explore_workload *workload; /* the workload itself */
	uint64_t seed;        /* every choice derives from it */
	pmtx_runtime runtime; /* the runtime to begin transactions with */
	unsigned ntx;         /* operations per thread */
} pmtx_explore_env;

/* Called by walk for every heap block the data structure owns; nonzero
 * stops the walk (walk should then return nonzero). */
typedef int (*pmtx_explore_block_fn)(pmtx_off off, void *arg);

/*
 * A workload. Fill it with designated initialisers: a field left 0 takes
 * the default in its comment. The structure must outlive the exploration.
 */
struct pmtx_explore_workload {
	const char *name;     /* --workload NAME; required */
	const char *help;     /* one line for --help */
	unsigned nthreads;    /* 0 = 1; at most PMTX_EXPLORE_MAX_THREADS */
	size_t root_size;     /* bytes of the root object */
	size_t region_size;   /* bytes of the region at creation; 0 = 1 MiB
	                       * (twin: twice as many) */
	size_t max_size;      /* the region grows up to this many bytes
	                       * (pmtx_options.max_size); 0 = fixed size;
	                       * must be 0 for twin */
	const char *layout;   /* layout name of the region; NULL "crashtest" */
	unsigned runtimes;    /* PMTX_EXPLORE_* mask; 0 = LOGGING */
	unsigned max_ntx;     /* largest ntx the model supports; 0 = any */
	size_t max_words;     /* capacity of observe's and model's vectors;
	                       * 0 = 8192 */
	void *arg;            /* for the workload's own use */

	/* Fill a fresh region (no crash is simulated here). Required. */
	int (*setup)(const pmtx_explore_env *e, pmtx_region *r);
	/* Run operation i (0 <= i < ntx) of thread t: usually one
	 * transaction, begun with e->runtime. Returns 0, or a status (the
	 * explorer reports it as a failure of the workload). Required. */
	int (*run)(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
	           uint64_t i);
	/* Thread t's data, as recovered, in out[0..max) as a vector of
	 * words; returns the count (0 means "does not fit": a violation), or
	 * (size_t)-1 if the data is malformed, with the reason in msg (len
	 * bytes). Must validate every offset it follows (pmtx_ptr returns
	 * NULL outside the region). Required. */
	size_t (*observe)(const pmtx_explore_env *e, pmtx_region *r,
	                  unsigned t, uint64_t *out, size_t max, char *msg,
	                  size_t len);
	/* The same vector as it must be after the first k operations of
	 * thread t (an aborted operation changes nothing). Required. */
	size_t (*model)(const pmtx_explore_env *e, unsigned t, uint64_t k,
	                uint64_t *out, size_t max);
	/* Call fn(off, arg) for every heap block reachable from the root,
	 * by the offset pmtx_alloc returned (copy-on-write objects: the
	 * wrapper and the payload). Returns 0, or nonzero if the structure
	 * cannot be walked. NULL: the workload allocates nothing. */
	int (*walk)(const pmtx_explore_env *e, pmtx_region *r,
	            pmtx_explore_block_fn fn, void *arg);
};

/* One exploration: a workload under one runtime in one domain. */
typedef struct pmtx_explore_config {
	const pmtx_explore_workload *workload;
	pmtx_runtime runtime; /* PMTX_RT_UNDO; or PMTX_EXPLORE_RT_CLTX;
	                       * PMTX_RT_TWIN makes a twin region */
	pmtx_domain domain;   /* PMTX_PDOM1 */
	uint64_t seed;        /* 1 */
	unsigned ntx;         /* operations per thread: 12 */
	long points;          /* crash points to visit: -1 (all), else that
	                       * many spread over the run */
	uint64_t images;      /* per crash point: every image when there are
	                       * at most this many, else this many samples;
	                       * 0 = every image up to 65,536, else 10,000
	                       * samples. Default 64 */
	unsigned depth2;      /* images per point whose recovery is crashed
	                       * too: 1 */
	uint64_t d2images;    /* images per crash point of a recovery: 16 */
	const char *dir;      /* where the region and images go: "/dev/shm" */
	int progress;         /* a progress bar on stderr: 0 */
	int checks;           /* count stores unflushed at commit and
	                       * redundant flushes (result): 0 */
	int quiet;            /* no VIOLATION lines on stderr: 0 */
	long stop_after;      /* stop after this many violations; 0 never */
	/* Replay one image: replay_point > 0 (the numbers of a reproducer).
	 * replay_rpoint > 0 replays a crash inside that image's recovery. */
	uint64_t replay_point, replay_image, replay_rpoint, replay_rimage;
	const char *save;     /* replay: copy the image here before recovery;
	                       * otherwise the first violating image */
	const char *prog;     /* the command that starts every reproducer
	                       * line; NULL = the program's name */
	int process_crash;    /* depth 2 starts each recovery after a process
	                       * crash, not a power failure: the region's
	                       * file holds every store made, the image is
	                       * only what had persisted, and the rest may
	                       * persist at any moment of recovery: 0 */
	int reopen;           /* a single-threaded workload closes the region
	                       * and opens it again halfway through its
	                       * transactions (as the next process would):
	                       * 0 */
} pmtx_explore_config;

typedef struct pmtx_explore_result {
	uint64_t crash_points;    /* crash points the run has (barriers + 1) */
	uint64_t points;          /* crash points explored */
	uint64_t images;          /* crash images checked */
	uint64_t recovery_points; /* crash points inside recovery explored */
	uint64_t recovery_images; /* images checked at those points */
	uint64_t violations;
	double seconds;           /* wall time */
	/* With config.checks: */
	uint64_t unflushed_at_commit; /* tracked stores not flushed */
	uint64_t dirty_at_commit;     /* lines of naked stores not flushed */
	uint64_t redundant_flushes;   /* flushes of lines with nothing new */
	char first[512];          /* the first violation and its reproducer */
} pmtx_explore_result;

/* Fill *c with the defaults above. Always call before setting fields. */
void pmtx_explore_config_init(pmtx_explore_config *c);

/* Explore. Returns 0 when the exploration ran, whatever it found (the
 * violations are in *res); PMTX_E_INVAL for a malformed workload or
 * configuration (pmtx_errmsg says which field); PMTX_E_UNSUPPORTED if the
 * workload does not apply to c->runtime; or the status of a failure of
 * the explorer itself (for example the workload failed with no crash). */
int pmtx_explore_run(const pmtx_explore_config *c, pmtx_explore_result *res);

/*
 * A whole crash-exploring command, the same as `pmtx crashtest` over the
 * workloads wls[0..n): call it from main(). argv[0] (its last path
 * component) names the program in messages and reproducers. Options:
 *
 *   --workload W   only workload W (default: every one)
 *   --runtime R    only runtime R: undo redo redo-async cow cltx auto
 *                  twin (default: every runtime each workload applies
 *                  to)
 *   --domain D     pdom0 pdom1 pdom2 (default pdom1)
 *   --ntx N --seed S --points all|N --images N --depth2 N --d2images N
 *                  as in pmtx_explore_config (defaults 12 1 all 64 1 16)
 *   --checks       report unflushed stores and redundant flushes
 *   --json         one JSON object per run on stdout
 *   --stop-after N --min-images N --quiet --no-progress --progress
 *   --process-crash  as process_crash above
 *   --reopen       as reopen above
 *   --point P --image I [--rpoint Q --rimage J] [--save FILE]
 *                  replay one image (the tail of a reproducer line)
 *   --save FILE    (without --point) save the first violating image as
 *                  the crash left it, before recovery
 *   --help         usage and the workloads, on stdout
 *
 * Prints one line per (workload, runtime), and a total. Returns the exit
 * status: 0 no violation, 1 violations found, 2 usage error, 3 the
 * explorer failed (or fewer images than --min-images were checked).
 */
int pmtx_explore_main(int argc, char **argv,
                      const pmtx_explore_workload *const *wls, size_t n);

/* "undo", "redo", "redo-async", "cow", "cltx", "auto", "twin"; "?" for
 * anything else. */
const char *pmtx_explore_runtime_name(pmtx_runtime rt);
/* Parse those names; 0 or PMTX_E_INVAL. */
int pmtx_explore_runtime_parse(const char *s, pmtx_runtime *out);
/* 1 if workload w applies to runtime rt, else 0. */
int pmtx_explore_applies(const pmtx_explore_workload *w, pmtx_runtime rt);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* PMTX_EXPLORE_H */
