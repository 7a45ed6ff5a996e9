#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""verify-reloc-aarch64.py - check tests/unit/test-reloc-aarch64.c's words
against GNU as (aarch64-linux-gnu-as and -ld: contrib/install-deps.sh
--arm64).

Every C string of the test that starts with "@ADDRESS " (adjacent literals
joined) and is followed by W(...) is A64 assembly placed at ADDRESS: it is
assembled with aarch64-linux-gnu-as, linked with aarch64-linux-gnu-ld at
-Ttext=ADDRESS, and its .text words must be the W(...) list.  "$0x..."
in the assembly is an absolute address (an undefined symbol that ld
defines with --defsym, so that PC-relative fields are resolved and range
checked by the linker).  Strings starting with "!@ADDRESS " must fail to
link (an immediate out of range) or need a linker veneer: they show that
the limits the test uses are the instruction's.

    verify-reloc-aarch64.py [--fix] [tests/unit/test-reloc-aarch64.c]

--fix rewrites each W(...) with the assembler's words (how they were
filled in the first place); without it, any difference is an error.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

CROSS = os.environ.get("CROSS", "aarch64-linux-gnu-")
MARCH = "-march=armv8.8-a+sve+memtag+crc"
STRINGS = re.compile(r'((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
WORDS = re.compile(r'\s*,\s*W\(([^)]*)\)')


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def build(tmp, n, addr, text):
    """Assemble text at addr: (words, veneer) or (None, errors)."""
    syms = {}

    def sym(m):
        name = "A_%x" % int(m.group(1), 16)
        syms[name] = int(m.group(1), 16)
        return name

    body = re.sub(r"\$0x([0-9a-fA-F]+)", sym, text)
    src = os.path.join(tmp, "c%d.s" % n)
    obj, exe, binf = src[:-2] + ".o", src[:-2], src[:-2] + ".bin"
    with open(src, "w") as f:
        f.write("\t.text\n\t.globl _start\n_start:\n\t%s\n" % body)
    r = run([CROSS + "as", MARCH, src, "-o", obj])
    if r.returncode:
        return None, r.stderr.strip()
    cmd = [CROSS + "ld", "-e", "_start", "-Ttext=0x%x" % addr,
           "--no-warn-rwx-segments", obj, "-o", exe]
    for k, v in syms.items():
        cmd.append("--defsym=%s=0x%x" % (k, v))
    r = run(cmd)
    if r.returncode:
        return None, r.stderr.strip()
    r = run([CROSS + "nm", exe])
    veneer = "_veneer" in r.stdout
    run([CROSS + "objcopy", "-O", "binary", "-j", ".text", exe, binf])
    with open(binf, "rb") as f:
        data = f.read()
    words = [int.from_bytes(data[i:i + 4], "little")
             for i in range(0, len(data), 4)]
    return words, veneer


def literal(group):
    parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', group)
    return "".join(parts)


def main():
    args = sys.argv[1:]
    fix = "--fix" in args
    args = [a for a in args if a != "--fix"]
    path = args[0] if args else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "unit", "test-reloc-aarch64.c")
    src = open(path).read()
    jobs = []	# (kind, start, end of W(...) contents, addr, text, line,
    #            start of the string)
    comments = [c.span() for c in re.finditer(r"/\*.*?\*/|//[^\n]*", src,
                                              re.S)]
    for m in STRINGS.finditer(src):
        if any(a <= m.start() < b for a, b in comments):
            continue
        s = literal(m.group(1))
        line = src.count("\n", 0, m.start()) + 1
        mm = re.match(r"(!?)@(0x[0-9a-fA-F]+) (.*)$", s, re.S)
        if not mm:
            continue
        addr, text = int(mm.group(2), 16), mm.group(3)
        if mm.group(1):
            jobs.append(("fail", 0, 0, addr, text, line, m.start()))
            continue
        w = WORDS.match(src, m.end(1))
        if not w:
            print("%s:%d: no W(...) after %r" % (path, line, s))
            return 1
        jobs.append(("words", w.start(1), w.end(1), addr, text, line,
                     m.start()))
    bad, edits = 0, []
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4) as ex:
        results = list(ex.map(lambda a: build(tmp, a[0], a[1][3], a[1][4]),
                              enumerate(jobs)))
    for (kind, start, end, addr, text, line, sstart), (words, extra) in zip(
            jobs, results):
        if kind == "fail":
            if words is not None and not extra:
                print("%s:%d: %r at 0x%x assembles and links: not out of "
                      "reach" % (path, line, text, addr))
                bad += 1
            continue
        if words is None:
            print("%s:%d: %r at 0x%x: %s" % (path, line, text, addr, extra))
            bad += 1
            continue
        if extra:
            print("%s:%d: %r at 0x%x needs a linker veneer: out of reach"
                  % (path, line, text, addr))
            bad += 1
            continue
        have = [int(x, 0) for x in src[start:end].replace("\n", " ")
                .split(",") if x.strip()]
        if have != words:
            if fix:
                edits.append((start, end, words, sstart))
            else:
                print("%s:%d: %r at 0x%x: the test has %s, as gives %s" % (
                    path, line, text, addr, " ".join("%08x" % x for x in have),
                    " ".join("%08x" % x for x in words)))
                bad += 1
    for start, end, words, sstart in sorted(edits, reverse=True):
        # W( on a line of its own, under the string, when it would not
        # fit after it; continuation lines under the first word
        bol = src.rfind("\n", 0, start) + 1
        col = len(src[bol:start].expandtabs(8))
        if col + 12 * len(words) > 80 and col > 40:
            sbol = src.rfind("\n", 0, sstart) + 1
            indent = src[sbol:sstart]
            indent = "\t" * (len(indent.expandtabs(8)) // 8) + \
                " " * (len(indent.expandtabs(8)) % 8)
            w = src.rfind("W(", 0, start)
            comma = src.rfind(",", 0, w)
            head = ",\n" + indent + "W("
            src = src[:comma] + head + src[start:]
            shift = (comma + len(head)) - start
            start, end = start + shift, end + shift
            col = len(indent.expandtabs(8)) + 2
        lines, cur = [], []
        for x in words:
            cur.append("0x%08x" % x)
            if col + len(", ".join(cur)) + 3 > 80 and len(cur) > 1:
                lines.append(", ".join(cur[:-1]))
                cur = cur[-1:]
        lines.append(", ".join(cur))
        pad = "\t" * (col // 8) + " " * (col % 8)
        src = src[:start] + (",\n" + pad).join(lines) + src[end:]
    if edits:
        with open(path, "w") as f:
            f.write(src)
        print("%s: %d W(...) rewritten" % (path, len(edits)))
    checked = sum(1 for j in jobs if j[0] == "words")
    fails = len(jobs) - checked
    print("verify-encodings: %d sequences and %d out-of-reach forms checked, "
          "%d wrong" % (checked, fails, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
