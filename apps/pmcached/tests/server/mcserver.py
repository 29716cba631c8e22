# SPDX-License-Identifier: BSD-3-Clause
"""Start, stop and talk to a memcached-compatible server, for the black-box
tests of pmcached (conftest.py builds its fixtures on this module).

Two things live here:

- Server: one server process (pmcached or Debian's memcached) on a port
  chosen here, 127.0.0.1 only, UDP off unless asked for, its region file
  (-e) and its stderr log in its own directory under /dev/shm. It can be
  killed with SIGKILL and restarted on the same port and the same region.
- Conn: a raw socket client with a timeout on every read. Replies are read
  as bytes and compared as bytes: the tests check memcached's exact wire
  format, not what a client library makes of it.

Every wait here has a deadline; nothing blocks without a timeout.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "common"))
# the tests import these two from here too
from apptest import free_port, wait_until  # noqa: E402,F401

HOST = "127.0.0.1"
IO_TIMEOUT = 5.0        # one socket read or write
START_TIMEOUT = 15.0    # a server answering "version" after exec
STOP_TIMEOUT = 5.0      # a process gone after SIGTERM or SIGKILL

# Options only pmcached has (dropped when the target is memcached).
PMCACHED_ONLY_OPTS = ("--runtime", "--domain", "--backend")


class ServerError(Exception):
    pass


def free_tcp_udp_port():
    """A port free for both TCP and UDP (for -p P -U P)."""
    for _ in range(50):
        port = free_port()
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind((HOST, port))
            return port
        except OSError:
            continue
    raise ServerError("no port free for both TCP and UDP")


def listening_addresses(port):
    """Local addresses with a TCP socket in LISTEN state on port, read from
    /proc/net/tcp and tcp6 (hex, as the kernel prints them)."""
    found = []
    for path, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].split(":")
            if int(hexport, 16) == port and fields[3] == "0A":
                found.append(_decode_proc_addr(addr, width))
    return found


def _decode_proc_addr(addr, width):
    raw = bytes.fromhex(addr)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = [raw[i:i + 4][::-1] for i in range(0, len(raw), 4)]
    packed = b"".join(words)
    if width == 8:
        return socket.inet_ntop(socket.AF_INET, packed)
    return socket.inet_ntop(socket.AF_INET6, packed)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Conn:
    """A client connection that reads exactly what it is told to.

    Bytes that arrive beyond what a call asked for stay in self.buf for the
    next call, so a reply longer than expected shows up as a mismatch in
    the next exchange (and in sync(), which the fixtures call last).
    """

    def __init__(self, sock, timeout=IO_TIMEOUT):
        self.sock = sock
        self.sock.settimeout(timeout)
        self.timeout = timeout
        self.buf = b""
        self.eof = False

    # -- sending
    def send(self, data):
        self.sock.sendall(data)

    # -- receiving
    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 20)
        finally:
            self.sock.settimeout(self.timeout)
        if not chunk:
            self.eof = True
        self.buf += chunk
        return chunk

    def recv_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            try:
                if not self._fill(deadline):
                    break
            except (socket.timeout, ConnectionResetError):
                break
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_until(self, term, timeout=None, limit=64 << 20):
        deadline = time.monotonic() + (timeout or self.timeout)
        while term not in self.buf:
            if len(self.buf) > limit:
                raise AssertionError("no %r in %d bytes" % (term, limit))
            try:
                if not self._fill(deadline):
                    raise AssertionError("EOF before %r; got %r"
                                         % (term, self.buf[-300:]))
            except socket.timeout:
                raise AssertionError("timeout before %r; got %r"
                                     % (term, self.buf[-300:]))
        i = self.buf.index(term) + len(term)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def readline(self, timeout=None):
        return self.read_until(b"\r\n", timeout)

    def read_available(self, quiet=0.3, total=2.0):
        """Whatever arrives until `quiet` seconds pass with nothing new, or
        `total` seconds in all, or EOF."""
        deadline = time.monotonic() + total
        while not self.eof and time.monotonic() < deadline:
            try:
                self.sock.settimeout(min(quiet, deadline - time.monotonic()))
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                break
            except ConnectionResetError:
                self.eof = True
                break
            finally:
                self.sock.settimeout(self.timeout)
            if not chunk:
                self.eof = True
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    # -- request / reply
    def expect(self, reply, timeout=None):
        got = self.recv_exact(len(reply), timeout)
        assert got == reply, "expected %r\n     got %r" % (
            _clip(reply), _clip(got))

    def call(self, request, reply, timeout=None):
        """Send request; its reply must be exactly `reply`."""
        self.send(request)
        self.expect(reply, timeout)

    def sync(self):
        """Nothing unexpected pending: mn's MN must be the next bytes."""
        self.call(b"mn\r\n", b"MN\r\n")

    def assert_quiet(self, wait=0.2):
        got = self.read_available(quiet=wait, total=wait)
        assert got == b"", "unexpected bytes %r" % _clip(got)

    def closed(self, timeout=2.0):
        """True if the peer closes (EOF or reset) within timeout; any bytes
        that arrive before are kept in self.buf."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            try:
                self._fill(deadline)
            except socket.timeout:
                return False
            except (ConnectionResetError, BrokenPipeError):
                self.eof = True
        return True

    # -- parsed helpers, for tests that check values and not formats
    def get_value(self, key):
        """(flags, data) of key, or None on a miss."""
        if isinstance(key, str):
            key = key.encode()
        self.send(b"get " + key + b"\r\n")
        line = self.readline()
        if line == b"END\r\n":
            return None
        m = re.match(rb"VALUE (\S+) (\d+) (\d+)\r\n$", line)
        assert m and m.group(1) == key, line
        data = self.recv_exact(int(m.group(3)) + 2)
        assert data.endswith(b"\r\n"), data[-10:]
        self.expect(b"END\r\n")
        return int(m.group(2)), data[:-2]

    def gets_cas(self, key):
        self.send(b"gets " + key + b"\r\n")
        line = self.readline()
        m = re.match(rb"VALUE (\S+) (\d+) (\d+) (\d+)\r\n$", line)
        assert m, line
        self.recv_exact(int(m.group(3)) + 2)
        self.expect(b"END\r\n")
        return int(m.group(4))

    def set(self, key, value, flags=0, exptime=0):
        if isinstance(key, str):
            key = key.encode()
        self.call(b"set %s %d %d %d\r\n%s\r\n"
                  % (key, flags, exptime, len(value), value), b"STORED\r\n")

    def stats(self, sub=b""):
        """A stats reply as an ordered dict name -> value (bytes -> str);
        every line must be 'STAT name value' and the last 'END'."""
        self.send(b"stats" + (b" " + sub if sub else b"") + b"\r\n")
        raw = self.read_until(b"END\r\n")
        out = {}
        lines = raw.split(b"\r\n")
        assert lines[-2:] == [b"END", b""], raw[-100:]
        for line in lines[:-2]:
            m = re.match(rb"STAT (\S+) ([^\r\n]*)$", line)
            assert m, "malformed stats line %r" % line
            out[m.group(1).decode()] = m.group(2).decode()
        return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _clip(b, n=300):
    return b if len(b) <= n else b[:n] + b"...(%d bytes)" % len(b)


class Server:
    """One server process.

    kind is "pmcached" or "memcached". args are extra command-line flags.
    Unless told otherwise it listens on 127.0.0.1:<free port>, UDP off
    (-U 0), runs as root with -u root, and (pmcached) keeps its cache in
    <workdir>/region.pmtx (-e). memfile=True gives memcached its -e file
    too (its restartable mode), for the controls that show what memcached
    loses.
    """

    def __init__(self, kind, binary, args=(), port=None, listen=True,
                 unix=None, memfile=False, env=None, extra=(), name="mc"):
        self.kind = kind
        self.binary = binary
        self.args = [str(a) for a in args]
        self.workdir = tempfile.mkdtemp(prefix="pmcached-test-",
                                        dir="/dev/shm")
        self.name = name
        self.port = port if port is not None else free_port()
        self.listen = listen
        self.unix = os.path.join(self.workdir, unix) if unix else None
        self.region = None
        if kind == "pmcached" or memfile:
            self.region = os.path.join(self.workdir, "region.pmtx")
        self.env = dict(os.environ)
        self.env.pop("MEMCACHED_PORT_FILENAME", None)
        self.env.update(env or {})
        self.extra = list(extra)      # PMCACHED_ARGS, pmcached only
        self.proc = None
        self.starts = 0
        self.log = None

    # -- command line
    def argv(self):
        argv = [self.binary]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        if self.unix:
            argv += ["-s", self.unix]
        elif self.listen:
            argv += ["-l", HOST, "-p", str(self.port)]
        if not any(a == "-U" or a.startswith("--udp-port") for a in self.args):
            argv += ["-U", "0"]
        if self.region and "-e" not in self.args:
            argv += ["-e", self.region]
        args = self.args
        if self.kind == "pmcached":
            args = args + self.extra
        else:
            args = [a for a in args if not a.startswith(PMCACHED_ONLY_OPTS)]
        return argv + args

    # -- life cycle
    def start(self, wait=True):
        self.starts += 1
        self.log = os.path.join(self.workdir, "stderr.%d.log" % self.starts)
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL,
                stdout=err, stderr=err, env=self.env,
                start_new_session=True)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError("%s exited with %s at start: %s\n%s" % (
                    self.kind, self.proc.returncode, " ".join(self.argv()),
                    self.stderr_tail()))
            try:
                c = self.connect(timeout=1.0)
            except OSError as e:
                last = e
                time.sleep(0.02)
                continue
            try:
                c.send(b"version\r\n")
                line = c.readline(timeout=2.0)
                if line.startswith(b"VERSION "):
                    return
                last = line
            except (OSError, AssertionError) as e:
                last = e
            finally:
                c.close()
            time.sleep(0.02)
        self.kill9()
        raise ServerError("%s not ready in %.0fs (%s): %s\n%s" % (
            self.kind, timeout, last, " ".join(self.argv()),
            self.stderr_tail()))

    def connect(self, timeout=IO_TIMEOUT):
        if self.unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            try:
                s.connect(self.unix)
            except OSError:
                s.close()
                raise
        else:
            s = socket.create_connection((HOST, self.port), timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Conn(s, timeout)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout=STOP_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill9(self):
        """SIGKILL: the crash the persistent cache must survive."""
        if self.alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(STOP_TIMEOUT)

    def terminate(self, timeout=STOP_TIMEOUT):
        """SIGTERM; the exit status, or None if it did not exit in time."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def restart(self):
        """Kill -9 and start again on the same port and the same region."""
        self.kill9()
        return self.start()

    def stop(self):
        """Teardown: SIGKILL (a clean stop is tested on its own)."""
        if self.proc is not None:
            self.kill9()

    def cleanup(self):
        self.stop()
        if not os.environ.get("MC_KEEP_TMP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def stderr_tail(self, n=2000):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except (OSError, TypeError):
            return ""

    def stderr_text(self):
        return self.stderr_tail(n=1 << 20)

    def __repr__(self):
        return "<%s %s port %s>" % (self.kind, self.name, self.port)


# -- two servers side by side, for the tests that compare them

def pair_binaries():
    """(pmcached, memcached) binaries for a test that runs both; skips
    (pytest) unless $PMCACHED_BIN names pmcached and memcached is
    installed."""
    import pytest
    pm = os.environ.get("PMCACHED_BIN", "")
    if not (pm and os.access(pm, os.X_OK)):
        pytest.skip("PMCACHED_BIN is not set (pmcached not built yet?)")
    mc = (os.environ.get("MEMCACHED_BIN") or shutil.which("memcached")
          or "/usr/bin/memcached")
    if not os.access(mc, os.X_OK):
        pytest.skip("memcached is not installed (scripts/setup.sh)")
    return pm, mc


def start_pair(*args, wait=True):
    """[memcached, pmcached] with the same flags ($PMCACHED_ARGS appended
    to pmcached's), started (ready unless not wait); both cleaned up if
    either fails to start."""
    pm, mc = pair_binaries()
    extra = os.environ.get("PMCACHED_ARGS", "").split()
    servers = [Server("memcached", mc, args, name="memcached"),
               Server("pmcached", pm, args, extra=extra, name="pmcached")]
    try:
        for s in servers:
            s.start(wait=wait)
    except Exception:
        for s in servers:
            s.cleanup()
        raise
    return servers
