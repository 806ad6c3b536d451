#!/usr/bin/env python3
"""Latency-bound efficiency: the emulator answers after 50 ms; with concurrency 100 the ideal rate
is 100 / 0.05 s = 2,000 requests/s. Prints the achieved rate over the ideal (median of runs), for
showbatch and, alternated with it, for `curl --parallel` doing the same requests: the emulator's own
timing (a thread per connection sleeping out the latency) caps both.

With --binary a build is used instead of building; --compare BINARY adds another build (the one
before a change), alternated in the same runs.

usage: bench/latency.py [--requests 5000] [--concurrency 100] [--latency-ms 50] [--runs 3]
                        [--binary PATH] [--compare PATH]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import Emulator, apt_install, build_release, curl_parallel, machine, median, say, timed, write_curl_config, write_rows_manifest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--binary")
    parser.add_argument("--compare")
    args = parser.parse_args()
    binary = args.binary or build_release()
    apt_install("curl")
    ideal = args.concurrency / (args.latency_ms / 1000)
    say(f"{args.requests} requests, concurrency {args.concurrency}, latency {args.latency_ms} ms, ideal {ideal:.0f} req/s; {machine()}")
    emulator = Emulator("--latency", f"{args.latency_ms}ms")
    work = tempfile.mkdtemp(prefix="bench-latency-")
    try:
        manifest = write_rows_manifest(work, args.requests, emulator.port, args.concurrency)
        config = write_curl_config(work, args.requests, emulator.port)
        rates, curl_rates, compare_rates = [], [], []
        for _ in range(args.runs):
            rates.append(args.requests / timed([binary, "run", manifest, "--progress", "never", "--quiet"]))
            curl_rates.append(args.requests / timed(curl_parallel(config, args.concurrency)))
            if args.compare:
                compare_rates.append(args.requests / timed([args.compare, "run", manifest, "--progress", "never", "--quiet"]))
    finally:
        emulator.stop()
    rows = [("showbatch run", rates), ("curl --parallel", curl_rates)] + ([("compare", compare_rates)] if args.compare else [])
    for name, values in rows:
        achieved = median(values)
        say(f"{name:15s} median {achieved:5.0f} req/s = {achieved / ideal * 100:.1f}% of concurrency/latency"
            f"  runs: {', '.join(f'{v:.0f}' for v in values)}")
    say(f"showbatch / curl = {median(rates) / median(curl_rates):.3f}")
    if args.compare:
        say(f"showbatch / compare = {median(rates) / median(compare_rates):.3f}")


if __name__ == "__main__":
    main()
