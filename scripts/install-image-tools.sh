#!/usr/bin/env bash
# Installs what building and checking the image without a Docker engine takes, from Debian's
# packages: umoci (assembles the OCI layout, scripts/build-image.sh; unpacks it into a runtime
# bundle), skopeo (reads the image back; pushes it to a registry) and runc (runs the bundle as a
# container, host/tests/image.rs) and docker-registry (the CNCF distribution registry, which tests
# run on loopback: tests/support/src/registry.rs). Idempotent: present tools are kept. Needs root
# or sudo.
set -euo pipefail
# Sorting, dates and messages the same whatever the machine's locale.
export LC_ALL=C

log() { printf 'install-image-tools: %s\n' "$*" >&2; }

missing=()
for tool in umoci skopeo runc docker-registry; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    log "umoci, skopeo, runc and docker-registry already installed"
    exit 0
fi
sudo=()
if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
        log "error: installing ${missing[*]} needs root or sudo (apt-get install ${missing[*]})"
        exit 1
    }
    sudo=(sudo)
fi
log "apt-get install ${missing[*]}"
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
