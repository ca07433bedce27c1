#!/usr/bin/env bash
# Makes the offline bundle for an air-gapped GPU node (docs/gpu-validation.md): one folder of at most
# 60 MiB holding what medseg's build needs there besides PyTorch, and a small preprocessed dataset.
# Run it on a connected Debian 12 (bookworm, amd64) machine; copy the folder to the node and run
# scripts/gpu/validate.sh --bundle DIR there.
#
#   scripts/gpu/bundle.sh [OUT_DIR] [--build DIR] [--no-dataset] [--with-cairo|--no-cairo] [--with-itk]
#                         [--max-mib N] [--force] [--no-check]
#
#   OUT_DIR        where the bundle goes (default ./medseg-gpu-bundle); any path, inside the checkout or not
#   --build DIR    a medseg build configured with ITK (MEDSEG_WITH_ITK=ON, the default) whose bin/ holds
#                  medseg_make_dataset, medseg_extract_fingerprint, medseg_plan_experiment and
#                  medseg_preprocess: they make the dataset (default: $MEDSEG_BUILD_DIR, else ./build
#                  of this checkout, when it has those programs)
#   --no-dataset   no dataset (validate.sh then reports the rows that need it as skipped)
#   --with-cairo   also libcairo2-dev and the -dev packages its pkg-config file pulls in (about 22 MiB);
#   --no-cairo     without them. Default: without cairo (the node's build then has MEDSEG_WITH_CAIRO=OFF:
#                  no progress.png, no overlay pictures), unless the checkout's CMake still requires it
#   --with-itk     also libinsighttoolkit5-dev and its closure (far over 60 MiB: needs --max-mib)
#   --max-mib N    size limit (default 60); the script fails, leaving nothing, when the bundle is larger
#   --force        replace an existing bundle at OUT_DIR
#   --no-check     skip the self-check (a compiler-free CMake project that find_package()s every
#                  dependency of medseg's build with this machine's /usr hidden, and fails when one
#                  resolves outside the bundle)
#
# What it writes (all paths relative to OUT_DIR):
#   sysroot/usr/...    the -dev packages and the shared libraries their .so links name, unpacked with
#                      dpkg -x (docs, man pages and changelogs dropped; copyright files kept); the
#                      pkg-config files' /usr prefixes rewritten to ${pcfiledir}-relative ones
#   runtime/usr/...    shared libraries those libraries need at run time (libzip4: libbz2, libssl3);
#                      validate.sh puts on LD_LIBRARY_PATH only the ones the node lacks
#   tools/             pkgconf (CMake's FindPkgConfig needs a pkg-config; used when the node has none)
#   data/              Dataset900_Demo (scripts/demo.sh's dataset): raw test images, preprocessed
#                      3d_fullres cases with their plans (default, ResEnc M and L) and fingerprint
#   MANIFEST.json      every package (name, version, architecture, .deb sha256, files and their sha256),
#                      the dataset, the checkout's commit
#   SHA256SUMS         every regular file; validate.sh checks it first
#   env.sh             `. env.sh` sets CMAKE_PREFIX_PATH, PKG_CONFIG_PATH, ... for a build by hand
#   README.md
# Temporary files (the .debs, the raw dataset) go under $TMPDIR (/tmp), never into OUT_DIR's parent.
set -euo pipefail

die() { echo "bundle.sh: $*" >&2; exit 1; }
log() { echo "bundle.sh: $*" >&2; }

root=$(cd "$(dirname "$0")/../.." && pwd)
out="" build="" dataset=1 with_cairo=auto with_itk=0 max_mib=60 force=0 check=1
while (($#)); do
  case $1 in
    --build) [[ $# -ge 2 ]] || die "--build needs a folder"; build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    --no-dataset) dataset=0; shift ;;
    --with-cairo) with_cairo=1; shift ;;
    --no-cairo) with_cairo=0; shift ;;
    --with-itk) with_itk=1; shift ;;
    --max-mib) [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || die "--max-mib needs a whole number of MiB"; max_mib=$2; shift 2 ;;
    --force) force=1; shift ;;
    --no-check) check=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z $out ]] || die "one OUT_DIR only (got '$out' and '$1')"; out=$1; shift ;;
  esac
done
out=${out:-$PWD/medseg-gpu-bundle}
if [[ $with_cairo = auto ]]; then
  with_cairo=0
  if grep -qs 'pkg_check_modules(CAIRO REQUIRED' "$root/cmake/MedsegDeps.cmake" &&
     ! grep -qs 'MEDSEG_WITH_CAIRO' "$root/CMakeLists.txt" "$root"/cmake/*.cmake; then
    with_cairo=1
    echo "bundle.sh: with cairo: this checkout's cmake/MedsegDeps.cmake requires it (--no-cairo leaves it out)" >&2
  else
    echo "bundle.sh: without cairo: the node builds with MEDSEG_WITH_CAIRO=OFF (no progress.png, no overlays; --with-cairo adds it)" >&2
  fi
fi
[[ $out = /* ]] || out=$PWD/$out
out=${out%/}

# --- preconditions -------------------------------------------------------------------------------
for tool in apt-get apt-cache dpkg-deb sha256sum python3 find; do
  command -v "$tool" >/dev/null || die "needs $tool (run it on a Debian 12 machine)"
done
# shellcheck disable=SC1091
codename=$( . /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[[ $codename = bookworm ]] || die "this machine is '${codename:-unknown}', not Debian 12 (bookworm): the package list is bookworm's"
arch=$(dpkg --print-architecture)
[[ $arch = amd64 ]] || die "this machine is $arch; the node is x86_64 (amd64)"
if [[ -e $out ]]; then
  if [[ -f $out/MANIFEST.json && $force = 1 ]]; then :;
  elif [[ -f $out/MANIFEST.json ]]; then die "$out holds a bundle already (--force replaces it)"
  else die "$out exists and is not a bundle; give another OUT_DIR"; fi
fi
mkdir -p "$(dirname "$out")" || die "cannot create $(dirname "$out")"

# The dataset needs an ITK build's tools (medseg_make_dataset and preprocessing read/write NIfTI).
ds_tools=(medseg_make_dataset medseg_extract_fingerprint medseg_plan_experiment medseg_preprocess)
if [[ $dataset = 1 ]]; then
  if [[ -z $build ]]; then
    for cand in "${MEDSEG_BUILD_DIR:-}" "$root/build"; do
      [[ -n $cand && -x $cand/bin/medseg_make_dataset ]] && { build=$cand; break; }
    done
    [[ -n $build ]] || die "no ITK build with bin/medseg_make_dataset: pass --build DIR (a MEDSEG_WITH_ITK=ON build), or --no-dataset"
  fi
  [[ $build = /* ]] || build=$PWD/$build
  [[ -d $build ]] || die "no build folder at $build"
  for t in "${ds_tools[@]}"; do
    [[ -x $build/bin/$t ]] || die "$build/bin/$t is missing (build it: MEDSEG_WITH_ITK=ON; or pass --no-dataset)"
  done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/medseg-bundle.XXXXXX")
stage="$out.partial.$$"
cleanup() { rm -rf "$tmp" "$stage"; }
trap cleanup EXIT
mkdir -p "$stage"/{sysroot,runtime,tools} "$tmp/debs" "$tmp/x"

# --- package selection ---------------------------------------------------------------------------
# Roots: what cmake/MedsegDeps.cmake and tests/CMakeLists.txt find. Each -dev package's shared library
# (the one its libFOO.so link points at) is added by its "(= version)" dependency below.
# libgloo-dev: LibTorch's c10d headers include gloo's, and a PyTorch wheel does not ship them.
roots=(nlohmann-json3-dev libcli11-dev libgtest-dev libspdlog-dev libfmt-dev libzip-dev libpng-dev zlib1g-dev
       libgloo-dev)
runtime_extra=(libbz2-1.0 libssl3)   # libzip4's run-time needs (usually on the node already)
tools_pkgs=(pkgconf-bin libpkgconf3)
# Never bundled: the C library and compiler runtime (the node's own must be used), interpreters,
# package tools, fonts and other data-only packages of a -dev closure.
exclude_re='^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libgcc-s1|gcc-[0-9]+-base|libstdc\+\+6|libstdc\+\+-[0-9]+-dev|libnsl2|libnsl-dev|libtirpc.*|rpcsvc-proto|python3.*|libpython3.*|perl|perl-base|perl-modules-.*|libperl5.*|dpkg|tar|debconf|cdebconf|install-info|lsb-base|sysvinit-utils|mailcap|media-types|mime-support|readline-common|libreadline8|libncursesw6|libtinfo6|libslang2|libnewt0.52|libtextwrap1|libdebian-installer4|libdb5.3|libgdbm6|libgdbm-compat4|libsqlite3-0|fonts-.*|xfonts-.*|ttf-.*|fontconfig-config|x11-common|xorg-sgml-doctools|libglib2.0-bin|libglib2.0-data|libglib2.0-dev-bin|pkg-config|pkgconf|pkgconf-bin|libpkgconf3|googletest|catch2|libselinux1|libmount1|libblkid1|libuuid1|libelf1|libbsd0|libmd0|libkrb5-3|libkrb5support0|libk5crypto3|libgssapi-krb5-2|libcom-err2|libkeyutils1|libicu-dev|libicu72|icu-devtools|libgfortran5|libquadmath0|libgomp1)$'
closure() {  # closure PKG...: PKG and what it depends on, recursively (no recommends/suggests)
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$@" 2>/dev/null | grep -v '^ ' | grep -v '^<' | grep -Ev "$exclude_re" | sort -u
}
extra_roots=()
[[ $with_cairo = 1 ]] && extra_roots+=(libcairo2-dev)
# libtiff-dev: an ITK build also reads TIFF stacks with libtiff itself (lib/io/tiff_planes_itk.cpp).
[[ $with_itk = 1 ]] && extra_roots+=(libinsighttoolkit5-dev libtiff-dev)
pkgs=("${roots[@]}" "${runtime_extra[@]}")
if ((${#extra_roots[@]})); then
  mapfile -t more < <(closure "${extra_roots[@]}")
  ((${#more[@]})) || die "apt-cache knows none of ${extra_roots[*]} (apt-get update?)"
  pkgs+=("${more[@]}")
fi
# pinned_deps PKG: the packages PKG depends on with "(= version)" - a -dev package's own library.
pinned_deps() {
  apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Depends: //p' | tr ',' '\n' |
    sed -n 's/^ *\([a-z0-9.+-]*\)\(:any\)\{0,1\} *(= .*/\1/p'
}
for p in "${pkgs[@]}"; do
  [[ $p = *-dev ]] || continue
  apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || die "apt-cache does not know $p (apt-get update?)"
  while read -r dep; do [[ -n $dep && ! $dep =~ $exclude_re ]] && pkgs+=("$dep"); done < <(pinned_deps "$p")
done

# --- download ------------------------------------------------------------------------------------
download() { (cd "$tmp/debs" && apt-get download -q=2 "$@" 2>"$tmp/apt.err" >/dev/null); }
mapfile -t all_pkgs < <(printf '%s\n' "${pkgs[@]}" "${tools_pkgs[@]}" | sort -u)
log "downloading ${#all_pkgs[@]} packages"
chmod 755 "$tmp" "$tmp/debs"
if ! download "${all_pkgs[@]}"; then
  # Stale package lists give 404s: refresh them once (root only) and try again.
  if [[ $(id -u) = 0 ]]; then
    log "apt-get download failed ($(grep -m1 -E '^E:' "$tmp/apt.err" || head -1 "$tmp/apt.err")); running apt-get update"
    apt-get update -qq >/dev/null || die "apt-get update failed"
    rm -f "$tmp/debs"/*.deb
    download "${all_pkgs[@]}" || die "apt-get download failed: $(grep -m1 -E '^E:' "$tmp/apt.err" || head -1 "$tmp/apt.err")"
  else
    die "apt-get download failed: $(grep -m1 -E '^E:' "$tmp/apt.err" || head -1 "$tmp/apt.err") (as root it would run apt-get update)"
  fi
fi

# --- unpack --------------------------------------------------------------------------------------
# Which folder each package goes to: -dev packages and the libraries they pin with "(= version)" go
# to sysroot/ (they are on the link line); pkgconf to tools/; everything else to runtime/.
declare -A deb_of dest_of
for deb in "$tmp/debs"/*.deb; do
  name=$(dpkg-deb -f "$deb" Package)
  deb_of[$name]=$deb
done
for p in "${all_pkgs[@]}"; do [[ -n ${deb_of[$p]:-} ]] || die "apt-get download gave no .deb for $p"; done
for name in "${!deb_of[@]}"; do
  case $name in
    *-dev) dest_of[$name]=sysroot ;;
    pkgconf-bin|libpkgconf3) dest_of[$name]=tools ;;
  esac
done
for name in "${!deb_of[@]}"; do
  [[ ${dest_of[$name]:-} = sysroot && $name = *-dev ]] || continue
  deps=$(dpkg-deb -f "${deb_of[$name]}" Depends)
  while read -r dep; do
    [[ -n ${deb_of[$dep]:-} && -z ${dest_of[$dep]:-} ]] && dest_of[$dep]=sysroot
  done < <(tr ',' '\n' <<<"$deps" | sed -n 's/^ *\([a-z0-9.+-]*\)\(:any\)\{0,1\} *(= .*/\1/p')
done
for name in "${!deb_of[@]}"; do dest_of[$name]=${dest_of[$name]:-runtime}; done

# prune DIR: docs, man pages, lintian/bug data (copyright files stay: the licences travel with the code)
prune() {
  local d=$1
  if [[ -d $d/usr/share/doc ]]; then
    find "$d/usr/share/doc" -mindepth 1 \( -type f -o -type l \) ! -name copyright -delete
    find "$d/usr/share/doc" -mindepth 1 -type d -empty -delete
  fi
  rm -rf "$d/usr/share/man" "$d/usr/share/info" "$d/usr/share/lintian" "$d/usr/share/bug" "$d/usr/share/locale"
  # Static archives that have a shared twin are never linked (CMake and pkg-config take the .so);
  # libgtest.a and libgtest_main.a have none and stay.
  local a
  while IFS= read -r -d '' a; do
    [[ -e ${a%.a}.so || -L ${a%.a}.so ]] && rm -f "$a"
  done < <(find "$d" -name 'lib*.a' \( -type f -o -type l \) -print0)
  find "$d" -name 'lib*.a' -xtype l -delete
}
# relocate_pc DIR: pkg-config files say prefix=/usr; make every /usr relative to the file's own folder.
relocate_pc() {
  local d=$1 pc rel
  while IFS= read -r -d '' pc; do
    # shellcheck disable=SC2016  # ${pcfiledir} is pkg-config's variable, written literally
    case $pc in
      */usr/lib/x86_64-linux-gnu/pkgconfig/*) rel='${pcfiledir}/../../..' ;;
      */usr/lib/pkgconfig/*|*/usr/share/pkgconfig/*) rel='${pcfiledir}/../..' ;;
      *) continue ;;
    esac
    sed -i -E "/^[A-Za-z_][A-Za-z0-9_.]*=/ s#=/usr(/|\$)#=${rel}\1#" "$pc"
  done < <(find "$d" -name '*.pc' -print0)
}
# fix_links DIR: absolute symlinks (rare in Debian's -dev packages) would point into the node's /usr.
fix_links() {
  local d=$1 l t
  while IFS= read -r -d '' l; do
    t=$(readlink "$l")
    ln -sfrn "$d$t" "$l"
  done < <(find "$d" -type l -lname '/*' -print0)
}
# digest DIR: one sha256 over every regular file's sha256 and every link's target, sorted by path.
digest() {
  (cd "$1" && { find . -type f -print0 | sort -z | xargs -0r sha256sum
                find . -type l -printf '%p -> %l\n' | sort; } | sha256sum | cut -d' ' -f1)
}

: >"$tmp/packages.tsv"
names=$(printf '%s\n' "${!deb_of[@]}" | sort)
for name in $names; do dpkg-deb -x "${deb_of[$name]}" "$tmp/x/$name"; done
# CMake package files that name /usr/... absolutely (ITK's, NIFTI's; the realpath stanza of most
# others) would send the node's CMake to its own /usr: each such path that the sysroot holds becomes
# ${_medseg_sysroot}/usr/..., computed at the top of the file from its own location; the C
# library's link scripts (libm.so, ...) become plain names; anything else is left and reported.
cat >"$tmp/relocate_cmake.py" <<'PY'
import os, re, sys
pkg_dir, roots = sys.argv[1], sys.argv[2:]
libc = {"libm.so": "m", "libdl.so": "dl", "libpthread.so": "pthread", "librt.so": "rt"}
token = re.compile(r'(?<![\w}$./-])/usr(?:/[^\s;"\')]*)?(?=[\s;"\')]|$)')
for d, _, files in os.walk(pkg_dir):
    for f in files:
        if not f.endswith(".cmake"):
            continue
        path = os.path.join(d, f)
        text = open(path, encoding="utf-8", errors="surrogateescape").read()
        if "/usr" not in text:
            continue
        def sub(m):
            p = m.group(0).rstrip(".")
            tail = m.group(0)[len(p):]
            if os.path.basename(p) in libc and os.path.dirname(p).startswith("/usr/lib"):
                return libc[os.path.basename(p)] + tail
            if any(os.path.lexists(r + p) for r in roots):
                return "${_medseg_sysroot}" + p + tail
            print(f"bundle.sh: {os.path.relpath(path, pkg_dir)}: left {p} (not in the bundle)", file=sys.stderr)
            return m.group(0)
        lines = [l if l.lstrip().startswith("#") else token.sub(sub, l) for l in text.splitlines(True)]
        out = "".join(lines)
        if out != text:
            up = os.path.relpath(pkg_dir, d)
            head = ('# medseg bundle: /usr paths below are relative to this bundle\'s sysroot\n'
                    f'get_filename_component(_medseg_sysroot "${{CMAKE_CURRENT_LIST_DIR}}/{up}" ABSOLUTE)\n')
            open(path, "w", encoding="utf-8", errors="surrogateescape").write(head + out)
PY
sysroot_roots=()
for name in $names; do [[ ${dest_of[$name]} = sysroot ]] && sysroot_roots+=("$tmp/x/$name"); done
for name in $names; do
  deb=${deb_of[$name]} x="$tmp/x/$name"
  prune "$x"
  relocate_pc "$x"
  [[ ${dest_of[$name]} = sysroot ]] && python3 "$tmp/relocate_cmake.py" "$x" "${sysroot_roots[@]}" 2>&1 | sort -u >&2
  fix_links "$x"
  files=$(find "$x" \( -type f -o -type l \) | wc -l)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(dpkg-deb -f "$deb" Version)" "$(dpkg-deb -f "$deb" Architecture)" \
    "${dest_of[$name]}" "$(basename "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" "$files" "$(digest "$x")" >>"$tmp/packages.tsv"
  cp -a "$x/." "$stage/${dest_of[$name]}/"
done
# Links into packages left out (libgtest-dev's /usr/src/gtest -> googletest sources) would dangle.
while IFS= read -r -d '' l; do
  log "dropping ${l#"$stage"/} -> $(readlink "$l") (its target's package is not bundled)"
  rm -f "$l"
done < <(find "$stage" -xtype l -print0)
leftover=$(grep -rlE '^[A-Za-z_]+=/usr' "$stage"/*/usr/lib/x86_64-linux-gnu/pkgconfig "$stage"/*/usr/share/pkgconfig 2>/dev/null || true)
[[ -z $leftover ]] || die "pkg-config files still name /usr: $leftover"

# pkg-config for nodes without one: pkgconf with its library beside it.
mkdir -p "$stage/tools/bin"
cat >"$stage/tools/bin/pkg-config" <<'EOF'
#!/bin/sh
# pkgconf from the bundle (Debian 12's pkgconf-bin + libpkgconf3), for a node without pkg-config.
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/usr/bin/pkgconf" "$@"
EOF
chmod 755 "$stage/tools/bin/pkg-config"

# --- dataset -------------------------------------------------------------------------------------
ds_json='null'
if [[ $dataset = 1 ]]; then
  log "making Dataset900_Demo with $build/bin"
  work="$tmp/ds"
  export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/preprocessed MEDSEG_RESULTS=$work/results
  mkdir -p "$MEDSEG_RAW" "$MEDSEG_PREPROCESSED" "$MEDSEG_RESULTS"
  np=$(nproc)
  run_tool() { "$build/bin/$1" "${@:2}" >"$tmp/tool.log" 2>&1 || { tail -5 "$tmp/tool.log" >&2; die "$1 failed (command: $*)"; }; }
  # scripts/demo.sh's dataset: 24 training + 4 test cases, 2 classes, 32-40 x 48-64 x 48-64 voxels.
  ds_cmds=(
    "medseg_make_dataset -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 --np $np"
    "medseg_extract_fingerprint -d 900 --np $np --no-progress"
    "medseg_plan_experiment -d 900 --pl ExperimentPlanner"
    "medseg_plan_experiment -d 900 --pl nnUNetPlannerResEncM"
    "medseg_plan_experiment -d 900 --pl nnUNetPlannerResEncL"
    "medseg_preprocess -d 900 -c 3d_fullres --np $np --no-progress"
  )
  for c in "${ds_cmds[@]}"; do
    # shellcheck disable=SC2086
    run_tool $c
  done
  pre=$MEDSEG_PREPROCESSED/Dataset900_Demo
  [[ -f $pre/nnUNetPlans.json && -d $pre/nnUNetPlans_3d_fullres ]] || die "preprocessing left no $pre/nnUNetPlans_3d_fullres"
  mkdir -p "$stage/data/raw/Dataset900_Demo" "$stage/data/preprocessed"
  cp -a "$pre" "$stage/data/preprocessed/"
  # Raw test images and labels only (prediction on an ITK build of the node); training reads the
  # preprocessed cases and gt_segmentations/.
  for d in dataset.json imagesTs labelsTs; do cp -a "$MEDSEG_RAW/Dataset900_Demo/$d" "$stage/data/raw/Dataset900_Demo/"; done
  version=$("$build/bin/medseg_version" 2>/dev/null | head -1 || true)
  ds_json=$(python3 - "$stage/data" "$version" "$(digest "$stage/data")" "${ds_cmds[@]}" <<'PY'
import json, os, sys
data, version, digest, cmds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
n = sum(len(f) for _, _, f in os.walk(data))
size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(data) for f in fs)
pre = os.path.join(data, "preprocessed", "Dataset900_Demo")
cases = len([f for f in os.listdir(os.path.join(pre, "nnUNetPlans_3d_fullres")) if f.endswith(".json")])
print(json.dumps({"name": "Dataset900_Demo", "path": "data", "files": n, "bytes": size, "files_sha256": digest,
                  "preprocessed_cases_3d_fullres": cases,
                  "plans": sorted(f for f in os.listdir(pre) if f.endswith("Plans.json")),
                  "made_by": version, "commands": cmds}))
PY
)
fi

# --- env.sh, README, MANIFEST, SHA256SUMS ---------------------------------------------------------
cat >"$stage/env.sh" <<'EOF'
# . env.sh: point CMake and pkg-config at this bundle for a build by hand (validate.sh does this itself).
MEDSEG_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
_s=$MEDSEG_BUNDLE/sysroot/usr
export MEDSEG_BUNDLE
export CMAKE_PREFIX_PATH="$_s:$_s/lib/x86_64-linux-gnu/cmake:$_s/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"   # ':' in the environment
export CMAKE_INCLUDE_PATH="$_s/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}"
export CMAKE_LIBRARY_PATH="$_s/lib/x86_64-linux-gnu${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$_s/lib/x86_64-linux-gnu/pkgconfig:$_s/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
command -v pkg-config >/dev/null 2>&1 || export PATH="$MEDSEG_BUNDLE/tools/bin:$PATH"
unset _s
EOF

git_commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
git_dirty=$([[ -n $(git -C "$root" status --porcelain 2>/dev/null) ]] && echo true || echo false)
python3 - "$stage" "$tmp/packages.tsv" "$ds_json" "$git_commit" "$git_dirty" "$with_cairo" "$with_itk" <<'PY'
import datetime, json, os, platform, sys
stage, tsv, ds, commit, dirty, cairo, itk = sys.argv[1:8]
pkgs = []
for line in open(tsv):
    name, ver, arch, dest, deb, deb_sha, files, digest = line.rstrip("\n").split("\t")
    pkgs.append({"name": name, "version": ver, "architecture": arch, "folder": dest, "deb": deb,
                 "deb_sha256": deb_sha, "files": int(files), "files_sha256": digest})
osr = dict(l.rstrip("\n").split("=", 1) for l in open("/etc/os-release") if "=" in l)
m = {"format": "medseg.gpu_bundle", "version": 1,
     "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
     "made_on": {"os": osr.get("PRETTY_NAME", "").strip('"'), "debian_version": open("/etc/debian_version").read().strip(),
                 "machine": platform.machine()},
     "checkout": {"commit": commit, "dirty": dirty == "true"},
     "options": {"with_cairo": cairo == "1", "with_itk": itk == "1"},
     "files_sha256_is": "sha256 of the sorted `sha256sum` lines of the package's regular files (paths relative to "
                        "its unpacked root, after pruning docs and relocating .pc files) followed by its symlinks as 'path -> target'",
     "packages": pkgs, "dataset": json.loads(ds)}
json.dump(m, open(os.path.join(stage, "MANIFEST.json"), "w"), indent=2)
open(os.path.join(stage, "MANIFEST.json"), "a").write("\n")
PY

pkg_lines=$(awk -F'\t' '{printf "| %s | %s | %s |\n", $1, $2, $4}' "$tmp/packages.tsv")
cat >"$stage/README.md" <<EOF
# medseg GPU bundle

Made by \`scripts/gpu/bundle.sh\` on $(date -u +%Y-%m-%d) from medseg ${git_commit:0:12}$([[ $git_dirty = true ]] && echo ' (with uncommitted changes)').
Everything medseg's build needs on an air-gapped GPU node besides PyTorch (which the node has), and a
small preprocessed dataset. On the node, beside a medseg checkout:

    scripts/gpu/validate.sh --bundle $(basename "$out") [--build DIR] [--report DIR]

It checks this folder against \`SHA256SUMS\`, configures medseg against the node's PyTorch and this
folder's \`sysroot/\`, builds, runs ctest and the GPU measurements, and writes \`report.md\` and
\`report.json\` (docs/gpu-validation.md in the checkout).

For a build by hand: \`. $(basename "$out")/env.sh\`, then
\`cmake -S . -B build-gpu -G Ninja -DTorch_DIR=\$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')/Torch -DMEDSEG_WITH_ITK=OFF\`.
The binaries find the bundled libraries through their build RPATH; libraries those need in turn
(\`runtime/\`) must be on \`LD_LIBRARY_PATH\` where the node lacks them (validate.sh does this).

cairo: $([[ $with_cairo = 1 ]] && echo 'included (progress.png and overlay pictures)' || echo 'not included: validate.sh builds with MEDSEG_WITH_CAIRO=OFF unless the node has cairo (no progress.png, no overlay pictures; training and prediction are the same)'); ITK: $([[ $with_itk = 1 ]] && echo 'included (MEDSEG_WITH_ITK=ON)' || echo 'not included (MEDSEG_WITH_ITK=OFF: no NIfTI apps, no medseg_predict)').

| folder | what |
|---|---|
| \`sysroot/usr\` | Debian 12 -dev packages and the libraries they link, unpacked (\`dpkg -x\`); pkg-config files relocated |
| \`runtime/usr\` | run-time libraries of those libraries, used only where the node lacks them |
| \`tools/bin/pkg-config\` | pkgconf, for a node without pkg-config |
| \`data/\` | Dataset900_Demo: \`preprocessed/\` (plans, fingerprint, 3d_fullres cases, gt_segmentations), \`raw/\` (test images) |
| \`MANIFEST.json\` | packages (version, .deb sha256, files sha256), dataset, checkout commit |

Packages:

| package | version | folder |
|---|---|---|
$pkg_lines

Debian's copyright files of every package are kept under \`*/usr/share/doc/\`.
EOF

(cd "$stage" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$tmp/SHA256SUMS"
mv "$tmp/SHA256SUMS" "$stage/SHA256SUMS"

# --- self-check: every find_package of medseg's build resolves into the bundle -----------------------
# A CMake project without languages (nothing is compiled), the machine's own /usr hidden from CMake and
# pkg-config, CMAKE_LIBRARY_ARCHITECTURE unset (as on a node whose compiler is not multiarch); the
# paths it passes are the ones validate.sh passes. Threads is stubbed: FindThreads compiles a test.
if [[ $check = 1 ]] && command -v cmake >/dev/null; then
  p="$tmp/probe" s="$stage/sysroot/usr"
  mkdir -p "$p/cmake"
  cat >"$p/cmake/FindThreads.cmake" <<'EOF'
if(NOT TARGET Threads::Threads)
  add_library(Threads::Threads INTERFACE IMPORTED)
endif()
set(Threads_FOUND TRUE)
EOF
  cat >"$p/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(medseg_bundle_probe NONE)
list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_SOURCE_DIR}/cmake)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.2 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(GTest REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
if(PROBE_CAIRO)
  pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)
endif()
set(targets nlohmann_json::nlohmann_json CLI11::CLI11 spdlog::spdlog fmt::fmt PNG::PNG ZLIB::ZLIB GTest::gtest PkgConfig::LIBZIP)
if(PROBE_CAIRO)
  list(APPEND targets PkgConfig::CAIRO)
endif()
foreach(t ${targets})
  foreach(prop INTERFACE_INCLUDE_DIRECTORIES IMPORTED_LOCATION_NONE IMPORTED_LOCATION IMPORTED_LOCATION_RELEASE INTERFACE_LINK_LIBRARIES)
    get_target_property(v ${t} ${prop})
    foreach(item ${v})
      if(IS_ABSOLUTE "${item}" AND NOT item MATCHES "^${BUNDLE}/")
        message(FATAL_ERROR "${t} ${prop} names ${item}, outside the bundle")
      endif()
    endforeach()
  endforeach()
endforeach()
message(STATUS "probe: all of ${targets} resolve into the bundle")
EOF
  cairo_probe=OFF; [[ $with_cairo = 1 ]] && cairo_probe=ON
  if ! env -i PATH=/usr/bin:/bin HOME="$tmp" PKG_CONFIG_LIBDIR="$s/lib/x86_64-linux-gnu/pkgconfig:$s/share/pkgconfig" \
      cmake -S "$p" -B "$p/build" -DCMAKE_MAKE_PROGRAM=/usr/bin/make "-DBUNDLE=$stage" "-DPROBE_CAIRO=$cairo_probe" \
      -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF \
      "-DCMAKE_PREFIX_PATH=$s;$s/lib/x86_64-linux-gnu/cmake;$s/share/cmake" "-DCMAKE_INCLUDE_PATH=$s/include" \
      "-DCMAKE_LIBRARY_PATH=$s/lib/x86_64-linux-gnu" "-DPKG_CONFIG_EXECUTABLE=$stage/tools/bin/pkg-config" >"$tmp/probe.log" 2>&1; then
    grep -E 'Error|error|FATAL|not found|Could not' "$tmp/probe.log" | head -5 >&2
    die "self-check failed: medseg's find_package calls do not all resolve into the bundle (log above; --no-check skips)"
  fi
  log "self-check: $(grep -o 'probe: .*' "$tmp/probe.log")"
elif [[ $check = 1 ]]; then
  log "self-check skipped: no cmake on this machine"
fi

# --- size check, then move into place ------------------------------------------------------------
bytes=$(du -sb "$stage" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
if ((bytes > max_mib * 1048576)); then
  die "the bundle is $mib MiB, over the $max_mib MiB limit (largest: $(cd "$stage" && du -s -- */usr/lib/x86_64-linux-gnu/* data 2>/dev/null | sort -rn | head -3 | awk '{print $2}' | tr '\n' ' '); --max-mib raises it)"
fi
if [[ -e $out ]]; then rm -rf "$out"; fi
mv "$stage" "$out"
log "wrote $out: $mib MiB, $(wc -l <"$tmp/packages.tsv") packages$([[ $dataset = 1 ]] && echo ', Dataset900_Demo')"
echo "$out"
