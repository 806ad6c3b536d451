#!/usr/bin/env python3
"""Peak RSS of `showbatch run` streaming data rows against the emulator, measured with
/usr/bin/time -v, at several row counts: it should depend on concurrency, not on rows.

usage: bench/memory.py [--rows 100000,1000000] [--concurrency 32]
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    binary = build_release()
    apt_install("time")
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
