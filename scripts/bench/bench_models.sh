#!/usr/bin/env bash
# Side-by-side training-step timing (forward + backward) of medseg's C++ networks and the same
# architectures in Python (scripts/bench/ref_models.py on the same torch version as the build's LibTorch:
# Debian's python3-torch for 1.13, a venv with the torch 2.11 wheel for 2.11; scripts/bench/python_reference.sh),
# with equal torch thread counts on both sides.
#
#   scripts/bench/bench_models.sh [BUILD_DIR]
# Environment: THREADS (2), ITERS (2), RESENC_PATCH (128), RESENC_BATCH (1), SWIN_PATCH (96),
#              EXTRA_CPP / EXTRA_PY (extra flags, e.g. "--channels-last" for both)
# Prints the median wall time and process CPU time of the timed steps; on a shared machine the CPU
# time ratio is the meaningful one. Goal: medseg <= 0.9x Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
bin=$build/bin/medseg_bench_models
py=${PYTHON:-$(bash "$root/scripts/bench/python_reference.sh" "$build")}
threads=${THREADS:-2}
iters=${ITERS:-2}
[ -x "$bin" ] || { echo "bench_models: $bin not built (ninja medseg_bench_models)" >&2; exit 1; }
$py -c "import torch" 2>/dev/null || { echo "bench_models: $py cannot import torch" >&2; exit 1; }

field() { sed -n "s/^$1=//p"; }

bench() {  # name model patch batch
  local name=$1 model=$2 patch=$3 batch=$4
  local c p
  c=$(OMP_NUM_THREADS=$threads "$bin" --model "$model" --patch "$patch" --batch "$batch" --threads "$threads" \
        --iters "$iters" ${EXTRA_CPP:-})
  p=$(OMP_NUM_THREADS=$threads "$py" "$root/scripts/bench/ref_models.py" bench "$model" "$patch" "$batch" \
        "$threads" "$iters" ${EXTRA_PY:-})
  local cw cc pw pc
  cw=$(echo "$c" | field median_s); cc=$(echo "$c" | field median_cpu_s)
  pw=$(echo "$p" | field median_s); pc=$(echo "$p" | field median_cpu_s)
  printf "%-26s wall: medseg %8.2f s python %8.2f s ratio %.3f | cpu: medseg %8.2f s python %8.2f s ratio %.3f\n" \
    "$name" "$cw" "$pw" "$(echo "$cw / $pw" | bc -l)" "$cc" "$pc" "$(echo "$cc / $pc" | bc -l)"
}

echo "medseg: $("$build/bin/medseg_version"); python: torch $("$py" -c 'import torch; print(torch.__version__)')"
echo "threads=$threads iters=$iters (median of timed iterations after one warm-up)"
bench "ResEnc-M ${RESENC_PATCH:-128}^3 b${RESENC_BATCH:-1}" resenc "${RESENC_PATCH:-128}" "${RESENC_BATCH:-1}"
bench "SwinUNETR-F24 ${SWIN_PATCH:-96}^3 b1" swin "${SWIN_PATCH:-96}" 1
