#!/usr/bin/env bash
# Sharded prediction of one large case (medseg_predict --nproc_per_node, docs/distributed.md): seconds per
# case with 1 and 2 ranks on a synthetic volume of SIZE^3 voxels (default 256), side by side in one run,
# with an untrained 3d_fullres model planned on the demo-sized dataset (medseg_init_model; the weights do not
# change the work). Rows:
#   1 rank  x T threads     the single-process baseline
#   N ranks x T/N threads   the same cores, the case's tiles shared (what the ranks buy on one host)
#   N ranks x T threads     only with OVERSUB=1 (more threads than cores on this machine)
# and prints how far the probabilities and segmentations are apart. Needs python3-numpy (Debian).
# On a GPU node each rank has its own GPU: run with --device cuda (DEVICE=cuda) there.
#
#   scripts/bench/bench_sharded_predict.sh                      # build dir: $BUILD or ./build
#   SIZE=256 NPROC=2 THREADS=2 TTA=0 scripts/bench/bench_sharded_predict.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
SIZE=${SIZE:-256}
NPROC=${NPROC:-2}
THREADS=${THREADS:-$(nproc)}
TTA=${TTA:-0}
DEVICE=${DEVICE:-cpu}
OVERSUB=${OVERSUB:-0}

for app in medseg_make_dataset medseg_plan_and_preprocess medseg_init_model medseg_predict; do
  [[ -x $BUILD/bin/$app ]] || { echo "missing $BUILD/bin/$app (build it first)" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_sharded.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export MEDSEG_RAW=$WORK/raw MEDSEG_PREPROCESSED=$WORK/preprocessed MEDSEG_RESULTS=$WORK/results

"$BUILD/bin/medseg_make_dataset" -d 900 -n Demo --cases 12 --labels 2 --min-shape 32 48 48 --max-shape 40 64 64 \
  --seed 7 --np 2 >/dev/null 2>&1
"$BUILD/bin/medseg_make_dataset" -d 901 -n Big --cases 1 --labels 2 --min-shape "$SIZE" "$SIZE" "$SIZE" \
  --max-shape "$SIZE" "$SIZE" "$SIZE" --seed 8 --np 2 >/dev/null 2>&1
"$BUILD/bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --no_pp >/dev/null 2>&1
"$BUILD/bin/medseg_init_model" -d 900 -c 3d_fullres -f 0 >/dev/null
model="$MEDSEG_RESULTS/Dataset900_Demo/nnUNetTrainer__nnUNetPlans__3d_fullres"
mkdir -p "$WORK/in"
ln -s "$MEDSEG_RAW"/Dataset901_Big/imagesTr/*_0000.nii.gz "$WORK/in/"

cat >"$WORK/drive.py" <<'PY'
import json, resource, subprocess, sys, time
app, model, inp, work, nproc, threads, tta, device, oversub = sys.argv[1:10]
nproc, threads = int(nproc), int(threads)
cfg = json.load(open(f"{model}/plans.json"))["configurations"]["3d_fullres"]
print(f"model: {cfg['architecture']['network_class_name'].split('.')[-1]}, patch {cfg['patch_size']}; "
      f"TTA {'on' if tta == '1' else 'off'}; device {device}")

def run(tag, ranks, t):
    out = f"{work}/out_{tag}"
    cmd = [app, "-i", inp, "-o", out, "-m", model, "-f", "0", "-npp", "1", "-nps", "1", "--threads", str(t),
           "--device", device, "--save_probabilities", "--disable_progress_bar"]
    if tta != "1": cmd.append("--disable_tta")
    if ranks > 1: cmd += ["--nproc_per_node", str(ranks)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0: sys.exit(p.stdout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sw = float(p.stdout.split("s in the sliding window")[0].split("(")[-1])
    return out, wall, cpu, sw

rows = [("1", 1, threads), (f"{nproc}", nproc, max(1, threads // nproc))]
if oversub == "1": rows.append((f"{nproc}x", nproc, threads))
print(f"{'ranks x threads':16} {'s/case':>8} {'sliding window s':>17} {'cpu s':>8}")
res = []
for tag, ranks, t in rows:
    out, wall, cpu, sw = run(tag, ranks, t)
    res.append((out, wall, sw))
    print(f"{f'{ranks} x {t}':16} {wall:8.2f} {sw:17.2f} {cpu:8.2f}", flush=True)
print(f"speed-up, {nproc} ranks vs 1 (whole case): {res[0][1] / res[1][1]:.2f}x; sliding window alone: "
      f"{res[0][2] / res[1][2]:.2f}x")
import glob, numpy as np
for f in glob.glob(f"{res[0][0]}/*_probabilities.npy"):
    a = np.load(f); b = np.load(f.replace(res[0][0], res[1][0]))
    print(f"max |p1 - p{nproc}| = {np.abs(a - b).max():.2e}; argmax differs in {(a.argmax(0) != b.argmax(0)).sum()} voxel(s)")
PY
/usr/bin/python3 "$WORK/drive.py" "$BUILD/bin/medseg_predict" "$model" "$WORK/in" "$WORK" "$NPROC" "$THREADS" "$TTA" "$DEVICE" \
  "$OVERSUB"
