# SPDX-License-Identifier: BSD-3-Clause
"""The leaderboard examples (examples/leaderboard.c, leaderboard.cpp)
survive kill -9.

Each program runs `stress` (random score updates, one transaction each,
"ack SEQ PLAYER SCORE" printed after each commit) into a file, and is
killed with SIGKILL after a random time, 20 times in a row on the same
region. After every kill the region is reopened and:
  - the program's own `check` passes (the two maps agree, ranks are
    consistent by cursor, by rank and by seek-to-rank);
  - its `dump` (every player, best first: RANK PLAYER SCORE SEQ) has ranks
    1..n and keys in strictly decreasing (score, name) order;
  - every acknowledged update is there: each player's stored update is
    its last acknowledged one, or a later one that committed but was not
    acknowledged before the kill (only the update in flight: the last
    run's last acknowledged sequence number plus one);
  - the update count goes on from there in the next run.
The two programs also agree on one file, command for command.

Environment: LEADERBOARD_C, LEADERBOARD_CPP (the programs).
"""
import os
import random
import signal
import subprocess
import time

import pytest

KILLS = 20
BUDGET_S = 240  # for the 20 kills of one program


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run through CTest)")
    return value


def run(prog, region, *args):
    p = subprocess.run([prog, "--path", str(region), *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


def parse_acks(text):
    """seq -> (player, score) of every complete ack line."""
    acks = {}
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # cut by the kill
        tag, seq, player, score = line.split()
        assert tag == "ack"
        acks[int(seq)] = (player, float(score))
    return acks


def parse_dump(text):
    """[(rank, player, score, seq)] in the dump's order."""
    rows = []
    for line in text.splitlines():
        rank, player, score, seq = line.split()
        rows.append((int(rank), player, float(score), int(seq)))
    return rows


def verify(rows, acked, in_flight):
    """Problems of a dump, as text. acked: seq -> (player, score) of every
    update acknowledged so far; in_flight: the one sequence number that
    may have committed without its ack."""
    problems = []
    if [r[0] for r in rows] != list(range(1, len(rows) + 1)):
        problems.append("ranks are not 1..n")
    keys = [(r[2], r[1]) for r in rows]
    if any(a <= b for a, b in zip(keys, keys[1:])):
        problems.append("the dump is not in decreasing (score, name) order")
    stored = {r[1]: (r[3], r[2]) for r in rows}
    last = {}
    for seq, (player, score) in sorted(acked.items()):
        last[player] = (seq, score)
    for player, (seq, score) in last.items():
        got = stored.get(player)
        if got is None or got[0] < seq:
            problems.append(f"acknowledged update {seq} of {player} lost")
        elif got[0] == seq and got[1] != score:
            problems.append(f"update {seq} of {player} has another score")
    for player, (seq, score) in stored.items():
        if seq in acked:
            if acked[seq] != (player, score):
                problems.append(f"update {seq} is not the one acknowledged")
        elif seq != in_flight:
            problems.append(f"update {seq} of {player} was never made")
    return problems


def check_region(prog, region, acked, in_flight):
    out = run(prog, region, "check")
    assert out.startswith("ok "), out
    updates = int(out.split()[3])
    assert updates in (max(acked, default=0), in_flight), (out, in_flight)
    rows = parse_dump(run(prog, region, "dump"))
    assert verify(rows, acked, in_flight) == []
    # An update that committed unacknowledged is part of the history now.
    for rank, player, score, seq in rows:
        if seq == in_flight:
            acked[seq] = (player, score)
    return updates


@pytest.mark.parametrize("which", ["LEADERBOARD_C", "LEADERBOARD_CPP"])
def test_acknowledged_updates_survive_kill_9(which, tmp_path):
    prog = env(which)
    region = tmp_path / "lb.pmtx"
    rnd = random.Random(20261129)
    acked = {}
    updates = 0
    killed_running = 0
    deadline = time.monotonic() + BUDGET_S
    for kill in range(KILLS):
        assert time.monotonic() < deadline, f"{kill} kills in {BUDGET_S}s"
        log = tmp_path / f"acks-{kill}.txt"
        with open(log, "w") as out:
            p = subprocess.Popen([prog, "--path", str(region), "stress",
                                  "100000000", "50", str(kill)], stdout=out)
            time.sleep(rnd.uniform(0.05, 0.4))
            p.send_signal(signal.SIGKILL)
            p.wait()
        killed_running += p.returncode == -signal.SIGKILL
        new = parse_acks(log.read_text())
        if new:  # the count goes on from the last run's end
            assert min(new) == updates + 1, (min(new), updates)
            assert sorted(new) == list(range(updates + 1, max(new) + 1))
        acked.update(new)
        in_flight = max(acked, default=0) + 1
        updates = check_region(prog, region, acked, in_flight)
    assert killed_running == KILLS
    assert updates >= KILLS  # each run made progress before its kill


def test_c_and_cpp_agree_on_one_file(tmp_path):
    c, cpp = env("LEADERBOARD_C"), env("LEADERBOARD_CPP")
    region = tmp_path / "lb.pmtx"
    script = [["add", "alice", "10"], ["add", "bob", "20.5"],
              ["add", "carol", "15"], ["add", "alice", "30"],
              ["add", "dave", "-0.1"], ["add", "erin", "15"],
              ["add", "bob", "1e300"]]
    for i, cmd in enumerate(script):  # alternate the writers
        run(c if i % 2 else cpp, region, *cmd)
    queries = [["top", "3"], ["rank", "erin"], ["rank", "nobody"],
               ["between", "0", "20"], ["between", "-inf", "inf"],
               ["dump"], ["check"]]
    for q in queries:
        assert run(c, region, *q) == run(cpp, region, *q), q
    assert run(c, region, "top", "2") == "1 bob 1e+300\n2 alice 30\n"
    assert run(c, region, "between", "0", "20") == \
        "3 erin 15\n4 carol 15\n"


def test_verify_finds_a_lost_or_invented_update():
    acked = {1: ("a", 1.0), 2: ("b", 2.0), 3: ("a", 3.0)}
    good = [(1, "a", 3.0, 3), (2, "b", 2.0, 2)]
    assert verify(good, acked, 4) == []
    lost = [(1, "b", 2.0, 2), (2, "a", 1.0, 1)]  # a's ack 3 is missing
    assert verify(lost, acked, 4) == ["acknowledged update 3 of a lost"]
    invented = [(1, "c", 9.0, 7), (2, "a", 3.0, 3), (3, "b", 2.0, 2)]
    assert verify(invented, acked, 4) == ["update 7 of c was never made"]
    unordered = [(1, "b", 2.0, 2), (2, "a", 3.0, 3)]
    assert verify(unordered, acked, 4) == [
        "the dump is not in decreasing (score, name) order"]
