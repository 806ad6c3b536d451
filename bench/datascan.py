#!/usr/bin/env python3
"""What reading every data file through when the manifest is read costs: `showbatch validate` on a
manifest whose CSV data file has 1,000,000 rows, against the same manifest with a one-row file
(the difference is the count), and the `run` of those rows against the emulator for scale.

usage: bench/datascan.py [--rows 1000000] [--runs 5] [--no-run]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import Emulator, build_release, machine, median, say, timed, write_rows_manifest


def data_manifest(work, name, rows):
    data = os.path.join(work, f"{name}.csv")
    with open(data, "w") as f:
        f.write("id,alias\n")
        for i in range(rows):
            f.write(f"{i},tok_sandbox_{i:012d}\n")
    manifest = os.path.join(work, f"{name}.yaml")
    with open(manifest, "w") as f:
        f.write(f"""vault: tnt1
output: {{path: out/{name}.csv}}
requests:
  - name: "row-${{row.id}}"
    each: {{csv: {name}.csv}}
    path: /post
    payload: {{card: "${{row.alias}}"}}
""")
    return manifest, os.path.getsize(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-run", action="store_true")
    args = parser.parse_args()
    binary = build_release()
    say(machine())
    work = tempfile.mkdtemp(prefix="bench-datascan-")
    big, size = data_manifest(work, "big", args.rows)
    small, _ = data_manifest(work, "small", 1)
    big_times, small_times = [], []
    for _ in range(args.runs):
        big_times.append(timed([binary, "validate", big]))
        small_times.append(timed([binary, "validate", small]))
    scan = median(big_times) - median(small_times)
    say(f"validate, {args.rows:,} rows ({size / 1e6:.1f} MB): {median(big_times):.3f} s; one row: {median(small_times):.3f} s; "
        f"the count: {scan:.3f} s ({size / 1e6 / scan:.0f} MB/s)")
    if args.no_run:
        return
    emulator = Emulator()
    try:
        manifest = write_rows_manifest(work, args.rows, emulator.port, 32, name="run.yaml")
        elapsed = timed([binary, "run", manifest, "--progress", "never"], cwd=work)
        say(f"run, {args.rows:,} rows at concurrency 32 against the emulator: {elapsed:.1f} s; the count is {100 * scan / elapsed:.2f}% of it")
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
