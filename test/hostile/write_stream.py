#!/usr/bin/env python3
"""Writes that keep coming while server processes are killed.

--threads clients, each on its own keep-alive connection (Python's http.client), call
GET --path?id=N for ids of their own (thread t writes t, t + threads, t + 2 * threads ...) for
--duration seconds. A call answered 200 is one the server says it wrote; a call whose connection
failed (the server went away) may or may not have been written, and the client reconnects after
a pause and goes on with the next id, so that service coming back shows as more 200s.

Prints one JSON object: answered (the ids answered 200, sorted), failed (calls with no answer),
statuses (count of every other status), answered_after_failure (200s after the first failure).
"""
import argparse
import http.client
import json
import threading
import time


def client(args, t, out, lock, first_failure):
    conn = None
    i = 0
    deadline = time.monotonic() + args.duration
    while time.monotonic() < deadline:
        n = t + i * args.threads
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
            conn.request("GET", "%s?id=%d" % (args.path, n), headers={"X-API-Key": args.key})
            resp = conn.getresponse()
            resp.read()
            with lock:
                if resp.status == 200:
                    out["answered"].append(n)
                    if first_failure:
                        out["answered_after_failure"] += 1
                else:
                    out["statuses"][str(resp.status)] = out["statuses"].get(str(resp.status), 0) + 1
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
    args = p.parse_args()
    out = {"answered": [], "failed": 0, "statuses": {}, "answered_after_failure": 0}
    lock = threading.Lock()
    first_failure = []
    threads = [threading.Thread(target=client, args=(args, t, out, lock, first_failure))
               for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out["answered"].sort()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
