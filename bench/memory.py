#!/usr/bin/env python3
"""Peak RSS of `showbatch run` streaming data rows against the emulator, measured with
/usr/bin/time -v, at several row counts: it should depend on concurrency, not on rows.

With `--manifests`, peak RSS and time of `showbatch validate` instead, on manifests whose size is
the point: validate.py's 50,000 requests (13.7 MB, plain), a payload of aliases that repeat 5.5
million nodes, and a chain of `<<` merges adding 2 million entries, both just under the 256 MiB
expansion budget, and one link more of the chain, which is refused.

usage: bench/memory.py [--rows 100000,1000000] [--concurrency 32] [--manifests]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import Emulator, apt_install, build_release, machine, say, write_rows_manifest
from validate import generate


def peak(binary, manifest):
    """Peak RSS in MiB, wall seconds and the first line of stderr of `validate`."""
    start = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-v", binary, "validate", manifest], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    return kib / 1024, elapsed, errors[0] if errors else ""


def manifests(binary):
    work = tempfile.mkdtemp(prefix="bench-memory-")
    head = "vault: tnt1\nenvironment: sandbox\nrequests:\n  - name: a\n    path: /p\n    payload:\n"
    plain = os.path.join(work, "plain.yaml")
    generate(plain, 50_000)
    aliases = os.path.join(work, "aliases.yaml")
    with open(aliases, "w") as f:
        f.write(head + "      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
        for level in range(1, 6):
            f.write(f"      l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]\n")
        f.write("      big: [*l5, *l5]\n")
    chains = {}
    for links in (1990, 2000):
        chains[links] = os.path.join(work, f"chain-{links}.yaml")
        with open(chains[links], "w") as f:
            f.write(head + "      a0: &a0 {k0: 0}\n")
            for link in range(1, links):
                f.write(f"      a{link}: &a{link} {{<<: *a{link - 1}, k{link}: {link}}}\n")
    size = os.path.getsize(plain) / 1e6
    rss, elapsed, _ = peak(binary, plain)
    say(f"plain, 50,000 requests ({size:.1f} MB): peak RSS {rss:6.1f} MiB = {rss * 1.048576 / size:.1f}x the manifest, {elapsed:.2f} s")
    rss, elapsed, _ = peak(binary, aliases)
    say(f"aliases repeating 5.5 million nodes:  peak RSS {rss:6.1f} MiB, {elapsed:.2f} s")
    for links, path in chains.items():
        rss, elapsed, error = peak(binary, path)
        say(f"a chain of {links} merges:            peak RSS {rss:6.1f} MiB, {elapsed:.2f} s{'; ' + error.split(': error: ')[-1] if error else ''}")
    subprocess.run(["rm", "-rf", work])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--manifests", action="store_true", help="validate's memory on large manifests instead")
    parser.add_argument("--binary", help="measure this showbatch binary instead of building one")
    args = parser.parse_args()
    binary = args.binary or build_release()
    apt_install("time")
    if args.manifests:
        say(machine())
        manifests(binary)
        return
    say(f"concurrency {args.concurrency}; {machine()}")
    emulator = Emulator()
    try:
        for count in [int(v) for v in args.rows.split(",")]:
            work = tempfile.mkdtemp(prefix="bench-memory-")
            manifest = write_rows_manifest(work, count, emulator.port, args.concurrency)
            start = time.perf_counter()
            result = subprocess.run(["/usr/bin/time", "-v", binary, "run", manifest, "--progress", "never", "--quiet"],
                                    capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
            with open(os.path.join(work, "out/rows.csv")) as f:
                rows = sum(1 for _ in f) - 1
            say(f"{count:>9} rows: peak RSS {peak / 1024:6.1f} MiB, {elapsed:6.1f} s, {rows} rows written, exit {result.returncode}")
            subprocess.run(["rm", "-rf", work])
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
