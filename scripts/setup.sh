# Sourced by scripts/lab and scripts/test: installs the Debian packages scalelab needs when
# they are missing, then configures and builds in build/ (or $BUILD). Not meant to run alone.

PACKAGES="build-essential autoconf automake autoconf-archive pkg-config libncurses-dev
libopenblas-dev libinih-dev libjansson-dev check tmux python3 ncurses-term clang-format python3-torch
clang libclang-rt-14-dev libopenmpi-dev openmpi-bin"

install_missing() {
    missing=""
    for p in $PACKAGES $EXTRA_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "scalelab: installing:$missing"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null ||
        { echo "scalelab: could not install:$missing" >&2; exit 1; }
}

# configured DIR [CONFIGURE-ARGS...]: an out-of-tree build in DIR, configured (again only when
# the arguments changed).
configured() {
    dir=$1; shift
    top=$(cd "$(dirname "$0")/.." && pwd)
    if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
        (cd "$top" && autoreconf -fi >/dev/null 2>&1) || (cd "$top" && autoreconf -fi) || exit 1
    fi
    mkdir -p "$dir"
    want="$*"
    if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.configure-args" 2>/dev/null)" != "$want" ]; then
        (cd "$dir" && "$top/configure" -q "$@") || exit 1
        echo "$want" >"$dir/.configure-args"
    fi
}

# build DIR [CONFIGURE-ARGS...]: configured, then built.
build() {
    configured "$@"
    make -s -C "$1" -j"$(nproc)" >"$1/build.out" 2>&1 || { cat "$1/build.out"; exit 1; }
}
