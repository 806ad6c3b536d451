#!/usr/bin/env python3
"""A stand-in for VGS's Vault API on 127.0.0.1, for the tests and bench/vaultapi.py.

GET /aliases?aliases=a,b,... (v2) or ?q=a,b,... (v1) answers
{"data": {"ALIAS": {"value": ..., "aliases": [{"value": ALIAS, "format": "UUID"}], ...}}} for the
aliases it knows: tok_c<N> reveals the card 4 followed by N in 15 digits, tok_e<N> the expiry
MM/2031 (M = N % 12 + 1); any other alias is not in the answer. More than 20 values, or a value
that is not an alias (letters, digits, _ and -), is a 400 whose body says why. With --limit L
--window W it lets L calls through per fixed window of W seconds and answers 429 past it, with no
Retry-After and no reset header: only x-ratelimit-remaining, on every answer, as the Vault API.
POST /oauth/token hands out bearer tokens (client credentials), which /aliases then demands.

It prints its port on the first line of standard output, then serves until killed. On SIGTERM it
writes what it answered to --stats (JSON: calls, refused_429, refused_400, most_values).

usage: vault_api.py [--limit L --window W] [--stats FILE]
"""
import argparse
import json
import re
import signal
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

ALIAS = re.compile(r"^[A-Za-z0-9_-]+$")
KNOWN = re.compile(r"^tok_([ce])(\d+)$")


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def value_of(alias):
    match = KNOWN.match(alias)
    if not match:
        return None
    number = int(match.group(2))
    return f"4{number:015d}" if match.group(1) == "c" else f"{number % 12 + 1:02d}/2031"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--stats")
    args = parser.parse_args()
    lock = threading.Lock()
    state = {"window_start": time.monotonic(), "used": 0, "calls": 0, "refused_429": 0, "refused_400": 0,
             "most_values": 0, "tokens": set()}

    def admit():
        with lock:
            state["calls"] += 1
            if args.limit is None:
                return True, None
            now = time.monotonic()
            if now - state["window_start"] >= args.window:
                state["window_start"] += int((now - state["window_start"]) / args.window) * args.window
                state["used"] = 0
            allowed = state["used"] < args.limit
            if allowed:
                state["used"] += 1
            else:
                state["refused_429"] += 1
            return allowed, args.limit - state["used"]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *arguments):
            pass

        def answer(self, status, body, headers=()):
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/oauth/token":
                return self.answer(404, {"errors": [{"status": 404, "title": "Not Found"}]})
            with lock:
                token = f"token-{len(state['tokens']) + 1}"
                state["tokens"].add(token)
            self.answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": 300})

        def do_GET(self):
            parts = urlsplit(self.path)
            if parts.path != "/aliases":
                return self.answer(404, {"errors": [{"status": 404, "title": "Not Found"}]})
            authorization = self.headers.get("Authorization", "")
            with lock:
                tokens = set(state["tokens"])
            if tokens and authorization.removeprefix("Bearer ") not in tokens:
                return self.answer(401, {"errors": [{"status": 401, "title": "Unauthorized"}]})
            query = parse_qs(parts.query)
            values = ",".join(query.get("aliases", []) + query.get("q", [])).split(",")
            allowed, remaining = admit()
            limit = [] if remaining is None else [("X-RateLimit-Remaining", str(remaining))]
            if not allowed:
                return self.answer(429, {"errors": [{"status": 429, "title": "Too Many Requests"}]}, limit)
            with lock:
                state["most_values"] = max(state["most_values"], len(values))
            if len(values) > 20 or not all(ALIAS.match(v) for v in values):
                with lock:
                    state["refused_400"] += 1
                detail = "Too many values (limit: 20)" if len(values) > 20 else "Invalid alias"
                return self.answer(400, {"errors": [{"status": 400, "title": "Bad Request", "detail": detail}]}, limit)
            data = {}
            for alias in values:
                value = value_of(alias)
                if value is not None:
                    data[alias] = {"value": value, "classifiers": [], "aliases": [{"value": alias, "format": "UUID"}],
                                   "created_at": "2026-01-01T00:00:00Z", "storage": "PERSISTENT"}
            self.answer(200, {"data": data}, limit)

    server = Server(("127.0.0.1", 0), Handler)

    def stop(*_):
        if args.stats:
            with lock:
                stats = {key: state[key] for key in ("calls", "refused_429", "refused_400", "most_values")}
            with open(args.stats, "w") as out:
                json.dump(stats, out)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    # A parent that handles signals itself may have blocked them, and a mask is inherited.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
