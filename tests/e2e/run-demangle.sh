#!/bin/sh
# Names read as their own tools print them: a Rust program in both
# manglings (rustc's default legacy one, and -C symbol-mangling-version=v0)
# and a C++ program, profiled at --rate 1.  Every frame of every location
# in the program's own file, inline frames included, is compared with
# llvm-symbolizer's on the same address (demangled; a legacy Rust name's
# hash dropped and its $LT$-style escapes decoded, as rustfilt does;
# white space ignored).  For Rust only the function holding the address
# is compared: Debian's rustc 1.63 emits inline frames that neither our
# symbolizer nor libdw's eu-addr2line -i finds (llvm-symbolizer does;
# rustc 1.95's are found), an open gap.  The Rust site reads with its whole path:
# m::deep::inner::Cache<T>::insert_many (legacy),
# <m::deep::inner::Cache<u64>>::insert_many (v0).
. "$(dirname "$0")/lib.sh"
need /usr/bin/rustc llvm-symbolizer readelf go python3

cat >"$TMP/m.rs" <<'EOF'
mod deep {
    pub mod inner {
        pub struct Cache<T> {
            pub v: Vec<Vec<T>>,
        }
        impl<T: Clone + Default> Cache<T> {
            #[inline(never)]
            pub fn insert_many(&mut self, n: usize) {
                for _ in 0..n {
                    self.v.push(vec![T::default(); 1000]);
                }
            }
        }
    }
}
fn main() {
    let mut c = deep::inner::Cache::<u64> { v: Vec::new() };
    c.insert_many(2000);
    println!("{}", c.v.len());
}
EOF
/usr/bin/rustc -g -O -o "$TMP/m-legacy" "$TMP/m.rs" &&
	/usr/bin/rustc -g -O -C symbol-mangling-version=v0 -o "$TMP/m-v0" "$TMP/m.rs" ||
	fail "cannot build the Rust program"

compare() {	# NAME PROGRAM WANT-SITE all|outermost
	"$TRACER" -q --rate 1 -o "$TMP/$1.pb.gz" -- "$2" >/dev/null 2>"$TMP/$1.err" ||
		{ cat "$TMP/$1.err"; check_failed "$1: the traced run failed"; return; }
	go tool pprof -raw "$TMP/$1.pb.gz" >"$TMP/$1.raw" 2>/dev/null ||
		{ check_failed "$1: go tool pprof cannot read the profile"; return; }
	python3 - "$TMP/$1.raw" "$2" "$1" "$3" "$4" <<'EOF' || check_failed "$1: see above"
import re, subprocess, sys
raw, prog, name, want, whole = sys.argv[1:6]
locs, maps, sec, cur = {}, {}, None, None
for line in open(raw):
    line = line.rstrip("\n")
    if line.startswith("Locations"):
        sec = "l"; continue
    if line.startswith("Mappings"):
        sec = "m"; continue
    if sec == "l":
        m = re.match(r"\s*(\d+): (0x[0-9a-f]+) M=(\d+) (.*)$", line)
        rest = None
        if m:
            cur = int(m.group(1))
            locs[cur] = (int(m.group(2), 16), int(m.group(3)), [])
            rest = m.group(4)
        elif line.strip() and cur is not None:
            rest = line.strip()
        if rest:
            f = re.match(r"(.*) \S*:\d+ s=\d+", rest)
            locs[cur][2].append(f.group(1) if f else rest.split(" s=")[0])
    elif sec == "m":
        m = re.match(r"(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+)", line)
        if m:
            maps[int(m.group(1))] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5))
# the program's loadable segments: file offset -> address
segs = []
for l in subprocess.run(["readelf", "-lW", prog], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
def vaddr(addr, start, off):
    fo = addr - start + off
    for o, v, sz in segs:
        if o <= fo < o + sz:
            return fo - o + v
    return None
ours = []
for lid, (addr, mid, frames) in sorted(locs.items()):
    if mid not in maps or maps[mid][2] != prog:
        continue
    va = vaddr(addr, maps[mid][0], maps[mid][1])
    if va is not None and frames:
        ours.append((va, frames))
if not ours:
    print(f"FAIL: {name}: no location in {prog}"); sys.exit(1)
out = subprocess.run(["llvm-symbolizer", "--inlining", "--obj=" + prog] +
                     [hex(v) for v, _ in ours], capture_output=True, text=True).stdout
blocks = [b.splitlines()[0::2] for b in out.strip("\n").split("\n\n")]
escapes = {"$LT$": "<", "$GT$": ">", "$C$": ",", "$RF$": "&", "$BP$": "*",
           "$LP$": "(", "$RP$": ")", "$u20$": " ", "$u27$": "'", "$u5b$": "[",
           "$u5d$": "]", "$u7b$": "{", "$u7d$": "}", "$u7e$": "~", "$SP$": "@"}
def norm(s):
    s = re.sub(r" \(\.llvm\.\d+\)$", "", s)
    s = re.sub(r"::h[0-9a-f]{16}$", "", s)
    if "$" in s:
        s = re.sub(r"(^|::|\.\.)_\$", r"\1$", s)
        for k, v in escapes.items():
            s = s.replace(k, v)
        s = re.sub(r"(?<!\.)\.\.(?!\.)", "::", s)
    return re.sub(r"\s+", "", s)
# functions folded into one (two symbols at one address, as rustc's
# identical code folding leaves): either name is the function's
aliases = {}
for l in subprocess.run(["nm", "-C", "--defined-only", prog], capture_output=True, text=True).stdout.splitlines():
    f = l.split(" ", 2)
    if len(f) == 3:
        aliases.setdefault(f[0], set()).add(norm(f[2]))
folded = [names for names in aliases.values() if len(names) > 1]
def same(x, y):
    return x == y or any(x in n and y in n for n in folded)
bad = 0
for (va, frames), theirs in zip(ours, blocks):
    a = [norm(f) for f in frames]
    b = [norm(f) for f in theirs]
    if whole == "outermost":
        # the function that holds the address, the last of the inline
        # chain (see the header)
        a, b = a[-1:], b[-1:]
    if len(a) != len(b) or not all(same(x, y) for x, y in zip(a, b)):
        bad += 1
        if bad <= 5:
            print(f"--- {name} {hex(va)}: ours {frames}\n    llvm-symbolizer {theirs}")
names = {f for _, fr in ours for f in fr}
print(f"--- {name}: {len(ours)} locations, {len(ours) - bad} with {'every frame' if whole == 'all' else 'the function'} as llvm-symbolizer names it")
ok = bad == 0
if want not in names:
    print(f"FAIL: {name}: no frame named {want}; names: {sorted(names)[:20]}"); ok = False
if bad:
    print(f"FAIL: {name}: {bad} locations named unlike llvm-symbolizer")
sys.exit(0 if ok else 1)
EOF
}

compare rust-legacy "$TMP/m-legacy" "m::deep::inner::Cache<T>::insert_many" outermost
compare rust-v0 "$TMP/m-v0" "<m::deep::inner::Cache<u64>>::insert_many" outermost
compare cxx "$WORKLOADS/nofp-cxx" "main" all
finish
