#!/usr/bin/env python3
"""Throughput, CPU and connections of `showbatch run` over TLS and HTTP/2, next to
`curl --parallel --http2 --cacert` doing the same requests in the same run (alternated).

nginx listens with `ssl` and HTTP/2 on 127.0.0.1 (port 8443 by default) with a certificate for
127.0.0.1 and localhost signed by a CA made for this run, and answers every POST with a static JSON
body. showbatch reaches it through `hostname: 127.0.0.1:PORT` with `hostname_check: false` (the base
URL is then `https://127.0.0.1:PORT`, a staging proxy's form, which VGS's documented rate limit does
not apply to) and trusts the CA through `tls.ca_file`; curl sends the same POSTs to the same URL with
`--cacert`. Each run's requests, connections, protocols and TLS session reuse are
read from the lines nginx's access log gained during that run (`$connection` is nginx's connection
serial number, so distinct values are distinct connections). A showbatch run counts only if its
output has one `ok` row per request.

Target (issue 13): throughput >= curl's, CPU <= curl's, connections <= curl's + 1.

usage: bench/tls.py [--requests 20000] [--concurrency 32] [--runs 5] [--binary SHOWBATCH]
                    [--compare OTHER_SHOWBATCH] [--connections N] [--port 8443] [--key ec|rsa]
                    [--nginx-workers 1]

`--compare` runs another showbatch binary alternated with this one; `--connections` passes
`--connections N` to showbatch (without it showbatch uses its default).
"""
import argparse
import collections
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import (BODY, PAYLOAD, apt_install, build_release, child_cpu, curl_parallel, machine, median, say,
                 wait_port, write_rows_manifest)


def openssl(*arguments, cwd):
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certificates(directory, key):
    """A CA and a server certificate for 127.0.0.1 and localhost signed by it. Returns (ca, cert, key)."""
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"] if key == "ec" else ["-newkey", "rsa:2048"]
    openssl("req", "-x509", *new_key, "-nodes", "-days", "2", "-subj", "/CN=showbatch bench CA",
            "-keyout", "ca.key", "-out", "ca.pem",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=directory)
    openssl("req", "-new", *new_key, "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr",
            cwd=directory)
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "server.ext", "-out", "server.pem", cwd=directory)
    return tuple(os.path.join(directory, name) for name in ("ca.pem", "server.pem", "server.key"))


def nginx_version():
    """(major, minor, patch) and the `nginx -V` text; exits when nginx lacks ssl or http2."""
    text = subprocess.run(["nginx", "-V"], capture_output=True, text=True).stderr
    match = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", text)
    if not match or "--with-http_ssl_module" not in text or "--with-http_v2_module" not in text:
        sys.exit(f"bench/tls.py: this nginx lacks the ssl or http_v2 module:\n{text}")
    return tuple(int(part) for part in match.groups()), text


class TLSNginx:
    """nginx with TLS and HTTP/2 on 127.0.0.1:`port`, answering every request with lib's static JSON
    body and logging each request's connection serial number, its number on that connection, the
    protocol and whether the TLS session was reused."""

    def __init__(self, port, certificate, key, workers=1):
        apt_install("nginx-light")
        version, _ = nginx_version()
        # `http2 on;` exists from 1.25.1; before it, HTTP/2 is a parameter of `listen`.
        if version >= (1, 25, 1):
            listen, http2 = f"listen 127.0.0.1:{port} ssl;", "http2 on;"
        else:
            listen, http2 = f"listen 127.0.0.1:{port} ssl http2;", ""
        self.version = ".".join(map(str, version))
        self.http2 = (listen + " " + http2).strip()
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-tls-")
        self.log = os.path.join(self.dir, "access.log")
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes {workers};
daemon off;
error_log {self.dir}/error.log;
pid {self.dir}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    log_format bench '$connection $connection_requests $server_protocol $status $ssl_session_reused $ssl_protocol';
    access_log {self.log} bench buffer=256k flush=100ms;
    client_body_temp_path {self.dir};
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {{
        {listen}
        {http2}
        ssl_certificate {certificate};
        ssl_certificate_key {key};
        location / {{ default_type application/json; return 200 '{BODY}'; }}
    }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", conf, "-p", self.dir], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        try:
            wait_port(port)
        except RuntimeError:
            self.process.terminate()
            _, errors = self.process.communicate()
            with open(os.path.join(self.dir, "error.log")) as f:
                errors += f.read()
            sys.exit(f"bench/tls.py: nginx did not start on 127.0.0.1:{port}:\n{errors}")
        self.url = f"https://127.0.0.1:{port}"

    def offset(self):
        return os.path.getsize(self.log)

    def lines_since(self, offset, expected):
        """The access log lines written after `offset`, waiting (at most 5 s) for `expected` of them:
        nginx logs a request after answering it and flushes its buffer every 100 ms."""
        deadline = time.time() + 5
        while True:
            with open(self.log) as f:
                f.seek(offset)
                lines = f.read().splitlines()
            if len(lines) >= expected or time.time() > deadline:
                return lines
            time.sleep(0.05)

    def errors(self):
        with open(os.path.join(self.dir, "error.log")) as f:
            return [line for line in f.read().splitlines() if "[notice]" not in line]

    def stop(self):
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def connection_stats(lines):
    """Connections, requests, 200s, protocols, TLS sessions reused, requests per connection."""
    per_connection = collections.Counter()
    protocols = collections.Counter()
    statuses = collections.Counter()
    reused = set()
    for line in lines:
        connection, _, protocol, status, session_reused, _ = line.split(" ")
        per_connection[connection] += 1
        protocols[protocol] += 1
        statuses[status] += 1
        if session_reused == "r":
            reused.add(connection)
    return {
        "connections": len(per_connection),
        "requests": len(lines),
        "ok": statuses["200"],
        "protocols": dict(protocols),
        "resumed": len(reused),
        "per_connection": sorted(per_connection.values(), reverse=True),
    }


def write_manifest(work, name, requests, concurrency, ca_file, output, port):
    """lib's rows manifest, aimed at https://127.0.0.1:`port` and trusting `ca_file`."""
    host = "127.0.0.1" if port == 443 else f"127.0.0.1:{port}"
    endpoint = f"hostname: {host}\nhostname_check: false\ntls: {{ca_file: {ca_file}}}"
    return write_rows_manifest(work, requests, None, concurrency, name=name, output=output, endpoint=endpoint)


def write_curl_config(work, requests, url):
    """lib's `write_curl_config` for an https URL: the same POST, `requests` times."""
    config = os.path.join(work, "curl.cfg")
    with open(config, "w") as f:
        f.write('header = "Content-Type: application/json"\n')
        escaped = PAYLOAD.replace('"', '\\"')
        f.write(f'data = "{escaped}"\n')
        for _ in range(requests):
            f.write(f'url = "{url}/post"\n')
    return config


def ok_rows(path):
    with open(path) as f:
        return sum(1 for line in f if ",ok," in line)


def measure(command, server, requests):
    """Runs `command` once: wall seconds, CPU seconds (user + system) and nginx's view of the run."""
    offset = server.offset()
    before = child_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    cpu = child_cpu() - before
    if result.returncode != 0:
        sys.exit(f"bench/tls.py: {command[0]} exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    stats = connection_stats(server.lines_since(offset, requests))
    return {"wall": wall, "cpu": cpu, "rate": requests / wall, **stats}


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as error:
            return error
    return None


def describe(per_connection):
    if len(per_connection) <= 6:
        return "+".join(map(str, per_connection))
    return f"max {per_connection[0]}, median {median(per_connection):.0f}, min {per_connection[-1]}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--binary", help="measure this showbatch binary instead of building one")
    parser.add_argument("--compare", help="another showbatch binary to alternate with this one")
    parser.add_argument("--connections", type=int, help="pass --connections N to showbatch")
    parser.add_argument("--port", type=int, default=8443,
                        help="nginx's port, which showbatch reaches as hostname: 127.0.0.1:PORT")
    parser.add_argument("--key", choices=("ec", "rsa"), default="ec", help="P-256 or RSA 2048 keys")
    parser.add_argument("--nginx-workers", type=int, default=1)
    args = parser.parse_args()
    binary = args.binary or build_release()
    apt_install("curl", "openssl")
    busy = port_free(args.port)
    if busy:
        sys.exit(f"bench/tls.py: cannot listen on 127.0.0.1:{args.port} ({busy}); "
                 "port 443 needs root or CAP_NET_BIND_SERVICE and must be free")
    work = tempfile.mkdtemp(prefix="bench-tls-")
    ca, certificate, key = make_certificates(work, args.key)
    server = TLSNginx(args.port, certificate, key, workers=args.nginx_workers)
    say(f"{args.requests} requests, concurrency {args.concurrency}, {args.runs} alternated runs; {machine()}")
    say(f"nginx {server.version} with `{server.http2}`, {args.nginx_workers} worker(s), "
        f"{'P-256' if args.key == 'ec' else 'RSA 2048'} certificate for 127.0.0.1/localhost from a CA made for this run")
    try:
        os.makedirs(os.path.join(work, "out"), exist_ok=True)
        outputs = {"showbatch": os.path.join(work, "out", "showbatch.csv"), "compare": os.path.join(work, "out", "compare.csv")}
        extra = ["--connections", str(args.connections)] if args.connections else []
        commands = {}
        for name, path in (("showbatch", binary), ("compare", args.compare)):
            if path:
                manifest = write_manifest(work, f"{name}.yaml", args.requests, args.concurrency, ca, outputs[name], args.port)
                commands[name] = [path, "run", manifest, "--progress", "never", "--quiet", *extra]
        config = write_curl_config(work, args.requests, "https://127.0.0.1" + ("" if args.port == 443 else f":{args.port}"))
        commands["curl"] = curl_parallel(config, args.concurrency) + ["--http2", "--cacert", ca]
        results = {name: [] for name in commands}
        say(f"{'run':>3} {'client':9s} {'wall s':>7} {'req/s':>7} {'CPU s':>6} {'conns':>5} {'resumed':>7} {'200s':>6} "
            f"{'protocol':14s} requests per connection")
        for run in range(1, args.runs + 1):
            for name, command in commands.items():
                result = measure(command, server, args.requests)
                if name in outputs:
                    result["rows ok"] = ok_rows(outputs[name])
                    if result["rows ok"] != args.requests:
                        sys.exit(f"bench/tls.py: {name} wrote {result['rows ok']} ok rows of {args.requests}")
                if result["ok"] != args.requests:
                    sys.exit(f"bench/tls.py: nginx logged {result['ok']} answers 200 of {args.requests} for {name} "
                             f"({result['requests']} requests)")
                results[name].append(result)
                protocols = ",".join(f"{p}×{n}" if len(result["protocols"]) > 1 else p for p, n in result["protocols"].items())
                say(f"{run:3d} {name:9s} {result['wall']:7.3f} {result['rate']:7.0f} {result['cpu']:6.3f} "
                    f"{result['connections']:5d} {result['resumed']:7d} {result['ok']:6d} {protocols:14s} "
                    f"{describe(result['per_connection'])}")
        errors = server.errors()
        if errors:
            say(f"nginx error log: {len(errors)} lines, the first: {errors[0]}")
        say("medians:")
        for name, values in results.items():
            runs = ", ".join(f"{v['rate']:.0f}" for v in values)
            say(f"  {name:9s} {median([v['rate'] for v in values]):7.0f} req/s  CPU {median([v['cpu'] for v in values]):.3f} s  "
                f"connections {median([v['connections'] for v in values]):g}  "
                f"(runs: {runs})")
        ours, theirs = results["showbatch"], results["curl"]
        rate = median([v["rate"] for v in ours]) / median([v["rate"] for v in theirs])
        cpu = median([v["cpu"] for v in ours]) / median([v["cpu"] for v in theirs])
        connections = (median([v["connections"] for v in ours]), median([v["connections"] for v in theirs]))
        say(f"showbatch / curl: throughput {rate:.2f} (target >= 1), CPU {cpu:.2f} (target <= 1), "
            f"connections {connections[0]:g} vs {connections[1]:g} (target <= curl's + 1)")
        if "compare" in results:
            other = results["compare"]
            say(f"showbatch / compared: throughput {median([v['rate'] for v in ours]) / median([v['rate'] for v in other]):.2f}, "
                f"CPU {median([v['cpu'] for v in ours]) / median([v['cpu'] for v in other]):.2f}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
