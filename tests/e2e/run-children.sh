# Only the process the tracer starts is profiled; its descendants run with
# the agent (they inherit LD_PRELOAD), which stays off there and tells the
# tracer, which says how many there were, by name, on stderr and in the
# profile's comments.  Stock programs: gcc's driver, make -j2, a shell's
# subshells and forks, bash's, a daemon started with setsid -f.
. "$(dirname "$0")/lib.sh"
need go
attach_init

need make
need gcc

# children N NAME... < stderr: the summary says N processes, with NAMEs
children_line() { grep 'child process.* ran with the agent and w.* not profiled' "$1"; }
expect_children() {
	_f=$1 _n=$2; shift 2
	_l=$(children_line "$_f") || { cat "$_f"; fail "no line about the children in $_f"; }
	case "$_l" in
	*": $_n child process"*) ;;
	*) fail "want $_n children, got: $_l" ;;
	esac
	for _name; do
		case "$_l" in
		*" $_name x"*) ;;
		*) fail "no $_name among the children: $_l" ;;
		esac
	done
}

# gcc's driver runs cc1, as, collect2 and ld
cat >"$TMP/hello.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(void) { char *p = malloc(100); printf("hello %d\n", p != NULL); free(p); return 0; }
C
(cd "$TMP" && timeout 60 "$TRACER" -o gcc.pb.gz -- gcc -O1 -o hello hello.c) 2>"$TMP/gcc.err" ||
	{ cat "$TMP/gcc.err"; fail "gcc under the tracer failed"; }
expect_children "$TMP/gcc.err" 4 cc1 as collect2 ld
"$TMP/hello" | grep -q "hello 1" || fail "what gcc built does not run"
go tool pprof -comments "$TMP/gcc.pb.gz" 2>&1 | grep -q "4 child processes ran with the agent" ||
	fail "the profile's comments do not count the children"

# make -j2: two objects and a link; make's shell-less recipes exec gcc
mkdir "$TMP/mk"
printf 'int f(void) { return 1; }\n' >"$TMP/mk/a.c"
printf 'int f(void); int main(void) { return f() - 1; }\n' >"$TMP/mk/b.c"
printf 'prog: a.o b.o\n\tgcc -o $@ a.o b.o\n%%.o: %%.c\n\tgcc -c -o $@ $<\n' >"$TMP/mk/Makefile"
(cd "$TMP/mk" && timeout 60 "$TRACER" -o "$TMP/make.pb.gz" -- make -j2 -s) 2>"$TMP/make.err" ||
	{ cat "$TMP/make.err"; fail "make under the tracer failed"; }
"$TMP/mk/prog" || fail "what make built does not run"
# 3 gcc drivers, each with cc1 and as or collect2 and ld: 3 + 2*2 + 2
expect_children "$TMP/make.err" 9 gcc cc1 as collect2 ld

# forks without exec (subshells), and forks that exec (ls): each once
timeout 30 "$TRACER" -o "$TMP/sh.pb.gz" -- sh -c '(true); (true); ls / >/dev/null; ls / >/dev/null; ls / >/dev/null' \
	2>"$TMP/sh.err" || { cat "$TMP/sh.err"; fail "sh under the tracer failed"; }
expect_children "$TMP/sh.err" 5 sh ls
children_line "$TMP/sh.err" | grep -q " ls x3" || fail "not 3 ls: $(children_line "$TMP/sh.err")"

# bash passes on main()'s envp, where the variable naming the launched
# process's memfd still is: its children are descendants all the same
timeout 30 "$TRACER" -o "$TMP/bash.pb.gz" -- bash -c 'ls / >/dev/null; true' \
	2>"$TMP/bash.err" || { cat "$TMP/bash.err"; fail "bash under the tracer failed"; }
expect_children "$TMP/bash.err" 1 ls

# a daemon: setsid -f forks it off and the started shell is gone at once;
# the daemon runs on, its agent off (no memfd), and finishes its work
# (it waits for our word before it goes on: a busy machine once let the
# 0.5 s it slept run out before its maps were read)
timeout 30 "$TRACER" -o "$TMP/d.pb.gz" -- sh -c \
	"setsid -f sh -c 'echo \$\$ >\"$TMP/daemon.pid\"; while [ ! -e \"$TMP/go\" ]; do sleep 0.05; done; ls / >/dev/null; echo done >\"$TMP/daemon.out\"'" \
	2>"$TMP/d.err" || { cat "$TMP/d.err"; fail "the daemonizing shell failed"; }
wait_for "$TMP/daemon.pid" '^[0-9]' 5 || fail "the daemon did not start"
dp=$(cat "$TMP/daemon.pid")
grep -q libpprof-alloc "/proc/$dp/maps" || fail "the daemon does not have the agent: the test proves nothing"
ls -l "/proc/$dp/fd" | grep -q "memfd:pprof-alloc" && fail "the daemon's agent is on (it has a memfd)"
touch "$TMP/go"
wait_for "$TMP/daemon.out" done 5 || fail "the daemon did not finish"
# setsid, a child of the started shell, is counted; the daemon it forks
# may say so after the tracer has written its profile (its parent is gone)
children_line "$TMP/d.err" | grep -q " setsid x1" ||
	{ cat "$TMP/d.err"; fail "setsid not counted"; }

# -q says nothing, the comments still do
(cd "$TMP" && timeout 60 "$TRACER" -q -o q.pb.gz -- sh -c 'ls >/dev/null') 2>"$TMP/q.err" ||
	fail "sh -q failed"
[ -s "$TMP/q.err" ] && { cat "$TMP/q.err"; fail "-q printed something"; }
go tool pprof -comments "$TMP/q.pb.gz" 2>&1 | grep -q "1 child process ran with the agent and was not profiled" ||
	fail "the comments of a -q run do not count the child"
