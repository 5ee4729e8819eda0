# Shared by the scripts in this folder. Sourced, not run.

# need_debs PKG...: installs the Debian packages that are missing, or says exactly
# what to run when it cannot (not root and no sudo).
need_debs() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
            echo "navsync: missing Debian packages: ${missing[*]}" >&2
            echo "navsync: install them as root: apt-get update && apt-get install -y ${missing[*]}" >&2
            exit 1
        fi
    fi
    echo "navsync: installing Debian packages: ${missing[*]}" >&2
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
        echo "navsync: could not install ${missing[*]} with apt-get; install them by hand and try again" >&2
        exit 1
    fi
}

need_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "navsync: the Swift toolchain (6.0 or newer) is not on PATH; see https://www.swift.org/install/linux/" >&2
        exit 1
    fi
}

# The libraries navsync builds against.
BUILD_DEBS=(pkg-config libuv1-dev libjansson-dev libhiredis-dev libssl-dev zlib1g-dev libcurl4-openssl-dev)
