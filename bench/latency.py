#!/usr/bin/env python3
"""Latency-bound efficiency: the emulator answers after 50 ms; with concurrency 100 the ideal rate
is 100 / 0.05 s = 2,000 requests/s. Prints the achieved rate over the ideal (median of runs).

usage: bench/latency.py [--requests 5000] [--concurrency 100] [--latency-ms 50] [--runs 3]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import Emulator, build_release, machine, median, say, timed, write_rows_manifest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    binary = build_release()
    ideal = args.concurrency / (args.latency_ms / 1000)
    say(f"{args.requests} requests, concurrency {args.concurrency}, latency {args.latency_ms} ms, ideal {ideal:.0f} req/s; {machine()}")
    emulator = Emulator("--latency", f"{args.latency_ms}ms")
    work = tempfile.mkdtemp(prefix="bench-latency-")
    try:
        manifest = write_rows_manifest(work, args.requests, emulator.port, args.concurrency)
        rates = [args.requests / timed([binary, "run", manifest, "--progress", "never", "--quiet"]) for _ in range(args.runs)]
    finally:
        emulator.stop()
    achieved = median(rates)
    say(f"showbatch run median {achieved:.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in rates)}")
    say(f"efficiency = {achieved / ideal * 100:.1f}% of concurrency/latency")


if __name__ == "__main__":
    main()
