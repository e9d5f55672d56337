#!/bin/sh
# best figures of the tuning session, used by compare.sh
export BEST_TIME_MS=0.1783
export BEST_GBPS=2604.93
export BASELINE_TIME_MS=0.2831
./compare.sh "$@"
