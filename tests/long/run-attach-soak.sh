#!/bin/sh
# run-attach-soak.sh - tests/e2e/run-attach-soak.sh for 400 attach and
# detach cycles instead of the default suite's 25: no descriptor, thread
# or memory the agent keeps grows over many sessions, and no rare race in
# attach or detach corrupts the busy program.
SOAK_CYCLES=${SOAK_CYCLES:-400}
export SOAK_CYCLES
exec sh "$(dirname "$0")/../e2e/run-attach-soak.sh"
