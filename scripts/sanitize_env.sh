# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the sanitizer builds' configuration and the
# runtime options their executables (tests, the CLIs they start, fuzzers) run with.

# The sanitizer builds use Debian's CPU LibTorch 1.13 (instrumenting around the CUDA wheel's libraries
# adds nothing the CPU paths do not already cover).
_medseg_debian_torch=-DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch

# One clang build serves the ASan+UBSan test suites and the fuzz targets (fuzzer-no-link
# instrumentation costs the tests little and saves a second full build).
medseg_configure_asan() {
  local root=$1 build=$2
  [ -f "$build/CMakeCache.txt" ] && return 0
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMEDSEG_SANITIZE=address,undefined -DMEDSEG_FUZZ=ON \
    "$_medseg_debian_torch"
}

medseg_configure_tsan() {
  local root=$1 build=$2 tests_regex=$3
  [ -f "$build/CMakeCache.txt" ] && return 0
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMEDSEG_SANITIZE=thread "-DMEDSEG_TEST_SOURCES_REGEX=$tests_regex" \
    "$_medseg_debian_torch"
}

_medseg_supp=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/sanitizers" && pwd)
# A report is a failure: UBSan halts (the build also has -fno-sanitize-recover), ASan aborts.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$_medseg_supp/ubsan.supp}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$_medseg_supp/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$_medseg_supp/tsan.supp}
