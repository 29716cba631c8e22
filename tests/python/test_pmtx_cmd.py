# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the pmtx command: create, info, check, recover, dump, --help.

    PMTX_CMD=build/tools/pmtx PMTX_CMD_FIXTURE=build/tests/cmd_fixture \\
        python3 -m pytest -q tests/python/test_pmtx_cmd.py

CTest sets both variables (test pmtx_command); without them the tests
look in build/. cmd_fixture (tests/cmd_fixture.c) puts regions into known
states: crashed inside a transaction, filled with a known pattern, grown.
Regions go to /dev/shm. The test also runs in the sanitizer build, where
any ASan or UBSan report fails it.
"""
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PMTX = os.environ.get("PMTX_CMD") or \
    os.path.join(ROOT, "build", "tools", "pmtx")
FIXTURE = os.environ.get("PMTX_CMD_FIXTURE") or \
    os.path.join(ROOT, "build", "tests", "cmd_fixture")

RUNTIMES = ["undo", "redo", "redo-async", "cow"]
SUBCOMMANDS = ["create", "info", "check", "recover", "dump", "trace dump",
               "trace analyze"]
META_SIZE = 320          # struct pmtx_sb_meta (src/region/layout.h)
BITMAP_AT = 64           # offsetof(struct pmtx_sb_meta, bitmap)


def run(*args, check=None):
    p = subprocess.run([PMTX] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode >= 0, f"pmtx {args} died of signal {-p.returncode}"
    # under ASan/UBSan (the sanitizer build) a report also exits 1
    assert "Sanitizer" not in p.stderr and "runtime error:" not in p.stderr, \
        p.stderr
    if check is not None:
        assert p.returncode == check, \
            f"pmtx {args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def fixture(*args):
    p = subprocess.run([FIXTURE] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def info(path):
    return json.loads(run("info", path, "--json", check=0).stdout)


def fingerprint(path):
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return digest, os.stat(path).st_mtime_ns


def dumped_bytes(out):
    """The bytes of `pmtx dump` output, and the offset of its first line."""
    data, first = bytearray(), None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]{12})  ((?:[0-9a-f]{2} {1,2})+)", line)
        assert m, f"not a dump line: {line!r}"
        first = int(m.group(1), 16) if first is None else first
        data += bytes.fromhex(m.group(2).replace(" ", ""))
    return first, bytes(data)


def pattern(n):
    return bytes((7 * i + 3) & 0xff for i in range(n))


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="pmtx-cmd-", dir="/dev/shm")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def region(workdir):
    path = os.path.join(workdir, "r.pmtx")
    run("create", path, "--size", "8M", "--root-size", "64", "--layout",
        "test", check=0)
    return path


@pytest.fixture
def crashed(region):
    """A region left by a process that _exit()ed inside an undo
    transaction: its root's first 8 bytes say CRASHED!, uncommitted."""
    fixture("crash", region)
    return region


def copy(path, name):
    dst = os.path.join(os.path.dirname(path), name)
    shutil.copyfile(path, dst)
    return dst


def patch(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


# ---- create ----

@pytest.mark.parametrize("runtime", RUNTIMES)
def test_create_sets_every_option_in_the_header(workdir, runtime):
    path = os.path.join(workdir, "c.pmtx")
    p = run("create", path, "--size", "16M", "--max-size", "1G", "--layout",
            "kv-store", "--runtime", runtime, "--root-size", "1K",
            "--ndesc", "8", check=0)
    assert path in p.stdout
    i = info(path)
    assert i["layout"] == "kv-store"
    assert i["default_runtime"] == runtime
    assert i["root_size"] == 1024
    assert i["ndesc"] == 8 and len(i["descriptors"]) == 8
    # a growing region's size is a whole number of superblocks
    assert (16 << 20) - 65536 < i["initial_size"] <= 16 << 20
    assert i["size"] == i["initial_size"] == os.path.getsize(path)
    assert i["max_size"] == 1 << 30
    assert i["superblocks"] < i["max_superblocks"]
    assert i["format"]["major"] == 3


def test_create_twin_makes_a_fixed_region_with_a_back_copy(workdir):
    path = os.path.join(workdir, "t.pmtx")
    p = run("create", path, "--size", "16M", "--max-size", "1G",
            "--runtime", "twin", check=2)
    assert "twin region has a fixed size" in p.stderr
    assert not os.path.exists(path)
    run("create", path, "--size", "16M", "--runtime", "twin", "--root-size",
        "1K", check=0)
    i = info(path)
    assert i["default_runtime"] == "twin"
    assert i["format"]["minor"] == 6
    assert i["format"]["incompat"] == 1 | 2 | 4 | 8  # twin, seal, mark, reseal
    fast = os.path.join(workdir, "f.pmtx")
    run("create", fast, "--size", "16M", "--runtime", "twin",
        "--fast-restart", check=0)
    assert info(fast)["format"]["incompat"] == 1 | 2 | 4  # no reseal
    assert i["twin_state"] == "IDLE"
    a = i["areas"]
    # the back copy of root .. heap end follows the heap, within the file
    assert a["twin_off"] == a["heap_off"] + i["superblocks"] * 65536
    assert 2 * a["twin_off"] - a["root_off"] == a["seal_off"]
    assert a["seal_off"] + 4096 <= i["size"] == 16 << 20
    out = run("info", path, check=0).stdout
    assert "state IDLE" in out and "back copy" in out
    run("check", path, check=0)
    # a plain region has none
    plain = os.path.join(workdir, "p.pmtx")
    run("create", plain, "--size", "16M", check=0)
    assert info(plain)["areas"]["twin_off"] == 0
    assert "twin_state" not in info(plain)


def test_create_without_max_size_is_fixed_and_defaults_apply(workdir):
    path = os.path.join(workdir, "c.pmtx")
    run("create", path, "--size", "2097152", check=0)
    i = info(path)
    assert i["size"] == i["max_size"] == i["initial_size"] == 2 << 20
    assert i["superblocks"] == i["max_superblocks"]
    assert i["default_runtime"] == "undo" and i["ndesc"] == 64
    assert i["layout"] == "" and i["root_size"] == 0


@pytest.mark.parametrize("args", [
    [],                                          # no FILE, no --size
    ["--size", "8M"],                            # no FILE
    ["FILE"],                                    # no --size
    ["FILE", "--size", "12X"],
    ["FILE", "--size", "-1"],
    ["FILE", "--size", "99999999999T"],          # overflows 64 bits
    ["FILE", "--size", "8M", "--runtime", "fast"],
    ["FILE", "--size", "8M", "--ndesc", "0"],
    ["FILE", "--size", "8M", "--ndesc", "100000"],
    ["FILE", "--size", "8M", "--layout", "x" * 64],
    ["FILE", "--size", "8M", "--bogus"],
    ["FILE", "--size", "8M", "EXTRA"],
    ["FILE", "--size", "1K"],                    # too small for a region
    ["FILE", "--size", "8M", "--max-size", "4M"],
])
def test_create_bad_arguments_exit_2_and_create_nothing(workdir, args):
    path = os.path.join(workdir, "bad.pmtx")
    p = run("create", *[path if a == "FILE" else a for a in args], check=2)
    assert "usage: pmtx create" in p.stderr or "pmtx create:" in p.stderr
    assert p.stderr.strip()
    assert not os.path.exists(path)


def test_create_refuses_an_existing_file(region):
    before = fingerprint(region)
    p = run("create", region, "--size", "8M", check=1)
    assert "exists" in p.stderr
    assert fingerprint(region) == before


# ---- info ----

def test_info_text_names_every_header_field(region):
    out = run("info", region, check=0).stdout
    for field in ["magic", "format           3.6", "layout           \"test\"",
                  "uuid", "created", "initial size     8388608",
                  "current size     8388608", "maximum size     8388608",
                  "superblocks", "descriptors      64", "root size        64",
                  "default runtime  undo", "needs recovery   no",
                  "closed           cleanly", "heap check       ok"]:
        assert field in out, f"{field!r} missing from:\n{out}"


def test_info_json_describes_a_fresh_region(region):
    i = info(region)
    assert i["magic"] == "0x314e475258544d50"
    assert (i["format"]["major"], i["format"]["minor"]) == (3, 6)
    assert i["format"]["incompat"] == 4      # the journal mark (3.4)
    assert re.fullmatch(r"[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}",
                        i["uuid"])
    assert i["create_time"] > 1500000000
    assert i["size"] == i["file_size"] == 8 << 20
    assert i["needs_recovery"] is False
    assert i["closed_cleanly"] is True
    assert all(d["state"] == "IDLE" for d in i["descriptors"])
    assert i["heap"]["ok"] is True
    assert i["heap"]["allocated_blocks"] == 0
    assert i["heap"]["superblocks"] == i["superblocks"]
    assert len(i["heap"]["classes"]) > 30


def test_info_heap_usage_counts_an_allocated_block(region):
    off, usable = map(int, fixture("fill", region, 200))
    h = info(region)["heap"]
    used = [c for c in h["classes"] if c["allocated"]]
    assert len(used) == 1
    assert used[0]["block_size"] == usable + 16       # + object header
    assert used[0]["allocated"] == 1
    assert used[0]["allocated_bytes"] == used[0]["block_size"]
    assert h["allocated_blocks"] == 1
    assert h["free_superblocks"] == h["superblocks"] - 1


def test_info_of_a_grown_region_shows_current_and_maximum_size(workdir):
    path = os.path.join(workdir, "g.pmtx")
    run("create", path, "--size", "1M", "--max-size", "32M", check=0)
    before = info(path)
    size, max_bytes = map(int, fixture("grow", path, 3 << 20))
    i = info(path)
    assert i["initial_size"] == before["size"]
    assert i["size"] == size > i["initial_size"]
    assert i["size"] <= i["file_size"]
    assert i["max_size"] == 32 << 20
    assert i["max_region_bytes"] == max_bytes
    assert i["superblocks"] > before["superblocks"]
    assert i["max_superblocks"] == before["max_superblocks"]
    text = run("info", path, check=0).stdout
    assert f"current size     {size}" in text
    assert f"maximum size     {32 << 20} (grows" in text


@pytest.mark.parametrize("content", [b"", b"x" * 100, b"\0" * 8192])
def test_info_of_a_non_region_exits_1(workdir, content):
    path = os.path.join(workdir, "junk")
    with open(path, "wb") as f:
        f.write(content)
    p = run("info", path, check=1)
    assert "pmtx info:" in p.stderr and "PMTX_E_" in p.stderr


def test_info_of_a_missing_file_exits_1(workdir):
    p = run("info", os.path.join(workdir, "nope.pmtx"), check=1)
    assert "No such file" in p.stderr


# ---- check ----

def test_check_passes_a_good_region(region):
    fixture("fill", region, 1000)
    p = run("check", region, check=0)
    assert p.stdout.rstrip().endswith(": ok")
    assert "recovery         not needed" in p.stdout


def test_check_names_the_checksum_of_a_flipped_header_byte(region):
    bad = copy(region, "flip.pmtx")
    with open(bad, "r+b") as f:
        f.seek(104)                       # first byte of the UUID
        b = f.read(1)
        f.seek(104)
        f.write(bytes([b[0] ^ 0x01]))
    p = run("check", bad, check=1)
    assert "checksum" in p.stderr and "PMTX_E_BAD_CHECKSUM" in p.stderr


def test_check_says_truncated_for_a_short_file(region):
    bad = copy(region, "short.pmtx")
    os.truncate(bad, os.path.getsize(bad) // 2)
    p = run("check", bad, check=1)
    assert "truncated" in p.stderr.lower()
    assert "4194304" in p.stderr          # says how short


def test_check_names_the_superblock_of_a_garbage_bitmap_word(region):
    bad = copy(region, "bits.pmtx")
    meta = info(bad)["areas"]["meta_off"]
    patch(bad, meta + 3 * META_SIZE + BITMAP_AT + 8,
          (0xdeadbeef).to_bytes(8, "little"))
    p = run("check", bad, check=1)
    assert "superblock 3" in p.stderr, p.stderr


def test_check_names_the_superblock_of_a_bit_past_the_last_block(region):
    off, usable = map(int, fixture("fill", region, 1000))   # 1 KiB class
    i = info(region)
    s = (off - i["areas"]["heap_off"]) // 65536
    bad = copy(region, "past.pmtx")
    # 64 blocks of 1 KiB: bitmap word 1 must stay zero
    patch(bad, i["areas"]["meta_off"] + s * META_SIZE + BITMAP_AT + 8,
          (1).to_bytes(8, "little"))
    p = run("check", bad, check=1)
    assert f"superblock {s}" in p.stderr, p.stderr
    assert "past the last block" in p.stderr


def test_check_finds_a_corrupt_descriptor(region):
    bad = copy(region, "desc.pmtx")
    d = info(bad)["areas"]["desc_off"]
    patch(bad, d + 5 * 256 + 16, (12345).to_bytes(8, "little"))  # log_head
    p = run("check", bad, check=1)
    assert "descriptor 5" in p.stderr


def test_check_finds_a_nonzero_reserved_word_of_a_descriptor(region):
    bad = copy(region, "resv.pmtx")
    d = info(bad)["areas"]["desc_off"]
    patch(bad, d + 9 * 256 + 32 + 8 * 4, b"\x01")   # reserved[4]
    p = run("check", bad, check=1)
    assert "descriptor 9: reserved word 4" in p.stderr, p.stderr


def test_corrupt_metadata_never_crashes_the_command(region):
    fixture("fill", region, 300)
    a = info(region)["areas"]
    fixture("crash", region)              # a log for recovery to read
    areas = [(a["rstate_off"], 64), (a["desc_off"], 64 * 256),
             (a["log0_off"], 4096), (a["meta_off"], 4096),
             (a["root_off"], 64), (a["heap_off"], 4096)]
    rng = random.Random(7)
    for k in range(30):
        start, length = areas[k % len(areas)]
        off = start + rng.randrange(length)
        bad = copy(region, f"fuzz{k}.pmtx")
        patch(bad, off, bytes([rng.randrange(256)]) * rng.choice([1, 8]))
        for sub in (["info", "--json"], ["check"], ["dump", "0x1000"]):
            p = run(sub[0], bad, *sub[1:])
            assert p.returncode in (0, 1), (off, sub, p.stderr)
        os.unlink(bad)


# ---- a region that needs recovery ----

def test_info_reports_a_crashed_transaction_as_needing_recovery(crashed):
    i = info(crashed)
    assert i["needs_recovery"] is True
    running = [d for d in i["descriptors"] if d["state"] == "RUNNING"]
    assert len(running) == 1 and running[0]["runtime"] == "undo"
    assert i["recovery"]["descriptors_changed"] == 1
    assert i["closed_cleanly"] is False     # layout.h G4
    text = run("info", crashed, check=0).stdout
    assert "needs recovery   yes" in text
    assert "closed           not cleanly" in text
    assert re.search(r"descriptor \d+ +RUNNING +undo", text)


def test_check_validates_a_region_that_needs_recovery(crashed):
    p = run("check", crashed, check=0)
    assert "recovery         needed" in p.stdout
    assert "succeeded in a private view" in p.stdout


def test_recover_rolls_back_and_info_then_says_no_recovery(crashed):
    root = info(crashed)["areas"]["root_off"] + 16
    _, data = dumped_bytes(run("dump", crashed, root, 8, check=0).stdout)
    assert data == b"CRASHED!"             # the uncommitted store, on file
    p = run("recover", crashed, check=0)
    assert "1 of 64 descriptors were not IDLE" in p.stdout
    assert re.search(r"descriptor \d+: RUNNING undo version \d+ -> IDLE",
                     p.stdout)
    i = info(crashed)
    assert i["needs_recovery"] is False
    assert i["closed_cleanly"] is True      # recover closes it cleanly
    assert all(d["state"] == "IDLE" for d in i["descriptors"])
    _, data = dumped_bytes(run("dump", crashed, root, 8, check=0).stdout)
    assert data == bytes(8)                # rolled back
    p = run("recover", crashed, check=0)
    assert "nothing to recover" in p.stdout


def root_bytes(path, n=8):
    root = info(path)["areas"]["root_off"] + 16
    return dumped_bytes(run("dump", path, root, n, check=0).stdout)[1]


def test_recover_applies_a_journal_and_removes_it(region):
    fixture("journal", region, 3)          # commits in r.pmtx.pmtxj only
    assert os.path.exists(region + ".pmtxj")
    p = run("info", region, check=1)       # a private view refuses it
    assert "pmtx recover" in p.stderr
    p = run("recover", region, check=0)
    assert "journal" in p.stdout and "applied" in p.stdout
    assert not os.path.exists(region + ".pmtxj")
    assert root_bytes(region) == b"JOURNAL3"
    assert info(region)["journal_due"] is False


def test_a_region_whose_journal_is_missing_is_refused_until_forgotten(
        region):
    fixture("journal", region, 2)
    os.unlink(region + ".pmtxj")
    before = fingerprint(region)
    for args in (["info"], ["check"], ["recover"]):
        p = run(args[0], region, check=1)
        assert "which is missing" in p.stderr, args
        assert fingerprint(region) == before, args
    p = run("recover", region, "--forget-journal", check=0)
    assert root_bytes(region) == bytes(8)  # as of the last checkpoint
    assert info(region)["journal_due"] is False
    run("check", region, check=0)


def test_recover_of_a_corrupt_region_exits_1_and_leaves_it(region):
    bad = copy(region, "flip.pmtx")
    patch(bad, 130, b"\x55")
    before = fingerprint(bad)
    p = run("recover", bad, check=1)
    assert "checksum" in p.stderr
    assert fingerprint(bad) == before


@pytest.mark.parametrize("state", ["clean", "crashed", "filled"])
def test_read_only_subcommands_leave_bytes_and_mtime_unchanged(region, state):
    if state == "crashed":
        fixture("crash", region)
    elif state == "filled":
        fixture("fill", region, 5000)
    os.utime(region, ns=(10**18, 10**18))   # an mtime nothing else makes
    before = fingerprint(region)
    for args in (["info"], ["info", "--json", "--all"], ["check"],
                 ["dump", "0"], ["dump", "0x150010", "100"]):
        run(args[0], region, *args[1:], check=0)
        assert fingerprint(region) == before, args


@pytest.mark.parametrize("sub", [["info"], ["check"], ["dump", "0"],
                                 ["recover"]])
def test_a_region_open_in_another_process_is_refused(region, sub):
    holder = subprocess.Popen([FIXTURE, "hold", region], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        p = run(sub[0], region, *sub[1:], check=1)
        assert "PMTX_E_LOCKED" in p.stderr
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0


# ---- dump ----

def test_dump_shows_the_bytes_a_transaction_wrote(region):
    off, usable = map(int, fixture("fill", region, 200))
    first, data = dumped_bytes(run("dump", region, off, check=0).stdout)
    assert first == off
    assert len(data) == usable             # default: the block's size
    assert data[:200] == pattern(200)
    first, data = dumped_bytes(run("dump", region, hex(off + 5), "10",
                                   check=0).stdout)
    assert first == off + 5 and data == pattern(200)[5:15]


def test_dump_default_is_64_bytes_outside_an_allocated_block(region):
    _, data = dumped_bytes(run("dump", region, 0, check=0).stdout)
    assert len(data) == 64 and data[:8] == b"PMTXRGN1"


@pytest.mark.parametrize("where", ["size", "size+1", "end-8 16"])
def test_dump_refuses_a_range_outside_the_region(region, where):
    size = os.path.getsize(region)
    args = {"size": [size], "size+1": [size + 1],
            "end-8 16": [size - 8, 16]}[where]
    p = run("dump", region, *args, check=1)
    assert "outside the region" in p.stderr or "past" in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("args", [["R"], ["R", "zz"], ["R", "0", "-4"],
                                  ["R", "0", "1", "2"], ["R", "1Q"]])
def test_dump_bad_arguments_exit_2(region, args):
    p = run("dump", *[region if a == "R" else a for a in args], check=2)
    assert "usage: pmtx dump" in p.stderr or "pmtx dump:" in p.stderr


# ---- help, usage and manual pages ----

@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help_of_every_subcommand_exits_0(sub):
    p = run(*sub.split(), "--help", check=0)
    assert p.stdout.startswith(f"usage: pmtx {sub}")
    assert "exit status" in p.stdout


def test_help_lists_every_subcommand():
    out = run("help", check=0).stdout
    for sub in SUBCOMMANDS + ["crashtest"]:
        assert f"  {sub} " in out


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["info"],
                                  ["check", "a", "b"], ["info", "--bogus",
                                                        "x"]])
def test_usage_errors_exit_2(args):
    run(*args, check=2)


MAN = os.path.join(ROOT, "docs", "man")


@pytest.mark.parametrize("page", ["pmtx", "pmtx-trace-analyze"] +
                         [f"pmtx-{s}" for s in SUBCOMMANDS if " " not in s])
def test_manual_page_renders_without_warnings(page):
    path = os.path.join(MAN, page + ".1")
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    text = open(path).read()
    first = next(l for l in text.splitlines() if not l.startswith('.\\"'))
    assert first.startswith(f".TH {page.upper()} 1 ")  # after comments
    for section in (".SH NAME", ".SH SYNOPSIS", ".SH EXIT STATUS"):
        assert section in text


def test_overview_page_names_every_subcommand():
    text = open(os.path.join(MAN, "pmtx.1")).read()
    for sub in SUBCOMMANDS + ["crashtest", "help"]:
        assert re.search(r"^\.(TP\n\.)?B[IR]? \"?" + sub, text, re.M), sub
