#!/bin/sh
# The agent starts in every dynamically linked program, whatever runs
# before it, and the code it sees is named:
#  - a C++ program built without PIE (-fno-pie -no-pie) that takes
#    &malloc: the program then has a canonical PLT entry for malloc,
#    which dlsym(RTLD_DEFAULT) returns; libstdc++'s initializer, a static
#    constructor and a preinit_array function allocate before the agent's
#    constructor runs.  At --rate 1 its site counts are exact (2000 calls
#    of 100000 bytes through the pointer).  The same program as C and as
#    PIE, the controls.
#  - stock node (/usr/bin/node, not written here: a non-PIE C++ program
#    with canonical PLT entries, whose text V8 maps a second time
#    elsewhere): launched, >= 95% of the allocated bytes on stacks that
#    reach _start or a thread's entry, no frame of node left unnamed, the
#    buffers' allocating function named at the leaf; with
#    --perf-basic-prof the JIT-compiled JS functions are named from
#    /tmp/perf-PID.map, without it they are "[JIT]"; attached (--pid), the
#    same names.
. "$(dirname "$0")/lib.sh"
need g++ cc node go python3
attach_init

cat >"$TMP/start.cc" <<'EOF'
#include <cstdio>
#include <cstdlib>
#include <string>
void *(*pm)(size_t);
static void *early;
static void first(int, char **, char **) { early = malloc(777); }
__attribute__((section(".preinit_array"), used))
static void (*preinit)(int, char **, char **) = first;
struct G { std::string *s; G() { s = new std::string(1000, 'x'); } };
G g;
extern "C" __attribute__((noinline)) void *alloc_site(size_t n) { return pm(n); }
int main()
{
	pm = malloc;
	for (int i = 0; i < 2000; i++)
		if (!alloc_site(100000))
			return 1;
	printf("%zu %p\n", g.s->size(), early);
	return 0;
}
EOF
# the same as C: a C program taking &malloc (no C++ runtime)
cat >"$TMP/start.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
void *(*pm)(size_t);
__attribute__((noinline)) void *alloc_site(size_t n) { return pm(n); }
int main(void)
{
	pm = malloc;
	for (int i = 0; i < 2000; i++)
		if (!alloc_site(100000))
			return 1;
	return 0;
}
EOF
g++ -O1 -g -fno-pie -no-pie -o "$TMP/cxx-nopie" "$TMP/start.cc" &&
	g++ -O1 -g -fpie -pie -o "$TMP/cxx-pie" "$TMP/start.cc" &&
	cc -O1 -g -fno-pie -no-pie -o "$TMP/c-nopie" "$TMP/start.c" ||
	fail "cannot build the programs"
readelf --dyn-syms -W "$TMP/cxx-nopie" | awk '$8 ~ /^malloc@/ && $2 != "0000000000000000" { f = 1 } END { exit !f }' ||
	fail "cxx-nopie has no canonical PLT entry for malloc: the case is not made"

for p in cxx-nopie cxx-pie c-nopie; do
	"$TRACER" --rate 1 -o "$TMP/$p.pb.gz" -- "$TMP/$p" >"$TMP/$p.out" 2>"$TMP/$p.err"
	rc=$?
	sed 's/^/    stderr: /' "$TMP/$p.err"
	[ $rc = 0 ] || { check_failed "$p: exit $rc"; continue; }
	grep -q 'never started' "$TMP/$p.err" && check_failed "$p: the agent never started"
	pprof_sum "$TMP/$p.pb.gz" leaf >"$TMP/$p.sum"
	check_site "$TMP/$p.sum" alloc_site 2000 200000000 2000 200000000
done

# ---- attached, with a library loaded below its link address (its load
# bias wraps: the agent's reading of the loader's tables must not take
# that for "not relocated"; that crashed the target's first malloc)
printf 'int big(void) { return 42; }\n' >"$TMP/big.c"
printf '%s\n' '#include <stdio.h>' '#include <stdlib.h>' '#include <unistd.h>' \
	'int big(void);' 'void *(*pm)(size_t);' \
	'__attribute__((noinline)) void *alloc_site(size_t n) { return pm(n); }' \
	'int main(void) { pm = malloc; printf("ready %d\n", big()); fflush(stdout);' \
	'	for (;;) { free(alloc_site(100000)); usleep(1000); } }' >"$TMP/below.c"
cc -shared -fPIC -Wl,-Ttext-segment=0x900000000000 -o "$TMP/libbig.so" "$TMP/big.c" &&
	cc -O1 -g -fno-pie -no-pie -o "$TMP/below" "$TMP/below.c" -L"$TMP" -lbig \
		-Wl,-rpath,"$TMP" || fail "cannot build the program with a library below its link address"
spawn "$TMP/below.out" "$TMP/below"
below=$spawned_pid
wait_for "$TMP/below.out" '^ready' 10 || fail "below did not start"
timeout 60 "$TRACER" --pid "$below" --duration 1 -o "$TMP/below.pb.gz" 2>"$TMP/below.err" ||
	check_failed "attach to a program with a library below its link address: $(cat "$TMP/below.err")"
running "$below" || check_failed "the program with a library below its link address died"
pprof_sum "$TMP/below.pb.gz" leaf >"$TMP/below.sum"
[ "$(value alloc_site 1 <"$TMP/below.sum")" -gt 0 ] ||
	check_failed "no sample at alloc_site after the attach"
kill "$below"

# ---- node (in $TMP: --perf-basic-prof leaves a V8 log in the working
# directory)
cd "$TMP" || fail "cannot cd $TMP"
cat >"$TMP/b.js" <<'EOF'
function work(n) {
	const keep = [];
	for (let i = 0; i < n; i++) {
		const b = Buffer.allocUnsafeSlow(4096 + (i % 64));
		b[0] = i;
		if (i % 100 === 0)
			keep.push(b);
	}
	return keep.length;
}
let t = 0;
for (let r = 0; r < Number(process.argv[2]); r++)
	t += work(20000);
console.log(t);
if (process.argv[3] === "wait") {
	console.log("ready");
	setInterval(() => { t += work(2000); }, 20);
}
EOF

# node's code files (the program, and libnode where Debian splits it
# out): "??" frames are a failure only when they all have a symbol table
# (Debian's libnode.so is stripped, and its debug symbols are not in the
# archive: V8's builtins there have no name to find)
NODE_SYMS=yes
for f in "$(readlink -f "$(command -v node)")" $(ldd "$(command -v node)" | awk '/libnode/ { print $3 }'); do
	readelf -SW "$f" | grep -q ' \.symtab ' || { NODE_SYMS=no; note "$f has no symbol table"; }
done

# stacks FILE: "ALLOC_SPACE INUSE_SPACE F1;F2;..." per sample
stacks() {
	go tool pprof -raw "$1" 2>/dev/null |
		python3 "$TOP/tests/e2e/pprof_sum.py" stacks | grep -v '^#'
}
# node_checks NAME FILE JIT: whole stacks, every frame named, the leaf
# named, the JIT frames as JIT says (perfmap or none)
node_checks() {
	stacks "$2" >"$TMP/$1.stacks"
	python3 - "$TMP/$1.stacks" "$1" "$3" "$NODE_SYMS" <<'EOF' || check_failed "$1: see above"
import sys
path, name, jit, syms = sys.argv[1:5]
total = whole = unnamed = trunc = 0
leaf = {}
names = set()
for line in open(path):
    a, _, fs = line.rstrip("\n").split(" ", 2)
    a = int(a)
    frames = fs.split(";")
    total += a
    names.update(frames)
    if frames[-1] in ("_start", "start_thread", "clone3", "clone", "__clone"):
        whole += a
    if "[truncated]" in frames:
        trunc += a
    if syms == "yes" and "??" in frames:
        unnamed += a
    leaf[frames[0]] = leaf.get(frames[0], 0) + a
bad = 0
top = max(leaf, key=leaf.get) if leaf else "none"
print(f"--- {name}: {whole} of {total} allocated bytes reach _start or a thread's entry, "
      f"{trunc} cut short, {unnamed} with an unnamed frame; top leaf {top}")
if not total or whole * 100 < total * 95:
    print(f"FAIL: {name}: under 95% of the allocated bytes have whole stacks"); bad = 1
if unnamed:
    print(f"FAIL: {name}: {unnamed} bytes on stacks with an unnamed frame"); bad = 1
if "ArrayBuffer" not in top and "Allocate" not in top:
    print(f"FAIL: {name}: the top leaf is {top}, not node's ArrayBuffer allocator"); bad = 1
v8 = ("JS:", "LazyCompile:", "Function:", "Script:", "Builtin:", "Eval:", "RegExp:", "Stub:")
if jit == "perfmap":
    if not any(n.startswith(v8) for n in names):
        print(f"FAIL: {name}: no JIT frame named from the perf map"); bad = 1
    if "[JIT]" in names:
        print(f"FAIL: {name}: [JIT] frames although the perf map names them"); bad = 1
elif jit == "none":
    if "[JIT]" not in names:
        print(f"FAIL: {name}: no [JIT] frame"); bad = 1
sys.exit(bad)
EOF
}

"$TRACER" -o "$TMP/node.pb.gz" -- node "$TMP/b.js" 20 >"$TMP/node.out" 2>"$TMP/node.err" ||
	check_failed "node: exit $?"
sed 's/^/    stderr: /' "$TMP/node.err"
grep -q 'cannot use for symbols' "$TMP/node.err" &&
	check_failed "node: a module was refused for symbols"
node_checks node "$TMP/node.pb.gz" none

"$TRACER" -o "$TMP/nodep.pb.gz" -- node --perf-basic-prof "$TMP/b.js" 20 \
	>"$TMP/nodep.out" 2>"$TMP/nodep.err" || check_failed "node --perf-basic-prof: exit $?"
node_checks node-perfmap "$TMP/nodep.pb.gz" perfmap
# node leaves its map behind: ours (they name our script) to remove
rm_maps() { grep -l "$TMP/b.js" /tmp/perf-*.map 2>/dev/null | xargs -r rm -f; }
rm_maps

# ---- attached
spawn "$TMP/live.out" node --perf-basic-prof "$TMP/b.js" 2 wait
live=$spawned_pid
wait_for "$TMP/live.out" '^ready' 30 || fail "node did not get ready: $(cat "$TMP/live.out.err")"
timeout 60 "$TRACER" --pid "$live" --duration 2 -o "$TMP/attach.pb.gz" 2>"$TMP/attach.err" ||
	check_failed "attach to node: exit $?"
sed 's/^/    stderr: /' "$TMP/attach.err"
grep -q 'cannot use for symbols' "$TMP/attach.err" &&
	check_failed "attach: a module was refused for symbols"
node_checks node-attach "$TMP/attach.pb.gz" perfmap
kill "$live"
wait_gone "$live" 10
rm_maps
finish
