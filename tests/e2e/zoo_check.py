#!/usr/bin/env python3
"""Check a profile of a program no one here wrote, as the zoo asks.

Usage: go tool pprof -raw FILE | zoo_check.py LABEL PATH [LEAF...]

Prints one table row, "ZOO | LABEL | PATH | whole-stack share | leaf |
unnamed frames", and exits 1 if:
- the profile has no samples;
- under 95% of the allocated bytes are on stacks that reach main or a
  thread's entry (_start, start_thread, clone3...; on aarch64 stacks go
  on past __libc_start_main to a stripped program's unnamed _start);
- the allocating function of the most bytes is not named, unless its file
  has no symbol table (Debian strips most programs; their debug symbols
  are not in the main archive) (LEAF...: one of them must be among the
  five biggest leaves when given);
- any frame is unnamed ("??") in a file that has a symbol table.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_sum import parse  # noqa: E402

ENTRIES = {"_start", "start_thread", "clone3", "clone", "__clone",
           "__clone3", "__libc_start_main", "__libc_start_main_impl",
           "__libc_start_call_main", "main"}
_symtab = {}


def has_symtab(path):
    """Whether the ELF file at path has a .symtab (its own names)."""
    if path not in _symtab:
        try:
            out = subprocess.run(["readelf", "-SW", path], capture_output=True,
                                 text=True, check=False).stdout
            _symtab[path] = " .symtab " in out
        except OSError:
            _symtab[path] = False
    return _symtab[path]


def whole_stack(names):
    """The stack ends at an entry, or holds main; or (aarch64's frame
    records go on past __libc_start_main into a stripped program's
    _start) reaches an entry with nothing after it but entries and
    unnamed frames."""
    if names[-1] in ENTRIES or "main" in names:
        return True
    for i, n in enumerate(names):
        if n in ENTRIES:
            return all(m == "??" or m in ENTRIES for m in names[i + 1:])
    return False


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: zoo_check.py LABEL PATH [LEAF...]")
    label, path, want = sys.argv[1], sys.argv[2], sys.argv[3:]
    p = parse(sys.stdin)
    types = p["types"]
    alloc = types.index("alloc_space/bytes") if "alloc_space/bytes" in types else 1
    total = whole = 0
    leaves = {}
    unnamed = {}
    for values, locs in p["samples"]:
        names = []
        for loc in locs:
            names.extend(p["sysnames"].get(loc, ["??"]))
            if not p["locations"].get(loc):
                mfile = p["mappings"].get(p["loc_mapping"].get(loc), "")
                if mfile.startswith("/") and has_symtab(mfile):
                    unnamed[mfile] = unnamed.get(mfile, 0) + 1
        total += values[alloc]
        if names and whole_stack(names):
            whole += values[alloc]
        leaf = names[0] if names else "??"
        if leaf == "??" and locs:
            mfile = p["mappings"].get(p["loc_mapping"].get(locs[0]), "")
            if mfile.startswith("/") and not has_symtab(mfile):
                leaf = "??(%s, stripped)" % os.path.basename(mfile)
        leaves[leaf] = leaves.get(leaf, 0) + values[alloc]
    top = sorted(leaves, key=leaves.get, reverse=True)[:5]
    share = 100.0 * whole / total if total else 0.0
    fails = []
    if not total:
        fails.append("no samples")
    if share < 95:
        fails.append("%.1f%% of the bytes on whole stacks, under 95%%" % share)
    if not top or top[0] == "??":
        fails.append("the biggest leaf is not named")
    if want and not set(want) & set(top):
        fails.append("none of %s among the biggest leaves %s" % (want, top))
    if unnamed:
        fails.append("unnamed frames in files with symbols: %s" % unnamed)
    print("ZOO | %s | %s | %.1f%% of %d bytes | %s | %d unnamed%s" %
          (label, path, share, total, top[0] if top else "-",
           sum(unnamed.values()), "" if not fails else " | FAIL"))
    for f in fails:
        print("FAIL: %s: %s" % (label, f))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
