#!/usr/bin/env python3
"""Sum `go tool pprof -raw` samples per function.

Usage: go tool pprof -raw FILE | pprof_sum.py [leaf|cum|peak|frames|stacks]

leaf: each sample counts for the innermost function of its first location
(the function that called the allocator).  cum: for every distinct function
anywhere in its stack.  Prints "FUNCTION v1 v2 v3 v4" lines, the values
alloc_objects, alloc_space, inuse_objects and inuse_space (a profile
without them: its own, in order), and the comments as "# ..." lines.
peak: as leaf, with the two values at the heap's peak, peak_inuse_objects
and peak_inuse_space.

frames: no sums; one line "FUNCTION MAPPING-FILE" for every function (or
"??" for a location without one) of every location that a sample uses,
and "LEAF FUNCTION MAPPING-FILE" for the first location of each sample.

stacks: no sums; one line per sample, "ALLOC_SPACE INUSE_SPACE F1;F2;...",
its functions leaf first, inline frames included, each by its system
(linkage) name when the profile has one, else by the first word of its
name; then the comments as "# ..." lines.
"""
import re
import sys


def system_name(text):
    """A location line's function: its system name, else its first word."""
    m = re.search(r" s=\d+\((\S+)\)$", text)
    if m:
        return m.group(1)
    text = re.sub(r" s=\d+$", "", text).strip()
    return text.split()[0] if text else "??"


def parse(stream):
    """The samples, locations, mappings and comments of a -raw listing."""
    section = None
    samples = []          # (values, [location ids])
    locations = {}        # id -> [function names, leaf first]
    current = None
    comments = []
    loc_mapping = {}      # location id -> mapping id
    mappings = {}         # mapping id -> file
    sysnames = {}         # location id -> [system or first-word names]
    types = []
    for line in stream:
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
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=(\d+))? ?(.*)$", line)
            if m:
                current = int(m.group(1))
                loc_mapping[current] = int(m.group(2) or 0)
                locations[current] = []
                rest = m.group(3).strip()
                sysnames[current] = [system_name(rest)]
                if rest:
                    locations[current].append(rest.split()[0])
                continue
            m = re.match(r"^\s+(\S+) .*s=\d+(\(\S+\))?$", line)
            if m and current is not None:
                locations[current].append(m.group(1))
            m = re.match(r"^\s+(\S.*s=\d+(\(\S+\))?)$", line)
            if m and current is not None:
                sysnames[current].append(system_name(m.group(1)))
        elif section == "mappings":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S*)", line)
            if m:
                mappings[int(m.group(1))] = m.group(2)
    return {"samples": samples, "locations": locations,
            "comments": comments, "loc_mapping": loc_mapping,
            "mappings": mappings, "sysnames": sysnames, "types": types}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "leaf"
    p = parse(sys.stdin)
    samples, locations, comments = p["samples"], p["locations"], p["comments"]
    loc_mapping, mappings = p["loc_mapping"], p["mappings"]
    sysnames, types = p["sysnames"], p["types"]
    if mode == "stacks":
        alloc = types.index("alloc_space/bytes") if "alloc_space/bytes" in types else 1
        inuse = types.index("inuse_space/bytes") if "inuse_space/bytes" in types else 3
        for values, locs in samples:
            names = []
            for loc in locs:
                names.extend(sysnames.get(loc, ["??"]))
            print(values[alloc], values[inuse], ";".join(names))
        for c in comments:
            print("# " + c)
        return
    if mode == "frames":
        seen = set()
        for _, locs in samples:
            for i, loc in enumerate(locs):
                mfile = mappings.get(loc_mapping.get(loc), "-") or "-"
                names = locations.get(loc) or ["??"]
                if i == 0:
                    seen.add("LEAF %s %s" % (names[0], mfile))
                for fn in names:
                    seen.add("%s %s" % (fn, mfile))
        for line in sorted(seen):
            print(line)
        return
    # the four classic values (or, mode "peak", the two at the heap's
    # peak), whatever other types the profile carries
    want = ["peak_inuse_objects/count", "peak_inuse_space/bytes"] \
        if mode == "peak" else ["alloc_objects/count", "alloc_space/bytes",
                                "inuse_objects/count", "inuse_space/bytes"]
    pick = [types.index(t) for t in want if t in types]
    if len(pick) != len(want):
        pick = list(range(len(samples[0][0]))) if samples else []
    totals = {}
    for values, locs in samples:
        values = [values[i] for i in pick]
        if mode in ("leaf", "peak"):
            names = []
            if locs and locations.get(locs[0]):
                names = [locations[locs[0]][0]]
            elif locs:
                names = ["??"]
        else:
            names = []
            for loc in locs:
                for fn in locations.get(loc, []):
                    if fn not in names:
                        names.append(fn)
        for fn in names:
            acc = totals.setdefault(fn, [0] * len(values))
            for i, v in enumerate(values):
                acc[i] += v
    for c in comments:
        print("# " + c)
    for fn, vals in sorted(totals.items()):
        print(fn, *vals)


if __name__ == "__main__":
    main()
