#!/usr/bin/env bash
# Installs the Debian packages medseg needs to build, test and run its demo, then (unless
# MEDSEG_TORCH=debian) LibTorch 2.11 with CUDA 13 from PyTorch's wheel (scripts/install_libtorch.sh).
# Idempotent: returns quickly when everything is already present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libgloo-dev
  libinsighttoolkit5-dev libtiff-dev   # libtiff: TIFF stacks kept as sample planes (lib/io/tiff_planes_itk.cpp)
  libdcmtk-dev libgdcm-dev   # DICOM: DCMTK reads and writes it (lib/io/dicom_*_dcmtk.cpp), GDCM writes the tests' series
  dicom3tools   # dciodvfy checks the DICOM SEG output (tests/nn/inference_dicom_seg_cli_itk_test.cpp)
  nlohmann-json3-dev libcli11-dev libgtest-dev
  libspdlog-dev libfmt-dev
  libpng-dev zlib1g-dev
  libzip-dev   # model zips (medseg_export_model_zip, medseg_install_model_zip)
  libcpp-httplib-dev   # medseg_serve's HTTP (lib/serve)
  python3-requests chromium-headless-shell   # medseg_serve's client and page tests (tests/nn/serve_cli_itk_test.cpp)
  libcairo2-dev fonts-dejavu-core
  python3 python3-torch python3-pip unzip   # pip fetches the torch wheel (scripts/install_libtorch.sh)
  clang libclang-rt-14-dev   # sanitizer builds and libFuzzer targets (docs/hardening.md)
  clang-format clang-tidy   # the code style and static checks of scripts/test.sh (.clang-format, .clang-tidy)
  debootstrap python3-venv   # the GPU bundle's clean-root check (scripts/gpu/check_clean_root.sh)
  python3-nibabel   # an independent NIfTI writer for tests (tests/base/convert_msd_itk_test.cpp)
  python3-pil python3-tifffile   # independent PNG/BMP/TIFF writers for tests (tests/base/io_natural_formats_itk_test.cpp)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
else
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${MEDSEG_TORCH:-wheel}" != debian ]; then
  torch_dir=$(bash "$(dirname "$0")/install_libtorch.sh")
  echo "install_deps: LibTorch 2.11 (CUDA 13) at $torch_dir"
fi
