#!/usr/bin/env bash
# Peak host memory of predicting one large case, whole or in slabs (docs/predict.md, "Large volumes";
# the peak resident size above the program's own, after its libraries are loaded;
# bench/medseg_bench_predict_memory.cpp). Two parts, each mode in its own process:
#   1. side by side on a case whose whole logits fit this machine: whole vs slabs, and their ratio;
#   2. the case docs/predict.md states the bound for, in slabs only: a 512 x 512 x 1000 CT with 100
#      classes and a 128^3 patch (its whole logits alone would take 105 GB).
#
#   BUILD=build scripts/bench/bench_predict_memory.sh
#   SMALL="600 256 256" SMALL_CLASSES=20 BIG="1000 512 512" BIG_CLASSES=100 PATCH="128 128 128" ...
#   BIG=none ...    # only the side-by-side part
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
BIN=$BUILD/bin/medseg_bench_predict_memory
[[ -x $BIN ]] || { echo "missing $BIN (build it first)" >&2; exit 1; }
SMALL=${SMALL:-600 256 256}
SMALL_CLASSES=${SMALL_CLASSES:-20}
BIG=${BIG:-1000 512 512}
BIG_CLASSES=${BIG_CLASSES:-100}
PATCH=${PATCH:-128 128 128}
THREADS=${THREADS:-$(nproc)}

field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

echo "== side by side: ($SMALL) voxels, $SMALL_CLASSES classes, patch ($PATCH), $THREADS threads"
# shellcheck disable=SC2086
whole=$("$BIN" --mode whole --shape $SMALL --classes "$SMALL_CLASSES" --patch $PATCH --threads "$THREADS")
# shellcheck disable=SC2086
slabs=$("$BIN" --mode slabs --shape $SMALL --classes "$SMALL_CLASSES" --patch $PATCH --threads "$THREADS")
echo "$whole"
echo "$slabs"
python3 - "$whole" "$slabs" <<'PY'
import json, sys
w, s = (json.loads(a) for a in sys.argv[1:3])
print(f"peak resident: whole {w['resident_gib']:.2f} GiB, slabs {s['resident_gib']:.2f} GiB, "
      f"ratio whole/slabs {w['resident_gib'] / s['resident_gib']:.2f}")
for r in (w, s):
    print(f"  {r['mode']}: model {r['model_gib']:.2f} GiB / measured {r['resident_gib']:.2f} GiB = "
          f"{r['model_gib'] / r['resident_gib']:.2f}; {r['seconds']:.1f} s")
PY

if [[ $BIG != none ]]; then
  echo "== the stated bound: ($BIG) voxels, $BIG_CLASSES classes, patch ($PATCH), in slabs"
  # shellcheck disable=SC2086
  big=$("$BIN" --mode slabs --shape $BIG --classes "$BIG_CLASSES" --patch $PATCH --threads "$THREADS")
  echo "$big"
  echo "peak resident $(field "$big" resident_gib) GiB (model $(field "$big" model_gib) GiB) in $(field "$big" seconds) s"
fi
