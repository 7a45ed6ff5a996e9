#!/bin/sh
# run-hostile-flood.sh - the hostile targets of tests/e2e/run-hostile.sh,
# with the flood (four threads of never-freed records with new stacks) for
# FLOOD_SECONDS=40 instead of the default suite's 6: the tracer's memory
# stays bounded over a longer run.
FLOOD_SECONDS=${FLOOD_SECONDS:-40}
export FLOOD_SECONDS
exec sh "$TOP/tests/e2e/run-hostile.sh"
