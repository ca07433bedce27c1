#!/usr/bin/env bash
# The test suites under sanitizers (docs/hardening.md), each in its own build folder:
#   scripts/sanitize.sh asan [base|nn|all] [ctest args...]  ASan+UBSan, clang, build-asan
#   scripts/sanitize.sh tsan [ctest args...]                TSan on the threaded tests, build-tsan
#   scripts/sanitize.sh fuzz SECONDS                        every fuzz target for SECONDS each
# Builds only what the run needs, with $MEDSEG_JOBS jobs (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${MEDSEG_JOBS:-$(nproc)}
source "$root/scripts/sanitize_env.sh"

# The tests that start threads: data loader, prediction pipeline, fingerprint/preprocessing
# workers, image IO from several threads, the bounded queue and parallel helpers.
tsan_files='(data_loader|inference_predict_itk|inference_parts_itk|io_threads_itk|fingerprint_extract|preprocessing_pipeline_itk|preprocessing_cli_itk)_test'
tsan_tests='DataLoader|Predict|Pipeline|Threads|Parallel|Fingerprint|Preprocess'

mode=${1:-asan}
shift || true
case "$mode" in
  asan)
    build=${MEDSEG_SANITIZE_BUILD_DIR:-$root/build-asan}
    suite=${1:-base}
    shift || true
    medseg_configure_asan "$root" "$build"
    case "$suite" in
      base) targets=(medseg_tests_base) label=(-L base) ;;
      nn) targets=(medseg_tests_nn) label=(-L nn) ;;
      all) targets=(medseg_tests_base medseg_tests_nn) label=() ;;
      *) echo "sanitize.sh: suite must be base, nn or all" >&2; exit 2 ;;
    esac
    cmake --build "$build" --target "${targets[@]}" -j "$jobs"
    ctest --test-dir "$build" "${label[@]}" --output-on-failure -j "${MEDSEG_TEST_JOBS:-2}" --timeout 1800 "$@"
    ;;
  tsan)
    build=${MEDSEG_TSAN_BUILD_DIR:-$root/build-tsan}
    medseg_configure_tsan "$root" "$build" "$tsan_files"
    cmake --build "$build" --target medseg_tests_base medseg_tests_nn -j "$jobs"
    ctest --test-dir "$build" -R "$tsan_tests" --output-on-failure -j "${MEDSEG_TEST_JOBS:-2}" --timeout 1800 "$@"
    ;;
  fuzz)
    seconds=${1:?usage: scripts/sanitize.sh fuzz SECONDS}
    for t in $(bash "$root/scripts/fuzz.sh" list); do
      bash "$root/scripts/fuzz.sh" "$t" "$seconds" || { echo "sanitize.sh: fuzz target $t failed" >&2; exit 1; }
    done
    ;;
  *) echo "usage: scripts/sanitize.sh asan [base|nn|all] | tsan | fuzz SECONDS" >&2; exit 2 ;;
esac
