# pprof-alloc build.
#
#   make                 build/pprof-alloc and build/libpprof-alloc.so
#   make demo            build, then profile tests/workloads/demo
#   make test            the suite: unit + end-to-end tests, plain, then
#                        the unit tests and the e2e tests that reach the
#                        tracer's code (tests/e2e/sanitized.list) under
#                        ASan/UBSan; make test-plain: plain only
#   make bench           overhead benchmark (ratios to a bare run);
#                        BENCH=exact: only the exact-mode table (or any
#                        of main exact attach unwind telemetry symbolize)
#   make fuzz FUZZ_SECONDS=N   each libFuzzer target N seconds (default 60)
#   make check-long      the soaks (tests/long/), every e2e test under
#                        ASan/UBSan, the long fuzzing and the benchmark:
#                        what the 5-minute suite leaves out
#   make check           the suite as make test runs it, never apt: what
#                        it needs is checked, and what is missing named;
#                        make check-plain: the plain build only;
#                        TESTS=run-foo: the tests whose name has run-foo
#   make install PREFIX=/usr/local DESTDIR=    make uninstall, the same
#   make SANITIZE=address,undefined ...   tracer and unit tests under ASan/UBSan
#
# Sources are collected per folder.  The agent is built separately: -fPIC,
# hidden visibility, frame pointers, initial-exec TLS, and never sanitized
# (it runs inside other people's processes).  Missing Debian packages are
# installed by `make deps` (contrib/install-deps.sh), which `make demo`,
# `make test`, `make bench` and `make check-long` run first; `make` and
# `make install` never do; nor does `make check`, which names what is
# missing instead.  Packagers: CFLAGS, CPPFLAGS, LDFLAGS, WERROR= and
# PKG_CONFIG, below, and the directories here.

# The version is written in one place, the file VERSION; the tracer gets
# it as PA_VERSION (--version, serve's /metrics).
VERSION := $(shell cat VERSION 2>/dev/null)
ifeq ($(VERSION),)
$(error the file VERSION is missing or empty)
endif
ifneq ($(findstring ",$(VERSION))$(findstring ',$(VERSION))$(findstring \,$(VERSION)),)
$(error the version may not hold a quote or a backslash: $(VERSION))
endif

# Where make install puts things.  The installed tracer finds its agent in
# ../lib/pprof-alloc/ beside its own directory (tracer/launch.c): with a
# LIBDIR or PKGLIBDIR that is not there, set PPROF_ALLOC_AGENT.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
PKGLIBDIR  ?= $(LIBDIR)/pprof-alloc
MANDIR     ?= $(PREFIX)/share/man
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system

B := build
ifneq ($(SANITIZE),)
B := build-san
endif

# The commands that build before they run (demo, test, check-long) build
# with a job per CPU unless make was given -j itself.
JOBS_FLAG = $(if $(filter -j% --jobserver%,$(MAKEFLAGS))$(findstring j,$(firstword -$(MAKEFLAGS))),,-j$(shell nproc 2>/dev/null || echo 2))

# V=1 shows whole commands.
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-6s %s\n' $(1) $(2)
endif
PROTOC_C ?= protoc-c

# Packagers: CFLAGS, CPPFLAGS and LDFLAGS are honoured (added after ours);
# WERROR= turns warnings back into warnings; PKG_CONFIG names pkg-config.
WERROR ?= -Werror
WARN := -Wall -Wextra $(WERROR) -Wshadow -Wformat=2 -Wno-format-nonliteral
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN) -MMD -MP -Iinclude -I. -I$(B) \
	$(CPPFLAGS)
CFLAGS ?=
LDFLAGS ?=
PKG_CONFIG ?= pkg-config

# The target, from the compiler (CC=aarch64-linux-gnu-gcc cross-builds:
# tests/arm64/).  On aarch64 GCC calls libgcc's helpers for atomics (LSE
# where the CPU has it, found at load): linked in statically, so the
# agent still needs nothing but libc.
PA_TARGET := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))
AGENT_ARCH_LIBS := $(if $(filter aarch64,$(PA_TARGET)),-lgcc)

ifneq ($(SANITIZE),)
# PPROF_ALLOC_SANITIZED: code that skips work at exit does it anyway here
# (clang before 22 defines no __SANITIZE_ADDRESS__).
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all \
	-DPPROF_ALLOC_SANITIZED
endif

# libmicrohttpd is dlopen'ed by serve (tracer/serve/http.c), not linked.  Zydis
# (tracer/attach/entry.c's decoder) and libiberty (elf/names.c's demangler) have
# no .pc file.  The flags of the others come from their .pc files where
# there are (before `make deps` there may be none).
TRACER_PCS    := libdw libelf libprotobuf-c libdeflate zlib
TRACER_PC_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(TRACER_PCS) 2>/dev/null)
TRACER_LIBS   := $(or $(shell $(PKG_CONFIG) --libs $(TRACER_PCS) 2>/dev/null),\
	-ldw -lelf -lprotobuf-c -ldeflate -lz) -lZydis -liberty -lpthread -lm
TRACER_CFLAGS := $(BASE_CFLAGS) $(TRACER_PC_CFLAGS) $(SAN_FLAGS) $(CFLAGS)

# The agent needs no glibc symbol version newer than GLIBC_2.17 (CentOS 7;
# agent/glibc_compat.h says how) and no file but libc.so.6 and the dynamic
# loader: a container image of a program holds what `ldd` lists for it, and
# libdl.so.2, libpthread.so.0 and libm.so.6 (where glibc < 2.34 keeps
# dlsym, pthread_create and log) may not be there.  So -nodefaultlibs and
# -lc alone, and -z defs: a call to anything else fails the link
# (agent/dynsym.c finds the pthread functions at run time).
# -flto: the hooks' paths cross small functions in several files (the
# walk, the site, the block map, the counts); inlined across them, exact
# mode's churn runs 15% fewer instructions a call.
AGENT_CFLAGS := $(BASE_CFLAGS) -include agent/glibc_compat.h -fPIC -fvisibility=hidden \
	-fno-omit-frame-pointer -ftls-model=initial-exec -fno-stack-protector \
	-D_FORTIFY_SOURCE=0 -flto=auto $(CFLAGS)
# Not -z nodelete: the tracer unloads an agent it injected, when that is
# safe (tracer/attach/unload.c).
AGENT_LDFLAGS := -shared -flto=auto -Wl,--version-script=agent/agent.map -Wl,-z,now \
	-Wl,--build-id=sha1 -Wl,-z,defs -nodefaultlibs -lc $(AGENT_ARCH_LIBS)

# Workloads are the programs the end-to-end tests profile: known call sites,
# frame pointers, no inlining of the named allocating functions.
WORKLOAD_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer $(WARN) -pthread \
	$(CPPFLAGS)
# ... except nofp-*, built as distributions build (-O2, no frame pointers),
# for the unwinding tests; nofp-*.cc are C++.
NOFP_FLAGS := -D_GNU_SOURCE -O2 -g -fomit-frame-pointer $(WARN) -pthread
CXX ?= g++

DEPS_STAMP := $(B)/.deps-ok

AGENT_SRCS  := $(wildcard agent/*.c)
AGENT_OBJS  := $(AGENT_SRCS:%.c=$(B)/%.o)
AGENT_CORE  := $(filter-out $(B)/agent/preload.o,$(AGENT_OBJS))

PROTO_C     := $(B)/proto/profile.pb-c.c
PROTO_OBJ   := $(B)/proto/profile.pb-c.o
# One processor's side of calls into a running process and of entry
# patching (tracer/attach/machine_*.c, entry_*.c); reloc_aarch64.c is pure
# code over instruction words, built everywhere for its unit test.
ARCH_SKIP   := $(if $(filter aarch64,$(PA_TARGET)),\
	tracer/attach/machine_x86_64.c tracer/attach/entry_x86_64.c,\
	tracer/attach/machine_aarch64.c tracer/attach/entry_aarch64.c)
LIB_SRCS    := $(filter-out tracer/main.c $(ARCH_SKIP),$(wildcard tracer/*.c tracer/*/*.c \
			elf/*.c common/*.c))
LIB_OBJS    := $(LIB_SRCS:%.c=$(B)/%.o) $(PROTO_OBJ)
TRACER_OBJS := $(B)/tracer/main.o $(LIB_OBJS)

# tests/arm64/skip: test sources of x86-64 alone, not built elsewhere
TEST_SKIP   := $(if $(filter aarch64,$(PA_TARGET)),\
	$(shell sed -n 's/^\([^\# ][^ ]*\).*/\1/p' tests/arm64/skip))
# test-reloc-exec runs A64 code: aarch64 only
UNIT_SRCS   := $(filter-out $(TEST_SKIP) $(if $(filter aarch64,$(PA_TARGET)),,\
	tests/unit/test-reloc-exec.c),$(wildcard tests/unit/test-*.c))
UNIT_BINS   := $(UNIT_SRCS:%.c=$(B)/%)
WORKLOAD_SRCS := $(filter-out $(TEST_SKIP),$(wildcard tests/workloads/*.c tests/workloads/*.cc))
WORKLOAD_BINS := $(patsubst %.cc,$(B)/%,$(WORKLOAD_SRCS:%.c=$(B)/%))
TOOL_SRCS   := $(wildcard tests/tools/*.c)
TOOL_BINS   := $(TOOL_SRCS:%.c=$(B)/%)
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz-*.c)
REPLAY_BINS := $(FUZZ_SRCS:tests/fuzz/fuzz-%.c=$(B)/tests/fuzz/replay-%)

AGENT_SO := $(B)/libpprof-alloc.so
TRACER   := $(B)/pprof-alloc
# The man pages, written by the tracer from its option tables (`pprof-alloc
# man PAGE`; run-options checks this list against `pprof-alloc man --list`).
MAN_PAGES := pprof-alloc pprof-alloc-serve pprof-alloc-stats \
	     pprof-alloc-report pprof-alloc-symbolize pprof-alloc-man
MAN_FILES := $(if $(NOMAN),,$(MAN_PAGES:%=$(B)/man/%.1))

.PHONY: all deps test-deps bench-deps long-deps fuzz-deps demo test test-bins test-plain check check-plain check-deps check-long check-fresh check-arm64 bench-arm64 unit e2e bench fuzz install uninstall clean
all: $(B)/.layers-ok $(TRACER) $(AGENT_SO) $(MAN_FILES)

# No #include may cross an arrow contrib/layers does not list.  The stamp
# also depends on the list of sources, rewritten when it changes, so that
# a file moved in with an old time stamp is checked too.
LAYER_SRCS := $(sort $(wildcard include/*.h arch/*.h common/*.[ch] elf/*.[ch] \
			agent/*.[ch] tracer/*.[ch] tracer/*/*.[ch]))
LAYER_LIST := $(B)/.layer-sources
$(shell mkdir -p $(B) && { echo '$(LAYER_SRCS)' | cmp -s - $(LAYER_LIST) || \
	echo '$(LAYER_SRCS)' >$(LAYER_LIST); })
$(B)/.layers-ok: $(LAYER_SRCS) $(LAYER_LIST) contrib/layers \
		 contrib/check-layers.sh
	$(call msg,LAYERS,contrib/layers)
	$(Q)sh contrib/check-layers.sh
	@touch $@

# The man pages are written by running the tracer just built: NOMAN=1
# (a cross build, whose tracer cannot run here) skips them.  A sanitized
# tracer runs without its leak checker there (it cannot run under ptrace,
# as in some containers).  man --check fails the build on an option
# without its help.
MAN_RUN := ASAN_OPTIONS=detect_leaks=0 $(TRACER)
$(B)/man/.checked: $(TRACER)
	@mkdir -p $(@D)
	$(Q)$(MAN_RUN) man --check
	@touch $@
$(B)/man/%.1: $(TRACER) $(B)/man/.checked
	$(Q)$(MAN_RUN) man $* >$@.tmp && mv $@.tmp $@

deps: $(DEPS_STAMP)
$(DEPS_STAMP): contrib/install-deps.sh contrib/packages
	@mkdir -p $(B)
	@sh contrib/install-deps.sh
	@touch $@

$(B)/agent/%.o: agent/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(AGENT_CFLAGS) -c $< -o $@

$(AGENT_SO): $(AGENT_OBJS) agent/agent.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(AGENT_OBJS) $(AGENT_LDFLAGS) $(LDFLAGS) -o $@

$(B)/libagent-core.a: $(AGENT_CORE)
	@rm -f $@
	$(call msg,AR,$@)
	$(Q)ar rcs $@ $^

$(PROTO_C): proto/profile.proto
	@mkdir -p $(@D)
	$(call msg,PROTOC,$@)
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(B)/proto proto/profile.proto

$(PROTO_OBJ): $(PROTO_C)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -Wno-shadow -I$(B)/proto -c $< -o $@

# The report page's browser side is assembled into this object (.incbin).
$(B)/tracer/report/report_assets.o: tracer/report/report_page.css \
	tracer/report/report_page.html tracer/report/report_page.js

# Everything in tracer/ and elf/ may include the generated header (a
# pattern rule without a recipe would add nothing: name the objects).
$(filter-out $(PROTO_OBJ),$(LIB_OBJS)) $(B)/tracer/main.o: | $(PROTO_C)
$(B)/tracer/%.o: tracer/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto -c $< -o $@
$(B)/elf/%.o: elf/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto -c $< -o $@
$(B)/common/%.o: common/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto -c $< -o $@

# The files that use the version, and only they, get it (and are built
# again when it changes).
PA_VERSION_OBJS := $(B)/tracer/main.o $(B)/tracer/serve/serve.o \
		   $(B)/tracer/cmd_man.o $(B)/tracer/cmd_record.o
$(PA_VERSION_OBJS): TRACER_CFLAGS += -DPA_VERSION='"$(VERSION)"'
# the version as built, rewritten only when it changes (VERSION=... on the
# command line too), so that those objects are built again then
$(shell mkdir -p $(B) && { [ "$$(cat $(B)/version 2>/dev/null)" = '$(VERSION)' ] || \
	echo '$(VERSION)' >$(B)/version; })
$(PA_VERSION_OBJS): $(B)/version

$(B)/libtracer.a: $(LIB_OBJS)
	@rm -f $@
	$(call msg,AR,$@)
	$(Q)ar rcs $@ $^

$(TRACER): $(B)/tracer/main.o $(B)/libtracer.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) $^ $(TRACER_LIBS) -o $@

# Unit tests: each its own main, linked with the tracer library and the agent
# core (the agent without its malloc interposers).
$(B)/tests/unit/%: tests/unit/%.c $(B)/libtracer.a $(B)/libagent-core.a
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto -Itests/unit $< $(B)/libtracer.a \
		$(B)/libagent-core.a $(LDFLAGS) $(TRACER_LIBS) -lpthread -o $@

# Test tools: small programs the tests and benchmarks drive (they may use
# the tracer library, like the unit tests).
$(B)/tests/tools/%: tests/tools/%.c $(B)/libtracer.a $(B)/libagent-core.a
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto $< $(B)/libtracer.a \
		$(B)/libagent-core.a $(LDFLAGS) $(TRACER_LIBS) -lpthread -o $@

# Each fuzz target with a main that replays its corpus (tests/fuzz/replay.c),
# built with this build's compiler and flags: `make test` replays the seeds
# under ASan and UBSan without clang (tests/e2e/run-fuzz.sh).
$(B)/tests/fuzz/replay.o: tests/fuzz/replay.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -c $< -o $@
$(B)/tests/fuzz/replay-%: tests/fuzz/fuzz-%.c $(B)/tests/fuzz/replay.o $(B)/libtracer.a
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -I$(B)/proto $< $(B)/tests/fuzz/replay.o \
		$(B)/libtracer.a $(LDFLAGS) $(TRACER_LIBS) -o $@

$(B)/tests/workloads/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -MMD -MP $< -o $@ -lm

$(B)/tests/workloads/nofp-%: tests/workloads/nofp-%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 $(NOFP_FLAGS) -MMD -MP $< -o $@

$(B)/tests/workloads/nofp-%: tests/workloads/nofp-%.cc
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(NOFP_FLAGS) -MMD -MP $< -o $@

$(B)/tests/workloads/%.so: tests/workloads/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -fPIC -shared -MMD -MP $< -o $@

test-deps: $(B)/.test-deps-ok
$(B)/.test-deps-ok: contrib/install-deps.sh contrib/packages
	@mkdir -p $(B)
	@sh contrib/install-deps.sh --test
	@touch $@

# `make demo` and `make test` install what is missing first (make deps,
# test-deps), each in a make of its own so that nothing compiles before;
# `make`, `make install` and a compile never run apt.
demo:
	@$(MAKE) --no-print-directory deps test-deps
	@$(MAKE) --no-print-directory $(JOBS_FLAG) all $(B)/tests/workloads/demo
	$(TRACER) --top 5 --interval 0.01 --report -o $(B)/demo.pb.gz -- $(B)/tests/workloads/demo
	go tool pprof -top -nodecount=10 $(B)/demo.pb.gz
	@echo "The report: $(B)/demo.html (open it in a browser)"

# `make test`: the plain suite, then the unit tests and the e2e tests of
# tests/e2e/sanitized.list with the tracer, the parsers and the unit tests
# under ASan and UBSan ($(B)-san/, so build-san/; the agent is never
# sanitized).  `make test SANITIZE=...` runs only that build's part
# (SAN_ALL=1: every e2e test there); `make test-plain` only the plain one.
# Each installs what is missing, then is `make check` (check-plain).
#
# `make check` never runs apt: it checks that what the suite needs is
# there (contrib/install-deps.sh --check --test), names what is missing
# and stops, or builds and runs the suite.  TESTS="run-foo ..." (for
# every one of these) runs only the tests whose name contains a pattern.
test-bins: all $(UNIT_BINS) $(WORKLOAD_BINS) $(TOOL_BINS) $(REPLAY_BINS)

ifeq ($(SANITIZE),)
test:
	@$(MAKE) --no-print-directory deps test-deps
	@$(MAKE) --no-print-directory check
check: check-deps
	@$(MAKE) --no-print-directory $(JOBS_FLAG) test-bins
	@$(MAKE) --no-print-directory $(JOBS_FLAG) SANITIZE=address,undefined B=$(B)-san test-bins
	@bash tests/run.sh $(B) $(B)-san
else
test:
	@$(MAKE) --no-print-directory B=build deps test-deps
	@$(MAKE) --no-print-directory check
check: check-deps
	@$(MAKE) --no-print-directory $(JOBS_FLAG) test-bins
	@bash tests/run.sh $(B)
endif

test-plain:
	@$(MAKE) --no-print-directory deps test-deps
	@$(MAKE) --no-print-directory check-plain
check-plain: check-deps
	@$(MAKE) --no-print-directory $(JOBS_FLAG) test-bins
	@bash tests/run.sh $(B)

check-deps:
	@sh contrib/install-deps.sh --check --test || { \
		echo "make check: what the suite needs is missing (above): make test installs it, or contrib/install-deps.sh --test" >&2; \
		exit 1; }

# The soaks (serve under load and over time), then every e2e test under
# ASan and UBSan (make test runs there only those tests/e2e/sanitized.list
# names), then the fuzzers for FUZZ_SECONDS each, then the benchmark;
# stops at the first that fails.
check-long:
	@$(MAKE) --no-print-directory deps test-deps fuzz-deps bench-deps long-deps
	@sh contrib/install-deps.sh --check --long --fuzz
	@$(MAKE) --no-print-directory $(JOBS_FLAG) test-bins
	@$(MAKE) --no-print-directory $(JOBS_FLAG) SANITIZE=address,undefined B=$(B)-san test-bins
	@SUITE=long bash tests/run.sh $(B)
	@SAN_ALL=1 TESTS=e2e/ bash tests/run.sh $(B)-san
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)
	@$(MAKE) --no-print-directory bench

# The README's two commands on a Debian 12 root made afresh with
# mmdebstrap (cached in build/fresh/): what a new user's machine does with
# them, whatever was installed on this one by hand.  Needs root.
check-fresh:
	@sh contrib/install-deps.sh --fresh
	@bash tests/check-fresh.sh

# The suite's aarch64 part in an emulated Arm machine made from Debian's
# arm64 packages (cached in build/arm64/), cross-built there
# (tests/arm64/run.sh).  Needs root (mmdebstrap, 9p as root).
check-arm64:
	@sh contrib/install-deps.sh --arm64
	@sh tests/arm64/run.sh
# The same machine's benchmark: pprof-alloc against a bare run in the
# guest, labelled emulated (tests/arm64/bench.sh).
bench-arm64:
	@sh contrib/install-deps.sh --arm64
	@PA_TESTS=bench sh tests/arm64/run.sh

bench-deps: $(B)/.bench-deps-ok
$(B)/.bench-deps-ok: contrib/install-deps.sh contrib/packages
	@mkdir -p $(B)
	@sh contrib/install-deps.sh --bench
	@touch $@

long-deps: $(B)/.long-deps-ok
$(B)/.long-deps-ok: contrib/install-deps.sh contrib/packages
	@mkdir -p $(B)
	@sh contrib/install-deps.sh --long
	@touch $@

# The benchmark's parts, all by default; BENCH=exact (or any of them, in
# any order) runs only those: `make bench BENCH=exact ROWS=churn1`.
BENCH_PARTS := main exact attach unwind telemetry symbolize
BENCH ?= $(BENCH_PARTS)
bench:
	@$(MAKE) --no-print-directory bench-deps
	@$(MAKE) --no-print-directory all $(B)/tests/workloads/bench-alloc \
		$(B)/tests/workloads/bench-mixed $(B)/tests/workloads/telemetry \
		$(B)/tests/workloads/nofp-bench-mixed \
		$(B)/tests/workloads/tight-churn $(TOOL_BINS)
	@set -e; for part in $(BENCH); do case $$part in \
	main)      sh tests/bench.sh $(B) ;; \
	exact)     sh tests/bench-exact.sh $(B) ;; \
	attach)    sh tests/bench-attach.sh $(B) ;; \
	unwind)    sh tests/bench-unwind.sh $(B) ;; \
	telemetry) sh tests/bench-telemetry.sh $(B) ;; \
	symbolize) sh tests/bench-symbolize.sh $(B); \
		   SYM_LIB=biggest ROUNDS=3 EU_ADDRS=100 sh tests/bench-symbolize.sh $(B); \
		   sh tests/bench-symbolize-llvm.sh $(B) ;; \
	*) echo "make bench: no part '$$part' in BENCH (parts: $(BENCH_PARTS))" >&2; exit 2 ;; \
	esac; done

# Fuzz targets (tests/fuzz/fuzz-*.c) are built by tests/fuzz/run.sh with
# clang in build-fuzz/, against the tracer library instrumented there.
FUZZ_SECONDS ?= 60
fuzz-deps: $(B)/.fuzz-deps-ok
$(B)/.fuzz-deps-ok: contrib/install-deps.sh contrib/packages
	@mkdir -p $(B)
	@sh contrib/install-deps.sh --fuzz
	@touch $@

fuzz: $(B)/.fuzz-deps-ok
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)

# make install: the tracer, its agent, the systemd unit (its ExecStart
# pointed at the installed tracer) and the man pages $(B)/man/*.1, if the
# build has made them.  It builds what is not built, and only that.
# make uninstall removes those files, then the directories left empty:
# pprof-alloc's own (PKGLIBDIR), and under a DESTDIR each one up to it (a
# staging root holds what install made); never /usr/local/bin and the like
# of the machine itself.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(SYSTEMDDIR)
	install -m 755 $(TRACER) $(DESTDIR)$(BINDIR)/pprof-alloc
	install -m 755 $(AGENT_SO) $(DESTDIR)$(PKGLIBDIR)/libpprof-alloc.so
	sed '/^ExecStart=/s|/usr/local/bin/pprof-alloc|$(BINDIR)/pprof-alloc|' \
		contrib/pprof-alloc@.service >$(DESTDIR)$(SYSTEMDDIR)/pprof-alloc@.service
	chmod 644 $(DESTDIR)$(SYSTEMDDIR)/pprof-alloc@.service
	@set -e; for m in $(B)/man/*.1; do \
		[ -f "$$m" ] || continue; \
		echo "install -m 644 $$m $(DESTDIR)$(MANDIR)/man1/"; \
		install -d $(DESTDIR)$(MANDIR)/man1; \
		install -m 644 "$$m" $(DESTDIR)$(MANDIR)/man1/; \
	done
	@case "$(PKGLIBDIR)" in $(patsubst %/,%,$(dir $(BINDIR)))/lib/pprof-alloc) ;; \
	*) echo "make install: the tracer looks for its agent in $(patsubst %/,%,$(dir $(BINDIR)))/lib/pprof-alloc, not $(PKGLIBDIR): set PPROF_ALLOC_AGENT=$(PKGLIBDIR)/libpprof-alloc.so where it runs" >&2 ;; \
	esac

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pprof-alloc $(DESTDIR)$(PKGLIBDIR)/libpprof-alloc.so \
		$(DESTDIR)$(SYSTEMDDIR)/pprof-alloc@.service
	@for m in $(DESTDIR)$(MANDIR)/man1/pprof-alloc.1 \
		  $(DESTDIR)$(MANDIR)/man1/pprof-alloc-*.1 $(B)/man/*.1; do \
		m=$(DESTDIR)$(MANDIR)/man1/$${m##*/}; \
		[ -f "$$m" ] || continue; \
		echo "rm -f $$m"; rm -f "$$m"; \
	done
	@rmdir $(DESTDIR)$(PKGLIBDIR) 2>/dev/null || true
	@[ -z "$(DESTDIR)" ] || [ ! -d "$(DESTDIR)" ] || { \
		top=$$(cd "$(DESTDIR)" && pwd) || exit 1; \
		for d in $(BINDIR) $(PKGLIBDIR) $(SYSTEMDDIR) $(MANDIR)/man1; do \
			d=$$(cd "$(DESTDIR)$$d" 2>/dev/null && pwd) || continue; \
			while [ "$$d" != "$$top" ] && [ "$$d" != / ] && \
				rmdir "$$d" 2>/dev/null; do d=$${d%/*}; done; \
		done; }

clean:
	rm -rf build build-san build-fuzz

# (not the roots of check-fresh and check-arm64, whose own files end in .d)
-include $(shell find $(B) \( -path $(B)/fresh -o -path $(B)/arm64 \) -prune -o -name '*.d' -type f -print 2>/dev/null)
