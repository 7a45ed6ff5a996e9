#!/usr/bin/env python3
"""Read `go tool pprof -symbolize=none -raw` output for the symbolize tests.

Usage: go tool pprof -symbolize=none -raw FILE | symlocs.py MODE

Unlike tests/e2e/pprof_sum.py this keeps whole function names, spaces and
all (C++ names such as "ns::Pool<int>::grow(unsigned long)").

locs      one line per location that a sample uses:
            MAPPING-FILE | NAME FILE:LINE <- NAME FILE:LINE ...
          the Lines of the location, leaf (innermost inlined) first, FILE
          the base name of the source file; a location without Lines is
            MAPPING-FILE | -
leaf      per function of the first Line of each sample's first location,
          the sample values summed: "NAME<TAB>V1 V2 V3 V4"; "-" for a
          location without Lines.
names     one line per distinct function used by a location:
            NAME<TAB>SYSTEM-NAME
          (pprof prints the system name only when it differs from the name;
          it is then equal to NAME here).
"""
import os
import re
import sys

LOC = re.compile(r"^\s*(\d+): 0x[0-9a-f]+ M=(\d+) (?:\[F\] )?(.*)$")
LINE = re.compile(r"^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")
MAP = re.compile(r"^\s*(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S*)")
SAMPLE = re.compile(r"^\s*([-\d ]+):\s*([\d ]*)$")


def parse_line(text):
    """(name, file base name, line, system name) of one Line, or None."""
    text = text.strip()
    if not text or text == "??":
        return None
    m = LINE.match(text)
    if not m:
        return ("?unparsed:" + text, "", 0, "")
    name, fname, line, _, sysname = m.groups()
    return (name, os.path.basename(fname), int(line), sysname or name)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "locs"
    section = None
    samples = []
    locations = {}        # id -> (mapping id, [lines])
    mappings = {}
    current = None
    for raw in sys.stdin:
        raw = raw.rstrip("\n")
        if raw.startswith("Samples:"):
            section = "samples"
            continue
        if raw.startswith("Locations"):
            section = "locations"
            continue
        if raw.startswith("Mappings"):
            section = "mappings"
            continue
        if section == "samples":
            m = SAMPLE.match(raw)
            if m:
                samples.append(([int(v) for v in m.group(1).split()],
                                [int(v) for v in m.group(2).split()]))
        elif section == "locations":
            m = LOC.match(raw)
            if m:
                current = int(m.group(1))
                locations[current] = (int(m.group(2)), [])
                ln = parse_line(m.group(3))
                if ln:
                    locations[current][1].append(ln)
            elif current is not None and raw.startswith(" "):
                ln = parse_line(raw)
                if ln:
                    locations[current][1].append(ln)
        elif section == "mappings":
            m = MAP.match(raw)
            if m:
                mappings[int(m.group(1))] = m.group(2)

    used = []
    for _, locs in samples:
        for loc in locs:
            if loc not in used:
                used.append(loc)
    if mode == "locs":
        out = set()
        for loc in used:
            mid, lines = locations.get(loc, (0, []))
            frames = " <- ".join("%s %s:%d" % (n, f, l) for n, f, l, _ in lines)
            out.add("%s | %s" % (mappings.get(mid, "?"), frames or "-"))
        for line in sorted(out):
            print(line)
    elif mode == "leaf":
        totals = {}
        for values, locs in samples:
            name = "-"
            if locs and locations.get(locs[0], (0, []))[1]:
                name = locations[locs[0]][1][0][0]
            acc = totals.setdefault(name, [0] * len(values))
            for i, v in enumerate(values):
                acc[i] += v
        # the first four: alloc and in-use (the peak's two follow)
        for name, vals in sorted(totals.items()):
            print("%s\t%s" % (name, " ".join(str(v) for v in vals[:4])))
    elif mode == "names":
        out = set()
        for loc in used:
            for n, _, _, s in locations.get(loc, (0, []))[1]:
                out.add("%s\t%s" % (n, s))
        for line in sorted(out):
            print(line)
    else:
        sys.exit("symlocs.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
