#!/bin/sh
# run-rust-jemalloc-from-source.sh - tests/e2e/run-rust-jemalloc.sh on the
# Rust program built the way jemallocator and tikv-jemallocator build it:
# jemalloc-sys configures its bundled jemalloc with the _rjem_ prefix and
# compiles it from C (build/rust-jemalloc-from-source), where the default
# suite links Debian's prebuilt jemalloc renamed to the same names, which
# builds in a fraction of the time.
RUST_JEMALLOC_FROM_SOURCE=1
export RUST_JEMALLOC_FROM_SOURCE
exec sh "$(dirname "$0")/../e2e/run-rust-jemalloc.sh"
