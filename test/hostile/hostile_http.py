#!/usr/bin/env python3
"""Hostile HTTP against a live querygate server.

Sends malformed and abusive requests over real sockets, from several connections at once, and
checks every answer: well-formed HTTP/1.x, and on every error the documented JSON body
{"error", "code", "request_id"} with a code the API defines (src/common/api_error.hpp). A request
may also be dropped without an answer where HTTP allows it (the client sent no complete request);
those are counted, never a garbage answer.

Kinds of request: broken request lines, bad percent-encoding and invalid UTF-8 in paths and query
strings, huge and repeated headers, conflicting Content-Length and Transfer-Encoding, pipelining,
deep and wide JSON bodies, huge numbers, NUL bytes, bearer tokens with every field wrong, heads RFC
9112 refuses (which must be 400 invalid_request or invalid_path: docs/http-conformance.md), HEAD on
every path followed by another request on the connection (the HEAD's answer must have no body: the
next answer follows its head at once, or it says Connection: close), and valid calls among them,
whose rows must be right.

Usage: hostile_http.py --port P --key SECRET --query NAME [--requests N] [--connections C]
                       [--seed S] [--stall-seconds T] [--codes src/common/api_error.hpp]
Prints one summary line and exits 1 on any unexpected answer (the first ones are shown).
"""
import argparse
import base64
import json
import os
import random
import re
import socket
import sys
import time
from multiprocessing import Pool


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def known_codes(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    codes = set(re.findall(r'ErrorCode\s+\w+\{\d+,\s*"([a-z_]+)"\}', text))
    codes.update(re.findall(r'const char \*\w+ = "([a-z_]+)"', text))
    return codes


class Generator:
    """Makes one hostile request (bytes) and says what a valid answer to it must hold."""

    def __init__(self, rng, key, query):
        self.rng = rng
        self.key = key.encode()
        self.query = query.encode()

    def rand_bytes(self, n):
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def request(self, method=b"GET", target=None, headers=None, body=b"", version=b"HTTP/1.1"):
        target = target if target is not None else b"/q/" + self.query + b"?id=1"
        lines = [method + b" " + target + b" " + version]
        hs = headers if headers is not None else [(b"Host", b"x"), (b"X-API-Key", self.key)]
        for name, value in hs:
            lines.append(name + b": " + value)
        return b"\r\n".join(lines) + b"\r\n\r\n" + body

    def valid(self):
        i = self.rng.randint(1, 50)
        return self.request(target=b"/q/" + self.query + b"?id=%d" % i), ("valid", i)

    def broken_request_line(self):
        r = self.rng.choice([
            b"GET\r\n\r\n",
            b"GET /q/x\r\n\r\n",
            b"GET  /q/x  HTTP/1.1\r\nHost: x\r\n\r\n",
            b" GET /q/x HTTP/1.1\r\nHost: x\r\n\r\n",
            b"G\x00T /q/x HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /q/x HTTP/1.1 extra\r\nHost: x\r\n\r\n",
            b"GET /q/x HTTP/9.9\r\nHost: x\r\n\r\n",
            b"GET /q/x HTTP/1.1\nHost: x\n\n",
            b"\r\n\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n",
            self.rand_bytes(self.rng.randint(1, 200)) + b"\r\n\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"GET /" + b"a" * self.rng.choice([100, 5000, 40000]) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        ])
        return r, ("any",)

    def bad_encoding(self):
        target = self.rng.choice([
            b"/q/%zz?id=1", b"/q/" + self.query + b"?id=%", b"/q/" + self.query + b"?id=%4",
            b"/q/" + self.query + b"?%ff%fe=1", b"/q/" + self.query + b"?id=%c0%80",
            b"/q/" + self.query + b"?id=\xff\xfe", b"/q/\xed\xa0\x80", b"/q/" + self.query + b"?id=%00",
            b"/q/" + self.query + b"?id=1&id=2", b"/q/" + self.query + b"?" + b"&" * 1000,
            b"/q/" + self.query + b"?id=" + b"9" * 400, b"/q/..%2f..%2fetc", b"/%2e%2e/q/x",
        ])
        return self.request(target=target), ("any",)

    def big_headers(self):
        kind = self.rng.randint(0, 3)
        hs = [(b"Host", b"x"), (b"X-API-Key", self.key)]
        if kind == 0:
            hs.append((b"X-Big", b"a" * self.rng.choice([1000, 20000, 40000, 100000])))
        elif kind == 1:
            hs += [(b"X-API-Key", self.key)] * self.rng.choice([2, 50, 2000])
        elif kind == 2:
            hs += [(b"X-Forwarded-For", b"10.0.0.%d" % i) for i in range(self.rng.choice([10, 3000]))]
        else:
            hs += [(b"X-H%d" % i, b"v") for i in range(self.rng.choice([100, 5000]))]
        return self.request(headers=hs), ("any",)

    def framing(self):
        body = json.dumps({"params": {"id": 1}}).encode()
        hs = [(b"Host", b"x"), (b"X-API-Key", self.key), (b"Content-Type", b"application/json")]
        kind = self.rng.randint(0, 6)
        if kind == 0:
            hs += [(b"Content-Length", b"%d" % len(body)), (b"Content-Length", b"%d" % (len(body) + 5))]
        elif kind == 1:
            hs += [(b"Content-Length", b"%d" % len(body)), (b"Transfer-Encoding", b"chunked")]
        elif kind == 2:
            hs += [(b"Transfer-Encoding", b"chunked")]
            body = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
        elif kind == 3:
            hs += [(b"Transfer-Encoding", b"chunked")]
            body = b"fffffffffffffffff\r\n" + body + b"\r\n0\r\n\r\n"
        elif kind == 4:
            hs += [(b"Content-Length", b"-1")]
        elif kind == 5:
            hs += [(b"Content-Length", b"99999999999999999999999")]
        else:
            hs += [(b"Transfer-Encoding", b"gzip, chunked")]
            body = b"0\r\n\r\n"
        return self.request(method=b"POST", headers=hs, body=body), ("any",)

    def pipelined(self):
        n = self.rng.randint(2, 6)
        reqs = [self.request(target=b"/q/" + self.query + b"?id=%d" % (i + 1)) for i in range(n)]
        return b"".join(reqs), ("pipelined", n)

    def json_body(self):
        kind = self.rng.randint(0, 6)
        if kind == 0:
            d = self.rng.choice([10, 63, 64, 65, 1000, 100000])
            body = b'{"params":{"id":' + b"[" * d + b"1" + b"]" * d + b"}}"
        elif kind == 1:
            body = b'{"params":{' + b",".join(b'"p%d":1' % i for i in range(self.rng.choice([10, 20000]))) + b"}}"
        elif kind == 2:
            body = b'{"params":{"id":' + b"9" * self.rng.choice([20, 400, 100000]) + b"}}"
        elif kind == 3:
            body = b'{"params":{"id":1e' + b"9" * 50 + b"}}"
        elif kind == 4:
            body = b'{"params":{"id":"\\u0000"}}'
        elif kind == 5:
            body = b'{"params":{"id":1},"params":{"id":2}}'
        else:
            body = self.rand_bytes(self.rng.randint(1, 300))
        hs = [(b"Host", b"x"), (b"X-API-Key", self.key), (b"Content-Type", b"application/json"),
              (b"Content-Length", b"%d" % len(body))]
        return self.request(method=b"POST", headers=hs, body=body), ("any",)

    def nul_bytes(self):
        r = self.rng.choice([
            self.request(target=b"/q/" + self.query + b"?id=1\x00"),
            self.request(headers=[(b"Host", b"x"), (b"X-API-Key", self.key + b"\x00junk")]),
            self.request(headers=[(b"Host", b"x\x00y"), (b"X-API-Key", self.key)]),
            self.request(headers=[(b"Host", b"x"), (b"X-API-Key", self.key), (b"X-Forwarded-For", b"1.2.3.4\x00")]),
        ])
        return r, ("any",)

    def strict(self):
        """A head RFC 9112 refuses: 400 with invalid_request or invalid_path, whatever else."""
        key = (b"X-API-Key", self.key)
        body = json.dumps({"params": {"id": 1}}).encode()
        r = self.rng.choice([
            self.request(target=b"/q/" + self.query + b"%00evil?id=1"),
            self.request(target=b"/q/" + self.query + b"\x00evil?id=1"),
            self.request(target=b"/q/" + self.query + b"%0d%0aX:%20y?id=1"),
            self.request(method=b"POST", headers=[(b"Host", b"x"), key, (b"Content-Length", b"%d" % len(body)),
                                                  (b"Transfer-Encoding ", b"chunked")], body=body),
            self.request(headers=[key]),
            self.request(headers=[(b"Host", b"x"), (b"Host", b"y"), key]),
            self.request(headers=[(b"Host", b"a b"), key]),
            self.request(headers=[(b"Host", b"x"), key, (b"X-A", b"one\r\n two")]),
            self.request(headers=[(b"Host", b"x"), (b"X-API-Key", self.key + b"\x00junk")]),
            self.request(headers=[(b"Host", b"x"), key, (b"X-A", b"a\rb")]),
            self.request(method=b"POST", version=b"HTTP/1.0", headers=[(b"Host", b"x"), key, (b"Transfer-Encoding", b"chunked")],
                         body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)),
            self.request(method=b"G(T"),
            self.request(target=b"q/" + self.query + b"?id=1"),
        ])
        return r, ("refused", 400)

    HEAD_PATHS = ["/health", "/live", "/ready", "/openapi.json", "/catalog", "/metrics", "/mcp", "/events",
                  "/nowhere", None]

    def head(self):
        """HEAD of a path, then GET /health on the same connection."""
        path = self.rng.choice(self.HEAD_PATHS)
        target = path.encode() if path else b"/q/" + self.query + b"?id=1"
        hs = [(b"Host", b"x")] + ([(b"X-API-Key", self.key)] if self.rng.random() < 0.5 else [])
        return (self.request(method=b"HEAD", target=target, headers=hs)
                + self.request(target=b"/health", headers=[(b"Host", b"x")])), ("head",)

    def tokens(self):
        header = self.rng.choice([
            {"alg": "none"}, {"alg": "HS256"}, {"alg": "RS256", "kid": "nope"}, {"alg": "HS256", "crit": ["x"]},
            {"alg": 5}, {}, {"alg": "ES256", "kid": "a" * 5000},
        ])
        payload = self.rng.choice([
            {"policy": "p", "exp": 1}, {"policy": ["p"]}, {"exp": "soon"}, {"policy": "p", "nbf": 9e18},
            {"policy": "p" * 10000}, {"policy": None},
        ])
        parts = [b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()),
                 b64url(self.rand_bytes(32))]
        token = self.rng.choice([
            b".".join(parts), b".".join(parts[:2]) + b".", b"..", b"a.b.c", b"%%%.%%%.%%%",
            b".".join(parts) + b"." + parts[0], b"x" * 200000,
            parts[0] + b"." + b'{"policy":"p","policy":"q"}' + b"." + parts[2],
        ])
        hs = [(b"Host", b"x"), (b"Authorization", b"Bearer " + token)]
        return self.request(headers=hs), ("any",)

    KINDS = ["valid", "broken_request_line", "bad_encoding", "big_headers", "framing", "pipelined",
             "json_body", "nul_bytes", "tokens", "strict", "head"]

    def next(self):
        kind = self.rng.choice(self.KINDS)
        data, expect = getattr(self, kind)()
        return kind, data, expect


def answers_complete(data, wanted, heads=0):
    """Whether data holds `wanted` complete answers (any whole answer when wanted is 0)."""
    try:
        n = len(parse_responses(data, heads))
    except ValueError:
        return False
    return n >= max(wanted, 1)


def read_all(sock, deadline, wanted=0, heads=0):
    """Reads until the server closes, the deadline, or the wanted answers are complete (a server
    keeping a connection open after answering is within HTTP/1.1). Returns (data, closed)."""
    chunks = []
    while True:
        if chunks and answers_complete(b"".join(chunks), wanted, heads):
            return b"".join(chunks), True
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), False
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return b"".join(chunks), False
        except ConnectionResetError:
            return b"".join(chunks), True
        if not data:
            return b"".join(chunks), True
        chunks.append(data)


def parse_responses(data, heads=0):
    """Splits data into (status, headers, body) answers; raises ValueError on anything else. The
    first `heads` answers are to HEAD requests: a head alone, whatever its Content-Length says (and
    it may have none)."""
    out = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            raise ValueError("an incomplete answer head: %r" % data[pos:pos + 200])
        head = data[pos:end].decode("latin-1")
        lines = head.split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3}) [^\r\n]*$", lines[0])
        if not m:
            raise ValueError("not a status line: %r" % lines[0][:200])
        headers = {}
        for line in lines[1:]:
            if ":" not in line:
                raise ValueError("a malformed header line: %r" % line[:200])
            name, value = line.split(":", 1)
            headers.setdefault(name.strip().lower(), value.strip())
        if len(out) < heads:
            out.append((int(m.group(1)), headers, None))
            pos = end + 4
            continue
        length = headers.get("content-length")
        if length is None or not length.isdigit():
            raise ValueError("no Content-Length: %r" % head[:300])
        body_start = end + 4
        body = data[body_start:body_start + int(length)]
        if len(body) != int(length):
            raise ValueError("a body shorter than its Content-Length")
        out.append((int(m.group(1)), headers, body))
        pos = body_start + int(length)
    return out


def check_answer(status, headers, body, codes):
    if status < 400:
        return None
    if not headers.get("content-type", "").startswith("application/json"):
        return "status %d without a JSON body: %r" % (status, (body or b"")[:200])
    if body is None:
        return None  # the answer to a HEAD: its head says JSON, and it has no body
    try:
        j = json.loads(body)
    except ValueError:
        return "status %d with a body that is not JSON: %r" % (status, body[:200])
    if not isinstance(j, dict) or not isinstance(j.get("code"), str) or not isinstance(j.get("error"), str):
        return "status %d without error and code: %r" % (status, body[:200])
    if j["code"] not in codes:
        return "status %d with an undocumented code %r" % (status, j["code"])
    if not re.fullmatch(r"[0-9a-f]{16}|[A-Za-z0-9._-]{1,64}", str(j.get("request_id", ""))):
        return "status %d without a request id: %r" % (status, body[:200])
    return None


def worker(args):
    global STALL_SECONDS
    seed, count, port, key, query, codes, STALL_SECONDS = args
    rng = random.Random(seed)
    gen = Generator(rng, key, query)
    stats = {"sent": 0, "answered": 0, "dropped": 0, "kept_open": 0, "valid_ok": 0, "bad": 0}
    per_kind = {k: [0, 0] for k in Generator.KINDS}  # kind: [sent, unexpected]
    problems = []
    # Requests are made once, 400 per process: making a 100 kB header or a 100000-deep JSON body
    # costs more than sending it. Each is sent once before any is sent again (so 1,600 requests from
    # 4 connections send every one made), then in random order.
    pool = [gen.next() for _ in range(min(count, 400))]
    for i in range(count):
        kind, data, expect = pool[i] if i < len(pool) else rng.choice(pool)
        bad_before = stats["bad"]
        stats["sent"] += 1
        per_kind[kind][0] += 1
        one(data, expect, port, codes, stats, problems)
        per_kind[kind][1] += stats["bad"] - bad_before
    return stats, per_kind, problems[:5]


STALL_SECONDS = 10


def one(data, expect, port, codes, stats, problems):
    """Sends one request on its own connection and judges the answer."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as e:
        stats["bad"] += 1
        problems.append("connect failed: %s" % e)
        return
    try:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered (and closed) before reading everything
        wanted = expect[1] if expect[0] == "pipelined" else 2 if expect[0] == "head" else 1
        heads = 1 if expect[0] == "head" else 0
        got, closed = read_all(sock, time.monotonic() + STALL_SECONDS, wanted, heads)
    finally:
        sock.close()
    if not closed and not got:
        # The client has sent everything and closed its side: a server that neither answers
        # nor closes within STALL_SECONDS holds a connection it should not.
        stats["bad"] += 1
        problems.append("no answer and no close within %g s (request %r)" % (STALL_SECONDS, data[:120]))
        return
    if not closed:
        stats["kept_open"] += 1  # answered; keep-alive, the end of the stream not yet seen
    if not got:
        stats["dropped"] += 1
        if expect[0] in ("valid", "pipelined", "refused", "head"):
            stats["bad"] += 1
            problems.append("no answer to a complete request (%r)" % (data[:120],))
        return
    try:
        answers = parse_responses(got, 1 if expect[0] == "head" else 0)
    except ValueError as e:
        stats["bad"] += 1
        problems.append("%s (request %r)" % (e, data[:120]))
        return
    stats["answered"] += 1
    for status, headers, body in answers:
        problem = check_answer(status, headers, body, codes)
        if problem:
            stats["bad"] += 1
            problems.append("%s (request %r)" % (problem, data[:120]))
    if expect[0] == "valid":
        ok = (len(answers) == 1 and answers[0][0] == 200
              and json.loads(answers[0][2]) == [{"id": expect[1], "v": "row %d" % expect[1]}])
        stats["valid_ok" if ok else "bad"] += 1
        if not ok:
            problems.append("a valid call answered wrongly: %r" % (answers[:1],))
    elif expect[0] == "pipelined":
        ok = len(answers) == expect[1] and all(a[0] == 200 for a in answers)
        stats["valid_ok" if ok else "bad"] += 1
        if not ok:
            problems.append("pipelined calls answered %d of %d" % (len(answers), expect[1]))
    elif expect[0] == "refused":
        code = None
        if answers and answers[0][2]:
            try:
                code = json.loads(answers[0][2]).get("code")
            except ValueError:
                pass
        if not (answers[0][0] == expect[1] and code in ("invalid_request", "invalid_path")):
            stats["bad"] += 1
            problems.append("refused with %d %r, not %d invalid_request or invalid_path (request %r)"
                            % (answers[0][0], code, expect[1], data[:120]))
    elif expect[0] == "head":
        # The GET after the HEAD is answered right after its head; or the head says the connection
        # closes, and nothing follows it.
        closing = answers[0][1].get("connection", "").lower() == "close"
        ok = ((len(answers) == 2 and answers[1][0] == 200 and b'"status":"ok"' in answers[1][2])
              or (len(answers) == 1 and closing and closed))
        if not ok:
            stats["bad"] += 1
            problems.append("HEAD then GET /health answered %r (request %r)"
                            % ([a[0] for a in answers], data[:120]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stall-seconds", type=float, default=10,
                    help="how long a request may go without an answer or a close")
    ap.add_argument("--codes", default=os.path.join(os.path.dirname(__file__), "../../src/common/api_error.hpp"))
    a = ap.parse_args()
    codes = known_codes(a.codes)
    per = a.requests // a.connections
    jobs = [(a.seed * 1000 + i, per, a.port, a.key, a.query, codes, a.stall_seconds)
            for i in range(a.connections)]
    t0 = time.monotonic()
    with Pool(a.connections) as pool:
        results = pool.map(worker, jobs)
    total = {}
    kinds = {}
    problems = []
    for stats, per_kind, probs in results:
        for k, v in stats.items():
            total[k] = total.get(k, 0) + v
        for k, (sent, bad) in per_kind.items():
            kinds.setdefault(k, [0, 0])
            kinds[k][0] += sent
            kinds[k][1] += bad
        problems += probs
    for p in problems[:10]:
        print("# " + p)
    for k in Generator.KINDS:
        print("kind %s: sent %d, unexpected %d" % (k, kinds[k][0], kinds[k][1]))
    print("sent %d, answered %d (%d kept open after the answer), dropped without an answer %d, "
          "valid calls right %d, unexpected %d, %.0f s"
          % (total["sent"], total["answered"], total["kept_open"], total["dropped"], total["valid_ok"],
             total["bad"], time.monotonic() - t0))
    sys.exit(1 if total["bad"] else 0)


if __name__ == "__main__":
    main()
