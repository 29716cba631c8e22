# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark's options at a tiny size (bench/mcload.c, bench/ycsb.py):
mcload's binary protocol against pmcached and memcached, its checks of a
binary reply, and ycsb.py's configurations (--protocol, --server-threads,
--placement) with the memcached-control variant, interleaved. Nothing is
timed: the lines, fields and counts are checked, not the figures.

MCLOAD and PMCACHED_BIN name the binaries (CTest sets them); each test
skips without what it needs. Servers on 127.0.0.1 only.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(HERE), "bench")
sys.path.insert(0, BENCH)
import ycsb  # noqa: E402

MCLOAD = os.environ.get("MCLOAD", "")
PMCACHED = os.environ.get("PMCACHED_BIN", "")
MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"

needs_mcload = pytest.mark.skipif(not os.access(MCLOAD, os.X_OK),
                                  reason="MCLOAD is not an executable")
needs_servers = pytest.mark.skipif(
    not (os.access(PMCACHED, os.X_OK) and os.access(MEMCACHED, os.X_OK)),
    reason="PMCACHED_BIN or memcached missing")


def mcload(*args, timeout=60):
    return subprocess.run([MCLOAD] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def servers(tmp_path):
    """A pmcached and a memcached, -t 2, on free ports: {kind: port}."""
    procs, ports = [], {}
    try:
        for kind, binary in (("pmcached", PMCACHED),
                             ("memcached", MEMCACHED)):
            port = ycsb.free_port()
            region = os.path.join("/dev/shm", "pmcached-benchtest-%d-%d"
                                  % (os.getpid(), port)) \
                if kind == "pmcached" else None
            variant = "pmcached-redo" if region else "memcached"
            argv = ycsb.server_argv(variant, binary, port, 2, 64, region)
            srv = ycsb.Server(argv, [], region, kind).start()
            procs.append(srv)
            srv.wait_ready(port)
            ports[kind] = port
        yield ports
    finally:
        for srv in procs:
            srv.close()


@needs_mcload
@needs_servers
@pytest.mark.parametrize("kind", ["pmcached", "memcached"])
@pytest.mark.parametrize("workload", ["a", "f"])
def test_mcload_binary_protocol_verifies_values(servers, kind, workload):
    r = mcload("--port", servers[kind], "--protocol", "binary", "--load",
               "--workload", workload, "--records", 300, "--ops", 3000,
               "--seconds", 20, "--verify", "--value-size", 700)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    assert [l["workload"] for l in lines] == ["load", workload]
    for l in lines:
        assert l["protocol"] == "binary" and l["errors"] == 0
    assert lines[0]["ops"] == 300
    run = lines[1]
    assert run["ops"] == 3000 and run["misses"] == 0
    assert run["reads"] + run["updates"] + run["rmws"] == 3000
    assert (run["updates"] if workload == "a" else run["rmws"]) > 0


@needs_mcload
@needs_servers
def test_mcload_binary_sees_a_value_of_the_wrong_length(servers):
    """A value set through text (shorter) and read through binary."""
    port = servers["pmcached"]
    assert mcload("--port", port, "--load", "--records", 50,
                  "--value-size", 100).returncode == 0
    r = mcload("--port", port, "--protocol", "binary", "--workload", "c",
               "--records", 50, "--value-size", 120, "--ops", 200)
    assert r.returncode == 1
    assert json.loads(r.stdout)["errors"] > 0
    assert "expected 120" in r.stderr


def fake_binary_server(reply):
    """A one-connection server on 127.0.0.1: reads one request header and
    its body, answers reply(request header) and closes. Its port."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def serve():
        with ls:
            ls.settimeout(30)
            conn, _ = ls.accept()
            with conn:
                conn.settimeout(30)
                req = b""
                while len(req) < 24 or len(req) < 24 + struct.unpack(
                        ">I", req[8:12])[0]:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    req += chunk
                conn.sendall(reply(req[:24]))
                conn.recv(1)    # until mcload closes

    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def bin_response(opcode, opaque, status=0, extras=b"", value=b""):
    body = extras + value
    return struct.pack(">BBHBBHIIQ", 0x81, opcode, 0, len(extras), 0,
                       status, len(body), opaque, 0) + body


@needs_mcload
@pytest.mark.parametrize("case", ["opaque", "opcode", "magic", "status"])
def test_mcload_binary_refuses_a_reply_not_to_its_request(case):
    def reply(hdr):
        opaque = struct.unpack(">I", hdr[12:16])[0]
        ok = bin_response(0x00, opaque, extras=b"\0" * 4, value=b"x" * 10)
        if case == "opaque":
            return bin_response(0x00, opaque + 1, extras=b"\0" * 4,
                                value=b"x" * 10)
        if case == "opcode":
            return bin_response(0x01, opaque)
        if case == "magic":
            return b"\x80" + ok[1:]
        return bin_response(0x00, opaque, status=0x81)  # unknown command

    port = fake_binary_server(reply)
    r = mcload("--port", port, "--protocol", "binary", "--workload", "c",
               "--records", 5, "--ops", 1, "--conns", 1, "--value-size", 10,
               "--timeout", 20)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert "unexpected reply" in r.stderr


@needs_mcload
@pytest.mark.parametrize("bad", [["--protocol", "xml"],
                                 ["--protocol", ""]])
def test_mcload_refuses_a_bad_protocol(bad):
    r = mcload("--port", 1, "--workload", "c", *bad)
    assert r.returncode == 2
    assert "--protocol" in r.stderr


@needs_mcload
@pytest.mark.parametrize("bad", [["--protocol", "text,xml"],
                                 ["--server-threads", "0"],
                                 ["--server-threads", "1,x"],
                                 ["--placement", "3cpu"],
                                 ["--variants", "memcached,nope"]])
def test_ycsb_refuses_bad_configurations(bad):
    r = subprocess.run([sys.executable, os.path.join(BENCH, "ycsb.py"),
                        "--mcload", MCLOAD] + bad, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "error:" in r.stderr


def shm_leftovers():
    return sorted(f for f in os.listdir("/dev/shm")
                  if f.startswith("pmcached-bench-"))


@needs_mcload
@needs_servers
def test_ycsb_runs_every_configuration_interleaved(tmp_path):
    before = shm_leftovers()
    out = tmp_path / "out.jsonl"
    variants = ["memcached", "memcached-control", "pmcached-redo"]
    r = subprocess.run(
        [sys.executable, os.path.join(BENCH, "ycsb.py"), "--quick",
         "--records", "200", "--ops", "400", "--seconds", "5",
         "--rounds", "2", "--workloads", "b,f",
         "--variants", ",".join(variants), "--protocol", "text,binary",
         "--server-threads", "1,2", "--placement", "1cpu,2cpu",
         "--mcload", MCLOAD, "--pmcached", PMCACHED, "--memcached",
         MEMCACHED, "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    assert lines == [json.loads(l) for l in out.read_text().splitlines()]
    runs = [l for l in lines if not l.get("summary")]
    summary = [l for l in lines if l.get("summary")]
    assert not [l for l in lines if "error" in l]
    configs = {(p, t, pl) for p in ("text", "binary") for t in (1, 2)
               for pl in ("1cpu", "2cpu")}
    # every (round, configuration, variant): a load and both workloads
    for rnd in (1, 2):
        for cfg in configs:
            for v in variants:
                got = sorted(l["workload"] for l in runs
                             if (l["round"], l["variant"]) == (rnd, v) and
                             (l["protocol"], l["server_threads"],
                              l["placement"]) == cfg)
                assert got == ["b", "f", "load"], (rnd, cfg, v)
    for l in runs:
        assert l["errors"] == 0 and l["misses"] == 0
        assert l["pinning"].startswith(
            "server cpu 0, client cpu 1" if l["placement"] == "1cpu"
            else "none")
        waits = [l.get(k) for k in ycsb.LOCK_WAITS]
        if l["workload"] == "load":
            continue
        if l["server"] == "pmcached":
            assert all(isinstance(w, int) and w >= 0 for w in waits), l
        else:
            assert waits == [None] * len(waits)
    # the rounds are interleaved: configurations and variants rotate
    firsts = [next(l for l in runs if l["round"] == rnd)
              for rnd in (1, 2)]
    assert (firsts[0]["protocol"], firsts[0]["server_threads"],
            firsts[0]["placement"]) != (firsts[1]["protocol"],
                                        firsts[1]["server_threads"],
                                        firsts[1]["placement"])
    assert firsts[0]["variant"] != firsts[1]["variant"]
    # one summary per (variant, workload, configuration), with ratios
    assert len(summary) == len(variants) * 2 * len(configs)
    for s in summary:
        assert s["rounds"] == 2 and len(s["round_ratios"]) == 2
        assert s["ratio_to_memcached"] > 0
        if s["variant"] == "memcached":
            assert s["round_ratios"] == [1.0, 1.0]
        if s["server"] == "pmcached":
            assert s["median_lock_waits_stripe"] is not None
    assert shm_leftovers() == before
