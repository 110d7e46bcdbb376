#!/usr/bin/env bash
# Installs build/epochcast_*.deb (cd build && cpack) into a fresh Debian 12 root made with
# debootstrap, and predicts on a bundled trace there. Needs root and the Debian mirror (debootstrap
# and the package's Depends are fetched); docs/install.md. Usage: scripts/check-deb-bookworm.sh [ROOT]
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(ls build/epochcast_*.deb | head -1)
root=${1:-$(mktemp -d /tmp/epochcast-bookworm-XXXXXX)}
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
[ -x "$root/bin/bash" ] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
cp "$deb" tests/data/h200/vgg16_224_bs32_fp32.smi.csv "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"  # the binary finds its data through /proc/self/exe
trap 'umount "$root/proc"' EXIT
chroot "$root" /bin/bash -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends /tmp/$(basename "$deb") >/dev/null"
chroot "$root" /bin/bash -c 'cd /tmp && epochcast --version && HOME=/tmp/home epochcast predict \
  vgg16_224_bs32_fp32.smi.csv --gpus t4,a100-80gb 2>/dev/null | head -12'
echo "check-deb-bookworm: installed and ran in $root"
