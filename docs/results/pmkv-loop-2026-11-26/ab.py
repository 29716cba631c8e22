#!/usr/bin/python3
"""pmkv --io-threads 1 builds side by side with Redis (persistence off),
on /dev/shm: redis-benchmark -t set (then get) -c 4 -r 238328 -d 64, without
pipelining and with -P 16, every server fresh for each test; the order of
the servers alternates between rounds. Prints a JSON line per server,
pipeline and round: requests/s, and the server's own CPU time per request
(user and system, from /proc/PID/stat, microseconds).

    ab.py --pmkv before=/path/to/pmkv --pmkv after=build/apps/pmkv/pmkv \\
          [--rounds 5] [--requests 200000] > ab.jsonl
    ab.py --summary ab.jsonl
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

CLK = os.sysconf("SC_CLK_TCK")


def pmkv(binary):
    return lambda port, d: [
        binary, "--port", str(port), "--region", d + "/kv.region",
        "--runtime", "redo", "--domain", "pdom1", "--backend", "hardware",
        "--maxmemory", "2gb", "--io-threads", "1"]


def redis(port, d):
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--dir", d, "--save", "", "--appendonly", "no",
            "--daemonize", "no"]


def cpu(pid):
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


def one(argv, port, n, pipeline):
    d = tempfile.mkdtemp(dir="/dev/shm")
    p = subprocess.Popen(argv(port, d), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    res = {}
    try:
        wait_port(port)
        for t in ("set", "get"):
            u0, s0 = cpu(p.pid)
            out = subprocess.run(
                ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                 "-t", t, "-c", "4", "-r", "238328", "-d", "64", "-n",
                 str(n), "-P", str(pipeline), "--csv"],
                capture_output=True, text=True, timeout=600).stdout
            u1, s1 = cpu(p.pid)
            m = re.search(r'"%s","([0-9.]+)"' % t.upper(), out)
            res[t + "_rps"] = float(m.group(1)) if m else None
            res[t + "_user_us"] = round((u1 - u0) / CLK * 1e6 / n, 3)
            res[t + "_sys_us"] = round((s1 - s0) / CLK * 1e6 / n, 3)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d)
    return res


def summary(path):
    rows = [json.loads(line) for line in open(path)]
    keys = sorted({(r["name"], r["pipeline"]) for r in rows},
                  key=lambda k: (k[1], k[0]))
    for k in keys:
        rs = [r for r in rows if (r["name"], r["pipeline"]) == k]

        def med(f):
            return statistics.median(r[f] for r in rs)
        print("%-8s P%-2d SET %8.0f (user %.2f sys %.2f us)  "
              "GET %8.0f (user %.2f sys %.2f us)  [%d rounds]" %
              (k[0], k[1], med("set_rps"), med("set_user_us"),
               med("set_sys_us"), med("get_rps"), med("get_user_us"),
               med("get_sys_us"), len(rs)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pmkv", action="append", default=[],
                    help="NAME=BINARY, once per pmkv build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--summary")
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    servers = [(s.split("=", 1)[0], pmkv(s.split("=", 1)[1]))
               for s in a.pmkv] + [("redis-off", redis)]
    port = 7900
    for rnd in range(a.rounds):
        for name, argv in (servers if rnd % 2 == 0 else servers[::-1]):
            for pipeline in (1, 16):
                port += 1
                row = {"name": name, "pipeline": pipeline, "round": rnd}
                row.update(one(argv, port, a.requests, pipeline))
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
