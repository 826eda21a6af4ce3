#!/usr/bin/python3
"""Scrapes querygate's GET /metrics and parses it with the official Prometheus client's parser
(Debian's python3-prometheus-client, prometheus_client.parser), as a Prometheus server would
read it. Prints one JSON object:

  {"status": 200, "content_type": "...",
   "families": {"querygate_calls": {"type": "counter",
                                    "samples": [["querygate_calls_total", {"query": "q", ...}, 9.0], ...]}}}

A body the parser refuses ends the script with exit code 2 and the parser's error on stderr.

Usage: scrape.py --port P [--token T]
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token")
    a = ap.parse_args()
    req = urllib.request.Request(f"http://127.0.0.1:{a.port}/metrics")
    if a.token is not None:
        req.add_header("Authorization", f"Bearer {a.token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            status, ctype, body = res.status, res.headers.get("Content-Type", ""), res.read()
    except urllib.error.HTTPError as e:
        print(json.dumps({"status": e.code, "content_type": e.headers.get("Content-Type", ""),
                          "families": {}}))
        return 0
    families = {}
    try:
        for f in text_string_to_metric_families(body.decode("utf-8")):
            families[f.name] = {"type": f.type,
                                "samples": [[s.name, s.labels, s.value] for s in f.samples]}
    except Exception as e:  # the parser's error, whatever its class
        print(f"the Prometheus parser refused the body: {e!r}", file=sys.stderr)
        return 2
    print(json.dumps({"status": status, "content_type": ctype, "families": families}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
