# SPDX-License-Identifier: BSD-3-Clause
"""Start and stop a pmkv server for black-box tests (127.0.0.1 only)."""
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "common"))
# the tests import these two from here too
from apptest import free_port, wait_until  # noqa: E402


class ServerError(Exception):
    pass


class Server:
    """One pmkv process: its port, unix socket and region in a directory
    of its own. start() returns once it accepts connections."""

    def __init__(self, binary, workdir, *flags, port=None, region=None):
        self.binary = binary
        self.dir = workdir
        self.port = port or free_port()
        self.unixsocket = os.path.join(workdir, "pmkv.sock")
        self.region = region or os.path.join(workdir, "pmkv.region")
        self.flags = list(flags)
        self.proc = None
        self.log = os.path.join(workdir, "pmkv.log")

    def argv(self):
        return [self.binary, "--port", str(self.port), "--unixsocket",
                self.unixsocket, "--region", self.region] + self.flags

    def start(self, timeout=20):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log,
                                         stderr=subprocess.STDOUT)
        if not wait_until(self._accepts, timeout, step=0.02):
            self.kill()
            raise ServerError("pmkv did not start: " + self.log_text())
        return self

    def _accepts(self):
        if self.proc.poll() is not None:
            raise ServerError("pmkv exited with %s: %s"
                              % (self.proc.returncode, self.log_text()))
        try:
            with socket.create_connection(("127.0.0.1", self.port), 1):
                return True
        except OSError:
            return False

    def log_text(self):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)

    def stop(self):
        """A clean stop (SIGTERM): returns the exit status."""
        self.kill(signal.SIGTERM)
        return self.proc.returncode

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


def raw(port, data, read_for=0.5, limit=1 << 20):
    """Send bytes, return what comes back within read_for seconds (or
    until the server closes)."""
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(data)
        s.settimeout(read_for)
        out = b""
        deadline = time.monotonic() + read_for
        while len(out) < limit and time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out
