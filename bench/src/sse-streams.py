#!/usr/bin/python3
"""sse-streams: holds N server-sent event streams (GET /events) open against querygate, reads everything
the server sends on them, and counts it. For the benchmark's events block (bench/run).

    sse-streams.py -p PORT -k KEY -n STREAMS [--path /events] [--open-timeout 30] [--pending 16]
                   [--batch-ms 2]

One process, one thread, epoll: opens the streams (at most --pending openings at once; one refused
with 429 or 503 is tried again after its Retry-After, as a client would, until --open-timeout), then
prints one JSON line (phase "open": how many answered 200 with text/event-stream, how many openings
were refused and with what, first tries and retries alike). Then it reads every stream
until told to stop, commands on stdin, one a line:

    mark      the measured window starts (the counts are taken then)
    endmark   the measured window ends
    stop      (or end of input, or SIGTERM) print the summary (phase "end") and close every stream

It reads whatever is there (up to 1 MB at a time) whenever a stream is readable, at most one wakeup
every --batch-ms, so that the kernel's buffers do not fill and the server does not see a slow reader
while the reader has the CPU. The body is HTTP/1.1 chunked, decoded a chunk at a time; the text is
counted with bytes.count where it lies, not line by line and not copied (about 450 MB/s on one core
here, 10 streams of 24 kB chunks).
Counted: run, gap and end events, ": keep-alive" comments and the retry line, in complete events
only (an event cut between two reads is counted once, when its blank line arrives; one cut off by a
closed connection is not), and each stream's first and last event id. A stream is "open for the
whole run" if it answered 200 and the server had neither closed it nor ended its body by "stop".
"""
import argparse
import errno
import json
import re
import os
import resource
import selectors
import signal
import socket
import sys
import time

READ = 1024 * 1024
COUNTED = ("run", "gap", "end", "keepalive", "retry")


GAP = re.compile(rb'event: gap\ndata: \{"from":(\d+),"to":(\d+)\}')


def event_id(seg, at, end):
    """The number of the "id: " line at (or just after the newline at) index at, or None."""
    if at < 0:
        return None
    start = seg.find(b"id: ", at, end) + 4
    if start < 4:
        return None
    end = seg.find(b"\n", start)
    try:
        return int(seg[start:end])
    except ValueError:
        return None


class Stream:
    __slots__ = ("i", "sock", "state", "hbuf", "status", "headers", "chunked", "raw", "carry", "counts",
                 "bytes", "body_bytes", "first", "closed_at", "body_ended", "left", "refusal", "ends", "anomalies",
                 "attempts", "retry_at", "first_id", "last_id", "gap_ids", "max_read", "reads",
                 "max_read_gap")

    def __init__(self, i):
        self.i = i
        self.sock = None
        self.state = "new"        # new, connecting, headers, body, refused, closed
        self.hbuf = b""
        self.status = None
        self.headers = {}
        self.chunked = False
        self.raw = b""            # chunked framing cut between two reads
        self.left = 0             # bytes left of the chunk being read; -2: its CRLF; 0: a size line
        self.carry = b""          # decoded text after the last complete line
        self.counts = dict.fromkeys(COUNTED, 0)
        self.bytes = 0            # bytes read from the socket, headers and framing included
        self.body_bytes = 0       # event text
        self.first = b""          # the body's first bytes
        self.closed_at = None     # seconds after the start, when the server closed it
        self.body_ended = False   # the last chunk (0) arrived
        self.refusal = None
        self.attempts = 0
        self.first_id = None      # the first and the last event id seen, and the ids gap events said
        self.last_id = None       # were lost: with one query called, ids missing from the span and
        self.gap_ids = 0          # not in a gap were lost without a word
        self.max_read = 0         # in the measured window: the most one read returned (how far
        self.max_read_gap = 0.0   # behind the reader was), and the longest between two reads
        self.reads = []           # the last reads: (seconds since the start, bytes)
        self.retry_at = None      # when a refused opening may be tried again
        self.ends = []            # the data of end events
        self.anomalies = 0        # chunk size lines that are not hexadecimal

    # ---- body
    def feed(self, buf, n):
        """The n bytes of buf (a bytearray every read reuses) that came after the headers.
        Nothing of size is copied: the text is counted where it lies (page faults of large fresh
        buffers cost more than the counting on this machine)."""
        self.bytes += n
        if not self.chunked:
            self.text(buf, 0, n)
            return
        pos = 0
        left = self.left
        while pos < n:
            if left > 0:  # inside a chunk's data
                take = min(left, n - pos)
                self.text(buf, pos, pos + take)
                pos += take
                left -= take
                if left == 0:
                    left = -2  # its CRLF
                continue
            if left < 0:  # -2, -1: the CRLF after a chunk's data, or what is left of it
                skip = min(-left, n - pos)
                pos += skip
                left += skip
                continue
            # a size line, perhaps begun in the last read
            if self.raw.endswith(b"\r") and buf[pos] == 10:
                line, pos = self.raw[:-1], pos + 1
            else:
                eol = buf.find(b"\r\n", pos, n)
                if eol < 0:
                    self.raw += bytes(buf[pos:n])
                    break
                line, pos = self.raw + bytes(buf[pos:eol]), eol + 2
            self.raw = b""
            try:
                size = int(line.split(b";", 1)[0], 16)
            except ValueError:
                self.anomalies += 1
                size = 0
            if size == 0:
                self.body_ended = True
                break
            left = size
        self.left = left

    def text(self, b, start, end):
        """Event text b[start:end]. Counted in complete events only (each ends with a blank line): an
        event cut off by a closed connection is not counted, as an EventSource would not dispatch
        it; the part of an event that a read or a chunk cuts waits in carry."""
        if start >= end:
            return
        self.body_bytes += end - start
        if len(self.first) < 64:
            self.first += bytes(b[start:start + 64 - len(self.first)])
        if self.carry:
            if self.carry.endswith(b"\n") and b[start] == 10:
                i = start - 1
            else:
                i = b.find(b"\n\n", start, end)
                if i < 0:
                    self.carry += bytes(b[start:end])
                    return
            seg = self.carry + bytes(b[start:i + 2])
            self.carry = b""
            self.count(seg, 0, len(seg))
            start = i + 2
            if start >= end:
                return
        cut = b.rfind(b"\n\n", start, end)
        if cut < 0:
            self.carry = bytes(b[start:end])
            return
        self.count(b, start, cut + 2)
        if cut + 2 < end:
            self.carry = bytes(b[cut + 2:end])

    def count(self, t, start, end):
        """Counts the complete events of t[start:end], which starts at an event's start."""
        c = self.counts
        run = t.count(b"\nevent: run\n", start, end) + t.startswith(b"event: run\n", start)
        c["run"] += run
        c["keepalive"] += t.count(b"\n: keep-alive\n", start, end) + t.startswith(b": keep-alive\n", start)
        if not c["retry"]:
            c["retry"] += t.count(b"\nretry: ", start, end) + t.startswith(b"retry: ", start)
        if t.count(b"\nevent: ", start, end) + t.startswith(b"event: ", start) != run:
            c["gap"] += t.count(b"\nevent: gap\n", start, end) + t.startswith(b"event: gap\n", start)
            c["end"] += t.count(b"\nevent: end\n", start, end) + t.startswith(b"event: end\n", start)
            for m in GAP.finditer(t, start, end):
                self.gap_ids += int(m[2]) - int(m[1]) + 1
            at = t.find(b"event: end\n", start, end)
            if at >= 0 and len(self.ends) < 3:
                self.ends.append(bytes(t[at:at + 120]).decode(errors="replace"))
        if self.first_id is None:
            self.first_id = event_id(t, t.find(b"id: ", start, end), end)
        at = t.rfind(b"\nid: ", start, end)
        if at >= 0 or t.startswith(b"id: ", start):
            self.last_id = event_id(t, max(at, start), end)


class Client:
    def __init__(self, a):
        self.a = a
        self.sel = selectors.DefaultSelector()
        self.streams = [Stream(i) for i in range(a.streams)]
        self.t0 = time.monotonic()
        self.request = (f"GET {a.path} HTTP/1.1\r\nHost: 127.0.0.1:{a.port}\r\nX-API-Key: {a.key}\r\n"
                        "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n").encode()
        self.rbuf = bytearray(READ)  # every read goes here
        self.errors = {}
        self.refusals = {}        # every refused opening, first tries and retries, by status and code
        self.refusal_samples = []
        self.marks = {}
        self.stop = False
        self.opening = False
        self.marked = False       # inside the measured window
        self.stdin_buf = b""

    def now(self):
        return time.monotonic() - self.t0

    def error(self, s, what):
        self.errors[what] = self.errors.get(what, 0) + 1
        self.close(s, "refused" if s.state in ("connecting", "headers") else "closed")

    def drop_socket(self, s):
        if s.sock is not None:
            try:
                self.sel.unregister(s.sock)
            except (KeyError, ValueError):
                pass
            s.sock.close()
            s.sock = None

    def close(self, s, state):
        self.drop_socket(s)
        if s.state == "body" and state == "closed" and s.closed_at is None:
            s.closed_at = round(self.now(), 3)
        s.state = state

    # ---- opening
    def start(self, s):
        s.attempts += 1
        s.hbuf, s.status, s.headers, s.refusal, s.retry_at = b"", None, {}, None, None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sock = sock
        s.state = "connecting"
        rc = sock.connect_ex(("127.0.0.1", self.a.port))
        if rc not in (0, errno.EINPROGRESS):
            self.error(s, f"connect: {os.strerror(rc)}")
            return
        self.sel.register(sock, selectors.EVENT_WRITE, s)

    def on_writable(self, s):
        rc = s.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if rc:
            self.error(s, f"connect: {os.strerror(rc)}")
            return
        try:
            s.sock.send(self.request)  # a few hundred bytes to a fresh socket: sent whole
        except OSError as e:
            self.error(s, f"send: {e.strerror}")
            return
        s.state = "headers"
        self.sel.modify(s.sock, selectors.EVENT_READ, s)

    def on_readable(self, s):
        try:
            n = s.sock.recv_into(self.rbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.error(s, f"recv: {e.strerror}")
            return
        if not n:
            if s.state == "headers":
                self.error(s, "closed before an answer")
            else:
                self.close(s, "closed")
            return
        if s.state == "headers":
            s.bytes += n
            s.hbuf += bytes(self.rbuf[:n])
            end = s.hbuf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, rest = s.hbuf[:end].decode(errors="replace"), s.hbuf[end + 4:]
            s.hbuf = b""
            lines = head.split("\r\n")
            try:
                s.status = int(lines[0].split()[1])
            except (IndexError, ValueError):
                s.status = 0
            s.headers = {k.strip().lower(): v.strip() for k, v in
                         (l.split(":", 1) for l in lines[1:] if ":" in l)}
            if s.status != 200 or not s.headers.get("content-type", "").startswith("text/event-stream"):
                body = rest[:300].decode(errors="replace")
                code = (re.search(r'"code":"([^"]*)"', body) or [None, "?"])[1]
                s.refusal = {"status": s.status, "code": code, "content_type": s.headers.get("content-type"),
                             "retry_after": s.headers.get("retry-after"), "body": body[:200]}
                what = f"{s.status} {code}"
                self.refusals[what] = self.refusals.get(what, 0) + 1
                if len(self.refusal_samples) < 3 and all(x["status"] != s.status or x["code"] != code
                                                         for x in self.refusal_samples):
                    self.refusal_samples.append(s.refusal)
                self.close(s, "refused")
                if s.status in (429, 503) and self.opening:
                    # as a client would: again after Retry-After (1 s when it says nothing)
                    try:
                        wait = float(s.headers.get("retry-after") or 1)
                    except ValueError:
                        wait = 1.0
                    s.state, s.retry_at = "retry", time.monotonic() + wait
                return
            s.chunked = "chunked" in s.headers.get("transfer-encoding", "").lower()
            s.state = "body"
            if rest:
                s.bytes -= len(rest)
                s.feed(bytearray(rest), len(rest))
        else:
            t = self.now()
            if self.marked:
                if n > s.max_read:
                    s.max_read = n
                if s.reads and t - s.reads[-1][0] > s.max_read_gap:
                    s.max_read_gap = t - s.reads[-1][0]
            s.reads.append((t, n))
            if len(s.reads) > 12:
                del s.reads[0]
            s.feed(self.rbuf, n)
        if s.body_ended and s.state == "body":
            # the server ended the body (an end event, or a stopping server); the connection may stay
            # open for keep-alive, but the stream is over
            s.closed_at = round(self.now(), 3)
            self.close(s, "closed")

    def open_all(self):
        """Opens every stream, at most --pending handshakes at once; a stream refused with 429 or 503 is
        tried again after its Retry-After, until --open-timeout."""
        self.opening = True
        deadline = time.monotonic() + self.a.open_timeout
        while time.monotonic() < deadline:
            now = time.monotonic()
            pending = sum(1 for s in self.streams if s.state in ("connecting", "headers"))
            waiting = False
            for s in self.streams:
                if pending >= self.a.pending:
                    break
                if s.state == "new" or (s.state == "retry" and s.retry_at <= now):
                    self.start(s)
                    pending += s.state == "connecting"
                elif s.state == "retry":
                    waiting = True
            if not pending and not waiting and not any(s.state == "new" for s in self.streams):
                break
            for key, ev in self.sel.select(timeout=0.05):
                s = key.data
                if s is None:
                    continue
                if s.state == "connecting" and ev & selectors.EVENT_WRITE:
                    self.on_writable(s)
                elif s.sock is not None and ev & selectors.EVENT_READ:
                    self.on_readable(s)
        self.opening = False
        for s in self.streams:
            if s.state in ("new", "connecting", "headers", "retry"):
                if s.state == "retry":
                    s.state = "refused"
                else:
                    self.error(s, "no answer within the open timeout")
        self.opened_s = round(self.now(), 3)

    # ---- holding
    def snapshot(self):
        tot = dict.fromkeys(COUNTED + ("bytes", "body_bytes"), 0)
        per_stream_run = []
        for s in self.streams:
            if s.status != 200:
                continue
            for k in COUNTED:
                tot[k] += s.counts[k]
            tot["bytes"] += s.bytes
            tot["body_bytes"] += s.body_bytes
            per_stream_run.append(s.counts["run"])
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"t": self.now(), "counts": tot, "per_stream_run": per_stream_run,
                "cpu_s": ru.ru_utime + ru.ru_stime,
                "open": sum(1 for s in self.streams if s.state == "body")}

    def command(self, line):
        line = line.strip().decode(errors="replace")
        if line in ("mark", "endmark"):
            self.marks[line] = self.snapshot()
            self.marked = line == "mark"
        elif line == "stop":
            self.stop = True

    def on_stdin(self):
        try:
            data = os.read(sys.stdin.fileno(), 4096)
        except OSError:
            data = b""
        if not data:
            self.stop = True
            self.sel.unregister(sys.stdin.fileno())
            return
        self.stdin_buf += data
        while b"\n" in self.stdin_buf:
            line, self.stdin_buf = self.stdin_buf.split(b"\n", 1)
            self.command(line)

    def hold(self):
        self.sel.register(sys.stdin.fileno(), selectors.EVENT_READ, None)
        pause = self.a.batch_ms / 1000
        while not self.stop:
            ready = self.sel.select(timeout=1.0)
            for key, ev in ready:
                if key.data is None:
                    self.on_stdin()
                elif key.data.sock is not None:
                    self.on_readable(key.data)
            if pause and ready:
                # Let a busy stream's events gather into one read: a few ms of events is a few kB,
                # far below the kernel's buffers and the server's 256 kB.
                time.sleep(pause)

    # ---- reports
    def open_report(self):
        ok = [s for s in self.streams if s.status == 200 and s.state == "body"]
        refused = {}
        for s in self.streams:
            if s.state == "refused" and s.refusal:
                what = f"{s.refusal['status']} {s.refusal['code']}"
                refused[what] = refused.get(what, 0) + 1
        return {"phase": "open", "requested": len(self.streams), "ok": len(ok), "refused": refused,
                "refusals": self.refusals, "refusal_samples": self.refusal_samples,
                "attempts": sum(s.attempts for s in self.streams),
                "first_try_ok": sum(1 for s in ok if s.attempts == 1),
                "errors": self.errors, "open_s": self.opened_s,
                "retry_first": sum(1 for s in ok if s.first.startswith(b"retry: 3000\n\n")),
                "headers_sample": ok[0].headers if ok else None}

    def end_report(self):
        end = self.snapshot()
        got200 = [s for s in self.streams if s.status == 200]
        closed = [s for s in got200 if s.state != "body"]
        a = self.marks.get("mark")
        b = self.marks.get("endmark") or end
        window = None
        if a:
            span = b["t"] - a["t"]
            per = sorted(y - x for x, y in zip(a["per_stream_run"], b["per_stream_run"]))
            window = {"seconds": round(span, 3),
                      **{k: b["counts"][k] - a["counts"][k] for k in b["counts"]},
                      "open_at_start": a["open"], "open_at_end": b["open"],
                      "run_per_stream_min": per[0] if per else None, "run_per_stream_max": per[-1] if per else None,
                      "cpu_s": round(b["cpu_s"] - a["cpu_s"], 3)}
        spans = [s.last_id - s.first_id + 1 for s in got200 if s.first_id is not None and s.last_id is not None]
        ids = {"span": sum(spans), "run_events": sum(s.counts["run"] for s in got200 if s.first_id is not None),
               "in_gaps": sum(s.gap_ids for s in got200)}
        ids["missing"] = ids["span"] - ids["run_events"] - ids["in_gaps"]
        return {"phase": "end", "requested": len(self.streams), "got_200": len(got200), "ids": ids,
                "open_whole_run": len(got200) - len(closed), "closed_by_server": len(closed),
                "closed_at_s": sorted(s.closed_at for s in closed if s.closed_at is not None)[:10],
                "body_ended": sum(1 for s in got200 if s.body_ended), "end_events": [e for s in got200 for e in s.ends][:3],
                "retry_first": sum(1 for s in got200 if s.first.startswith(b"retry: 3000\n\n")),
                "first_bytes_sample": got200[0].first.decode(errors="replace") if got200 else None,
                "anomalies": sum(s.anomalies for s in got200),
                "max_read": max((s.max_read for s in got200), default=0),
                "max_read_gap_ms": round(max((s.max_read_gap for s in got200), default=0) * 1000, 1),
                # the reads before the server closed a stream: (ms before it closed, bytes)
                "reads_before_close": [[(round((t - s.closed_at) * 1000, 1), n) for t, n in s.reads]
                                       for s in closed[:3]],
                "held_s": round(end["t"] - self.opened_s, 3),
                "totals": end["counts"], "window": window, "cpu_s": round(end["cpu_s"], 3),
                "errors": self.errors}

    def close_all(self):
        for s in self.streams:
            self.drop_socket(s)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-p", "--port", type=int, required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-n", "--streams", type=int, required=True)
    p.add_argument("--path", default="/events")
    p.add_argument("--open-timeout", type=float, default=30)
    p.add_argument("--pending", type=int, default=16, help="openings in progress at once (16)")
    p.add_argument("--batch-ms", type=float, default=2,
                   help="after each wakeup that read something, wait this long before the next (2)")
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < a.streams + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.streams + 1024), hard))
    c = Client(a)

    def on_term(sig, frame):
        c.stop = True
    signal.signal(signal.SIGTERM, on_term)
    c.open_all()
    print(json.dumps(c.open_report()), flush=True)
    try:
        c.hold()
    except KeyboardInterrupt:
        pass
    print(json.dumps(c.end_report()), flush=True)
    c.close_all()


if __name__ == "__main__":
    main()
