# SPDX-License-Identifier: BSD-3-Clause
"""What the applications' Python tests share (apps/*/tests): waiting with
a deadline, a free port, client threads that must all end, values that
name the write they came from, and the options of the kill -9 tests.

A test puts this folder on sys.path first, as
    sys.path.insert(0, os.path.join(<its folder>, <up to apps>, "common"))
"""
import argparse
import socket
import threading
import time
import zlib


def wait_until(pred, timeout, step=0.1):
    """True once pred() is, polling every step seconds for at most
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def free_port(kind=socket.SOCK_STREAM):
    """A port of 127.0.0.1 nobody listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_threads(target, n, timeout):
    """target(0) ... target(n - 1), each in a thread of its own, all
    started before any is waited for; none may still run after its
    timeout seconds of waiting."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"


def versioned(key, version, spread):
    """The value of write `version` to `key` (bytes): "key:version:",
    repeated to a length drawn from it, up to spread bytes more."""
    head = b"%s:%d:" % (key, version)
    n = len(head) + zlib.crc32(head) % spread
    return (head * (n // len(head) + 1))[:n]


def version_of(key, data, spread):
    """The version of `key` whose value (versioned's) data is, or
    "corrupt" if it is none."""
    if not data.startswith(key + b":"):
        return "corrupt"
    try:
        version = int(data[len(key) + 1:].split(b":")[0])
    except ValueError:
        return "corrupt"
    return version if versioned(key, version, spread) == data else "corrupt"


def kill9_options(kills, seed=1):
    """An argument parser with the options every kill -9 test takes (the
    apps' CMake files give them): how many --kills, the region's
    --backend and --dir, and the --seed of its choices."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=kills)
    ap.add_argument("--backend", default="hardware")
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--seed", type=int, default=seed)
    return ap
