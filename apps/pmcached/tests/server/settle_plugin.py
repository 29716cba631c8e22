# SPDX-License-Identifier: BSD-3-Clause
"""A pytest plugin for running pymemcache's own integration tests.

Each of those tests opens its own connection, and several end with a
noreply command (flush_all) whose client is dropped at once. The server
serves connections on several threads, so such a command can still be
in flight when the next test, on a new connection, has already stored
its key: the late flush_all then empties it. The race is in the tests,
not in the server (memcached has it too), and it is rare.

After every test, this plugin closes the dropped clients and waits
until the server has closed them as well: a connection is closed only
after every command sent on it before the EOF has been served. The wait
is bounded."""
import gc
import socket
import time

import pytest

SETTLE_TIMEOUT = 10.0


def _curr_connections(host, port):
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        deadline = time.monotonic() + 5
        while not buf.endswith(b"END\r\n") and time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    for line in buf.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "curr_connections":
            return int(parts[2])
    raise RuntimeError("no curr_connections in stats: %r" % buf[-200:])


@pytest.fixture(scope="session")
def _idle_connections(host, port):
    gc.collect()
    return _curr_connections(host, port)


@pytest.fixture(autouse=True)
def _settle(host, port, _idle_connections):
    yield
    gc.collect()
    deadline = time.monotonic() + SETTLE_TIMEOUT
    n = _curr_connections(host, port)
    while n > _idle_connections and time.monotonic() < deadline:
        time.sleep(0.005)
        n = _curr_connections(host, port)
    assert n <= _idle_connections, (
        "%d connections still open %.0f s after the test (idle: %d)"
        % (n, SETTLE_TIMEOUT, _idle_connections))
