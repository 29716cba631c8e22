# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of pmcached's black-box server tests.

The target is chosen once per run:

    --target=pmcached   (default) the binary named by $PMCACHED_BIN; every
                        test skips, with the reason, while it is unset or
                        names no executable (pmcached is not built yet)
    --target=memcached  Debian's memcached ($MEMCACHED_BIN or `memcached`):
                        proves that the expected bytes are memcached's
    --target=both       each test once per target

$MC_TARGET gives the default of --target. $PMCACHED_ARGS (split like a
shell line) is appended to every pmcached command line, for example
"--runtime=redo --backend=file", to run the whole suite per runtime.

Tests marked pmcached_only (persistence, restart, pmcached's own options)
skip against memcached. Tests marked memcached_control run only against
memcached: they show that a persistence check fails when the server does
not persist (so the check can fail at all).

Fixtures:
    target      which server, its binary and extra flags
    make_server factory: make_server(*flags, **Server options) -> a started
                Server, killed (SIGKILL) and its directory removed after
                the test
    server      one server shared by a module, default flags
    conn        a connection to `server` on an empty cache (flush_all
                first); after the test its next reply must be mn's MN
"""
import os
import shlex
import shutil

import pytest

from mcserver import Server, ServerError

TARGETS = ("pmcached", "memcached")


def pytest_addoption(parser):
    parser.addoption(
        "--target", choices=TARGETS + ("both",), default=None,
        help="server under test (default: $MC_TARGET or pmcached)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "pmcached_only: needs persistence or pmcached's options")
    config.addinivalue_line(
        "markers", "memcached_control: a negative control, memcached only")


def _kinds(config):
    kind = (config.getoption("--target") or os.environ.get("MC_TARGET")
            or "pmcached")
    if kind not in TARGETS + ("both",):
        raise pytest.UsageError("MC_TARGET must be pmcached, memcached "
                                "or both, not %r" % kind)
    return list(TARGETS) if kind == "both" else [kind]


def pytest_generate_tests(metafunc):
    if "target_kind" in metafunc.fixturenames:
        metafunc.parametrize("target_kind", _kinds(metafunc.config),
                             scope="session")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


class Target:
    def __init__(self, kind, binary, extra):
        self.kind = kind
        self.binary = binary
        self.extra = extra

    @property
    def is_pmcached(self):
        return self.kind == "pmcached"

    def new_server(self, *args, **kw):
        """An unstarted Server of this target."""
        return Server(self.kind, self.binary, args,
                      extra=self.extra, **kw)

    def __repr__(self):
        return "<%s %s>" % (self.kind, self.binary)


@pytest.fixture(scope="session")
def target(target_kind):
    if target_kind == "pmcached":
        binary = os.environ.get("PMCACHED_BIN", "")
        if not binary:
            pytest.skip("PMCACHED_BIN is not set (pmcached not built yet?); "
                        "use --target=memcached to run against memcached")
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            pytest.skip("PMCACHED_BIN=%s is not an executable file "
                        "(pmcached not built yet?)" % binary)
        extra = shlex.split(os.environ.get("PMCACHED_ARGS", ""))
    else:
        binary = (os.environ.get("MEMCACHED_BIN")
                  or shutil.which("memcached") or "/usr/bin/memcached")
        if not os.access(binary, os.X_OK):
            pytest.skip("memcached is not installed (scripts/setup.sh)")
        extra = []
    return Target(target_kind, os.path.abspath(binary), extra)


@pytest.fixture(autouse=True)
def _target_markers(request):
    """Skip pmcached_only tests on memcached and memcached_control tests
    on pmcached."""
    callspec = getattr(request.node, "callspec", None)
    kind = callspec.params.get("target_kind") if callspec else None
    if kind is None:
        return
    if kind != "pmcached" and request.node.get_closest_marker(
            "pmcached_only"):
        pytest.skip("pmcached only (persistence or pmcached's own options)")
    if kind != "memcached" and request.node.get_closest_marker(
            "memcached_control"):
        pytest.skip("negative control: memcached only")


class _Servers:
    def __init__(self, target):
        self.target = target
        self.all = []

    def __call__(self, *args, start=True, **kw):
        srv = self.target.new_server(*args, **kw)
        self.all.append(srv)
        if start:
            srv.start()
        return srv

    def cleanup(self, failed=False):
        for srv in self.all:
            if failed:
                print("---- %r stderr (tail) ----\n%s"
                      % (srv, srv.stderr_tail()))
            srv.cleanup()
        self.all.clear()


def _failed(node):
    rep = getattr(node, "rep_call", None)
    return bool(rep and rep.failed)


@pytest.fixture
def make_server(request, target):
    servers = _Servers(target)
    yield servers
    servers.cleanup(failed=_failed(request.node))


@pytest.fixture(scope="module")
def server(target):
    servers = _Servers(target)
    try:
        srv = servers()
    except ServerError as e:
        servers.cleanup()
        pytest.fail(str(e))
    yield srv
    servers.cleanup()


@pytest.fixture
def conn(request, server):
    if not server.alive():
        pytest.fail("the shared server died earlier:\n" + server.stderr_tail())
    c = server.connect()
    c.call(b"flush_all\r\n", b"OK\r\n")
    yield c
    try:
        if not _failed(request.node) and not c.eof:
            c.sync()
    finally:
        c.close()
    if not server.alive():
        pytest.fail("the server died during the test:\n"
                    + server.stderr_tail())
