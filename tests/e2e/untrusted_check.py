#!/usr/bin/env python3
"""Check that nothing a target wrote reaches a person or a parser raw.

Usage: untrusted_check.py KIND FILE [KIND FILE...]

KIND is one of:
  text    a terminal's text (stderr, stdout): valid UTF-8, no control byte
          but the line ends ("\\n"), no C1 control, bidi override or line
          separator; with PREFIX after a colon (text:pprof-alloc), every
          line starts with PREFIX (no forged line)
  json    one JSON document: it parses, and every key and string in it is
          clean as above, with no line end either
  jsonl   one JSON document a line, each as json
  html    the report: the text's rules (tabs allowed, the page's own), and
          the JSON data in <script id="pa-data"> as json
  pprof   a gzipped profile: every string in its string table clean
  metrics the Prometheus exposition: the text's rules

Prints one line per problem and exits 1 if there was any; with -s, also
prints the strings of the pprof string table, one a line (for grep).
"""
import gzip
import json
import re
import sys

BAD = set(range(0x20)) | set(range(0x7f, 0xa0)) | {0x2028, 0x2029} | \
    set(range(0x202a, 0x202f)) | set(range(0x2066, 0x206a))
problems = []


def bad_chars(s, allow=""):
    return [c for c in s if ord(c) in BAD and c not in allow]


def check_str(where, s, allow=""):
    bad = bad_chars(s, allow)
    if bad:
        problems.append("%s: raw %s in %r" % (where, ", ".join(sorted(
            {"U+%04X" % ord(c) for c in bad})), s[:120]))


def decode(where, data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append("%s: invalid UTF-8 at byte %d: %r" %
                        (where, e.start, data[max(0, e.start - 40):e.start + 20]))
        return data.decode("utf-8", "replace")


def walk(where, v):
    if isinstance(v, str):
        check_str(where, v)
    elif isinstance(v, dict):
        for k, x in v.items():
            check_str(where + " (key)", k)
            walk(where + "." + k, x)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk("%s[%d]" % (where, i), x)


def text(path, prefix=None, allow="\n"):
    s = decode(path, open(path, "rb").read())
    for n, line in enumerate(s.split("\n"), 1):
        check_str("%s:%d" % (path, n), line, allow)
        if prefix and line and not line.startswith(prefix):
            problems.append("%s:%d: a line not the tracer's: %r" % (path, n, line[:120]))
    return s


def json_doc(where, s):
    try:
        walk(where, json.loads(s))
    except ValueError as e:
        problems.append("%s: not JSON: %s" % (where, e))


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return v, i


def pprof_strings(path):
    b = gzip.open(path).read()
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(b, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(b, i)
            if field == 6:	# Profile.string_table
                out.append(b[i:i + n])
            i += n
        else:
            raise ValueError("%s: wire type %d" % (path, wire))
    return out


def main():
    args = sys.argv[1:]
    show = False
    if args and args[0] == "-s":
        show, args = True, args[1:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    for kind, path in zip(args[::2], args[1::2]):
        kind, _, prefix = kind.partition(":")
        if kind in ("text", "metrics"):
            text(path, prefix or None)
        elif kind == "json":
            json_doc(path, decode(path, open(path, "rb").read()))
        elif kind == "jsonl":
            s = decode(path, open(path, "rb").read())
            for n, line in enumerate(s.splitlines(), 1):
                json_doc("%s:%d" % (path, n), line)
        elif kind == "html":
            s = text(path, None, "\n\t")
            m = re.search(r'<script type="application/json" id="pa-data">(.*?)</script>', s, re.S)
            if not m:
                problems.append("%s: no pa-data" % path)
            else:
                json_doc(path + " pa-data", m.group(1))
        elif kind == "pprof":
            for n, raw in enumerate(pprof_strings(path)):
                s = decode("%s string %d" % (path, n), raw)
                check_str("%s string %d" % (path, n), s)
                if show:
                    print(s)
        else:
            sys.exit("unknown kind " + kind)
    for p in problems[:20]:
        print("PROBLEM: " + p)
    sys.exit(1 if problems else 0)


main()
