#!/usr/bin/env bash
# Installs componentize-py, which builds Python plugins into components (examples/website-python,
# `wasmcm new --lang python`), into a virtual environment at target/tools/python (or
# $WASMCM_TOOLS_DIR/python) of this machine's python3. Idempotent: an installed environment of the
# pinned version is kept.
#
# The wheel's version and sha256 are pinned, so every run installs the same bytes: componentize-py
# carries its own CPython (3.14, compiled to WebAssembly) and standard library, so a component does
# not depend on the python3 that runs the tool. Its `--stub-wasi` (`-s`) makes components that
# import nothing but the plugin contract.
#
# stdout: the path of the componentize-py executable only (so callers can do
# `componentize_py=$(scripts/install-componentize-py.sh)`); progress and errors go to stderr.
set -euo pipefail
export LC_ALL=C

readonly PACKAGE="componentize-py"
readonly VERSION="0.25.1"
# componentize_py-0.25.1-cp39-abi3-manylinux_2_28_x86_64.whl
readonly SHA256="8623cd8cab8453cb0cd8bf03f3c7103420d06f2f3d360186a280a70a1ca5e89f"

root=$(cd "$(dirname "$0")/.." && pwd)
tools_dir=${WASMCM_TOOLS_DIR:-"$root/target/tools"}
venv="$tools_dir/python"
exe="$venv/bin/componentize-py"
stamp="$venv/.installed-$PACKAGE-$VERSION-$SHA256"

log() { printf 'install-componentize-py: %s\n' "$*" >&2; }
die() {
    printf 'install-componentize-py: error: %s\n' "$*" >&2
    exit 1
}

# shellcheck source-path=SCRIPTDIR source=lib/pypi-wheel.sh
source "$root/scripts/lib/pypi-wheel.sh"

installed() {
    [[ -f "$stamp" && -x "$exe" ]] && [[ "$("$exe" --version 2>/dev/null)" == "componentize-py $VERSION" ]]
}

if installed; then
    printf '%s\n' "$exe"
    exit 0
fi

command -v python3 >/dev/null 2>&1 || die "python3 is required (the environment componentize-py runs in)"
[[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] ||
    die "the pinned componentize-py wheel is for linux/amd64; this machine is $(uname -s)/$(uname -m)"
mkdir -p "$tools_dir" || die "cannot create $tools_dir"

# One installer at a time (tests may build Python plugins in parallel); the second finds it done.
exec 9>"$tools_dir/.componentize-py.lock"
flock 9
if installed; then
    printf '%s\n' "$exe"
    exit 0
fi

wheel=$(pypi_wheel "$PACKAGE" "$VERSION" "$SHA256")
# A virtual environment records its absolute path, so it is made in place (not renamed into it);
# the stamp, written last, says it is complete.
rm -rf "$venv"
python3 -m venv --without-pip "$venv" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
python3 -m pip --disable-pip-version-check --python "$venv/bin/python" install --quiet --no-deps --no-index \
    "$wheel" >&2 || die "pip could not install $wheel into $venv"
got=$("$exe" --version 2>/dev/null) || die "the installed $exe does not run"
[[ "$got" == "componentize-py $VERSION" ]] || die "the installed $exe reports '$got', expected componentize-py $VERSION"
touch "$stamp"
log "installed $got"
printf '%s\n' "$exe"
