#!/usr/bin/env bash
# Spatial parallelism, model side (docs/spatial_parallel.md): a ResidualEncoderUNet 3D on one cubic
# patch at batch 1, split over RANKS ranks (each its own process) against one process:
#   - peak CPU bytes of one forward + backward per rank, and the ratio RANKS / 1 (issue 11: <= 0.6 at 2);
#   - the communication share of one full-resolution ResEnc stage's forward + backward: time in halo
#     exchanges and all-reduces (ProcessGroup::traffic, waiting for the peer included) over the total.
#   BUILD=build scripts/bench/bench_spatial.sh [PATCH] [RANKS] [THREADS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
"$BUILD/bin/medseg_bench_spatial" --patch "${1:-64}" --ranks "${2:-2}" --threads "${3:-1}" --stage-iters 10
