#!/usr/bin/env bash
# The byte memory model (lib/planning/memory_model.h) against the measured CPU peak of one real training
# step (medseg's network, DC+CE loss with deep supervision, SGD/AdamW, bf16 autocast; counting CPU
# allocator), for planner-made PlainConvUNet / ResEnc-M architectures, 2d and 3d, AMP off and on.
# Prints the Markdown table of docs/plans.md; exit status 1 when a row is outside the tolerance.
#
#   scripts/bench/bench_memory_model.sh [BUILD_DIR] [medseg_bench_memory options...]
#   e.g. scripts/bench/bench_memory_model.sh build --median-shape 96 160 160 --patch3d 32 64 64 --patch2d 128 128
# Environment: THREADS (2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[[ $build = /* ]] || build=$root/$build
shift || true
bin=$build/bin/medseg_bench_memory
[ -x "$bin" ] || { echo "bench_memory_model: $bin not built (ninja medseg_bench_memory)" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); threads ${THREADS:-2}"
OMP_NUM_THREADS=${THREADS:-2} "$bin" --threads "${THREADS:-2}" "$@"
