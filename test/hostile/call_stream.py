#!/usr/bin/env python3
"""Calls that keep coming, each client on its own keep-alive connection, while something happens
to the server (a process killed, an overload).

--threads clients (Python's http.client) call POST --path?id=N (a write is never a GET's; a read
may be either) for ids of their own (thread t
calls t, t + threads, t + 2 * threads ...) for --duration seconds, each sending its next call when
the last is answered (a closed loop). A call answered 200 is one the server says it made; a call
whose connection failed (the server went away) may or may not have been made, and the client
reconnects after a pause and goes on with the next id, so that service coming back shows as more
200s. An answer with Connection: close closes the connection; the next call opens another.

Prints one JSON object: answered (the ids answered 200, sorted), failed (calls with no answer),
statuses (count of every other status), codes (count of the error code of every non-200 JSON
answer), retry_after (answers with a Retry-After header), answered_after_failure (200s after the
first failure), and latency_ms: for "200" and for "other" answers, p50, p90, p99 and max.
"""
import argparse
import http.client
import json
import threading
import time


def percentiles(values):
    if not values:
        return None
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * len(v)))], 3)
    return {"p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": round(v[-1], 3)}


def client(args, t, out, lock, first_failure):
    conn = None
    i = 0
    deadline = time.monotonic() + args.duration
    while time.monotonic() < deadline:
        n = t + i * args.threads
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=args.timeout)
            sent = time.monotonic()
            conn.request("POST", "%s?id=%d" % (args.path, n), body=b"",
                         headers={"X-API-Key": args.key})
            resp = conn.getresponse()
            body = resp.read()
            took = (time.monotonic() - sent) * 1000
            with lock:
                if resp.status == 200:
                    out["answered"].append(n)
                    out["_lat200"].append(took)
                    if first_failure:
                        out["answered_after_failure"] += 1
                else:
                    out["_latother"].append(took)
                    status = str(resp.status)
                    out["statuses"][status] = out["statuses"].get(status, 0) + 1
                    try:
                        code = json.loads(body).get("code", "")
                    except ValueError:
                        code = ""
                    out["codes"][code] = out["codes"].get(code, 0) + 1
                if resp.getheader("Retry-After") is not None:
                    out["retry_after"] += 1
            if resp.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            with lock:
                out["failed"] += 1
                first_failure.append(n)
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
    if conn is not None:
        conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    out = {"answered": [], "failed": 0, "statuses": {}, "codes": {}, "retry_after": 0,
           "answered_after_failure": 0, "_lat200": [], "_latother": []}
    lock = threading.Lock()
    first_failure = []
    threads = [threading.Thread(target=client, args=(args, t, out, lock, first_failure))
               for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out["answered"].sort()
    out["latency_ms"] = {"200": percentiles(out.pop("_lat200")),
                         "other": percentiles(out.pop("_latother"))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
