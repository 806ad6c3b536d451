#!/usr/bin/env python3
"""What a header and trailer cost: `run --emulate` of a night of N data rows whose output has
`header:` and `trailer:` (a count and an exact sum, totalled from the finished file's rows, and the
file copied around them), against the same night without them, alternated, medians of wall time
and of CPU.

usage: bench/envelope.py [--rows 200000] [--runs 5] [--binary PATH]
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import build_release, child_cpu, machine, median, say, timed


def manifest(work, name, rows, envelope):
    data = os.path.join(work, "d.csv")
    if not os.path.exists(data):
        with open(data, "w") as f:
            f.write("id,alias,amount\n")
            for i in range(rows):
                f.write(f"{i},tok_{i % 2},{i % 1000}.{i % 100:02d}\n")
    lines = '  header: "H,${run.rows}"\n  trailer: "T,${run.rows},${run.sum.amount}"\n' if envelope else ""
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(f"""vault: tnt1
concurrency: 32
output:
  path: out/{name}.csv
  columns: [request, card, {{amount: "${{row.amount}}"}}]
{lines}emulator: {{aliases: {{tok_0: "4000000000000000", tok_1: "4111111111111111"}}}}
requests:
  - name: "r${{row.id}}"
    each: {{csv: d.csv}}
    path: /post
    payload: {{c: "${{row.alias}}"}}
    labels: {{card: json.c}}
""")
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--binary")
    args = parser.parse_args()
    binary = args.binary or build_release()
    say(machine())
    work = tempfile.mkdtemp(prefix="bench-envelope-")
    try:
        plain = manifest(work, "plain", args.rows, False)
        lined = manifest(work, "lined", args.rows, True)
        times = {"plain": [], "lined": []}
        cpus = {"plain": [], "lined": []}
        for _ in range(args.runs):
            for name, path in (("plain", plain), ("lined", lined)):
                shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
                before = child_cpu()
                times[name].append(timed([binary, "run", path, "--emulate", "--quiet", "--progress", "never"], cwd=work))
                cpus[name].append(child_cpu() - before)
        for name in ("plain", "lined"):
            say(f"{name}: {median(times[name]):.3f} s wall, {median(cpus[name]):.3f} s CPU (median of {args.runs})")
        say(f"with header and trailer / without: wall {median(times['lined']) / median(times['plain']):.3f}, "
            f"CPU {median(cpus['lined']) / median(cpus['plain']):.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
