# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of pmkv's black-box server tests.

$PMKV_BIN names the server binary (every test skips while it is unset or
names no executable). $PMKV_ARGS (split like a shell line) is appended to
every command line, e.g. "--runtime undo", to run the suite per runtime.

Fixtures:
    pmkv_bin      the binary
    make_server   factory: make_server(*flags) -> a started Server, killed
                  (SIGKILL) after the test
    server        one server shared by a module
    r             a redis-py client of `server` on an empty key space
"""
import os
import shlex

import pytest
import redis

from kvserver import Server


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "features: a test of what pmkv does, not of how a "
        "runtime or a backend keeps it: run once, by pmkv_server_features "
        "(-m features), not by every runtime's suite (-m 'not features')")


@pytest.fixture(scope="session")
def pmkv_bin():
    b = os.environ.get("PMKV_BIN")
    if not b or not os.access(b, os.X_OK):
        pytest.skip("PMKV_BIN is not set to the pmkv binary")
    return b


def _extra():
    return shlex.split(os.environ.get("PMKV_ARGS", ""))


@pytest.fixture
def make_server(pmkv_bin, tmp_path):
    started = []

    def make(*flags, **kw):
        s = Server(pmkv_bin, str(tmp_path), *(list(flags) + _extra()), **kw)
        started.append(s)
        return s.start()

    yield make
    for s in started:
        s.kill()


@pytest.fixture(scope="module")
def server(pmkv_bin, tmp_path_factory):
    s = Server(pmkv_bin, str(tmp_path_factory.mktemp("pmkv")), *_extra())
    s.start()
    yield s
    s.kill()


@pytest.fixture
def r(server):
    c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=10)
    c.flushall()
    yield c
    c.close()
