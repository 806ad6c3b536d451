#!/usr/bin/env python3
"""A short outage, as a soak: --rows rows at --concurrency against `showbatch emulate` on loopback
(answers after --latency-ms), the emulator killed (SIGKILL: connections reset, then refused) for
--outage seconds at a different moment in each of --runs runs, then started again on the same port.
Prints each run's exit code and failed rows, and the totals: a row must never fail for an outage.
With --compare BINARY each run is made with that build too, the outage at the same moment. The
moments are seeded (--seed).

usage: bench/outage.py [--rows 4000] [--concurrency 8] [--outage 3] [--runs 10] [--latency-ms 1]
                       [--binary PATH] [--compare PATH] [--seed 26]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import BINARY, build_release, free_port, machine, say, wait_port, write_rows_manifest


def emulator(binary, port, latency):
    return subprocess.Popen([binary, "emulate", "--port", str(port), "--latency", f"{latency}ms"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_run(binary, args, after, work, name):
    port = free_port()
    server = emulator(binary, port, args.latency_ms)
    wait_port(port)
    manifest = write_rows_manifest(work, args.rows, port, args.concurrency, name=f"{name}.yaml", output=f"out/{name}.csv")
    run = subprocess.Popen([binary, "run", manifest, "--progress", "never", "--quiet"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def outage():
        nonlocal server
        time.sleep(after)
        server.kill()
        server.wait()
        time.sleep(args.outage)
        server = emulator(binary, port, args.latency_ms)

    killer = threading.Thread(target=outage)
    killer.start()
    start = time.perf_counter()
    code = run.wait(timeout=900)
    elapsed = time.perf_counter() - start
    killer.join()
    server.terminate()
    server.wait()
    failed = 0
    with open(os.path.join(work, "out", f"{name}.csv")) as f:
        next(f)
        for line in f:
            if line.split(",")[1] == "failed":
                failed += 1
    return code, failed, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--outage", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--latency-ms", type=int, default=1)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--binary")
    parser.add_argument("--compare")
    args = parser.parse_args()
    binary = args.binary or build_release()
    builds = [("showbatch", binary)] + ([("compare", args.compare)] if args.compare else [])
    say(f"{args.rows} rows, concurrency {args.concurrency}, latency {args.latency_ms} ms, the emulator killed for "
        f"{args.outage:g} s once a run; {machine()}")
    # The moment of each outage: within the first 60% of a run's length without one.
    rows_per_s = 1000 * args.concurrency / max(1, args.latency_ms + 1)
    span = min(3.0, args.rows / rows_per_s * 0.6)
    moments = random.Random(args.seed).sample(range(5, 100), args.runs)
    work = tempfile.mkdtemp(prefix="bench-outage-")
    totals = {name: [0, 0] for name, _ in builds}
    for index, moment in enumerate(moments):
        after = 0.1 + span * moment / 100
        for name, path in builds:
            code, failed, elapsed = one_run(path, args, after, work, f"{name}{index}")
            totals[name][0] += failed
            totals[name][1] += code != 0
            say(f"run {index + 1:2d} outage at {after:.2f} s  {name:10s} exit {code}  failed rows {failed}  {elapsed:.1f} s")
    for name, (failed, nonzero) in totals.items():
        say(f"{name:10s} {failed} rows failed in {args.runs} runs; {nonzero} runs did not exit 0")


if __name__ == "__main__":
    main()
