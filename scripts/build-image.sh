#!/usr/bin/env bash
# Builds the wasmcm image as an OCI image layout, without a Docker engine: what the Dockerfile's
# runtime stage holds, assembled with umoci from a wasmcm binary built on this machine.
#
#   scripts/build-image.sh                       # cargo build --release, then target/image/wasmcm
#   skopeo copy oci:target/image/wasmcm:0.1.0 docker://<registry>/wasmcm:0.1.0
#
# Options: --binary <path> (a wasmcm already built; default: build the release one), --out <dir>
# (the OCI layout, replaced; default target/image/wasmcm), --tag <tag> (default: the binary's version).
#
# The one layer holds what gcr.io/distroless/cc-debian12:nonroot plus the Dockerfile's COPY lines
# give: /wasmcm (debug info stripped; the built-in plugins are embedded in it), the shared libraries
# it links (glibc and libgcc_s, copied from this machine, so build on the distribution you would
# otherwise take them from: Debian 12 here, as distroless cc-debian12), /etc/passwd and /etc/group
# with the nonroot user 65532, /tmp, and /opt/wasmcm/cache: the built-ins precompiled by
# `wasmcm plugins inspect` on this machine's CPU (deploy/README.md says when that cache helps). The
# image configuration is the Dockerfile's: USER, ENTRYPOINT, CMD, ENV, EXPOSE and LABELs;
# host/tests/image.rs checks the two agree, runs the image as deploy/manifests' pod would and
# inspects it with skopeo.
#
# Needs umoci (scripts/install-image-tools.sh installs it). As root the files keep their owners
# (the cache belongs to 65532, so `docker run` can add to it); otherwise umoci runs rootless and
# every file is owned by root in the image.
# stdout: the image reference (oci:<dir>:<tag>) only; progress and errors go to stderr.
set -euo pipefail
# Sorting, dates and messages the same whatever the machine's locale.
export LC_ALL=C

root=$(cd "$(dirname "$0")/.." && pwd)
binary=""
out="$root/target/image/wasmcm"
tag=""

log() { printf 'build-image: %s\n' "$*" >&2; }
die() {
    printf 'build-image: error: %s\n' "$*" >&2
    exit 1
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --binary) binary=${2:?--binary needs a path}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --tag) tag=${2:?--tag needs a value}; shift 2 ;;
        *) die "unknown argument $1 (expected --binary, --out or --tag)" ;;
    esac
done

command -v umoci >/dev/null 2>&1 || die "umoci is missing: run scripts/install-image-tools.sh"
if [[ -z "$binary" ]]; then
    log "cargo build --release --locked -p wasmcm"
    (cd "$root" && cargo build --release --locked -p wasmcm >&2)
    binary="$root/target/release/wasmcm"
fi
[[ -x "$binary" ]] || die "$binary is not an executable"
version=$("$binary" --version | awk '{print $2}')
[[ -n "$version" ]] || die "$binary --version printed no version"
tag=${tag:-$version}
case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64) arch=arm64 ;;
    *) die "unsupported architecture $(uname -m)" ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rootfs="$stage/rootfs"
mkdir -p "$rootfs"/{etc,tmp,home/nonroot,opt/wasmcm}
chmod 1777 "$rootfs/tmp"
chmod 0700 "$rootfs/home/nonroot"
strip --strip-debug -o "$rootfs/wasmcm" "$binary"

# The libraries the dynamic loader will look for, at the paths it looks for them.
if ldd "$binary" >/dev/null 2>&1; then
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
        while read -r lib; do
            mkdir -p "$rootfs$(dirname "$lib")"
            cp -L "$lib" "$rootfs$lib"
        done
fi

cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF

log "precompiling the built-in plugins into /opt/wasmcm/cache (authenticated by /opt/wasmcm/cache.key)"
"$binary" --cache-dir "$rootfs/opt/wasmcm/cache" plugins inspect >/dev/null
# The compiled functions are for recompiling changed plugins on the machine that compiles: the
# image carries the plugins' artefacts only.
rm -rf "$rootfs/opt/wasmcm/cache/functions"

rootless=()
if [[ $(id -u) == 0 ]]; then
    chown -R 65532:65532 "$rootfs/opt/wasmcm/cache" "$rootfs/opt/wasmcm/cache.key" "$rootfs/home/nonroot"
else
    rootless=(--rootless)
    log "not root: every file of the image is owned by root"
fi
# One timestamp for every file and the image, so unchanged inputs give the same layer.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
find "$rootfs" -exec touch -h -d "@$epoch" {} +

rm -rf "$out"
mkdir -p "$(dirname "$out")"
umoci init --layout "$out"
umoci new --image "$out:$tag"
umoci insert "${rootless[@]}" --image "$out:$tag" --history.created "$created" \
    --history.created_by "scripts/build-image.sh" "$rootfs" /
# The Dockerfile's runtime stage (host/tests/image.rs compares them).
umoci config --image "$out:$tag" --os linux --architecture "$arch" --created "$created" \
    --history.created "$created" --history.created_by "scripts/build-image.sh (config)" \
    --clear config.env --clear config.entrypoint --clear config.cmd \
    --config.user 65532:65532 \
    --config.entrypoint /wasmcm --config.cmd run \
    --config.env WASMCM_CACHE_DIR=/opt/wasmcm/cache \
    --config.exposedports 8080/tcp \
    --config.label org.opencontainers.image.title=wasmcm \
    --config.label "org.opencontainers.image.description=WebAssembly controller manager for Kubernetes" \
    --config.label org.opencontainers.image.licenses=Apache-2.0 \
    --config.label "org.opencontainers.image.version=$version"
umoci gc --layout "$out"
log "built $out:$tag ($(du -sh "$out" | cut -f1))"
printf 'oci:%s:%s\n' "$out" "$tag"
