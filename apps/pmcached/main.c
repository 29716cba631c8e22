/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - the pmcached process: settings, identity, listeners, the
 * region, the workers, signals, and a clean stop.
 *
 * Invariants:
 *  1. Every failure before serving (a bad flag, a port in use, a region
 *     that is corrupt, foreign, locked or of another format) exits
 *     non-zero with a message, and the region file is never written: the
 *     store only creates a region where there is no file.
 *  2. With -d the parent exits only when the daemon is serving (status
 *     0) or has failed (its status), through a pipe, so that scripts see
 *     the failure.
 *  3. Privileges are dropped (-u) before the region is opened, so the
 *     region belongs to the user that serves it.
 *  4. The region is opened after the fork of -d, since pmtx's background
 *     threads do not survive a fork.
 *  5. SIGTERM, SIGINT, SIGUSR1 and "shutdown" stop the loops, wait for the
 *     workers, then close the region: no transaction is cut by a clean
 *     stop (and none would be lost by an unclean one).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/thread.h>

#include "layout.h"
#include "server.h"

struct server server = {.udp_fd = -1};

static int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "pmcached: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	return 1;
}

/* ---- identity and limits ---- */

static int drop_privileges(void)
{
	if (geteuid() != 0)
		return 0;
	if (!settings.username)
		return die("can't run as root without the -u switch%s", "");
	struct passwd *pw = getpwnam(settings.username);
	if (!pw)
		return die("can't find the user %s to switch to",
		           settings.username);
	if (pw->pw_uid == 0)
		return 0;
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
		return die("failed to assume identity of user %s",
		           settings.username);
	return 0;
}

static void raise_limits(void)
{
	struct rlimit rl;
	if (settings.coredumps && !getrlimit(RLIMIT_CORE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_CORE, &rl);
	}
	rlim_t want = (rlim_t)settings.maxconns + 64;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		if (rl.rlim_max < want)
			rl.rlim_max = want;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			fprintf(stderr, "pmcached: failed to set rlimit for open "
			        "files; -c may not be reachable\n");
	}
}

/* ---- listeners ---- */

static void describe_listener(int fd, const struct sockaddr *sa,
                              const char *kind)
{
	if (server.nlisten >= MC_MAX_LISTEN)
		return;
	server.listen_fds[server.nlisten] = fd;
	sockaddr_text(sa, kind, server.listen_desc[server.nlisten++],
	              sizeof(server.listen_desc[0]));
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	bool is_unix = arg != NULL;
	(void)what;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (atomic_load(&server.curr_conns) >=
		    (uint64_t)settings.maxconns) {
			static const char msg[] =
				"ERROR Too many open connections\r\n";
			ssize_t w = send(fd, msg, sizeof(msg) - 1,
			                 MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
			atomic_fetch_add(&server.rejected_conns, 1);
			continue;
		}
		int one = 1;
		if (!is_unix)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			           sizeof(one));
		uint64_t n = atomic_fetch_add(&server.curr_conns, 1) + 1;
		atomic_fetch_add(&server.total_conns, 1);
		if (n > atomic_load(&server.conn_structs))
			atomic_store(&server.conn_structs, n);
		threads_dispatch(fd, is_unix);
	}
}

static int listen_on(const struct addrinfo *ai, int type)
{
	int fd = socket(ai->ai_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) ||
	    (type == SOCK_STREAM && listen(fd, settings.backlog))) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* One -l entry: host, host:port or [v6]:port. */
static int split_host(const char *entry, char *host, size_t n, int *port)
{
	const char *colon = strrchr(entry, ':');
	const char *start = entry, *end = entry + strlen(entry);
	if (entry[0] == '[') {
		const char *close = strchr(entry, ']');
		if (!close)
			return -1;
		start = entry + 1;
		end = close;
		colon = close[1] == ':' ? close + 1 : NULL;
	} else if (colon && strchr(entry, ':') != colon) {
		colon = NULL; /* a bare IPv6 address */
	} else if (colon) {
		end = colon;
	}
	if ((size_t)(end - start) >= n)
		return -1;
	memcpy(host, start, (size_t)(end - start));
	host[end - start] = '\0';
	if (colon)
		*port = atoi(colon + 1);
	return 0;
}

/* Stream listeners, bound before -d forks, armed after (libevent's
 * bases do not survive a fork). */
static struct {
	int fd;
	bool is_unix;
} streams[MC_MAX_LISTEN];
static unsigned nstreams;

static int add_listener(int fd, bool is_unix)
{
	if (nstreams == MC_MAX_LISTEN)
		return die("too many listeners%s", "");
	streams[nstreams].fd = fd;
	streams[nstreams++].is_unix = is_unix;
	return 0;
}

static int arm_listeners(void)
{
	for (unsigned i = 0; i < nstreams; i++) {
		struct event *ev = event_new(server.main_base, streams[i].fd,
		                             EV_READ | EV_PERSIST, on_accept,
		                             streams[i].is_unix ? (void *)1
		                                                : NULL);
		if (!ev || event_add(ev, NULL))
			return die("cannot watch the listeners%s", "");
	}
	return 0;
}

static FILE *port_file;

static int bind_entry(const char *entry, int type)
{
	char host[256], portstr[16];
	int port = type == SOCK_DGRAM ? settings.udpport : settings.port;
	if (port < 0)
		port = 0; /* -p -1: the kernel picks */
	if (split_host(entry, host, sizeof(host), &port))
		return die("bad -l address: %s", entry);
	snprintf(portstr, sizeof(portstr), "%d", port);
	struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = type,
	                         .ai_family = AF_UNSPEC}, *res;
	if (getaddrinfo(*host ? host : NULL, portstr, &hints, &res))
		return die("getaddrinfo() failed for %s", entry);
	int rc = 0;
	for (struct addrinfo *ai = res; ai && !rc; ai = ai->ai_next) {
		int fd = listen_on(ai, type);
		if (fd < 0) {
			fprintf(stderr, "pmcached: failed to listen on %s: "
			        "%s\n", entry, strerror(errno));
			rc = 1;
			break;
		}
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &len);
		const char *kind = type == SOCK_DGRAM ? "udp" : "tcp";
		describe_listener(fd, (struct sockaddr *)&ss, kind);
		if (port_file)
			fprintf(port_file, "%s INET%s: %d\n",
			        type == SOCK_DGRAM ? "UDP" : "TCP",
			        ai->ai_family == AF_INET6 ? "6" : "",
			        ntohs(((struct sockaddr_in *)&ss)->sin_port));
		if (type == SOCK_DGRAM)
			server.udp_fd = fd; /* served by worker 0 */
		else
			rc = add_listener(fd, false);
	}
	freeaddrinfo(res);
	return rc;
}

static int bind_network(int type)
{
	char *list = strdup(settings.listen ? settings.listen : "127.0.0.1");
	char *save = NULL;
	int rc = list ? 0 : 1;
	for (char *e = list ? strtok_r(list, ",", &save) : NULL; e && !rc;
	     e = strtok_r(NULL, ",", &save))
		rc = bind_entry(e, type);
	free(list);
	return rc;
}

static int bind_unix(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (strlen(settings.socketpath) >= sizeof(sa.sun_path))
		return die("unix socket path too long: %s", settings.socketpath);
	strcpy(sa.sun_path, settings.socketpath);
	if (!lstat(settings.socketpath, &st) && S_ISSOCK(st.st_mode))
		unlink(settings.socketpath);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	mode_t old = umask((mode_t)(~settings.access & 0777));
	int rc = fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	         listen(fd, settings.backlog);
	umask(old);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return die("failed to listen on unix socket %s",
		           settings.socketpath);
	}
	server.listen_fds[server.nlisten] = fd;
	snprintf(server.listen_desc[server.nlisten++], 128, "unix:%s",
	         settings.socketpath);
	return add_listener(fd, true);
}

static int bind_all(void)
{
	if (settings.socketpath)
		return bind_unix();
	const char *pf = getenv("MEMCACHED_PORT_FILENAME");
	char tmp[4096];
	if (pf) {
		snprintf(tmp, sizeof(tmp), "%s.lck", pf);
		port_file = fopen(tmp, "a");
	}
	int rc = settings.port ? bind_network(SOCK_STREAM) : 0;
	if (!rc && settings.udpport)
		rc = bind_network(SOCK_DGRAM);
	if (port_file) {
		fclose(port_file);
		port_file = NULL;
		if (!rc)
			rename(tmp, pf);
	}
	if (!rc && !server.nlisten)
		return die("no listener: give -p, -U or -s%s", "");
	return rc;
}

/* ---- daemon ---- */

static int ready_fd = -1;

/* Fork; the parent waits for the child's status byte (invariant 2). */
static int daemonize(void)
{
	int p[2];
	if (pipe(p))
		return die("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return die("fork: %s", strerror(errno));
	if (pid > 0) {
		unsigned char st = 1;
		close(p[1]);
		if (read(p[0], &st, 1) != 1)
			st = 1;
		_exit(st);
	}
	close(p[0]);
	ready_fd = p[1];
	if (setsid() < 0)
		return die("setsid: %s", strerror(errno));
	if (chdir("/"))
		return die("chdir: %s", strerror(errno));
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	return 0;
}

/* Tell the parent of -d how the start went. stderr stays open until
 * then, so that a failure to start is reported where it was launched. */
static void report_ready(unsigned char status)
{
	if (ready_fd < 0)
		return;
	int null = status == 0 && !VERBOSE(1) ? open("/dev/null", O_WRONLY)
	                                      : -1;
	if (null >= 0) {
		dup2(null, STDERR_FILENO);
		close(null);
	}
	ssize_t w = write(ready_fd, &status, 1);
	(void)w;
	close(ready_fd);
	ready_fd = -1;
}

static int write_pidfile(void)
{
	if (!settings.pidfile)
		return 0;
	FILE *f = fopen(settings.pidfile, "w");
	if (!f)
		return die("could not open the pid file %s", settings.pidfile);
	fprintf(f, "%ld\n", (long)getpid());
	return fclose(f) ? die("could not write %s", settings.pidfile) : 0;
}

/* ---- the store ---- */

static int open_store(void)
{
	mc_store_opts o;
	mc_store_opts_init(&o);
	o.mem_limit = settings.maxbytes;
	o.no_evict = !settings.evict_to_free;
	settings_region_sizes(&o.region_size, &o.max_size);
	if (settings.hashpower_init)
		o.hashpower = settings.hashpower_init;
	o.runtime = settings.runtime;
	o.fast_restart = settings.fast_restart;
	o.domain = settings.domain;
	o.backend = settings.backend;
	o.on_item_event = stats_item_event;
	int rc = mc_store_open(settings.region_path, &o, &server.store);
	if (rc) {
		fprintf(stderr, "pmcached: cannot use %s: %s\n",
		        settings.region_path, mc_store_errmsg());
		return 1;
	}
	struct mc_store_stats st;
	mc_store_stats(server.store, &st);
	if (VERBOSE(1))
		fprintf(stderr, "pmcached: %s: %llu items, generation %llu, "
		        "%llu reclaimed at start\n", settings.region_path,
		        (unsigned long long)st.curr_items,
		        (unsigned long long)st.gen,
		        (unsigned long long)st.reclaimed_at_start);
	return 0;
}

/* --check: print what mc_store_verify found; 0 if consistent. */
static int check_region(void)
{
	char msg[512];
	int rc = mc_store_verify(settings.region_path, msg, sizeof(msg));
	fprintf(rc ? stderr : stdout, "pmcached: %s\n", msg);
	return rc ? 1 : 0;
}

/* ---- signals and the loop ---- */

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what, (void)arg;
	if (VERBOSE(1))
		fprintf(stderr, "pmcached: signal %d: stopping\n", (int)sig);
	atomic_store(&server.shutdown, 1);
	event_base_loopbreak(server.main_base);
}

static int add_signals(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGUSR1};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct event *ev = evsignal_new(server.main_base, sigs[i],
		                                on_signal, NULL);
		if (!ev || event_add(ev, NULL))
			return die("cannot handle signals%s", "");
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	return 0;
}

static void limits_init(void)
{
	mc_limits_default(&server.limits);
	server.limits.item_size_max = settings.item_size_max;
	server.limits.shutdown_enabled = settings.shutdown_enabled;
	mc_classes_init(&server.classes, settings.factor, settings.chunk_size,
	                settings.item_size_max, settings.use_cas);
}

static int start(void)
{
	if (drop_privileges())
		return 1;
	raise_limits();
	limits_init();
	if (bind_all())
		return 1;
	if (settings.daemonize && daemonize())
		return 1;
	if (evthread_use_pthreads() ||
	    !(server.main_base = event_base_new()) || arm_listeners())
		return die("cannot initialise libevent%s", "");
	if (settings.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE))
		fprintf(stderr, "pmcached: warning: -k failed to lock down "
		        "all memory: %s\n", strerror(errno));
	if (open_store() || write_pidfile() || add_signals())
		return 1;
	server.started = time(NULL);
	if (threads_start((unsigned)settings.num_threads))
		return die("cannot start the worker threads%s", "");
	return 0;
}

int main(int argc, char **argv)
{
	int rc = settings_parse(argc, argv);
	if (rc)
		return rc == 1 ? 0 : 64; /* memcached's EX_USAGE */
	if (settings.check_only)
		return check_region();
	if (start()) {
		report_ready(1);
		return 1;
	}
	report_ready(0);
	event_base_loop(server.main_base, EVLOOP_NO_EXIT_ON_EMPTY);
	threads_stop();
	rc = mc_store_close(server.store);
	if (settings.pidfile)
		unlink(settings.pidfile);
	if (rc)
		fprintf(stderr, "pmcached: closing the region: %s\n",
		        pmtx_strerror(rc));
	return rc ? 1 : 0;
}
