#!/usr/bin/env bash
# Configures and builds medseg into ./build (or $MEDSEG_BUILD_DIR). Extra args go to cmake.
# LibTorch, on first configure:
#   default             PyTorch 2.11's LibTorch with CUDA 13 (scripts/install_libtorch.sh unpacks it once)
#   MEDSEG_TORCH=debian Debian's libtorch-dev 1.13 (CPU only, Debian packages alone)
#   -DTorch_DIR=...     any other LibTorch
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
jobs=${MEDSEG_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

torch_args=()
case " $* " in
  *" -DTorch_DIR="*) ;;
  *)
    case "${MEDSEG_TORCH:-wheel}" in
      wheel) torch_args=(-DTorch_DIR="$(bash "$root/scripts/install_libtorch.sh")") ;;
      debian) torch_args=(-DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch) ;;
      *) echo "build.sh: MEDSEG_TORCH must be wheel or debian, not '$MEDSEG_TORCH'" >&2; exit 2 ;;
    esac
    ;;
esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${torch_args[@]}" "$@"
elif [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" "$@"
fi
# MEDSEG_BUILD_ARGS: extra `cmake --build` arguments, e.g. "--target medseg_tests_nn".
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${MEDSEG_BUILD_ARGS:-}
