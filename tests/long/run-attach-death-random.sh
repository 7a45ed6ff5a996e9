#!/bin/sh
# run-attach-death-random.sh - tests/e2e/run-attach-death.sh with 1000
# rounds of a tracer killed at a random moment instead of the suite's 100,
# 50 of them on fresh processes of each kind instead of 5: a kill that
# lands in a rare window of an attach or a detach (a thread let go
# mid-call, the first dlopen) shows up here first.
ATTACH_DEATH_ROUNDS=${ATTACH_DEATH_ROUNDS:-1000}
ATTACH_DEATH_FRESH=${ATTACH_DEATH_FRESH:-50}
ATTACH_DEATH_EVERY=${ATTACH_DEATH_EVERY:-1}
export ATTACH_DEATH_ROUNDS ATTACH_DEATH_FRESH ATTACH_DEATH_EVERY
exec sh "$(dirname "$0")/../e2e/run-attach-death.sh"
