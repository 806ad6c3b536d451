#!/usr/bin/env python3
"""Throughput of `showbatch run` against the emulator and against nginx (static JSON body) on
loopback, next to `curl --parallel` and an aiohttp script doing the same requests in the same run
(alternated).

Each showbatch run reveals N data rows (a CSV streamed through `each`), parses every response,
extracts a label and writes a CSV file; curl only sends the requests and discards the answers.
With curl as a peer it also prints the median CPU time (user + system) of a run of each.

usage: bench/throughput.py [--requests 20000] [--concurrency 16,32,64] [--runs 3] [--targets emulator,nginx]
                          [--peers curl,aiohttp] [--compare OTHER_SHOWBATCH] [--encrypt] [--stdout]

`--compare` runs another showbatch binary (an earlier build) alternated with this one, so that a
change is measured before and after in the same run. `--encrypt` also runs the same manifest with
its output encrypted (`output.encrypt` to a key made for the benchmark, with a state key),
alternated, and checks that gpg decrypts it to the unencrypted run's bytes. `--stdout` writes the
rows to standard output (`--output -`) into a pipe read by `wc -l`, instead of to a file: the path
where each write waits for room in the pipe and can be given up when the run is interrupted.
"""
import argparse
import base64
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import (Emulator, Nginx, apt_install, build_release, child_cpu, curl_parallel, machine, median, say, timed,
                 write_curl_config, write_rows_manifest)

def write_inputs(work, requests, concurrency, port):
    manifest = write_rows_manifest(work, requests, port, concurrency, name=f"m{port}.yaml", output=f"out/revealed-{port}.csv")
    return manifest, write_curl_config(work, requests, port)


def make_recipient(work):
    """A GnuPG home with a key made for the benchmark, and its public key file."""
    home = os.path.join(work, "gnupg")
    os.makedirs(home, mode=0o700)
    gpg = ["gpg", "--homedir", home, "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run(gpg + ["--quick-gen-key", "bench <bench@example.test>", "future-default", "default", "1d"], check=True)
    key = os.path.join(work, "recipient.asc")
    subprocess.run(gpg + ["--armor", "--output", key, "--export", "bench@example.test"], check=True)
    return gpg, key


def encrypted_manifest(manifest, port, key):
    """The manifest with its output encrypted to `key`, resumable (a state key in the manifest)."""
    with open(manifest) as f:
        text = f.read()
    state = base64.b64encode(os.urandom(32)).decode()
    text = text.replace(f"output: {{path: out/revealed-{port}.csv}}",
                        f"output: {{path: out/revealed-{port}.csv.pgp, encrypt: {{recipients: [{key}], state_key: \"{state}\"}}}}")
    path = manifest.replace(".yaml", "-encrypted.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", default="16,32,64", help="comma-separated levels")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="emulator,nginx")
    parser.add_argument("--peers", default="curl,aiohttp")
    parser.add_argument("--compare", help="another showbatch binary to alternate with this one")
    parser.add_argument("--binary", help="measure this showbatch binary instead of building one")
    parser.add_argument("--encrypt", action="store_true", help="also run with the output encrypted (output.encrypt)")
    parser.add_argument("--stdout", action="store_true",
                        help="write the rows to standard output (--output -) through a pipe to wc, not to a file")
    args = parser.parse_args()
    binary = args.binary or build_release()
    apt_install("curl")
    peers = args.peers.split(",")
    if "aiohttp" in peers:
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            say("installing aiohttp (pip)")
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "aiohttp"], check=True)
    aiohttp_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aiohttp_peer.py")
    say(f"{args.requests} requests, concurrency {args.concurrency}, {args.runs} alternated runs; {machine()}")
    for target, concurrency in [(t, int(c)) for t in args.targets.split(",") for c in args.concurrency.split(",")]:
        server = Emulator() if target == "emulator" else Nginx()
        work = tempfile.mkdtemp(prefix="bench-throughput-")
        try:
            manifest, config = write_inputs(work, args.requests, concurrency, server.port)
            if args.encrypt:
                gpg, key = make_recipient(work)
                encrypted = encrypted_manifest(manifest, server.port, key)
            sealed = []
            ours = []
            theirs = {peer: [] for peer in peers}
            # CPU seconds per run (user + system): steadier than wall time on a shared machine.
            cpu = {"showbatch": [], "curl": [], "compare": []}
            compared = []
            counted = os.path.join(work, "stdout-rows")

            def run(showbatch, path):
                """One run of `showbatch` on `path`: to its output file, or through a pipe to wc."""
                if not args.stdout:
                    return [showbatch, "run", path, "--progress", "never", "--quiet"]
                return ["sh", "-c", f"'{showbatch}' run '{path}' --progress never --quiet --output - | wc -l > '{counted}'"]
            for _ in range(args.runs):
                if args.compare:
                    before = child_cpu()
                    compared.append(args.requests / timed(run(args.compare, manifest)))
                    cpu["compare"].append(child_cpu() - before)
                before = child_cpu()
                ours.append(args.requests / timed(run(binary, manifest)))
                cpu["showbatch"].append(child_cpu() - before)
                if args.encrypt:
                    before = child_cpu()
                    sealed.append(args.requests / timed([binary, "run", encrypted, "--progress", "never", "--quiet"]))
                    cpu.setdefault("encrypted", []).append(child_cpu() - before)
                if "curl" in peers:
                    before = child_cpu()
                    theirs["curl"].append(args.requests / timed(curl_parallel(config, concurrency)))
                    cpu["curl"].append(child_cpu() - before)
                if "aiohttp" in peers:
                    theirs["aiohttp"].append(args.requests / timed([sys.executable, aiohttp_script, f"{server.url}/post",
                                                                    str(args.requests), str(concurrency)]))
            if args.stdout:
                with open(counted) as f:
                    rows = int(f.read()) - 1
            else:
                with open(os.path.join(work, f"out/revealed-{server.port}.csv")) as f:
                    rows = sum(1 for _ in f) - 1
            assert rows == args.requests, f"showbatch wrote {rows} rows"
            a = median(ours)
            say(f"[{target} c={concurrency}] showbatch run   median {a:8.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in ours)}")
            if sealed:
                # The message decrypts to the unencrypted run's rows (attempts aside, the same bytes).
                plain = subprocess.run(gpg + ["--decrypt", os.path.join(work, f"out/revealed-{server.port}.csv.pgp")],
                                       capture_output=True, check=True).stdout
                with open(os.path.join(work, f"out/revealed-{server.port}.csv"), "rb") as f:
                    assert plain.count(b"\n") == f.read().count(b"\n"), "the encrypted output does not hold the rows"
                e = median(sealed)
                say(f"[{target} c={concurrency}] encrypted run   median {e:8.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in sealed)}")
                say(f"[{target} c={concurrency}] encrypted / plain = {e / a:.3f}; CPU per run {median(cpu['encrypted']):.3f} s "
                    f"against {median(cpu['showbatch']):.3f} s")
                subprocess.run(["gpgconf", "--homedir", gpg[2], "--kill", "all"])
            for peer, values in theirs.items():
                b = median(values)
                say(f"[{target} c={concurrency}] {peer:14s} median {b:8.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in values)}")
                say(f"[{target} c={concurrency}] showbatch / {peer} = {a / b:.2f}")
            if compared:
                b = median(compared)
                say(f"[{target} c={concurrency}] compared binary median {b:8.0f} req/s  runs: {', '.join(f'{v:.0f}' for v in compared)}")
                say(f"[{target} c={concurrency}] showbatch / compared = {a / b:.2f}; CPU per run {median(cpu['showbatch']):.3f} s "
                    f"against {median(cpu['compare']):.3f} s")
                if "curl" in theirs:
                    say(f"[{target} c={concurrency}] compared / curl = {b / median(theirs['curl']):.2f}")
            if cpu["curl"]:
                say(f"[{target} c={concurrency}] CPU per run (user+sys), median: showbatch {median(cpu['showbatch']):.3f} s, "
                    f"curl {median(cpu['curl']):.3f} s")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
