#!/usr/bin/python3
"""Two servers side by side, each started once on /dev/shm and filled
with 1,000,000 SETs over the benchmark's 238,328 keys, then short
redis-benchmark runs alternating between them (the order reversed every
round): each round's ratio of requests/s and of the server's own CPU time
per request (user + system, /proc/PID/stat) pairs two runs a few seconds
apart, so that the machine's drift cancels. JSON lines on stdout, the
medians of the ratios on stderr.

    paired.py NAME=BINARY,NAME=BINARY ROUNDS REQUESTS PIPELINE TEST
    (BINARY: a pmkv, run with --io-threads 1, redo, PDOM-1 hardware; or
    the word redis for redis-server without persistence)
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import socket
import time


def cpu(pid):
    """User and system clock ticks of process pid so far."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]), int(f[12])


def wait_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no server on port %d" % port)


CLK = os.sysconf("SC_CLK_TCK")
BENCH = ["redis-benchmark", "-h", "127.0.0.1", "-c", "4", "-r", "238328",
         "-d", "64"]


def argv(binary, port, d):
    if binary == "redis":
        return ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--dir", d, "--save", "", "--appendonly", "no"]
    return [binary, "--port", str(port), "--region", d + "/kv.region",
            "--runtime", "redo", "--domain", "pdom1", "--backend",
            "hardware", "--maxmemory", "2gb", "--io-threads", "1"]


def start(binary, port):
    d = tempfile.mkdtemp(dir="/dev/shm")
    p = subprocess.Popen(argv(binary, port, d), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_port(port)
    subprocess.run(BENCH + ["-p", str(port), "-t", "set", "-n", "1000000",
                            "-P", "16", "-q"], capture_output=True,
                   timeout=600)
    return p, port, d


def run(p, port, n, pipeline, test):
    c0 = sum(cpu(p.pid))
    out = subprocess.run(BENCH + ["-p", str(port), "-t", test, "-n", str(n),
                                  "-P", pipeline, "--csv"],
                         capture_output=True, text=True, timeout=600).stdout
    c1 = sum(cpu(p.pid))
    m = re.search(r'"%s","([0-9.]+)"' % test.upper(), out)
    return float(m.group(1)), (c1 - c0) / CLK * 1e6 / n


def main():
    bins = [a.split("=", 1) for a in sys.argv[1].split(",")]
    rounds, n = int(sys.argv[2]), int(sys.argv[3])
    pipeline, test = sys.argv[4], sys.argv[5]
    srv = {}
    try:
        for i, (name, binary) in enumerate(bins):
            srv[name] = start(binary, 7950 + i)
        names = [b[0] for b in bins]
        res = {k: [] for k in names}
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                p, port, _ = srv[name]
                rps, us = run(p, port, n, pipeline, test)
                res[name].append((rps, us))
                print(json.dumps({"name": name, "test": test,
                                  "pipeline": int(pipeline), "round": r,
                                  "rps": rps, "cpu_us": round(us, 3)}),
                      flush=True)
    finally:
        for p, _, d in srv.values():
            p.terminate()
            p.wait()
            shutil.rmtree(d)
    a, b = names[0], names[1]
    for what, i in (("requests/s", 0), ("cpu per request", 1)):
        rat = [x[i] / y[i] for x, y in zip(res[a], res[b])]
        print("# %s %s/%s: median %.3f (%s)" % (
            what, a, b, statistics.median(rat),
            " ".join("%.2f" % x for x in rat)), file=sys.stderr)


if __name__ == "__main__":
    main()
