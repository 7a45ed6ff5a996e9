#!/usr/bin/env python3
"""One line per sample of `go tool pprof -raw` output: its stack.

Usage: go tool pprof -raw FILE | pprof_stacks.py

Each line is "ALLOC_SPACE INUSE_SPACE F1;F2;...", the functions of the
sample's locations leaf first, inline frames included, each named by its
system (linkage) name when the profile has one and otherwise by the first
word of its name ("??" for a location without function).  The comments
follow as "# ..." lines.
"""
import re
import sys


def name_of(text):
    m = re.search(r" s=\d+\((\S+)\)$", text)
    if m:
        return m.group(1)
    text = re.sub(r" s=\d+$", "", text).strip()
    return text.split()[0] if text else "??"


def main():
    section = None
    samples = []
    locations = {}
    current = None
    comments = []
    types = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("Comment:"):
            comments.append(line[len("Comment:"):].strip())
            continue
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            section = "mappings"
            continue
        if section == "samples":
            if not types and "/" in line:
                types = [t.split("[")[0] for t in line.split()]
                continue
            m = re.match(r"^\s*([-\d ]+):\s*([\d ]*)$", line)
            if m:
                values = [int(v) for v in m.group(1).split()]
                locs = [int(v) for v in m.group(2).split()]
                samples.append((values, locs))
        elif section == "locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)? ?(.*)$", line)
            if m:
                current = int(m.group(1))
                rest = m.group(2).strip()
                locations[current] = [name_of(rest)] if rest else ["??"]
                continue
            m = re.match(r"^\s+(\S.*s=\d+(\(\S+\))?)$", line)
            if m and current is not None:
                locations[current].append(name_of(m.group(1)))
    alloc = types.index("alloc_space/bytes") if "alloc_space/bytes" in types else 1
    inuse = types.index("inuse_space/bytes") if "inuse_space/bytes" in types else 3
    for values, locs in samples:
        names = []
        for loc in locs:
            names.extend(locations.get(loc, ["??"]))
        print(values[alloc], values[inuse], ";".join(names))
    for c in comments:
        print("# " + c)


if __name__ == "__main__":
    main()
