#!/usr/bin/env bash
# Installs an epochcast .deb into a fresh Debian 12 root made with debootstrap and predicts on a
# bundled trace there, the install and the run with no network (unshare -n): only debootstrap and
# the download of the package's Depends use the Debian mirror. Needs root. docs/install.md.
# Usage: scripts/check-deb-bookworm.sh [DEB] [ROOT]   (DEB default build/epochcast_*.deb;
# ROOT default a new /tmp folder, reused when it already holds a root)
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${1:-$(ls build/epochcast_*.deb 2>/dev/null | head -1)}
[ -f "$deb" ] || { echo "check-deb-bookworm: no .deb (cd build && cpack -G DEB)" >&2; exit 2; }
root=${2:-$(mktemp -d /tmp/epochcast-bookworm-XXXXXX)}
for tool in debootstrap unshare chroot; do
  command -v "$tool" >/dev/null || { echo "check-deb-bookworm: $tool is not installed" >&2; exit 2; }
done
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
step() { printf '[%5ds] %s\n' "$SECONDS" "$*"; }

if [ ! -x "$root/bin/bash" ]; then
  step "debootstrap --variant=minbase bookworm $root (mirror $mirror; debs cached in /var/cache/apt/archives)"
  debootstrap --variant=minbase --cache-dir=/var/cache/apt/archives bookworm "$root" "$mirror" > "$root.debootstrap.log" 2>&1 \
    || { tail -20 "$root.debootstrap.log" >&2; exit 1; }
fi
cp "$deb" "$root/tmp/epochcast.deb"
cp tests/data/h200/vgg16_224_bs32_fp32.smi.csv "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"  # the binary finds its data through /proc/self/exe
trap 'umount "$root/proc"' EXIT

step "download the Depends into the root (the only step after debootstrap with network)"
chroot "$root" /bin/bash -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends --download-only /tmp/epochcast.deb >/dev/null"

step "install with no network"
# dpkg first (apt --no-download refuses a local .deb it "downloaded" before), then apt completes
# the Depends from the root's cache; both offline.
unshare --net chroot "$root" /bin/bash -c "export DEBIAN_FRONTEND=noninteractive; \
  { dpkg -i /tmp/epochcast.deb >/dev/null 2>&1 || apt-get install -y -q -f --no-install-recommends --no-download >/dev/null; } \
  && dpkg -s epochcast | grep -q '^Status: install ok installed'"

step "run with no network"
unshare --net chroot "$root" /bin/bash -c 'set -o pipefail; cd /tmp && epochcast --version && HOME=/tmp/home \
  epochcast predict vgg16_224_bs32_fp32.smi.csv --gpus t4,a100-80gb 2>/tmp/predict.err | sed -n 1,14p \
  || { cat /tmp/predict.err >&2; exit 1; }'
step "check-deb-bookworm: installed and ran in $root"
