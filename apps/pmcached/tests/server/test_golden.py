# SPDX-License-Identifier: BSD-3-Clause
"""pmcached's golden regions (tests/golden, its README): a region of
format 1.0 is refused with what to do and left as it was; one of format
2.0 serves its items and their meta-protocol state."""
import os
import shutil
import subprocess
import tarfile

import pytest

pytestmark = pytest.mark.pmcached_only

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "golden")


def unpack(tmp_path, fmt):
    with tarfile.open(os.path.join(GOLDEN, "regions-%s.tar.xz" % fmt)) as t:
        t.extractall(tmp_path)
    return str(tmp_path / ("pmcached-%s.region" % fmt))


def check(path):
    return subprocess.run([os.environ["PMCACHED_BIN"], "--check", "-e",
                           path], capture_output=True, timeout=60)


def test_format_1_0_is_refused_and_left_alone(make_server, tmp_path):
    path = unpack(tmp_path, "1.0")
    before = open(path, "rb").read()
    want = "pmcached format 1.0, this pmcached reads format 2.x only"
    r = check(path)
    assert r.returncode == 1
    assert want in r.stderr.decode() and path in r.stderr.decode()
    srv = make_server(start=False)
    srv.region = path
    srv.start(wait=False)
    assert srv.wait_exit(timeout=10) == 1
    err = srv.stderr_text()
    assert want in err and path in err and "new region file" in err
    assert open(path, "rb").read() == before


@pytest.mark.parametrize("runtime", ["redo", "undo", "redo-async"])
def test_format_2_0_serves_its_items_and_their_state(make_server, tmp_path,
                                                     runtime):
    path = unpack(tmp_path, "2.0")
    r = check(path)
    assert r.returncode == 0, r.stderr
    assert b"consistent, 8 items" in r.stdout
    srv = make_server("--runtime=" + runtime, start=False)
    srv.region = path
    srv.start()
    c = srv.connect()
    c.call(b"mg greeting h\r\nmg a h\r\n", b"HD h1\r\nHD h0\r\n")
    c.call(b"get greeting counter later a b c\r\n",
           b"VALUE greeting 0 5\r\nhello\r\nVALUE counter 7 2\r\n42\r\n"
           b"VALUE a 0 1\r\n1\r\n"
           b"VALUE b 0 1\r\n2\r\nEND\r\n")
    c.call(b"mg bin k v f\r\n", b"VA 3 kYmlu b f0\r\nbin\r\n")
    c.call(b"mg old v s\r\n", b"VA 3 s3 Z X\r\nold\r\n")
    c.call(b"mg viv s k\r\n", b"HD s0 kviv Z\r\n")
    c.call(b"mg viv N30 s\r\n", b"HD s0 Z\r\n")     # not vivified again
    # a fresh store ends the stale state and the token
    c.call(b"ms old 3\r\nnew\r\n", b"HD\r\n")
    c.call(b"mg old v\r\n", b"VA 3\r\nnew\r\n")
