#!/usr/bin/env python3
"""Many connections from one address against a live server, and a probe call beside them.

Opens --count TCP connections from --source (an address of the loopback: 127.0.0.1, 127.0.0.2 ...
are all this machine), a batch at a time so that the listen backlog never overflows, and then,
for --hold seconds, watches each one: what the server sends on it (a refusal's status and error
code), and when the server closes it. With --trickle, every open connection sends the next byte of
a request line every --trickle seconds (a "slowloris"); otherwise they send nothing. Once every
connection is open (or refused), the probe makes --probes calls of --probe-path from
--probe-source, each on a new connection, and times them.

Prints one JSON object: opened (connections established), refused (answered and closed at once,
by error code), closed (by the server during the hold, with the seconds after opening each took:
min, max), open_at_end (still open when the hold ended), probe (statuses, and the slowest call in
ms), and failed_to_connect.
"""
import argparse
import errno
import json
import resource
import selectors
import socket
import time


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def connect_batch(port, source, n):
    """n non-blocking connections from source; returns the sockets connected within 10 s."""
    pending = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((source, 0))
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            continue
        pending.append(s)
    sel = selectors.DefaultSelector()
    for s in pending:
        sel.register(s, selectors.EVENT_WRITE)
    done = []
    deadline = time.monotonic() + 10
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            sel.unregister(s)
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done.append(s)
            else:
                s.close()
    for s in pending:
        sel.unregister(s)
        s.close()
    sel.close()
    return done


def probe(port, source, path, key, timeout):
    """One call on a new connection; returns (status, ms)."""
    start = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    except OSError:
        return None, (time.monotonic() - start) * 1000
    try:
        req = f"GET {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nConnection: close\r\n\r\n"
        s.sendall(req.encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
    except (OSError, ValueError, IndexError):
        status = None
    finally:
        s.close()
    return status, (time.monotonic() - start) * 1000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default="127.0.0.1")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--trickle", type=float, default=0.0, help="seconds between the bytes each sends")
    p.add_argument("--probe-path", default="/health")
    p.add_argument("--probe-key", default="")
    p.add_argument("--probe-source", default="127.0.0.2")
    p.add_argument("--probes", type=int, default=5)
    a = p.parse_args()
    raise_fd_limit()

    socks = []
    opened_at = {}
    while len(socks) < a.count:
        batch = connect_batch(a.port, a.source, min(a.batch, a.count - len(socks)))
        if not batch:
            break
        now = time.monotonic()
        for s in batch:
            opened_at[s] = now
        socks.extend(batch)
    failed = a.count - len(socks)

    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    received = {s: b"" for s in socks}
    refused = {}
    closed_after = []
    open_set = set(socks)
    line = b"GET /health HTTP/1.1\r\nHost: x\r\n" * 100
    sent = {s: 0 for s in socks}

    def watch(seconds):
        end = time.monotonic() + seconds
        while open_set and time.monotonic() < end:
            for key, _ in sel.select(timeout=min(0.1, max(0.0, end - time.monotonic()))):
                s = key.fileobj
                try:
                    chunk = s.recv(4096)
                except OSError:
                    chunk = b""
                if chunk:
                    received[s] += chunk
                    continue
                sel.unregister(s)
                open_set.discard(s)
                data = received[s]
                if data.startswith(b"HTTP/1.1 "):
                    body = data.split(b"\r\n\r\n", 1)[-1]
                    try:
                        code = json.loads(body).get("code")
                    except ValueError:
                        code = "unparsed"
                    status = int(data.split(b" ", 2)[1])
                    retry = b"\r\nRetry-After: 1\r\n" in data
                    k = f"{status} {code}" + ("" if retry else " (no Retry-After)")
                    refused[k] = refused.get(k, 0) + 1
                else:
                    closed_after.append(time.monotonic() - opened_at[s])
                s.close()

    # The server answers a refused connection at once: give it a moment before probing.
    watch(0.5)
    statuses = []
    slowest = 0.0
    for _ in range(a.probes):
        status, ms = probe(a.port, a.probe_source, a.probe_path, a.probe_key, 30)
        statuses.append(status)
        slowest = max(slowest, ms)
    start = time.monotonic()
    while time.monotonic() - start < a.hold and open_set:
        step = a.trickle if a.trickle > 0 else 0.25
        watch(step)
        if a.trickle > 0:
            for s in list(open_set):
                try:
                    s.send(line[sent[s]:sent[s] + 1])
                    sent[s] += 1
                except OSError:
                    pass
    result = {
        "opened": len(socks) - sum(refused.values()),
        "refused": refused,
        "closed": {"count": len(closed_after),
                   "min_s": round(min(closed_after), 3) if closed_after else None,
                   "max_s": round(max(closed_after), 3) if closed_after else None},
        "open_at_end": len(open_set),
        "probe": {"statuses": statuses, "slowest_ms": round(slowest, 1)},
        "failed_to_connect": failed,
    }
    for s in open_set:
        s.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
