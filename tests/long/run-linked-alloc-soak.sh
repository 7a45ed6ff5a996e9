#!/bin/sh
# run-linked-alloc-soak.sh - tests/e2e/run-linked-alloc.sh with its
# attach/detach soak at 20 cycles (2 in the default suite): a program with
# jemalloc linked in, busy on 4 threads, attached and detached 20 times;
# its self-check stays green and its code is the file's at the end.
LINKED_ALLOC_SOAK=20
export LINKED_ALLOC_SOAK
exec sh "$(dirname "$0")/../e2e/run-linked-alloc.sh"
