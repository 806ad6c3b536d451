#!/usr/bin/env python3
"""A TLS echo server for showbatch's HTTPS tests: 127.0.0.1 only, a free port (printed on the
first line of stdout), answering every request with {"json": <body>, "path", "method"} as the
emulator does. Each connection and request is counted on stderr lines `connection` and `request`.

usage: tls_echo_server.py CERT KEY [--client-ca CA]   (with --client-ca, clients must present a
certificate signed by CA)
"""
import http.server
import json
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        sys.stderr.write("connection\n")  # one write: print() writes the line break apart
        # The handshake runs here, on the connection's own thread: in accept() one slow or failing
        # client would hold up every other.
        self.request.do_handshake()
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (OSError, ssl.SSLError):
            pass

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        out = json.dumps({"json": body, "path": self.path, "method": self.command}).encode()
        sys.stderr.write("request\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a refused handshake is what some tests are about


def main():
    cert, key = sys.argv[1], sys.argv[2]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if "--client-ca" in sys.argv:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(sys.argv[sys.argv.index("--client-ca") + 1])
    server = Server(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
