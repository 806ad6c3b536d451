#!/usr/bin/env python3
"""`showbatch validate` on a generated 50,000-request manifest (13.7 MB), alternated with the raw
libyaml event loop (yaml_events.c) and PyYAML's CSafeLoader on the same file. Prints medians and
ratios, and showbatch's peak RSS (measured with /usr/bin/time) against the manifest's size.

usage: bench/validate.py [--runs N] [--requests N] [--compare OTHER_SHOWBATCH] [--errors]

`--compare` times another showbatch binary (an earlier build) alternated with this one.
`--errors` misspells a key in every request, so that validate reports 50,000 problems: how long
rendering that many problems takes (each with its quoted line, cleared of secrets).
Run it under `taskset -c 0` for one core.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import ROOT, apt_install, build_release, machine, median, say, timed


def generate(path, count, errors=False):
    path_key = "pth" if errors else "path"
    with open(path, "w") as f:
        f.write("version: 1\nvault: tntaq8uft80\nenvironment: live\ndata_region: eu-1\nconcurrency: 32\n")
        f.write("headers:\n  X-Team: payments\noutput: {path: out/r.csv}\nrequests:\n")
        for i in range(count):
            f.write(f"""  - name: customer-{i}
    {path_key}: /post
    headers: {{X-Request-Id: "{i}"}}
    payload: {{card_number: tok_live_{i:012d}, exp_date: tok_live_exp_{i:08d}}}
    labels:
      card_number: {{path: json.card_number, mask: {{ranges: [[0, 11]]}}}}
      exp_date: json.exp_date
""")


def run_showbatch(binary, manifest, peaks):
    """Wall seconds of `validate` (exit 0, or 2 when the manifest has problems), its peak RSS in
    KiB appended to `peaks`."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".time") as report:
        start = time.perf_counter()
        result = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, binary, "validate", manifest],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        if result.returncode not in (0, 2):
            raise RuntimeError(f"{binary} exited {result.returncode}")
        peaks.append(int(report.read().strip().splitlines()[-1]))
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--compare", help="another showbatch binary to alternate with this one")
    parser.add_argument("--binary", help="measure this showbatch binary instead of building one")
    parser.add_argument("--errors", action="store_true", help="a problem in every request")
    args = parser.parse_args()
    binary = args.binary or build_release()
    apt_install("python3-yaml", "gcc", "time")
    work = tempfile.mkdtemp(prefix="bench-validate-")
    manifest = os.path.join(work, "big.yaml")
    generate(manifest, args.requests, errors=args.errors)
    raw = os.path.join(work, "yaml_events")
    cflags = subprocess.run(["pkg-config", "--cflags", "--libs", "yaml-0.1"], capture_output=True, text=True).stdout.split()
    subprocess.run(["gcc", "-O2", "-o", raw, os.path.join(ROOT, "bench", "yaml_events.c"), *cflags], check=True)
    pyyaml = [sys.executable if os.path.exists("/usr/bin/python3") is False else "/usr/bin/python3", "-c",
              "import sys, yaml; yaml.load(open(sys.argv[1]), Loader=yaml.CSafeLoader)", manifest]
    size = os.path.getsize(manifest) / 1e6
    say(f"manifest: {args.requests} requests, {size:.1f} MB{', a problem in each' if args.errors else ''}; {machine()}")
    times = {"showbatch validate": [], "raw libyaml events": [], "PyYAML CSafeLoader": []}
    peaks = {"showbatch validate": [], "compared validate": []}
    if args.compare:
        times["compared validate"] = []
    for run in range(args.runs):
        times["showbatch validate"].append(run_showbatch(binary, manifest, peaks["showbatch validate"]))
        if args.compare:
            times["compared validate"].append(run_showbatch(args.compare, manifest, peaks["compared validate"]))
        times["raw libyaml events"].append(timed([raw, manifest]))
        times["PyYAML CSafeLoader"].append(timed(pyyaml))
    medians = {name: median(values) for name, values in times.items()}
    for name, value in medians.items():
        say(f"  {name:22s} median {value * 1000:8.0f} ms  runs: {', '.join(f'{v * 1000:.0f}' for v in times[name])}")
    ours = medians["showbatch validate"]
    say(f"showbatch / raw libyaml = {ours / medians['raw libyaml events']:.2f}x the time")
    if args.compare:
        compared = medians["compared validate"]
        say(f"showbatch / compared = {ours / compared:.2f}x the time; compared / raw libyaml = "
            f"{compared / medians['raw libyaml events']:.2f}x")
    say(f"PyYAML CSafeLoader / showbatch = {medians['PyYAML CSafeLoader'] / ours:.1f}x (how many times faster showbatch is)")
    for name, values in peaks.items():
        if values:
            peak = median(values) * 1024 / 1e6
            say(f"  {name:22s} peak RSS {peak:6.1f} MB = {peak / size:4.1f}x the manifest")


if __name__ == "__main__":
    main()
