#!/usr/bin/env python3
"""Reads an answer's body on stdin with a parser no one here wrote, and prints what it read as one
JSON document on stdout: the way a caller's program sees the answer.

    parse_answer.py json|ndjson|csv|tsv

json: the document, by Python's json module. ndjson: a list of the lines, each by json.loads
(every line must end with LF, and none may be empty). csv: a list of records, by Python's csv
module (RFC 4180 dialect: its default "excel"), each a list of strings. tsv: a list of records
split on tabs, each field unescaped as PostgreSQL's COPY text format writes it (\\\\, \\t, \\n,
\\r) and \\N read as null. A body that does not parse exits 1 with the parser's message.
"""
import csv
import io
import json
import sys

TSV_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def tsv_field(text):
    if text == "\\N":
        return None
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text) or text[i + 1] not in TSV_ESCAPES:
                raise ValueError("a backslash that escapes nothing: %r" % text)
            out.append(TSV_ESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    kind = sys.argv[1]
    body = sys.stdin.buffer.read().decode("utf-8")
    try:
        if kind == "json":
            doc = json.loads(body)
        elif kind == "ndjson":
            if body and not body.endswith("\n"):
                raise ValueError("the last line does not end with LF")
            doc = [json.loads(line) for line in body.split("\n")[:-1]]
        elif kind == "csv":
            doc = [row for row in csv.reader(io.StringIO(body, newline=""), strict=True)]
        elif kind == "tsv":
            if body and not body.endswith("\n"):
                raise ValueError("the last record does not end with LF")
            doc = [[tsv_field(f) for f in line.split("\t")] for line in body.split("\n")[:-1]]
        else:
            raise ValueError("unknown format " + kind)
    except (ValueError, csv.Error) as e:
        print("not %s: %s" % (kind, e), file=sys.stderr)
        sys.exit(1)
    json.dump(doc, sys.stdout)


if __name__ == "__main__":
    main()
