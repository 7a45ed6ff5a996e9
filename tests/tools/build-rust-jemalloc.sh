#!/bin/sh
# build-rust-jemalloc.sh OUT - build tests/workloads/rust-jemalloc offline,
# with Debian's Rust toolchain and crates only, into OUT:
#
#   OUT/rust-jemalloc   jemalloc (jemalloc-sys's bundled copy, _rjem_
#                       prefix) linked in as the global allocator
#   OUT/rust-system     the same program on Rust's default allocator
#                       (glibc's malloc): the control
#
# Debian's cargo and rustc (/usr/bin, not whatever a rustup puts first on
# PATH) build against Debian's crate registry, /usr/share/cargo/registry,
# put in place of crates.io by a cargo home of the build's own: nothing is
# fetched, nothing of the user's cargo configuration is read, nothing is
# written outside OUT (the sources are copied there, their times kept:
# cargo writes Cargo.lock beside Cargo.toml).  Frame pointers and debug info on.  The
# cargo target directory is kept in OUT, so building into the same OUT
# again only relinks what changed.
#
# Fails with one line naming what is missing (and the package that
# brings it: contrib/install-deps.sh --test installs them all), or with
# cargo's output and a last line saying the build failed.
set -eu
[ $# = 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$TOP/tests/workloads/rust-jemalloc
REGISTRY=/usr/share/cargo/registry
CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc

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
# jemalloc-sys's build script configures and makes jemalloc in C
for tool in cc make; do
	command -v $tool >/dev/null 2>&1 || missing $tool "gcc, make"
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$OUT/cargo-home" "$OUT/src"
cat >"$OUT/cargo-home/config.toml" <<EOF
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$REGISTRY"

[net]
offline = true
EOF
cp -p "$SRC/Cargo.toml" "$OUT/src/"
cp -Rp "$SRC/src" "$OUT/src/"

# build FEATURES... : cargo build --release, in the environment of the
# build's own (no RUSTFLAGS, wrapper or cargo setting of the caller's)
build() {
	env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_WRAPPER \
		-u RUSTC_WORKSPACE_WRAPPER -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET \
		CARGO_HOME="$OUT/cargo-home" RUSTC=$RUSTC \
		RUSTFLAGS="-C force-frame-pointers=yes" \
		$CARGO build --offline --release --quiet \
		--manifest-path "$OUT/src/Cargo.toml" --target-dir "$OUT/target" "$@" \
		>"$OUT/build.log" 2>&1 || {
		cat "$OUT/build.log" >&2
		echo "build-rust-jemalloc: cargo build $* failed (log above, $OUT/build.log)" >&2
		exit 1
	}
}
build
cp "$OUT/target/release/rust-jemalloc" "$OUT/rust-jemalloc"
build --no-default-features
cp "$OUT/target/release/rust-jemalloc" "$OUT/rust-system"
