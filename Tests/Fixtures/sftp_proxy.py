#!/usr/bin/env python3
"""A test proxy in front of OpenSSH's sftp-server: sshd runs it as the sftp subsystem, it runs
/usr/lib/openssh/sftp-server and relays the SFTP packets between them, and plays what the
control file (argv[1], JSON, read at each request) asks:

  "processor": "take"         a processor that takes each file the moment it is renamed in: the
                              file is moved to "processed" (a folder) before the rename's answer
                              reaches the client
  "hold": {"op": "RENAME", "seconds": 60, "path": "substring", "when": "before" | "after"}
                              a stalled server: the request is held that long before it goes on
                              (op: OPEN, RENAME, REMOVE, OPENDIR, ...; path: only requests naming
                              a path with this substring), or, "after", the server's answer is
                              held once the server did it
  "drop": {"op": "RENAME", "when": "before" | "after", "path": "substring"}
                              the session dropped before the request reaches the server, or after
                              the server did it but before its answer goes back; once ("dropped"
                              is then written into the control file)

Every request is logged to "log" (one line: the op and its paths) when the control file names one.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

NAMES = {3: "OPEN", 4: "CLOSE", 5: "READ", 6: "WRITE", 7: "LSTAT", 8: "FSTAT", 9: "SETSTAT", 10: "FSETSTAT",
         11: "OPENDIR", 12: "READDIR", 13: "REMOVE", 14: "MKDIR", 15: "RMDIR", 16: "REALPATH", 17: "STAT",
         18: "RENAME", 19: "READLINK", 20: "SYMLINK", 200: "EXTENDED"}
WITH_PATH = {3, 7, 9, 11, 13, 14, 15, 16, 17, 18, 19, 20}

control_path = sys.argv[1]
lock = threading.Lock()
pending = {}  # request id -> (op, paths)


def control():
    try:
        with open(control_path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def mark_dropped():
    settings = control()
    settings["dropped"] = True
    with open(control_path + ".tmp", "w") as f:
        json.dump(settings, f)
    os.replace(control_path + ".tmp", control_path)


def log(line):
    path = control().get("log")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def read_exactly(stream, count):
    data = b""
    while len(data) < count:
        chunk = stream.read(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_packet(stream):
    head = read_exactly(stream, 4)
    if head is None:
        return None
    (length,) = struct.unpack(">I", head)
    body = read_exactly(stream, length)
    return None if body is None else head + body


def strings(body, offset, count):
    found = []
    for _ in range(count):
        if offset + 4 > len(body):
            break
        (length,) = struct.unpack(">I", body[offset:offset + 4])
        found.append(body[offset + 4:offset + 4 + length].decode("utf-8", "replace"))
        offset += 4 + length
    return found


def matches(rule, op, paths):
    if not rule or rule.get("op") != op:
        return False
    part = rule.get("path")
    return part is None or any(part in p for p in paths)


def quit_now():
    os._exit(0)


def main():
    server = subprocess.Popen(["/usr/lib/openssh/sftp-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    client_in = sys.stdin.buffer
    client_out = sys.stdout.buffer

    def to_client():
        while True:
            packet = read_packet(server.stdout)
            if packet is None:
                quit_now()
            kind = packet[4]
            if kind != 2 and len(packet) >= 9:
                (request,) = struct.unpack(">I", packet[5:9])
                with lock:
                    op, paths = pending.pop(request, (None, []))
                settings = control()
                if op == "RENAME" and kind == 101 and struct.unpack(">I", packet[9:13])[0] == 0:
                    target = paths[1] if len(paths) > 1 else ""
                    if settings.get("processor") == "take" and not os.path.basename(target).endswith(".part"):
                        processed = settings.get("processed")
                        if processed:
                            os.makedirs(processed, exist_ok=True)
                            shutil.move(target, os.path.join(processed, os.path.basename(target) + "." + str(time.time_ns())))
                            log("TAKEN " + target)
                hold = settings.get("hold")
                if matches(hold, op, paths) and hold.get("when") == "after":
                    log("HOLD-AFTER " + op)
                    time.sleep(float(hold.get("seconds", 60)))
                drop = settings.get("drop")
                if matches(drop, op, paths) and drop.get("when") == "after" and not settings.get("dropped"):
                    mark_dropped()
                    log("DROPPED after " + op)
                    quit_now()
            client_out.write(packet)
            client_out.flush()

    threading.Thread(target=to_client, daemon=True).start()
    while True:
        packet = read_packet(client_in)
        if packet is None:
            server.stdin.close()
            server.wait()
            quit_now()
        kind = packet[4]
        if kind != 1 and len(packet) >= 9:
            (request,) = struct.unpack(">I", packet[5:9])
            op = NAMES.get(kind, str(kind))
            paths = strings(packet, 9, 2 if kind in (18, 20) else 1) if kind in WITH_PATH else []
            with lock:
                pending[request] = (op, paths)
            if kind != 5 and kind != 6:
                log(op + " " + " ".join(paths))
            settings = control()
            hold = settings.get("hold")
            if matches(hold, op, paths) and hold.get("when", "before") == "before":
                log("HOLD " + op)
                time.sleep(float(hold.get("seconds", 60)))
            drop = settings.get("drop")
            if matches(drop, op, paths) and drop.get("when", "before") == "before" and not settings.get("dropped"):
                mark_dropped()
                log("DROPPED before " + op)
                quit_now()
        server.stdin.write(packet)
        server.stdin.flush()


if __name__ == "__main__":
    main()
