#!/bin/sh
# run-hostile-flood.sh - the hostile targets of tests/e2e/run-hostile.sh,
# with the flood (four threads of never-freed records with new stacks) for
# FLOOD_SECONDS=40 instead of the default suite's 4, and at the tracer's
# default --max-stacks (100000) instead of 20000: the tracer's memory stays
# bounded over a longer run, with the cap it ships with.
FLOOD_SECONDS=${FLOOD_SECONDS:-40}
FLOOD_MAX_STACKS=${FLOOD_MAX_STACKS:-100000}
export FLOOD_SECONDS FLOOD_MAX_STACKS
exec sh "$(dirname "$0")/../e2e/run-hostile.sh"
