#!/usr/bin/env python3
"""The vault's own rate limit: a server on loopback lets through --limit requests per fixed window of
--window seconds (as the VGS proxy counts per client and minute) and answers 429 past it until the
window resets, with no Retry-After (or with one, or with x-ratelimit-remaining/-reset: --variants).
showbatch runs --rows rows at --concurrency with the default settings (no rate_limit). Prints, per
variant, the median over --runs of the wall time against the ideal (rows / allowed rate) and the
share of requests answered 429, and the exit codes seen. With --compare BINARY the same runs are
made, alternated, with another build (the one before a change).

usage: bench/ratelimit.py [--rows 2000] [--concurrency 16] [--limit 200] [--window 2] [--runs 3]
                          [--variants plain,retry-after,headers] [--compare BINARY]
"""
import argparse
import http.server
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import build_release, free_port, machine, median, say, write_rows_manifest


def reveal(value):
    """The body with each alias (a string starting tok_) replaced by a card number, as a vault
    reveals it: an alias that came back unchanged would fail its row (not revealed)."""
    if isinstance(value, dict):
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return "4111111111111111" if isinstance(value, str) and value.startswith("tok_") else value


class WindowServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 with a fixed-window limit; answers echo the JSON body."""

    def __init__(self, limit, window, variant):
        self.limit, self.window, self.variant = limit, window, variant
        self.lock = threading.Lock()
        self.start = time.monotonic()
        self.used = 0
        self.window_start = self.start
        self.answered = 0
        self.throttled = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                allowed, remaining, reset = server.admit()
                headers = []
                if server.variant == "headers":
                    headers += [("X-RateLimit-Remaining", str(remaining)), ("X-RateLimit-Reset", str(math.ceil(reset)))]
                if allowed:
                    try:
                        payload = json.dumps({"json": reveal(json.loads(body or b"null"))}).encode()
                    except ValueError:
                        payload = b'{"json": null}'
                    status = 200
                else:
                    payload = b'{"error": "rate limited"}'
                    status = 429
                    if server.variant == "retry-after":
                        headers.append(("Retry-After", str(math.ceil(reset))))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def admit(self):
        with self.lock:
            now = time.monotonic()
            if now - self.window_start >= self.window:
                self.window_start += math.floor((now - self.window_start) / self.window) * self.window
                self.used = 0
            allowed = self.used < self.limit
            if allowed:
                self.used += 1
                self.answered += 1
            else:
                self.throttled += 1
            return allowed, self.limit - self.used, self.window_start + self.window - now

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def one_run(binary, args, variant, work):
    server = WindowServer(args.limit, args.window, variant)
    try:
        manifest = write_rows_manifest(work, args.rows, server.port, args.concurrency, name=f"m{server.port}.yaml",
                                       output=f"out/{server.port}.csv")
        start = time.perf_counter()
        result = subprocess.run([binary, "run", manifest, "--progress", "never", "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        elapsed = time.perf_counter() - start
        sent = server.answered + server.throttled
        return elapsed, server.throttled / max(1, sent), result.returncode, server.answered
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default="plain,retry-after,headers")
    parser.add_argument("--binary")
    parser.add_argument("--compare")
    args = parser.parse_args()
    binary = args.binary or build_release()
    ideal = args.rows / (args.limit / args.window)
    say(f"{args.rows} rows, concurrency {args.concurrency}, {args.limit} per {args.window:g} s window, ideal {ideal:.1f} s; {machine()}")
    builds = [("showbatch", binary)] + ([("compare", args.compare)] if args.compare else [])
    work = tempfile.mkdtemp(prefix="bench-ratelimit-")
    for variant in args.variants.split(","):
        results = {name: [] for name, _ in builds}
        for _ in range(args.runs):
            for name, path in builds:
                results[name].append(one_run(path, args, variant, work))
        for name, runs in results.items():
            ratios = [elapsed / ideal for elapsed, _, _, _ in runs]
            shares = [share for _, share, _, _ in runs]
            codes = sorted({code for _, _, code, _ in runs})
            written = [answered for _, _, _, answered in runs]
            say(f"{variant:12s} {name:10s} time/ideal median {median(ratios):.3f} (runs {', '.join(f'{r:.3f}' for r in ratios)}); "
                f"429 share median {median(shares) * 100:.1f}%; exit codes {codes}; rows answered {written}")


if __name__ == "__main__":
    main()
