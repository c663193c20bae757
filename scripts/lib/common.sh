# Shared by scripts/demo, scripts/test, scripts/bench: install what is missing, configure, build.
# Sourced, not run. Works on a fresh Debian 12 machine (as root or with sudo).

MICSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Debian packages the build and the scripts need.
MICSIM_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libsimgrid-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev libfmt-dev
  doctest-dev libcli11-dev nlohmann-json3-dev
  python3 python3-matplotlib python3-jsonschema python3-yaml
  libopenmpi-dev openmpi-bin   # optional at build time: plans and sweeps over MPI ranks
)

micsim_log() { printf '[micsim] %s\n' "$*" >&2; }

micsim_ensure_packages() {
  local missing=() p extra=("$@")
  for p in "${MICSIM_PACKAGES[@]}" "${extra[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  micsim_log "installing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { micsim_log "need root or sudo to install: ${missing[*]}"; return 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# micsim_build BUILD_DIR [cmake args...]: configure (once) and build.
micsim_build() {
  local dir="$1"; shift
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$MICSIM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
  else
    cmake "$dir" "$@" >/dev/null
  fi
  cmake --build "$dir" -j "$jobs" >&2
}
