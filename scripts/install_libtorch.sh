#!/usr/bin/env bash
# Unpacks LibTorch 2.11 (CUDA 13.0) from PyPI's torch==2.11.0 wheel into a cache outside the checkout,
# once, and prints nothing else on a second run. Each download is pinned by version and sha256.
#
#   $MEDSEG_CACHE (default ~/.cache/medseg)/libtorch-2.11.0-cu130/
#     torch/{include,lib,share}     from the torch wheel (torch/share/cmake/Torch is the Torch_DIR)
#     nvidia/<pkg>/lib              only the CUDA libraries this machine's toolkit lacks, from nvidia-* wheels
#     READY                         written last: a folder without it is incomplete and is redone
#
# libtorch_cuda.so needs cuDNN, NCCL, cuBLAS, cuSPARSE(Lt), cuFFT, cuRAND, cuSOLVER, CUPTI, cuFile and
# NVSHMEM. The CUDA 13.0 toolkit (with cuDNN 9 and NCCL 2) provides most; what the loader cannot find
# comes from the wheel torch 2.11 itself requires, unpacked where the torch libraries' own RPATH
# ($ORIGIN/../../nvidia/<pkg>/lib) looks. Prints the Torch_DIR on its last line.
set -euo pipefail

TORCH_VERSION=2.11.0
TORCH_WHEEL=torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl
TORCH_SHA256=7aa2f9bbc6d4595ba72138026b2074be1233186150e9292865e04b7a63b8c67a
# soname | wheel requirement | wheel file | sha256 | folder under nvidia/
EXTRA_LIBS=(
  "libcufile.so.0|nvidia-cufile==1.15.1.6|nvidia_cufile-1.15.1.6-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|08a3ecefae5a01c7f5117351c64f17c7c62efa5fffdbe24fc7d298da19cd0b44|cu13"
  "libcusparseLt.so.0|nvidia-cusparselt-cu13==0.8.0|nvidia_cusparselt_cu13-0.8.0-py3-none-manylinux2014_x86_64.whl|25e30a8a7323935d4ad0340b95a0b69926eee755767e8e0b1cf8dd85b197d3fd|cusparselt"
  "libnvshmem_host.so.3|nvidia-nvshmem-cu13==3.4.5|nvidia_nvshmem_cu13-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|290f0a2ee94c9f3687a02502f3b9299a9f9fe826e6d0287ee18482e78d495b80|nvshmem"
)

cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
dest=$cache/libtorch-$TORCH_VERSION-cu130
wheels=$cache/wheels
torch_dir=$dest/torch/share/cmake/Torch

if [ -f "$dest/READY" ]; then
  echo "$torch_dir"
  exit 0
fi

log() { echo "install_libtorch: $*" >&2; }
command -v python3 >/dev/null || { log "python3 is needed to run pip (scripts/install_deps.sh installs it)"; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { log "python3 has no pip (apt-get install python3-pip)"; exit 1; }
command -v unzip >/dev/null || { log "unzip is needed (apt-get install unzip)"; exit 1; }

# fetch FILE REQUIREMENT SHA256: download once into $wheels, check the hash every time.
fetch() {
  local file=$1 req=$2 sha=$3
  mkdir -p "$wheels"
  if [ ! -f "$wheels/$file" ] || ! echo "$sha  $wheels/$file" | sha256sum -c --status; then
    rm -f "$wheels/$file"
    log "downloading $req"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheels" "$req" >&2
  fi
  [ -f "$wheels/$file" ] || { log "pip did not produce $file for $req"; exit 1; }
  echo "$sha  $wheels/$file" | sha256sum -c --status || { log "sha256 mismatch for $wheels/$file (expected $sha)"; exit 1; }
}

have_lib() { ldconfig -p 2>/dev/null | grep -q " $1 " || [ -e "/usr/local/cuda/lib64/$1" ] || [ -e "/usr/local/cuda/lib/$1" ]; }

# Unpack into a staging folder beside the destination, renamed into place when complete, so an
# interrupted run leaves nothing that looks usable.
mkdir -p "$cache"  # a new machine has no cache yet
tmp=$(mktemp -d "$cache/.libtorch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fetch "$TORCH_WHEEL" "torch==$TORCH_VERSION" "$TORCH_SHA256"
log "unpacking $TORCH_WHEEL"
unzip -q "$wheels/$TORCH_WHEEL" 'torch/include/*' 'torch/lib/*' 'torch/share/*' -d "$tmp"
for entry in "${EXTRA_LIBS[@]}"; do
  IFS='|' read -r soname req file sha folder <<<"$entry"
  if have_lib "$soname"; then continue; fi
  fetch "$file" "$req" "$sha"
  log "unpacking $soname from $file"
  unzip -q -o "$wheels/$file" "nvidia/$folder/lib/*" -d "$tmp"
done
# Any other library libtorch_cuda.so needs must be on the loader's path already.
missing=$(LD_LIBRARY_PATH="$tmp/torch/lib" ldd "$tmp/torch/lib/libtorch_cuda.so" | awk '/not found/ {print $1}' | tr '\n' ' ')
if [ -n "$missing" ]; then
  log "libtorch_cuda.so needs libraries this machine lacks: $missing(install the CUDA 13.0 toolkit with cuDNN 9 and NCCL 2)"
  exit 1
fi
touch "$tmp/READY"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
log "LibTorch $TORCH_VERSION (CUDA 13.0) in $dest ($(du -sh "$dest" | cut -f1))"
echo "$torch_dir"
