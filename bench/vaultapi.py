#!/usr/bin/env python3
"""A night through VGS's Vault API against the same night through the reveal proxy, each at its own
rate limit, scaled to a short window.

The Vault API side: --rows rows of two aliases each, revealed with `vault_api: {version: 2}` against
Tests/Fixtures/vault_api.py (a stand-in written apart from showbatch: OAuth2 tokens, up to 20 values
a call, --limit calls per --window seconds, 429 past it, x-ratelimit-remaining on every answer and
no reset header, as the Vault API). The proxy side: --proxy-rows rows, one request each, against a
server letting through limit x 5,000 / 3,000 requests per window (the proxy's 5,000 a minute to
the Vault API's 3,000), plain 429 past it. No `rate_limit` on either: showbatch paces itself.

Prints, for each, the median over --runs of the wall time against the ideal (calls, or requests,
divided by the allowed rate), the calls made against aliases / 20, the share of calls answered 429,
rows failed and exit codes; then rows per second of each and their ratio.

usage: bench/vaultapi.py [--rows 100000] [--proxy-rows 10000] [--limit 100] [--window 2] [--runs 3]
                         [--binary PATH] [--skip-proxy]
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import ROOT, build_release, machine, median, say, write_rows_manifest
from ratelimit import WindowServer

STAND_IN = os.path.join(ROOT, "Tests", "Fixtures", "vault_api.py")


def write_vault_night(work, rows):
    data = os.path.join(work, "night.csv")
    with open(data, "w") as f:
        f.write("id,card,exp\n")
        for i in range(rows):
            f.write(f"{i},tok_c{i},tok_e{i}\n")


def vault_run(binary, args, work, index):
    stats = os.path.join(work, f"stats{index}.json")
    server = subprocess.Popen([sys.executable, STAND_IN, "--limit", str(args.limit), "--window", str(args.window),
                               "--stats", stats], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        manifest = os.path.join(work, f"v{index}.yaml")
        report = os.path.join(work, f"v{index}.report.json")
        with open(manifest, "w") as f:
            f.write(f"""vault: tntbench
environment: live
vault_api: {{version: 2}}
auth: {{client_id: bench, client_secret: "${{BENCH_SECRET}}", scope: "aliases:read", token_url: "http://127.0.0.1:{port}/oauth/token"}}
concurrency: 16
output: {{path: "out/v{index}.csv", rejects: "out/v{index}.rejects.csv", columns: [{{id: "${{row.id}}"}}, card_number, exp_date]}}
requests:
  - name: "row-${{row.id}}"
    each: {{csv: night.csv}}
    reveal: {{card_number: "${{row.card}}", exp_date: "${{row.exp}}"}}
""")
        start = time.perf_counter()
        result = subprocess.run([binary, "run", manifest, "--base-url", f"http://127.0.0.1:{port}", "--progress", "never",
                                 "--report", report, "--quiet"], cwd=work, capture_output=True, text=True, timeout=3600,
                                env={**os.environ, "BENCH_SECRET": "bench-secret"})
        elapsed = time.perf_counter() - start
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    with open(stats) as f:
        counts = json.load(f)
    failed = count_failed(report)
    with open(os.path.join(work, "out", f"v{index}.csv")) as f:
        written = sum(1 for _ in f) - 1
    return {"elapsed": elapsed, "calls": counts["calls"], "refused": counts["refused_429"], "most": counts["most_values"],
            "failed": failed, "written": written, "code": result.returncode}


def count_failed(report):
    """The failed rows a `--report` file says (-1 when it has none)."""
    try:
        with open(report) as f:
            return json.load(f).get("failed", -1)
    except (OSError, ValueError):
        return -1


def proxy_run(binary, args, work, index, limit):
    server = WindowServer(limit, args.window, "plain")
    try:
        manifest = write_rows_manifest(work, args.proxy_rows, server.port, 16, name=f"p{index}.yaml",
                                       output=f"out/p{index}.csv")
        start = time.perf_counter()
        report = os.path.join(work, f"p{index}.report.json")
        result = subprocess.run([binary, "run", manifest, "--progress", "never", "--report", report, "--quiet"],
                                cwd=work, capture_output=True, text=True, timeout=3600)
        elapsed = time.perf_counter() - start
        return {"elapsed": elapsed, "calls": server.answered + server.throttled, "refused": server.throttled,
                "failed": count_failed(report), "code": result.returncode}
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--proxy-rows", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--binary")
    parser.add_argument("--skip-proxy", action="store_true")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary) if args.binary else build_release()
    rate = args.limit / args.window
    proxy_limit = round(args.limit * 5000 / 3000)
    proxy_rate = proxy_limit / args.window
    least = math.ceil(args.rows * 2 / 20)
    ideal = least / rate
    proxy_ideal = args.proxy_rows / proxy_rate
    say(f"Vault API: {args.rows} rows x 2 aliases, {args.limit} calls per {args.window:g} s, at least {least} calls, "
        f"ideal {ideal:.1f} s; proxy: {args.proxy_rows} rows, {proxy_limit} requests per {args.window:g} s, "
        f"ideal {proxy_ideal:.1f} s; {machine()}")
    work = tempfile.mkdtemp(prefix="bench-vaultapi-")
    write_vault_night(work, args.rows)
    vault, proxy = [], []
    for index in range(args.runs):
        vault.append(vault_run(binary, args, work, index))
        run = vault[-1]
        say(f"  vault api run {index}: {run['elapsed']:.1f} s ({run['elapsed'] / ideal:.3f}x ideal), {run['calls']} calls "
            f"({run['refused']} answered 429, most values {run['most']}), {run['written']} rows written, "
            f"{run['failed']} failed, exit {run['code']}")
        if not args.skip_proxy:
            proxy.append(proxy_run(binary, args, work, index, proxy_limit))
            run = proxy[-1]
            say(f"  proxy run {index}: {run['elapsed']:.1f} s ({run['elapsed'] / proxy_ideal:.3f}x ideal), "
                f"{run['calls']} requests ({run['refused']} answered 429), {run['failed']} failed, exit {run['code']}")
    calls = median([r["calls"] - r["refused"] for r in vault])
    say(f"Vault API: time/ideal median {median([r['elapsed'] / ideal for r in vault]):.3f}; calls answered median {calls} "
        f"({calls / least:.3f}x aliases/20); 429 share median {median([r['refused'] / r['calls'] for r in vault]) * 100:.2f}%; "
        f"failed {sorted({r['failed'] for r in vault})}; exit codes {sorted({r['code'] for r in vault})}")
    vault_rows = median([args.rows / r["elapsed"] for r in vault])
    if proxy:
        proxy_rows = median([args.proxy_rows / r["elapsed"] for r in proxy])
        say(f"proxy: time/ideal median {median([r['elapsed'] / proxy_ideal for r in proxy]):.3f}; 429 share median "
            f"{median([r['refused'] / r['calls'] for r in proxy]) * 100:.2f}%; failed {sorted({r['failed'] for r in proxy})}; "
            f"exit codes {sorted({r['code'] for r in proxy})}")
        say(f"rows per second: Vault API {vault_rows:.0f}, proxy {proxy_rows:.0f}: {vault_rows / proxy_rows:.2f}x")
    else:
        say(f"rows per second: Vault API {vault_rows:.0f}")


if __name__ == "__main__":
    main()
