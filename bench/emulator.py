#!/usr/bin/env python3
"""Request rate of `showbatch emulate` against nginx serving a static JSON body, both on loopback,
measured with wrk (64 connections, 2 threads) in alternated runs. The emulator gets POSTs with a JSON
body holding two aliases (it parses, reveals and echoes them); nginx answers the same POSTs with its
static body.

usage: bench/emulator.py [--runs 3] [--seconds 5] [--connections 64]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import Emulator, Nginx, apt_install, build_release, machine, median, say

SCRIPT = """
wrk.method = "POST"
wrk.body = '{"card_number":"tok_sandbox_abc","exp_date":"tok_sandbox_def","customer":{"id":42}}'
wrk.headers["Content-Type"] = "application/json"
"""


def wrk(url, connections, seconds, script):
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", script, url + "/post"],
                         capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{errors.group(1)} non-2xx answers from {url}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    build_release()
    apt_install("wrk")
    script = os.path.join(tempfile.mkdtemp(prefix="bench-wrk-"), "post.lua")
    with open(script, "w") as f:
        f.write(SCRIPT)
    say(f"wrk -t2 -c{args.connections} -d{args.seconds}s, {args.runs} alternated runs; {machine()}")
    emulator, nginx = Emulator(), Nginx()
    try:
        ours, theirs = [], []
        for _ in range(args.runs):
            ours.append(wrk(emulator.url, args.connections, args.seconds, script))
            theirs.append(wrk(nginx.url, args.connections, args.seconds, script))
    finally:
        emulator.stop()
        nginx.stop()
    a, b = median(ours), median(theirs)
    say(f"showbatch emulate  median {a:9.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in ours)}")
    say(f"nginx static body  median {b:9.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in theirs)}")
    say(f"emulator / nginx = {a / b:.2f}")


if __name__ == "__main__":
    main()
