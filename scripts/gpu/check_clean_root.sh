#!/usr/bin/env bash
# The offline GPU bundle on a machine that holds only what a GPU node holds (docs/gpu-validation.md):
# a debootstrapped Debian 12 root with python3, cmake, ninja and g++, PyTorch 2.11 (this machine's
# torch 2.11 site-packages, mounted read-only on PYTHONPATH) and the CUDA 13 toolkit (mounted read-only,
# as a node has it), and no -dev package of medseg's dependencies. It copies the checkout's HEAD
# (git archive) and a bundle in, and runs scripts/gpu/validate.sh there. Needs root, debootstrap and a
# Debian mirror.
#
#   sudo scripts/gpu/check_clean_root.sh --bundle DIR | --build DIR   [--full] [--root DIR] [--jobs N]
#   sudo scripts/gpu/check_clean_root.sh --prepare [--root DIR]
#
#   --bundle DIR   a bundle made by scripts/gpu/bundle.sh; or
#   --build DIR    an ITK build of this checkout: a bundle is made from it first (bundle.sh --build DIR)
#   --full         validate.sh whole: every GPU row "skipped: no CUDA device", every CPU row runs (the full
#                  build and ctest; about an hour on 2 cores). Default (quick, what CI runs): validate.sh's
#                  env and configure rows, then the torch-free medseg_plan_experiment (linking the bundle's
#                  libraries) and the object that includes c10d's gloo/NCCL headers are built, and
#                  medseg_plan_experiment plans the bundled dataset, which must give the bundle's plans
#   --root DIR     the root (default $MEDSEG_CACHE/clean-root, i.e. ~/.cache/medseg/clean-root): made once
#                  and reused; its /work is made anew each run
#   --jobs N       build parallelism (default: nproc)
#   --prepare      only make the root (debootstrap and the node's packages, about 5 min the first time) and stop:
#                  scripts/test.sh starts it while it builds, so a cold CI downloads the root beside the compile
# The root's compiler cache is kept in $MEDSEG_CACHE/clean-root-ccache (outside the root).
# Prints the report's table; exit status 0 when validate.sh and the checks passed.
set -euo pipefail

die() { echo "check_clean_root: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${MEDSEG_CACHE:-$HOME/.cache/medseg}
rootfs=$cache/clean-root bundle="" build="" full=0 jobs=$(nproc) prepare=0
while (($#)); do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --root) rootfs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --full) full=1; shift ;;
    --prepare) prepare=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $(id -u) = 0 ]] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap)"
[[ -n $bundle || -n $build ]] || ((prepare)) || die "give --bundle DIR or --build DIR"
cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)
[[ -d $cuda/include ]] || die "no CUDA toolkit at /usr/local/cuda (a GPU node has one; it is mounted read-only)"
site=$cache/venv-torch-2.11.0/lib/python3.11/site-packages
if [[ ! -d $site/torch && -n $build ]] && ! ((prepare)); then  # the benchmarks' torch 2.11 venv, made from the cached wheel
  bash "$root/scripts/bench/python_reference.sh" "$build" >/dev/null
fi
[[ -d $site/torch ]] || ((prepare)) || die "no torch 2.11 at $site (scripts/bench/python_reference.sh BUILD makes that venv)"

work=$(mktemp -d "${TMPDIR:-/tmp}/medseg-clean-root.XXXXXX")
mounts=()
cleanup() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mount_in() {  # mount_in SRC DEST [ro]: a bind mount inside the root, undone on exit
  mkdir -p "$rootfs$2"
  mount --bind "$1" "$rootfs$2"
  mounts+=("$rootfs$2")
  [[ ${3:-} = ro ]] && mount -o remount,bind,ro "$rootfs$2"
  return 0
}

# --- the root: Debian 12 minbase + what a GPU node has (no -dev package of medseg's dependencies) ------
node_pkgs=(python3 cmake ninja-build g++ ca-certificates ccache)
forbidden='^(nlohmann-json3-dev|libcli11-dev|libgtest-dev|libspdlog-dev|libfmt-dev|libzip-dev|libpng-dev|zlib1g-dev|libgloo-dev|libcairo2-dev|libinsighttoolkit5-dev|libtorch-dev|pkg-config|pkgconf)$'
if [[ ! -f $rootfs/.medseg-clean-root ]]; then
  rm -rf "$rootfs"
  mkdir -p "$(dirname "$rootfs")"
  echo "check_clean_root: debootstrap bookworm into $rootfs" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
    { tail -5 "$work/debootstrap.log" >&2; die "debootstrap failed (above)"; }
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  mount_in /proc /proc
  chroot "$rootfs" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -q=2 && apt-get install -q=2 -y --no-install-recommends ${node_pkgs[*]}" >"$work/apt.log" 2>&1 ||
    { tail -5 "$work/apt.log" >&2; die "apt-get install in the root failed (above)"; }
  chroot "$rootfs" apt-get clean
  touch "$rootfs/.medseg-clean-root"
fi
# ccache is no dependency of medseg (the build uses it when present, cmake/MedsegCcache.cmake): a root made
# before it was added gets it here, and its cache lives outside the root so repeated runs (CI) rebuild fast.
if [[ ! -x $rootfs/usr/bin/ccache ]]; then
  mountpoint -q "$rootfs/proc" || mount_in /proc /proc
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  chroot "$rootfs" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -q=2 && apt-get install -q=2 -y --no-install-recommends ccache && apt-get clean" >"$work/apt.log" 2>&1 ||
    { tail -5 "$work/apt.log" >&2; die "apt-get install ccache in the root failed (above)"; }
fi
bad=$(chroot "$rootfs" dpkg-query -W -f '${Package}\n' | grep -E "$forbidden" || true)
[[ -z $bad ]] || die "the root holds packages a GPU node lacks: $(echo $bad)"
if ((prepare)); then
  echo "check_clean_root: root ready at $rootfs" >&2
  exit 0
fi

if [[ -z $bundle ]]; then
  bundle=$work/bundle
  bash "$root/scripts/gpu/bundle.sh" "$bundle" --build "$build" >"$work/bundle.log" 2>&1 ||
    { tail -5 "$work/bundle.log" >&2; die "bundle.sh failed (above)"; }
fi
[[ -f $bundle/MANIFEST.json ]] || die "no bundle at $bundle"


# --- what the node has besides: torch, the CUDA toolkit; and the checkout and the bundle ---------------
mountpoint -q "$rootfs/proc" || mount_in /proc /proc
mount_in /dev /dev
# Every installed system names localhost in /etc/hosts; debootstrap's minbase leaves the file out, and the
# distributed tests join on localhost.
[[ -s $rootfs/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"
# At its own path with the usual link: nvcc finds its parts through the real folder's name.
mount_in "$cuda" "/usr/local/$(basename "$cuda")" ro
[[ -L $rootfs/usr/local/cuda ]] || rmdir "$rootfs/usr/local/cuda" 2>/dev/null || true
ln -sfn "$(basename "$cuda")" "$rootfs/usr/local/cuda"
echo /usr/local/cuda/lib >"$rootfs/etc/ld.so.conf.d/cuda.conf"
chroot "$rootfs" ldconfig
mount_in "$site" /opt/torch-site ro
mkdir -p "$cache/clean-root-ccache"
mount_in "$cache/clean-root-ccache" /root/.cache/ccache
rm -rf "$rootfs/work"
mkdir -p "$rootfs/work/medseg"
git -C "$root" archive HEAD | tar -x -C "$rootfs/work/medseg"
cp -a "$bundle" "$rootfs/work/bundle"

# --- validate.sh in the root ----------------------------------------------------------------------
args=(--bundle /work/bundle --build /work/build --report /work/report --jobs "$jobs" --budget 7200)
((full)) || args+=(--only '^(env|configure)$')
run_in_root() {
  chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 PYTHONPATH=/opt/torch-site MEDSEG_T_BUILD=7000 MEDSEG_T_CTEST=7000 bash -c "$1"
}
status=0
run_in_root "cd /work/medseg && scripts/gpu/validate.sh ${args[*]@Q}" || status=$?
sed -n '/^| row/,/^$/p' "$rootfs/work/report/report.md" 2>/dev/null || true
((status == 0)) || die "validate.sh failed in the clean root (exit $status); its report: $rootfs/work/report"

if ((!full)); then
  # A torch-free program linking the bundle's libraries, run; and the torch object that includes c10d.
  obj=lib/CMakeFiles/medseg_stage_distributed.dir/distributed/process_group.cpp.o
  run_in_root "ninja -C /work/build -j $jobs medseg_plan_experiment $obj" >"$work/ninja.log" 2>&1 ||
    { tail -15 "$work/ninja.log" >&2; die "the build in the clean root failed (above)"; }
  # The bundle's dataset planned again must give the bundle's plans (same configurations).
  run_in_root "set -e; d=/work/bundle/data/preprocessed/Dataset900_Demo
    /work/build/bin/medseg_plan_experiment --fingerprint \$d/dataset_fingerprint.json --dataset-json \$d/dataset.json \
      -o /work/plans.json >/work/plan.log 2>&1
    python3 - <<'PY'
import json
a = json.load(open('/work/bundle/data/preprocessed/Dataset900_Demo/nnUNetPlans.json'))['configurations']
b = json.load(open('/work/plans.json'))['configurations']
assert a == b, 'plans differ from the bundle: ' + str(sorted(set(a) ^ set(b)) or [k for k in a if a[k] != b.get(k)])
print('check_clean_root: medseg_plan_experiment in the clean root gives the bundle plans (%d configurations)' % len(a))
PY" || die "planning the bundled dataset in the clean root failed (/work/plan.log in $rootfs)"
fi
echo "check_clean_root: passed ($([[ $full = 1 ]] && echo full || echo quick)) in $rootfs"
