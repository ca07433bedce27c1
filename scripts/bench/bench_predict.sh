#!/usr/bin/env bash
# medseg_predict speed on CPU on the demo-sized dataset (shapes 32-40 x 48-64 x 48-64, 2 classes; the one
# scripts/demo.sh uses), with an untrained 3d_fullres model (medseg_init_model; the weights do not change the
# work). Prints seconds per case and input voxels per second, side by side, for:
#   1 fold,  no TTA,  -npp 0 -nps 0   (everything inline: the sequential baseline)
#   1 fold,  no TTA,  -npp 2 -nps 2   (preprocessing and export overlap the network: pipelining gain)
#   1 fold,  TTA,     -npp 2 -nps 2   (8 mirrored copies per tile, batched with the tiles)
#   5 folds, no TTA,  -npp 2 -nps 2   (5 copies of the same checkpoint, ensembled per tile)
#   1 fold,  no TTA,  --accumulators fp32 (exact sums) and --exact_nnunet (nnU-Net's kernels): their cost
#   1 fold,  no TTA and TTA, --amp bf16 (the processor's bf16 units: AMX / AVX-512 BF16 where it has them)
#   5 folds, TTA                      (only with FULL=1: 40 forward passes per tile)
# And the sliding window's arithmetic rate: medseg_predict --verbose logs each case's tiles, network passes per
# tile and seconds; medseg_model_info's forward_flops (FLOPs of one pass, planning/network_flops.h) turns them
# into GFLOP/s, printed beside the processor's peak for that precision, so that the distance to the limit is
# visible. The peak is measured on the run's threads, not computed from the clock /proc/cpuinfo reports (a turbo
# clock runs above it): medseg_bench_peak's multiply-add instruction loops (AVX-512 or AVX2 FMA for fp32,
# AVX-512 BF16 for bf16) and, where it is higher (AMX), oneDNN's bf16 GEMM.
# Each run: best wall time of REPEAT runs; CPU seconds too (wall time is noisy when other jobs share the machine).
#
#   scripts/bench/bench_predict.sh                      # build dir: $BUILD or ./build
#   BUILD=build-pred CASES=8 REPEAT=1 THREADS=2 scripts/bench/bench_predict.sh
#   PLANNER=nnUNetPlannerResEncM ...                    # a ResEnc plan instead of the default PlainConvUNet one
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
CASES=${CASES:-8}
REPEAT=${REPEAT:-1}
THREADS=${THREADS:-$(nproc)}
FULL=${FULL:-0}
PLANNER=${PLANNER:-ExperimentPlanner}

for app in medseg_make_dataset medseg_plan_and_preprocess medseg_init_model medseg_predict medseg_model_info \
  medseg_bench_peak; do
  [[ -x $BUILD/bin/$app ]] || { echo "missing $BUILD/bin/$app (build it first)" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_pred.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export MEDSEG_RAW=$WORK/raw MEDSEG_PREPROCESSED=$WORK/preprocessed MEDSEG_RESULTS=$WORK/results

"$BUILD/bin/medseg_make_dataset" -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 \
  --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 --np 2 >/dev/null 2>&1
"$BUILD/bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --no_pp -pl "$PLANNER" >/dev/null 2>&1
plans_name=$(python3 -c "import json,glob,sys; print(sorted(glob.glob('$MEDSEG_PREPROCESSED/Dataset900_Demo/*Plans*.json'))[0].split('/')[-1][:-5])")
"$BUILD/bin/medseg_init_model" -d 900 -c 3d_fullres -p "$plans_name" -f 0 1 2 3 4 >/dev/null
model="$MEDSEG_RESULTS/Dataset900_Demo/nnUNetTrainer__${plans_name}__3d_fullres"

mkdir -p "$WORK/in"
for f in $(ls "$MEDSEG_RAW/Dataset900_Demo/imagesTr/"*_0000.nii.gz | head -n "$CASES"); do ln -s "$f" "$WORK/in/"; done

cat >"$WORK/drive.py" <<'PY'
import gzip, json, os, re, resource, struct, subprocess, sys, time, glob
app, model, inp, work, repeat, threads, full = sys.argv[1:8]
info = os.path.join(os.path.dirname(app), "medseg_model_info")
repeat, full = int(repeat), full == "1"
files = sorted(glob.glob(f"{inp}/*.nii.gz"))
def voxels(f):
    with gzip.open(f, "rb") as g:
        h = g.read(348)
    dim = struct.unpack("<8h", h[40:56])
    n = 1
    for d in dim[1:1 + dim[0]]:
        n *= d
    return n
nvox = sum(voxels(f) for f in files)
cfg = json.load(open(f"{model}/plans.json"))["configurations"]["3d_fullres"]
print(f"model: {cfg['architecture']['network_class_name'].split('.')[-1]}, patch {cfg['patch_size']}, "
      f"spacing {cfg['spacing']}; {len(files)} cases, {nvox / 1e6:.2f} M voxels; {threads} torch threads")

info_json = json.loads(subprocess.run(
    [info, "--plans", f"{model}/plans.json", "--dataset-json", f"{model}/dataset.json", "-c", "3d_fullres",
     "--no-forward"], check=True, stdout=subprocess.PIPE, text=True).stdout)
flops = info_json["forward_flops"]
print(f"one forward pass of the patch: {flops / 1e9:.2f} GFLOP (medseg_model_info forward_flops)")

# What this processor's units reach on the run's threads, measured (medseg_bench_peak): the fp32 multiply-add
# instruction loop, and for bf16 the better of the AVX-512 BF16 loop and oneDNN's bf16 GEMM (AMX, where there is
# one, is reached only through the library: the GEMM is then the figure).
peaks = json.loads(subprocess.run([os.path.join(os.path.dirname(app), "medseg_bench_peak"), "--threads", threads],
                                  check=True, stdout=subprocess.PIPE, text=True).stdout)
def measured_or_gemm(loop, gemm):
    return max(loop or 0.0, gemm or 0.0)
peak = {"fp32": measured_or_gemm(peaks["loop_fp32"], peaks["gemm_fp32"]),
        "bf16": measured_or_gemm(peaks["loop_bf16"], peaks["gemm_bf16"])}
print(f"measured on {threads} thread(s) (medseg_bench_peak): fp32 {peaks['loop_fp32_isa']} loop "
      f"{peaks['loop_fp32'] or 0:.0f}, GEMM {peaks['gemm_fp32']:.0f} GFLOP/s; bf16 loop {peaks['loop_bf16'] or 0:.0f}, "
      f"GEMM {peaks['gemm_bf16']:.0f} GFLOP/s ({peaks['bf16_units']}); peaks used: fp32 {peak['fp32']:.0f}, "
      f"bf16 {peak['bf16']:.0f}")
WINDOW = re.compile(r"sliding window: (\d+) tile\(s\) of [\dx]+, (\d+) network pass\(es\) each, ([\d.]+) s")

def run(tag, folds, tta, npp, extra=()):
    best = None
    for r in range(repeat):
        out = f"{work}/out_{tag}_{r}"
        cmd = [app, "-i", inp, "-o", out, "-m", model, "-f", *folds, "-npp", str(npp), "-nps", str(npp),
               "--threads", threads, "--disable_progress_bar", "--verbose"] + ([] if tta else ["--disable_tta"]) + \
              list(extra) + ([] if "--amp" in extra else ["--amp", "off"])  # fp32 rows: auto may be bf16 here
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(p.stdout + p.stderr)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        # Network passes (tiles x mirrored copies) and their seconds. With the default fp16 sums each fold runs
        # its own window and logs its own line (inference/predictor.cpp, nnU-Net's order); the one row with fp32
        # sums has a single fold.
        windows = [(int(t) * int(c), float(sec)) for t, c, sec in WINDOW.findall(p.stdout + p.stderr)]
        rate = sum(n for n, _ in windows) * flops / max(sum(sec for _, sec in windows), 1e-9) / 1e9
        if best is None or wall < best[0]:
            best = (wall, cpu, rate)
    return best

rows = [("1 fold", ["0"], False, 0, ()), ("1 fold", ["0"], False, 2, ()), ("1 fold", ["0"], True, 2, ()),
        ("5 folds", ["0", "1", "2", "3", "4"], False, 2, ()),
        # nnU-Net's fp16 sums (the default) against exact fp32 ones, and nnU-Net's kernels (--exact_nnunet)
        ("1 fold", ["0"], False, 2, ("--accumulators", "fp32")), ("1 fold", ["0"], False, 2, ("--exact_nnunet",)),
        ("1 fold", ["0"], False, 2, ("--amp", "bf16")), ("1 fold", ["0"], True, 2, ("--amp", "bf16"))]
if full:
    rows.append(("5 folds", ["0", "1", "2", "3", "4"], True, 2, ()))
print(f"{'folds':8} {'TTA':4} {'npp/nps':8} {'s/case':>8} {'Mvox/s':>8} {'wall s':>8} {'cpu s':>8} "
      f"{'GFLOP/s':>8} {'of peak':>8}  flags")
res = {}
for i, (name, folds, tta, npp, extra) in enumerate(rows):
    wall, cpu, rate = run(str(i), folds, tta, npp, extra)
    res[i] = wall
    of_peak = rate / peak["bf16" if "bf16" in extra else "fp32"]
    print(f"{name:8} {'on' if tta else 'off':4} {f'{npp}/{npp}':8} {wall / len(files):8.3f} {nvox / wall / 1e6:8.3f} "
          f"{wall:8.2f} {cpu:8.2f} {rate:8.1f} {100 * of_peak:7.1f}%  {' '.join(extra)}", flush=True)
print(f"pipelining gain (npp/nps 2 vs 0, 1 fold, no TTA): {res[0] / res[1]:.2f}x")
print(f"TTA cost: {res[2] / res[1]:.2f}x   5-fold cost: {res[3] / res[1]:.2f}x")
print(f"fp16 sums (default) / fp32 sums: {res[1] / res[4]:.2f}x   --exact_nnunet / default: {res[5] / res[1]:.2f}x")
print(f"--amp bf16 (what auto picks on a CPU with bf16 units) / fp32: {res[6] / res[1]:.2f}x without TTA, "
      f"{res[7] / res[2]:.2f}x with TTA")
PY
python3 "$WORK/drive.py" "$BUILD/bin/medseg_predict" "$model" "$WORK/in" "$WORK" "$REPEAT" "$THREADS" "$FULL"
