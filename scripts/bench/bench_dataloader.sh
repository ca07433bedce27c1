#!/usr/bin/env bash
# Throughput of the training data loader (lib/data) with full nnU-Net augmentation, 1 and 2 worker
# threads: patches per second (wall) and patches per CPU-second (= per core; meaningful even when other
# jobs share the machine, wall time is not).
#   (a) the demo plan: Dataset900_Demo made by medseg_make_dataset, planned and preprocessed by
#       medseg_plan_and_preprocess (3d_fullres), read from the mmapped case store;
#   (b) a 128^3 patch, batch 2, on synthetic in-memory 160^3 cases (loader patch 205^3 after get_patch_size);
#   (c) a 40x56x40 patch, batch 9, on synthetic in-memory 64x80x64 cases (loader patch 73x80x64).
#
# With --nnunet DIR --bg2 DIR (checkouts of nnU-Net v2 and batchgeneratorsv2; --bg and --dna default to the
# batchgenerators and dynamic-network-architectures folders next to the nnU-Net one), the same shapes also go
# through nnU-Net's own training transforms (scripts/bench/nnunet_augment.py, single-threaded, Debian's
# /usr/bin/python3), and a summary prints medseg's patches per CPU-second (1 worker), nnU-Net's samples per
# CPU-second and their ratio. Bench-only Debian packages for that (not in the CI install script):
#   apt-get install -y python3-scipy python3-skimage python3-threadpoolctl python3-nibabel python3-seaborn python3-sklearn
#
#   scripts/bench/bench_dataloader.sh                      # build dir: $BUILD or ./build
#   BUILD=build-data BATCHES=10 BIG_BATCHES=4 scripts/bench/bench_dataloader.sh
#   scripts/bench/bench_dataloader.sh --nnunet /tmp/nnUNet --bg2 /tmp/batchgeneratorsv2 [--bg DIR] [--dna DIR]
# Batches per measurement: BATCHES (a, default 40; 150 with --nnunet), BIG_BATCHES (b, default 6; 50 with
# --nnunet), SMALL_BATCHES (c, default 40); nnU-Net runs the same number of batches as medseg.
set -euo pipefail

NNUNET='' BG2='' BG='' DNA=''
while (($#)); do
  case $1 in
    --nnunet) NNUNET=$2; shift 2 ;;
    --bg2) BG2=$2; shift 2 ;;
    --bg) BG=$2; shift 2 ;;
    --dna) DNA=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -n $NNUNET || -n $BG2 ]]; then
  [[ -d $NNUNET/nnunetv2 ]] || { echo "--nnunet must name a checkout holding nnunetv2/" >&2; exit 2; }
  [[ -d $BG2/batchgeneratorsv2 ]] || { echo "--bg2 must name a checkout holding batchgeneratorsv2/" >&2; exit 2; }
fi

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
TOOLS=${TOOLS:-$BUILD}  # where medseg_make_dataset / medseg_plan_and_preprocess live
[[ $TOOLS = /* ]] || TOOLS=$ROOT/$TOOLS
WORKERS=${WORKERS:-"1 2"}
# With --nnunet more batches: only ~36 % of samples are resampled (rotation or scaling, p 0.2 each), and
# those cost ~20x a crop-only sample at 128^3, so few batches make a noisy mean.
BATCHES=${BATCHES:-$([[ -n $NNUNET ]] && echo 150 || echo 40)}
BIG_BATCHES=${BIG_BATCHES:-$([[ -n $NNUNET ]] && echo 50 || echo 6)}
BIG_CASES=${BIG_CASES:-4}
SMALL_BATCHES=${SMALL_BATCHES:-40}
SMALL_CASES=${SMALL_CASES:-8}
PYTHON=${PYTHON:-/usr/bin/python3}  # the interpreter with torch and numpy (Debian's)

[[ -x $BUILD/bin/medseg_bench_dataloader ]] || { echo "missing $BUILD/bin/medseg_bench_dataloader" >&2; exit 1; }
for app in medseg_make_dataset medseg_plan_and_preprocess; do
  [[ -x $TOOLS/bin/$app ]] || { echo "missing $TOOLS/bin/$app (build it, or set TOOLS)" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_dl.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export MEDSEG_RAW=$WORK/raw MEDSEG_PREPROCESSED=$WORK/pre MEDSEG_RESULTS=$WORK/res
mkdir -p "$MEDSEG_RAW" "$MEDSEG_PREPROCESSED"

# nnu NAME ARGS...: nnU-Net's transforms on the same shape; keeps its result line in $WORK/NAME.nnunet
nnu() {
  local name=$1; shift
  [[ -n $NNUNET ]] || return 0
  local extra=()
  [[ -n $BG ]] && extra+=(--bg "$BG")
  [[ -n $DNA ]] && extra+=(--dna "$DNA")
  "$PYTHON" "$ROOT/scripts/bench/nnunet_augment.py" --nnunet "$NNUNET" --bg2 "$BG2" "${extra[@]}" --breakdown "$@" |
    tee "$WORK/$name.nnunet"
}
# medseg NAME ARGS...: medseg_bench_dataloader, output kept in $WORK/NAME.medseg
medseg() {
  local name=$1; shift
  "$BUILD/bin/medseg_bench_dataloader" "$@" | tee "$WORK/$name.medseg"
}

echo "== (a) demo plan: Dataset900_Demo, 3d_fullres, preprocessed store =="
"$TOOLS/bin/medseg_make_dataset" -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 \
  --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 >/dev/null 2>&1
"$TOOLS/bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --np 2 --no_pbar >/dev/null 2>&1
PLANS=$MEDSEG_PREPROCESSED/Dataset900_Demo/nnUNetPlans.json
# shellcheck disable=SC2086
medseg a --plans "$PLANS" -c 3d_fullres --preprocessed "$MEDSEG_PREPROCESSED/Dataset900_Demo/nnUNetPlans_3d_fullres" \
  --workers $WORKERS --batches "$BATCHES"
# nnU-Net: the same plan (patch, batch, strides, use_mask_for_norm) on synthetic cases of the demo's raw shapes
nnu a --plans "$PLANS" -c 3d_fullres --cases 24 --min-shape 32 48 48 --max-shape 40 64 64 --batches "$BATCHES"

echo
echo "== (b) 128^3 patch, batch 2, synthetic 160^3 cases (1 channel, 2 labels) =="
# shellcheck disable=SC2086
medseg b --patch 128 128 128 --batch-size 2 --cases "$BIG_CASES" \
  --min-shape 160 160 160 --max-shape 160 160 160 --workers $WORKERS --batches "$BIG_BATCHES" --warmup 1
nnu b --patch 128 128 128 --batch-size 2 --cases "$BIG_CASES" --case-shape 160 160 160 \
  --batches "$BIG_BATCHES" --warmup 1

echo
echo "== (c) 40x56x40 patch, batch 9, synthetic 64x80x64 cases (1 channel, 2 labels) =="
# shellcheck disable=SC2086
medseg c --patch 40 56 40 --batch-size 9 --cases "$SMALL_CASES" \
  --min-shape 64 80 64 --max-shape 64 80 64 --workers $WORKERS --batches "$SMALL_BATCHES" --warmup 2
nnu c --patch 40 56 40 --batch-size 9 --cases "$SMALL_CASES" --case-shape 64 80 64 \
  --batches "$SMALL_BATCHES" --warmup 2

[[ -n $NNUNET ]] || exit 0
echo
echo "== medseg vs nnU-Net v2: augmented patches per CPU-second (single-threaded augmentation) =="
echo "medseg: whole loader (sampling, crop, augmentation, DS targets), patches/cpu_s of the process with 1 and 2"
echo "workers; nnU-Net: transforms + batch assembly per sample (nnUNetDataLoader after the read), crop excluded."
printf '%-6s %-12s %6s %14s %14s %14s %8s\n' case patch batch medseg_1w medseg_2w nnunet ratio_1w
for name in a b c; do
  m1=$(awk 'NF == 6 && $1 == "1" {print $5}' "$WORK/$name.medseg")
  m2=$(awk 'NF == 6 && $1 == "2" {print $5}' "$WORK/$name.medseg")
  line=$(grep '^nnunet ' "$WORK/$name.nnunet")
  field() { tr ' ' '\n' <<<"$line" | sed -n "s/^$1=//p"; }
  n=$(field samples_per_cpu_s)
  ratio=$(awk -v m="$m1" -v n="$n" 'BEGIN { if (m != "" && n > 0) printf "%.2f", m / n; else print "-" }')
  printf '%-6s %-12s %6s %14s %14s %14s %8s\n' "($name)" "$(field patch)" "$(field batch)" "${m1:--}" "${m2:--}" "$n" "$ratio"
  echo "medseg_vs_nnunet case=$name patch=$(field patch) batch=$(field batch) medseg_patches_per_cpu_s_1w=${m1:--}" \
    "medseg_patches_per_cpu_s_2w=${m2:--} nnunet_samples_per_cpu_s=$n ratio_1w=$ratio" >>"$WORK/summary"
done
cat "$WORK/summary"
