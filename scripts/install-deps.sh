#!/usr/bin/env bash
# Installs what epochcast needs to build, test and benchmark on Debian 12 (bookworm).
# Run as root (or with sudo available). Safe to run again: apt-get skips what is there.
set -euo pipefail

# `install-deps.sh build`: only what building the CLI needs (README command 1); no argument: all.
packages=(
  # build
  cmake g++ make pkg-config git
  # libraries (only Debian packages; nothing is downloaded at build or run time)
  libxgboost-dev libeigen3-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libfmt-dev zlib1g-dev
  libsqlite3-dev  # the job store (src/store)
  prometheus-cpp-dev  # watch's /metrics text (src/fleet, prometheus-cpp-core's serializer)
)
if [ "${1:-all}" != build ]; then
  packages+=(
    # tests and benchmarks; dpkg-dev: cpack's .deb (dpkg-shlibdeps)
    libgtest-dev libgmock-dev libbenchmark-dev dpkg-dev
    python3 python3-numpy python3-pandas python3-scipy python3-sklearn
    # integration tests: a real Prometheus server and a real browser
    prometheus chromium chromium-driver fonts-liberation
    # libFuzzer targets in CI (tests/fuzz/ci.sh) and scripts/sanitize.sh: clang with its runtimes
    clang libclang-rt-14-dev
    # the .deb installed and run in a fresh bookworm root (install_test, scripts/check-deb-bookworm.sh)
    debootstrap
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
