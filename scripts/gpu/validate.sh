#!/usr/bin/env bash
# The GPU validation of docs/gpu-validation.md in one command, on an air-gapped node that has python3
# with PyTorch (CUDA), cmake, a C++ compiler and nvcc, beside a medseg checkout and a bundle made by
# scripts/gpu/bundle.sh on a connected machine:
#
#   scripts/gpu/validate.sh --bundle DIR [--build DIR] [--report DIR] [--jobs N] [--budget S]
#                           [--skip-build] [--only REGEX] [--targets "T1 T2 ..."]
#
#   --bundle DIR   the folder bundle.sh wrote (required)
#   --build DIR    build folder (default ./build-gpu of the checkout); configured here against the node's
#                  torch and the bundle's sysroot
#   --report DIR   where report.md, report.json and logs/ go (default ./medseg-gpu-report)
#   --jobs N       build and ctest parallelism (default: all cores)
#   --budget S     time budget in seconds (default 1500 = 25 min): a row that would start later is
#                  reported "skipped: over the time budget", and each row's limit is cut to what is left
#   --skip-build   use the build folder as it is (no configure, no build)
#   --only REGEX   run only the rows whose id matches (the others are not reported)
#   --targets LIST build only these CMake targets (space-separated; default: all). With --only, name the
#                  programs its rows run, e.g. "medseg_tests_nn medseg_bench_models medseg_train" (medseg_tests_nn: every torch test executable)
#
# Every row is bounded by `timeout`; its status is ok, "failed: ..." or "skipped: ..."; without a CUDA
# device (torch.cuda.is_available() is False) the GPU rows say "skipped: no CUDA device" and the CPU rows
# (configure, build, ctest, small CPU benchmarks) still run. Exit status: 0 when no row failed, 1 when
# one did, 2 for a problem before the first row (then a one-line error names the missing thing).
# Row limits (seconds) can be set with MEDSEG_T_<ROW ID IN CAPITALS>, e.g. MEDSEG_T_BUILD=1800.
set -euo pipefail

die() { echo "validate.sh: $*" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
helper=$root/scripts/gpu/validate_report.py

bundle="" build="" report="" jobs="" budget=1500 skip_build=0 only="" targets=""
while (($#)); do
  case $1 in
    --bundle|--build|--report|--jobs|--budget|--only|--targets)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      case $1 in
        --bundle) bundle=$2 ;; --build) build=$2 ;; --report) report=$2 ;;
        --jobs) jobs=$2 ;; --budget) budget=$2 ;; --only) only=$2 ;; --targets) targets=$2 ;;
      esac
      shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
abspath() { [[ $1 = /* ]] && echo "$1" || echo "$PWD/$1"; }

# --- preconditions: each failure is one line naming what is missing ------------------------------
[[ -n $bundle ]] || die "--bundle DIR is required (the folder scripts/gpu/bundle.sh wrote)"
bundle=$(abspath "${bundle%/}")
[[ -d $bundle ]] || die "no bundle at $bundle"
[[ -f $bundle/MANIFEST.json && -d $bundle/sysroot/usr ]] || die "no bundle at $bundle (no MANIFEST.json and sysroot/usr)"
[[ -f $bundle/SHA256SUMS ]] || die "the bundle at $bundle has no SHA256SUMS"
build=$(abspath "${build:-$root/build-gpu}")
report=$(abspath "${report:-$PWD/medseg-gpu-report}")
[[ $jobs =~ ^[0-9]*$ && $budget =~ ^[0-9]+$ ]] || die "--jobs and --budget take whole numbers"
jobs=${jobs:-$(nproc)}
[[ -f $helper ]] || die "missing $helper (run this script from a medseg checkout)"
command -v python3 >/dev/null || die "python3 not found"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) not found"
python3 -c 'import torch' >/dev/null 2>&1 || die "python3 cannot import torch ($(python3 -c 'import torch' 2>&1 | tail -1))"
torch_dir=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')/Torch
[[ -f $torch_dir/TorchConfig.cmake ]] || die "torch has no CMake package at $torch_dir"
cuda=$(python3 -c 'import torch;print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
# A CUDA build of torch: its CMake package enables CUDA, which needs nvcc (PATH, CUDACXX, or the usual place).
if [[ $(python3 -c 'import torch;print(torch.version.cuda or "")' 2>/dev/null) != "" && -z ${CUDACXX:-} ]] &&
   ! command -v nvcc >/dev/null; then
  [[ -x /usr/local/cuda/bin/nvcc ]] || die "torch is a CUDA build and its CMake package needs nvcc: put the CUDA toolkit's bin on PATH (or set CUDACXX)"
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
if [[ $skip_build = 0 ]]; then
  command -v cmake >/dev/null || die "cmake not found"
  command -v c++ >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null || die "no C++ compiler (c++, g++ or clang++) found"
fi
command -v ctest >/dev/null || die "ctest not found (it comes with cmake)"
[[ $skip_build = 0 || -x $build/bin/medseg_version ]] || die "--skip-build: no built medseg at $build (no bin/medseg_version)"
shalog=$(mktemp "${TMPDIR:-/tmp}/medseg-validate-sha.XXXXXX")
(cd "$bundle" && sha256sum --quiet -c SHA256SUMS >"$shalog" 2>&1) ||
  { n=$(grep -c 'FAILED' "$shalog" || true); rm -f "$shalog"
    die "the bundle at $bundle is damaged: $n file(s) differ from SHA256SUMS (copy it again)"; }
rm -f "$shalog"

S=$bundle/sysroot/usr
arch_lib=x86_64-linux-gnu
with_itk=OFF itk_dir=""
for d in "$S"/lib/cmake/ITK-*; do [[ -f $d/ITKConfig.cmake ]] && { with_itk=ON; itk_dir=$d; }; done
data=$bundle/data/preprocessed/Dataset900_Demo
have_data=0; [[ -f $data/nnUNetPlans.json && -d $data/nnUNetPlans_3d_fullres ]] && have_data=1

# pkg-config: the node's, else the bundle's pkgconf.
export PKG_CONFIG_PATH="$S/lib/$arch_lib/pkgconfig:$S/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg_config=$(command -v pkg-config || true)
[[ -n $pkg_config ]] || pkg_config=$bundle/tools/bin/pkg-config
"$pkg_config" --version >/dev/null 2>&1 || die "no working pkg-config (the node has none and $pkg_config does not run)"

# cairo: today's cmake/MedsegDeps.cmake requires it unless the checkout has a MEDSEG_WITH_CAIRO option.
cairo_opt=()
if grep -qs 'MEDSEG_WITH_CAIRO' "$root/CMakeLists.txt" "$root"/cmake/*.cmake; then
  if "$pkg_config" --exists cairo 2>/dev/null; then cairo_opt=(-DMEDSEG_WITH_CAIRO=ON); else cairo_opt=(-DMEDSEG_WITH_CAIRO=OFF); fi
elif [[ $skip_build = 0 ]] && grep -qs 'pkg_check_modules(CAIRO REQUIRED' "$root/cmake/MedsegDeps.cmake" &&
     ! "$pkg_config" --exists cairo 2>/dev/null; then
  die "this checkout requires cairo (pkg_check_modules(CAIRO REQUIRED) in cmake/MedsegDeps.cmake) and neither the bundle nor this node has it: make the bundle with scripts/gpu/bundle.sh --with-cairo"
fi

# Run-time libraries: the binaries find the sysroot's libraries through their build RPATH; what those
# need in turn comes from the node, or else from the bundle through one folder of links on
# LD_LIBRARY_PATH (after the node's own entries, holding only sonames the node's loader cache lacks).
libgap=$(mktemp -d "${TMPDIR:-/tmp}/medseg-bundle-libs.XXXXXX")
trap 'rm -rf "$libgap"' EXIT
ldcache=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | awk '{print $1}' | sort -u)
for dir in "$bundle"/{sysroot,runtime}/{usr/,}lib/$arch_lib; do
  [[ -d $dir ]] || continue
  for lib in "$dir"/lib*.so.*; do
    [[ -e $lib ]] || continue
    name=$(basename "$lib")
    grep -qxF "$name" <<<"$ldcache" || ln -sfn "$lib" "$libgap/$name"
  done
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$libgap"
# Every bundled library the build links must load here (missing sonames, too old a glibc/libstdc++).
if command -v ldd >/dev/null; then
  for lib in "$S/lib/$arch_lib"/lib{spdlog,fmt,zip,png16,cairo}.so; do
    [[ -e $lib ]] || continue
    bad=$(LD_LIBRARY_PATH="$S/lib/$arch_lib:$LD_LIBRARY_PATH" ldd "$lib" 2>&1 | grep -E 'not found' | head -3 | tr -s ' \t\n' ' ' || true)
    [[ -z $bad ]] || die "the bundle's $(basename "$(readlink -f "$lib")") cannot load on this node: $bad"
  done
fi

# The report folder: ours to replace when it holds an earlier report, refused otherwise.
if [[ -e $report ]]; then
  if [[ -f $report/report.json || -f $report/rows.jsonl ]]; then rm -rf "$report/logs" "$report/work" "$report"/report.{json,md} "$report/rows.jsonl"
  elif [[ -n $(ls -A "$report") ]]; then die "$report exists and holds something else than a report; give another --report"; fi
fi
mkdir -p "$report/logs" "$report/work"
rows=$report/rows.jsonl; : >"$rows"

# --- rows ----------------------------------------------------------------------------------------
t_start=$(date +%s)
failed_any=0
built=0 configured=0
[[ $skip_build = 1 ]] && built=1
bin=$build/bin

# limit ID DEFAULT: the row's time limit (MEDSEG_T_<ID> overrides), cut to the budget left.
limit() {
  local var="MEDSEG_T_${1^^}" l left
  l=${!var:-$2}
  left=$((budget - ($(date +%s) - t_start)))
  ((l > left)) && l=$left
  echo "$l"
}
# q ARGS...: the command as one line a shell would take back (single quotes only where needed)
q() {
  local a out=()
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:,+@%^-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
  done
  echo "${out[*]}"
}
# add ID TITLE KIND STATUS COMMAND [add-row options...]: the helper parses the log, may refine the
# status (ctest with failed tests, ...) and prints the final one.
last_status=""
add() {
  local id=$1 title=$2 kind=$3 status=$4 cmd=$5; shift 5
  last_status=$(python3 "$helper" add-row "$rows" --report "$report" --id "$id" --title "$title" --kind "$kind" \
    --status "$status" --command "$cmd" "$@") || { echo "validate.sh: could not record row $id" >&2; last_status="failed: not recorded"; }
  [[ $last_status != failed* ]] || failed_any=1
}
# skiprow ID TITLE KIND REASON COMMAND: a row that cannot run yet, with the reason
skiprow() {
  wanted "$1" || return 0
  if [[ $3 = gpu && $cuda != 1 ]]; then add "$1" "$2" "$3" "skipped: no CUDA device" "$5"
  else add "$1" "$2" "$3" "skipped: $4" "$5"; fi
}
wanted() { [[ -z $only || $1 =~ $only ]]; }
# row ID TITLE KIND(cpu|gpu) LIMIT PARSER [--needs configured|build|data|itk] [--note TEXT] [--show CMDLINE]
#     [--junit F] [--extra F] -- CMD...    (--show: the command line the report shows, when CMD is a wrapper)
row() {
  local id=$1 title=$2 kind=$3 deflimit=$4 parser=$5; shift 5
  local needs=() extra=() note="" show=""
  while [[ $1 != -- ]]; do
    case $1 in
      --needs) needs+=("$2"); shift 2 ;;
      --note) note=$2; shift 2 ;;
      --show) show=$2; shift 2 ;;
      --junit|--extra) extra+=("$1" "$2"); shift 2 ;;
      *) echo "validate.sh: internal: bad row option $1" >&2; exit 2 ;;
    esac
  done
  shift
  wanted "$id" || return 0
  local cmd; cmd=${show:-$(q "$@")}
  local log=$report/logs/$id.log
  local skip=""
  for n in "${needs[@]}"; do
    case $n in
      configured) [[ $configured = 1 ]] || skip="skipped: configure failed" ;;
      build) [[ $built = 1 ]] || skip="skipped: no build (configure or build failed)" ;;
      data) [[ $have_data = 1 ]] || skip="skipped: the bundle has no dataset (made with --no-dataset)" ;;
      itk) [[ -x $bin/medseg_predict ]] || skip="skipped: medseg_predict needs ITK and this build has none (MEDSEG_WITH_ITK=$with_itk); no other CLI predicts with the sliding window" ;;
    esac
  done
  [[ $kind = gpu && $cuda != 1 ]] && skip="skipped: no CUDA device"
  local l; l=$(limit "$id" "$deflimit")
  [[ -z $skip ]] && ((l < 20)) && skip="skipped: over the time budget (${budget} s)"
  if [[ -n $skip ]]; then
    add "$id" "$title" "$kind" "$skip" "$cmd" --parser "$parser" --note "$note"
    return 0
  fi
  echo "validate.sh: $id: $cmd (limit ${l} s)" >&2
  local t0 rc status
  t0=$(date +%s.%N)
  set +e
  timeout --kill-after=30 "$l" "$@" >"$log" 2>&1
  rc=$?
  set -e
  local wall; wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  case $rc in
    0) status=ok ;;
    124|137) status="failed: timed out after ${l} s" ;;
    *) status="failed: exit $rc" ;;
  esac
  local itk_flag=(); [[ $with_itk = ON ]] || itk_flag=(--no-itk)
  add "$id" "$title" "$kind" "$status" "$cmd" --parser "$parser" --rc "$rc" --wall "$wall" --log "$log" \
    --note "$note" "${extra[@]}" "${itk_flag[@]}"
}

cores_half=$(( jobs > 1 ? jobs / 2 : 1 ))
workers=(1); ((cores_half > 1)) && workers+=("$cores_half")   # worker counts of the CPU loader rows
threads=$(( jobs < 8 ? jobs : 8 ))

# 1. the node
row env "node: torch, CUDA, cuDNN, GPU" cpu 120 json -- python3 "$helper" env

# 2. configure and build against the node's torch and the bundle
prefix="$S;$S/lib/$arch_lib/cmake;$S/share/cmake"
[[ -n $itk_dir ]] && prefix="$prefix;$S/lib/cmake"
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cfg=(cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DTorch_DIR=$torch_dir"
     "-DMEDSEG_WITH_ITK=$with_itk" "-DCMAKE_PREFIX_PATH=$prefix" "-DCMAKE_INCLUDE_PATH=$S/include"
     "-DCMAKE_LIBRARY_PATH=$S/lib/$arch_lib" "-DPKG_CONFIG_EXECUTABLE=$pkg_config" "${cairo_opt[@]}")
[[ -n $itk_dir ]] && cfg+=("-DITK_DIR=$itk_dir")
if [[ $skip_build = 0 ]]; then
  row configure "cmake configure (node torch, bundle sysroot, ITK $with_itk)" cpu 300 none -- "${cfg[@]}"
  [[ $last_status = ok ]] && configured=1
  target_args=()
  for t in $targets; do target_args+=(--target "$t"); done
  row build "build${targets:+ ($targets)}, $jobs jobs" cpu 1200 none --needs configured -- \
    cmake --build "$build" -j "$jobs" "${target_args[@]}"
  [[ $last_status = ok ]] && built=1
fi
row version "medseg_version" cpu 60 version --needs build -- "$bin/medseg_version"

# The GPU rows come first: they are what the node is for, and the time budget cuts the last rows.
# 3. the GPU tests (tests/nn/gpu_cuda_test.cpp) alone, one at a time
gpu_re=${MEDSEG_GPU_TESTS:-'^(GpuCuda|Cuda[A-Za-z0-9]*)\.'}
junit_ok=0; ctest --help 2>/dev/null | grep -q -- '--output-junit' && junit_ok=1
ctest_args() {  # ctest_args NAME: --output-junit where ctest has it
  [[ $junit_ok = 1 ]] && printf '%s\n' --output-junit "$report/logs/$1.xml"
  return 0
}
mapfile -t j2 < <(ctest_args ctest_gpu)
row ctest_gpu "ctest, GPU tests ($gpu_re), one at a time" gpu 600 ctest --needs build --junit "$report/logs/ctest_gpu.xml" -- \
  ctest --test-dir "$build" -j 1 --timeout 300 -V -R "$gpu_re" "${j2[@]}"
mapfile -t j3 < <(ctest_args nccl)
row nccl "NCCL with one rank (CudaNccl.*)" gpu 180 ctest --needs build --junit "$report/logs/nccl.xml" -- \
  ctest --test-dir "$build" -j 1 --timeout 150 --output-on-failure -R '^(GpuCuda\.|Cuda)[A-Za-z0-9_.]*(Nccl|NCCL)' "${j3[@]}"

# 4. cuDNN: version, and whether a 3D convolution under fp16 autocast runs on it
row cudnn "conv3d fp16 autocast in torch.profiler: cuDNN kernels?" gpu 180 json -- python3 "$helper" cudnn-probe

# 5. step time and caching-allocator peak: ResEnc M 128^3 x 2 and SwinUNETR 96^3 x 1, fp32/fp16/bf16,
#    cuDNN autotuning on and off (bench/medseg_bench_models.cpp)
for model in resenc swin; do
  if [[ $model = resenc ]]; then size=(--patch 128 --batch 2); else size=(--patch 96 --batch 1); fi
  for amp in off fp16 bf16; do
    for bm in on off; do
      row "models_${model}_${amp}_cudnn_${bm}" "$model ${size[1]}^3 x ${size[3]}, amp $amp, cudnn.benchmark $bm" gpu 180 bench_models --needs build -- \
        "$bin/medseg_bench_models" --device cuda --model "$model" "${size[@]}" --amp "$amp" --cudnn-benchmark "$bm" \
        --memory --iters 10 --threads "$threads"
    done
  done
done

# 6. the planner's memory estimate / the measured peak: default (PlainConvUNet) and ResEnc M plans
if [[ $built = 1 ]] && "$bin/medseg_bench_memory" --help 2>/dev/null | grep -q -- '--device'; then
  row memory_model_cuda "planner estimate / CUDA allocator peak (medseg_bench_memory --device cuda)" gpu 600 bench_memory --needs build -- \
    "$bin/medseg_bench_memory" --device cuda --threads "$threads" --json "$report/logs/memory_model_cuda.json"
else
  row memory_model_cuda "planner estimate / CUDA allocator peak (CudaMemory.*: default, ResEnc M; fp32, fp16)" gpu 300 cuda_memory --needs build -- \
    ctest --test-dir "$build" -j 1 --timeout 280 -V -R '^(GpuCuda\.|Cuda)Memory'
fi
skiprow memory_model_cuda_resenc_l "planner estimate / CUDA peak for a ResEnc L plan" gpu \
  "no program measures a planned ResEnc L step on CUDA yet: CudaMemory.* covers ExperimentPlanner and nnUNetPlannerResEncM and medseg_bench_memory has no ResEnc L row (at a fixed patch L plans the same network as M; the presets differ in the memory target, i.e. patch and batch)" \
  "(none)"

# 7. augmentation on the GPU against CPU workers (docs/gpu_augmentation.md): 128^3, batch 2, 160^3 cases
dl_big=(--patch 128 128 128 --batch-size 2 --cases 4 --min-shape 160 160 160 --max-shape 160 160 160 --batches 20 --warmup 2)
row dataloader_128_cpu "loader 128^3 x 2, augmentation in $cores_half CPU workers" gpu 400 dataloader --needs build -- \
  "$bin/medseg_bench_dataloader" "${dl_big[@]}" --workers "$cores_half" --augment-device cpu
row dataloader_128_cuda "loader 128^3 x 2, augmentation batched on the GPU" gpu 300 dataloader --needs build -- \
  "$bin/medseg_bench_dataloader" "${dl_big[@]}" --workers "$cores_half" --augment-device cuda
plans=$data/nnUNetPlans.json store=$data/nnUNetPlans_3d_fullres
row dataloader_demo_cuda "loader on the bundled Dataset900_Demo store, augmentation on the GPU" gpu 300 dataloader --needs build --needs data -- \
  "$bin/medseg_bench_dataloader" --plans "$plans" -c 3d_fullres --preprocessed "$store" --workers "$cores_half" --batches 40 \
  --augment-device cuda

# 8. a short training run on the GPU (fp16 + grad scaler, cuDNN autotuning, augmentation on the GPU),
#    with nvidia-smi sampling the utilisation
work=$report/work
# shellcheck disable=SC2317  # run through `bash -c train_run`
train_run() {
  rm -rf "$work/preprocessed" "$work/results"; mkdir -p "$work/preprocessed" "$work/results"
  cp -r "$data" "$work/preprocessed/"
  local smi=""
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 >"$report/logs/train_gpu_util.csv" 2>/dev/null &
    smi=$!
  fi
  local rc=0
  "$bin/medseg_train" 900 3d_fullres 0 --device cuda --amp fp16 --cudnn-benchmark on --augment_device cuda \
    --epochs 3 --iters-per-epoch 50 --val-iters-per-epoch 10 --num-workers "$cores_half" --no_pbar \
    --preprocessed "$work/preprocessed" --results "$work/results" || rc=$?
  [[ -n $smi ]] && kill "$smi" 2>/dev/null
  return "$rc"
}
if wanted train_gpu; then export -f train_run; export work data bin report cores_half; fi
row train_gpu "medseg_train Dataset900_Demo 3d_fullres, 3 x 50 iterations, fp16, augmentation on the GPU" gpu 300 train \
  --needs build --needs data --extra "$report/logs/train_gpu_util.csv" \
  --show "$(q "$bin/medseg_train" 900 3d_fullres 0 --device cuda --amp fp16 --cudnn-benchmark on --augment_device cuda \
    --epochs 3 --iters-per-epoch 50 --val-iters-per-epoch 10 --num-workers "$cores_half" --no_pbar \
    --preprocessed "$work/preprocessed" --results "$work/results") (on a copy of the bundle's Dataset900_Demo; nvidia-smi sampling every 0.5 s)" \
  -- bash -c train_run

# 9. sliding-window prediction speed (needs an ITK build: medseg_predict reads and writes NIfTI)
raw_ts=$bundle/data/raw/Dataset900_Demo/imagesTs
# shellcheck disable=SC2317  # run through `bash -c predict_run`
predict_run() {
  rm -rf "$work/model" "$work/pred"
  "$bin/medseg_init_model" -d 900 -c 3d_fullres -f 0 --preprocessed "$bundle/data/preprocessed" -o "$work/model" >/dev/null
  local vox t0 t1
  vox=$(python3 -c 'import gzip,struct,sys,glob
n=0
for f in glob.glob(sys.argv[1]+"/*.nii.gz"):
    h=gzip.open(f).read(348); d=struct.unpack("<8h",h[40:56]); v=1
    for x in d[1:1+d[0]]: v*=x
    n+=v
print(n)' "$raw_ts")
  t0=$(date +%s.%N)
  "$bin/medseg_predict" -i "$raw_ts" -o "$work/pred" -m "$work/model" -f 0 --device cuda --disable_progress_bar
  t1=$(date +%s.%N)
  echo "predict_wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') cases=$(find "$raw_ts" -name "*.nii.gz" | wc -l) voxels=$vox"
}
if wanted predict_gpu; then export -f predict_run; export raw_ts bundle; fi
row predict_gpu "medseg_predict on the 4 Dataset900_Demo test cases (TTA on), untrained 3d_fullres model" gpu 300 predict \
  --needs build --needs data --needs itk \
  --show "$(q "$bin/medseg_init_model" -d 900 -c 3d_fullres -f 0 --preprocessed "$bundle/data/preprocessed" -o "$work/model") && $(q "$bin/medseg_predict" -i "$raw_ts" -o "$work/pred" -m "$work/model" -f 0 --device cuda --disable_progress_bar)" \
  -- bash -c predict_run

# 9b. the same cases predicted in slabs on the GPU (docs/predict.md, "Large volumes"): the segmentations must be
# byte-identical to a whole-image prediction's
# shellcheck disable=SC2317  # run through `bash -c predict_slabs_run`
predict_slabs_run() {
  rm -rf "$work/model_slabs" "$work/pred_whole" "$work/pred_slabs"
  "$bin/medseg_init_model" -d 900 -c 3d_fullres -f 0 --preprocessed "$bundle/data/preprocessed" -o "$work/model_slabs" >/dev/null
  "$bin/medseg_predict" -i "$raw_ts" -o "$work/pred_whole" -m "$work/model_slabs" -f 0 --device cuda --disable_progress_bar --slabs never
  local t0 t1 same=0 all=0 f
  t0=$(date +%s.%N)
  "$bin/medseg_predict" -i "$raw_ts" -o "$work/pred_slabs" -m "$work/model_slabs" -f 0 --device cuda --disable_progress_bar --slabs always
  t1=$(date +%s.%N)
  for f in "$work/pred_whole"/*.nii.gz; do
    all=$((all + 1))
    python3 -c 'import gzip,sys; a,b=(gzip.open(p).read() for p in sys.argv[1:3]); sys.exit(a!=b)' "$f" "$work/pred_slabs/$(basename "$f")" && same=$((same + 1))
  done
  echo "predict_wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') cases=$all voxels=0"
  echo "identical=$same of=$all"
  [[ $same = "$all" && $all -gt 0 ]]
}
if wanted predict_slabs_gpu; then export -f predict_slabs_run; export raw_ts bundle; fi
row predict_slabs_gpu "medseg_predict --slabs always on the GPU: the same segmentations as --slabs never" gpu 300 predict_slabs \
  --needs build --needs data --needs itk \
  --show "$(q "$bin/medseg_predict" -i "$raw_ts" -o "$work/pred_slabs" -m "$work/model_slabs" -f 0 --device cuda --slabs always) vs --slabs never" \
  -- bash -c predict_slabs_run

# 10. the CPU rows: the whole test suite but the GPU tests, and the benchmarks at small sizes
mapfile -t j1 < <(ctest_args ctest)
row ctest "ctest, all but the GPU tests, -j $jobs" cpu 900 ctest --needs build --junit "$report/logs/ctest.xml" -- \
  ctest --test-dir "$build" -j "$jobs" --timeout 600 --output-on-failure -E "$gpu_re" "${j1[@]}"
row models_resenc_cpu "ResEnc M 64^3 x 1 on the CPU" cpu 300 bench_models --needs build -- \
  "$bin/medseg_bench_models" --device cpu --model resenc --patch 64 --batch 1 --iters 2 --threads "$jobs" --memory
row models_swin_cpu "SwinUNETR 64^3 x 1 on the CPU" cpu 300 bench_models --needs build -- \
  "$bin/medseg_bench_models" --device cpu --model swin --patch 64 --batch 1 --iters 2 --threads "$jobs" --memory
# the planner's memory estimate / the measured CPU peak: default (PlainConvUNet) and ResEnc M plans
row memory_model_cpu "planner estimate / measured CPU peak (medseg_bench_memory: default, ResEnc M)" cpu 600 bench_memory --needs build -- \
  env OMP_NUM_THREADS="$threads" "$bin/medseg_bench_memory" --threads "$threads" --json "$report/logs/memory_model_cpu.json"
row dataloader_cpu "loader 64^3 x 2 on the CPU, ${workers[*]} worker(s)" cpu 300 dataloader --needs build -- \
  "$bin/medseg_bench_dataloader" --patch 64 64 64 --batch-size 2 --cases 4 --min-shape 80 80 80 --max-shape 80 80 80 \
  --workers "${workers[@]}" --batches 10 --warmup 2 --augment-device cpu
row dataloader_demo_cpu "loader on the bundled Dataset900_Demo store, CPU workers" cpu 300 dataloader --needs build --needs data -- \
  "$bin/medseg_bench_dataloader" --plans "$plans" -c 3d_fullres --preprocessed "$store" --workers "${workers[@]}" --batches 40

# --- the report ------------------------------------------------------------------------------------
meta=$(python3 - "$root" "$bundle" "$build" "$with_itk" "$cuda" "$jobs" "$budget" "$(( $(date +%s) - t_start ))" <<'PY'
import json, subprocess, sys
root, bundle, build, itk, cuda, jobs, budget, elapsed = sys.argv[1:9]
def git(*a):
    try:
        return subprocess.run(["git", "-C", root, *a], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
m = json.load(open(f"{bundle}/MANIFEST.json"))
print(json.dumps({
    "checkout": {"path": root, "commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))},
    "bundle": {"path": bundle, "made_from_commit": m.get("checkout", {}).get("commit"), "created": m.get("created"),
               "packages": len(m.get("packages", [])), "dataset": bool(m.get("dataset"))},
    "build": {"path": build, "MEDSEG_WITH_ITK": itk},
    "options": {"cuda_device": cuda == "1", "jobs": int(jobs), "budget_s": int(budget), "elapsed_s": int(elapsed)},
}))
PY
)
python3 "$helper" finish "$rows" "$report" --meta "$meta"
[[ ${MEDSEG_KEEP_WORK:-0} = 1 ]] || rm -rf "$report/work"   # training and prediction outputs
exit "$failed_any"
