#!/usr/bin/env bash
# Runs docker/Dockerfile's steps on a pristine Debian 12 without Docker: debootstraps bookworm into a
# folder, copies the tracked sources in (what `COPY . .` sees after .dockerignore), and executes the
# Dockerfile's RUN lines in a chroot, in order, with its WORKDIR and ENV; then its CMD. For machines
# with no Docker daemon or registry. Needs root, debootstrap and network access to a Debian mirror.
#   sudo scripts/check_dockerfile_chroot.sh [ROOTFS_DIR]        (default: a new folder under /tmp)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rootfs=${1:-$(mktemp -d /tmp/medseg_deb12.XXXXXX)}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "check_dockerfile_chroot: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "check_dockerfile_chroot: apt-get install debootstrap" >&2; exit 1; }

grep -q '^FROM debian:12' "$root/docker/Dockerfile" || { echo "check_dockerfile_chroot: expects FROM debian:12" >&2; exit 1; }
[ -x "$rootfs/bin/bash" ] || debootstrap --variant=minbase bookworm "$rootfs" "$mirror"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mountpoint -q "$rootfs/proc" || mount -t proc proc "$rootfs/proc"
mountpoint -q "$rootfs/dev" || mount --bind /dev "$rootfs/dev"
trap 'umount "$rootfs/proc" "$rootfs/dev" 2>/dev/null || true' EXIT

# The Dockerfile as one shell script: WORKDIR -> cd, ENV -> export, COPY -> the sources (copied below),
# RUN -> the command, CMD ["a", "b"] -> a b. Instructions are single lines in our Dockerfile.
steps=$rootfs/tmp/dockerfile_steps.sh
workdir=/
{
  echo 'set -euo pipefail'
  echo 'export DEBIAN_FRONTEND=noninteractive HOME=/root'
  while IFS= read -r line; do
    case $line in
      WORKDIR\ *) workdir=${line#WORKDIR }; echo "mkdir -p $workdir && cd $workdir" ;;
      ENV\ *) echo "export ${line#ENV }" ;;
      RUN\ *) echo "echo '+ ${line//\'/}'"; echo "${line#RUN }" ;;
      CMD\ *) echo "${line#CMD }" | tr -d '[],"' ;;
    esac
  done <"$root/docker/Dockerfile"
} >"$steps"
# COPY sources: the tracked files (.dockerignore leaves out what git ignores, and .git).
mkdir -p "$rootfs$workdir"
git -C "$root" archive HEAD | tar -x -C "$rootfs$workdir"

start=$(date +%s)
chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  bash /tmp/dockerfile_steps.sh
echo "check_dockerfile_chroot: the Dockerfile's steps passed in $(( $(date +%s) - start )) s ($rootfs)"
