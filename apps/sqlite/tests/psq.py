# SPDX-License-Identifier: BSD-3-Clause
"""Helpers of pmtx-sqlite's Python tests: load the extension, open a
database through the pmtx VFS or the default one.

$PSQ_EXT names the extension (libpmtx_sqlite.so); $PMTX_CMD the pmtx
command. $PSQ_BACKEND, if set, is the backend every pmtx URI names unless
it names one itself (the suite run again on the journal backend: see
CMakeLists.txt). Run with /usr/bin/python3: its sqlite3 module can load
extensions.
"""
import os
import sqlite3
import urllib.parse

EXT = os.environ.get("PSQ_EXT", "")
PMTX_CMD = os.environ.get("PMTX_CMD", "")
BACKEND = os.environ.get("PSQ_BACKEND", "")
_loaded = False


def load():
    """Register the pmtx VFS in this process (once)."""
    global _loaded
    if _loaded:
        return
    if not EXT or not os.path.exists(EXT):
        raise RuntimeError("PSQ_EXT must name libpmtx_sqlite.so, not %r"
                           % EXT)
    c = sqlite3.connect(":memory:")
    c.enable_load_extension(True)
    c.load_extension(EXT)
    c.close()
    _loaded = True


def uri(path, vfs="pmtx", **params):
    q = dict(params)
    if vfs:
        q["vfs"] = vfs
    if vfs == "pmtx" and BACKEND and "backend" not in q:
        q["backend"] = BACKEND
    return "file:%s?%s" % (urllib.parse.quote(os.path.abspath(path)),
                           urllib.parse.urlencode(q))


def connect(path, vfs="pmtx", timeout=0.0, **params):
    """A connection to path through vfs (isolation_level=None: the
    statements say BEGIN and COMMIT themselves)."""
    load()
    return sqlite3.connect(uri(path, vfs, **params), uri=True,
                           timeout=timeout, isolation_level=None,
                           check_same_thread=False)


def sidecars(name):
    """The files a region named name has beside it under the backend of
    this run: the journal backend's "<region>.pmtxj"."""
    return [name + ".pmtxj"] if BACKEND == "journal" else []


def errmsg(conn):
    return conn.execute("select pmtx_errmsg()").fetchone()[0]


def dump(conn):
    return "\n".join(conn.iterdump())
