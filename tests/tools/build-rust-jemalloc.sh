#!/bin/sh
# build-rust-jemalloc.sh [--from-source] OUT - build
# tests/workloads/rust-jemalloc offline, with Debian's Rust toolchain and
# crates only, into OUT:
#
#   OUT/rust-jemalloc   jemalloc linked into the executable as the global
#                       allocator, its entry points prefixed _rjem_
#   OUT/rust-system     the same program on Rust's default allocator
#                       (glibc's malloc): the control
#
# Where the jemalloc comes from:
#
#   (default)      Debian's prebuilt one (libjemalloc-dev's
#                  libjemalloc_pic.a, unprefixed), made into
#                  OUT/jemalloc/libjemalloc_rjem.a: its C++ operators
#                  dropped, every public symbol renamed to its _rjem_
#                  name (objcopy --redefine-syms).  Cargo's override of
#                  the build script of a `links` package (jemalloc-sys
#                  links "jemalloc") links it and sets the cfg jemalloc-sys's
#                  own build would (prefixed: the _rjem_ link names), so
#                  neither jemalloc-sys's build script nor its
#                  build-dependencies (cc, fs_extra) are compiled: a cold
#                  build is mostly rustc on the program.  (jemalloc-sys's
#                  JEMALLOC_OVERRIDE links the same library, but sets no
#                  cfg and still builds cc.)  What `make test` builds.
#   --from-source  jemalloc-sys's own build: its bundled jemalloc,
#                  configured --with-jemalloc-prefix=_rjem_ and compiled
#                  from C, what jemallocator and tikv-jemallocator do; a
#                  cold build is ten times longer.  `make check-long`.
#
# Either way the executable defines _rjem_malloc and the rest, no plain
# malloc, and loads no shared jemalloc.  The prebuilt one differs in its
# version (Debian's) and in the environment variable it reads its options
# from (MALLOC_CONF, not _RJEM_MALLOC_CONF).
#
# Debian's cargo and rustc (/usr/bin, not whatever a rustup puts first on
# PATH) build against Debian's crate registry, /usr/share/cargo/registry,
# put in place of crates.io by a cargo home of the build's own: nothing is
# fetched, nothing of the user's cargo configuration is read, nothing is
# written outside OUT (the sources are copied there, cargo writing
# Cargo.lock beside Cargo.toml; a file only when it changed, so that its
# time is newer than the last build's start).  Frame pointers and debug
# info on.  Each way keeps its cargo target directory in OUT, so building
# into the same OUT again only relinks what changed.  OUT/NAME is replaced
# only when the new build differs, by a rename: a program running from it
# keeps its file (the caller serialises builds into one OUT).
#
# Fails with one line naming what is missing (and the package that
# brings it: contrib/install-deps.sh --test installs them all), or with
# cargo's output and a last line saying the build failed.
set -eu
FROM_SOURCE=0
[ "${1:-}" = --from-source ] && { FROM_SOURCE=1; shift; }
[ $# = 1 ] || { echo "usage: $0 [--from-source] OUT" >&2; exit 2; }
OUT=$1
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$TOP/tests/workloads/rust-jemalloc
REGISTRY=/usr/share/cargo/registry
CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc
PIC=/usr/lib/x86_64-linux-gnu/libjemalloc_pic.a

missing() {
	echo "build-rust-jemalloc: $1 is missing (contrib/install-deps.sh --test: $2)" >&2
	exit 1
}
[ -x $CARGO ] || missing $CARGO cargo
[ -x $RUSTC ] || missing $RUSTC rustc
for crate in jemalloc-sys:librust-jemalloc-sys-dev libc:librust-libc-dev \
	cc:librust-cc-dev fs_extra:librust-fs-extra-dev; do
	set -- $REGISTRY/"${crate%%:*}"-[0-9]*/Cargo.toml
	[ -f "$1" ] || missing "the crate ${crate%%:*} in $REGISTRY" "${crate#*:}"
done
set -- $REGISTRY/jemalloc-sys-[0-9]*/src/lib.rs
JESYS=$1
if [ $FROM_SOURCE = 1 ]; then
	# jemalloc-sys's build script configures and makes jemalloc in C
	for tool in cc make; do
		command -v $tool >/dev/null 2>&1 || missing $tool "gcc, make"
	done
else
	[ -f $PIC ] || missing $PIC libjemalloc-dev
	for tool in ar nm objcopy; do
		command -v $tool >/dev/null 2>&1 || missing $tool binutils
	done
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$OUT/cargo-home" "$OUT/src"
cat >"$OUT/cargo-home/config.toml" <<EOT
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$REGISTRY"

[net]
offline = true
EOT
mkdir -p "$OUT/src/src"
for f in Cargo.toml $(cd "$SRC" && echo src/*.rs); do
	cmp -s "$SRC/$f" "$OUT/src/$f" || cp "$SRC/$f" "$OUT/src/$f"
done

# make_rjem LIB: LIB becomes Debian's libjemalloc_pic.a with the _rjem_
# names jemalloc-sys links against
make_rjem() {
	t=$1.tmp.$$
	rm -rf "$t" && mkdir -p "$t"
	cp $PIC "$t/lib.a"
	# operator new and delete: C++, and no business of a Rust program's
	ar t "$t/lib.a" | grep -x 'jemalloc_cpp\..*o' | while read -r m; do
		ar d "$t/lib.a" "$m"
	done
	# the public symbols: every global one defined that is not internal
	# (jemalloc prefixes its internals je_)
	nm -g --defined-only "$t/lib.a" | awk 'NF == 3 && $3 !~ /^je_/ { print $3 }' |
		sort -u >"$t/public"
	grep -qx malloc "$t/public" || {
		echo "build-rust-jemalloc: $PIC defines no malloc" >&2; exit 1; }
	# every _rjem_ name jemalloc-sys declares must be one of them
	sed -n 's/.*link_name = "_rjem_\([a-z_]*\)".*/\1/p' "$JESYS" | sort -u >"$t/wanted"
	[ -s "$t/wanted" ] || {
		echo "build-rust-jemalloc: no _rjem_ link name in $JESYS" >&2; exit 1; }
	comm -23 "$t/wanted" "$t/public" | grep . >"$t/lacking" && {
		echo "build-rust-jemalloc: $PIC lacks what jemalloc-sys links: $(tr '\n' ' ' <"$t/lacking")" >&2
		exit 1
	}
	sed 's/.*/& _rjem_&/' "$t/public" >"$t/rename"
	objcopy --redefine-syms="$t/rename" "$t/lib.a"
	ranlib "$t/lib.a"
	nm -g --defined-only "$t/lib.a" | awk 'NF == 3 && $3 !~ /^(je_|_rjem_)/ { print $3 }' >"$t/left"
	[ ! -s "$t/left" ] || {
		echo "build-rust-jemalloc: renamed $PIC still defines $(sort -u "$t/left" | tr '\n' ' ')" >&2
		exit 1
	}
	mv -f "$t/lib.a" "$1"
	rm -rf "$t"
}

if [ $FROM_SOURCE = 1 ]; then
	TARGET=$OUT/target-from-source
else
	TARGET=$OUT/target
	LIB=$OUT/jemalloc/libjemalloc_rjem.a
	if [ ! -f "$LIB" ] || [ $PIC -nt "$LIB" ] || [ "$0" -nt "$LIB" ]; then
		mkdir -p "$OUT/jemalloc"
		make_rjem "$LIB"
		# cargo does not see a native library change: relink all
		rm -rf "$TARGET"
	fi
	cat >>"$OUT/cargo-home/config.toml" <<EOT

[target.x86_64-unknown-linux-gnu.jemalloc]
rustc-link-search = ["native=$OUT/jemalloc"]
rustc-link-lib = ["static=jemalloc_rjem"]
rustc-cfg = ["prefixed"]
EOT
fi

# build FEATURES... : cargo build --release, in the environment of the
# build's own (no RUSTFLAGS, wrapper or cargo setting of the caller's)
build() {
	env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_WRAPPER -u JEMALLOC_OVERRIDE \
		-u RUSTC_WORKSPACE_WRAPPER -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET \
		CARGO_HOME="$OUT/cargo-home" RUSTC=$RUSTC \
		RUSTFLAGS="-C force-frame-pointers=yes" \
		$CARGO build --offline --release --quiet \
		--manifest-path "$OUT/src/Cargo.toml" --target-dir "$TARGET" "$@" \
		>"$OUT/build.log" 2>&1 || {
		cat "$OUT/build.log" >&2
		echo "build-rust-jemalloc: cargo build $* failed (log above, $OUT/build.log)" >&2
		exit 1
	}
}

# put NAME: OUT/NAME becomes the program just built, unless it is that
# already; copied under a temporary name and renamed over the old one
# (copying over a running program fails: ETXTBSY)
put() {
	cmp -s "$TARGET/release/rust-jemalloc" "$OUT/$1" && return 0
	cp "$TARGET/release/rust-jemalloc" "$OUT/.$1.tmp.$$"
	mv -f "$OUT/.$1.tmp.$$" "$OUT/$1"
}
build
put rust-jemalloc
build --no-default-features
put rust-system
