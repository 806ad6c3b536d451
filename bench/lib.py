"""Shared helpers of the benchmark scripts: build, tools, loopback servers, medians."""
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, ".build", "release", "showbatch")


def say(text):
    print(text, flush=True)


def apt_install(*packages):
    """Installs Debian packages that are missing (the benchmarks' peers), saying so."""
    missing = [p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if not missing:
        return
    say(f"installing {' '.join(missing)} (apt-get)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", *missing], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def build_release():
    """Builds showbatch in release mode (installing libyaml-dev if needed)."""
    apt_install("libyaml-dev", "pkg-config")
    say("building showbatch in release mode")
    subprocess.run(["swift", "build", "-c", "release", "--product", "showbatch"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return BINARY


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class Emulator:
    """`showbatch emulate` on a free loopback port."""

    def __init__(self, *flags):
        self.port = free_port()
        self.process = subprocess.Popen([BINARY, "emulate", "--port", str(self.port), *flags],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        self.process.wait()


BODY = '{"json":{"card_number":"4111111111111111","exp_date":"01/2030"},"method":"POST","path":"/post","headers":{}}'


class Nginx:
    """nginx on a free loopback port answering every request with a static JSON body."""

    def __init__(self, workers=1):
        apt_install("nginx-light")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-")
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes {workers};
daemon off;
error_log {self.dir}/error.log;
pid {self.dir}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {self.dir};
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{self.port};
        location / {{ default_type application/json; return 200 '{BODY}'; }}
    }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", conf, "-p", self.dir], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def timed(command, **kwargs):
    """Wall seconds of one command (output discarded unless captured)."""
    ok_codes = kwargs.pop("ok_codes", (0,))
    start = time.perf_counter()
    result = subprocess.run(command, stdout=kwargs.pop("stdout", subprocess.DEVNULL),
                            stderr=kwargs.pop("stderr", subprocess.DEVNULL), **kwargs)
    elapsed = time.perf_counter() - start
    if result.returncode not in ok_codes:
        raise RuntimeError(f"{command[0]} exited {result.returncode}")
    return elapsed


def child_cpu():
    """User + system CPU seconds of every child waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median(values):
    return statistics.median(values)


def machine():
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}"


def write_rows_manifest(work, rows, port, concurrency, name="m.yaml", output="out/rows.csv", endpoint=None):
    """A data file of `rows` aliases and a manifest revealing one request per row through
    `satellite_port` (the emulator or nginx on loopback), or through the manifest lines
    `endpoint` (such as a hostname and a tls section). Returns the manifest's path."""
    data = os.path.join(work, "rows.csv")
    if not os.path.exists(data):
        with open(data, "w") as f:
            f.write("id,alias\n")
            for i in range(rows):
                f.write(f"{i},tok_sandbox_abc\n")
    manifest = os.path.join(work, name)
    with open(manifest, "w") as f:
        f.write(f"""vault: tntbench
{endpoint or f"satellite_port: {port}"}
concurrency: {concurrency}
timeout: 30s
output: {{path: {output}}}
requests:
  - name: "row-${{row.id}}"
    each: {{csv: rows.csv}}
    path: /post
    payload: {{card_number: "${{row.alias}}", exp_date: tok_sandbox_def}}
    labels: {{card_number: json.card_number}}
""")
    return manifest


PAYLOAD = '{"card_number":"tok_sandbox_abc","exp_date":"tok_sandbox_def"}'


def write_curl_config(work, requests, port):
    """A `curl --config` file sending the same POST as the rows manifest, `requests` times."""
    config = os.path.join(work, f"curl{port}.cfg")
    with open(config, "w") as f:
        f.write('header = "Content-Type: application/json"\n')
        escaped = PAYLOAD.replace('"', '\\"')
        f.write(f'data = "{escaped}"\n')
        for _ in range(requests):
            f.write(f'url = "http://127.0.0.1:{port}/post"\n')
    return config


def curl_parallel(config, concurrency):
    """The `curl --parallel` command for a config from `write_curl_config`."""
    return ["curl", "--parallel", "--parallel-max", str(concurrency), "-s", "-o", "/dev/null", "--config", config]
