#!/usr/bin/env bash
# Installs the pinned JavaScript/TypeScript toolchain of wasmcm plugins into target/tools/js (or
# $WASMCM_TOOLS_DIR/js): componentize-js (a JS module -> a component, SpiderMonkey snapshotted by
# wizer), jco (`jco guest-types` for the WIT's TypeScript types), rolldown (bundles a plugin and
# the SDK into the one module componentize-js takes), TypeScript, @types/node and
# kubernetes-types. Idempotent: an install made from the same package.json and lock is kept.
#
# The versions are exact in scripts/js-tools/package.json and every package, transitive ones
# included, is pinned with its integrity hash in scripts/js-tools/package-lock.json; `npm ci`
# installs exactly those or fails. The same two files are the devDependencies of every
# TypeScript plugin (examples/website-typescript, `wasmcm new --lang typescript`), so a plugin
# builds with the toolchain the repository tests.
#
# Why these versions (Node.js 20 and npm 11 on this project's machines):
# - componentize-js 0.23.0 with every feature disabled builds a component that imports nothing
#   but the contract (0.22.0's CLI cannot read a WIT directory under this jco).
# - jco 1.34.0: 1.35.0 pulls preview2-shim 0.26, whose filesystem has no preopens by default, so
#   `jco guest-types` cannot read any WIT file ("No such file or directory").
# - wizer 10.0.0, pinned directly: newer releases' builds for other platforms are not all served
#   by the registry, and a lock naming them cannot be installed.
# - rolldown 1.3.2 needs Node.js ^20.19.0 or >=22.12.0.
#
# stdout: the install's directory only (its node_modules/.bin holds tsc, rolldown,
# componentize-js and jco); progress and errors go to stderr.
set -euo pipefail
export LC_ALL=C

readonly MIN_NODE="20.19.0"

root=$(cd "$(dirname "$0")/.." && pwd)
tools_dir=${WASMCM_TOOLS_DIR:-"$root/target/tools"}
dest="$tools_dir/js"
pinned="$root/scripts/js-tools"

log() { printf 'install-js-tools: %s\n' "$*" >&2; }
die() {
    printf 'install-js-tools: error: %s\n' "$*" >&2
    exit 1
}

command -v node >/dev/null 2>&1 || die "node is required (Node.js $MIN_NODE or newer; on Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || die "npm is required (on Debian: apt-get install npm)"
node_version=$(node -p 'process.versions.node')
node -e '
    const [want, have] = process.argv.slice(1).map((v) => v.split(".").map(Number));
    process.exit(have[0] > want[0] || (have[0] === want[0] && (have[1] > want[1] || (have[1] === want[1] && have[2] >= want[2]))) ? 0 : 1);
' "$MIN_NODE" "$node_version" || die "Node.js $node_version is too old: rolldown needs $MIN_NODE or newer"

# What an install was made from: both pinned files, byte for byte.
stamp=$(cat "$pinned/package.json" "$pinned/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ -f "$dest/.installed" && "$(cat "$dest/.installed")" == "$stamp" && -x "$dest/node_modules/.bin/componentize-js" ]]; then
    log "already installed ($dest)"
    printf '%s\n' "$dest"
    exit 0
fi

mkdir -p "$tools_dir" || die "cannot create $tools_dir"
# Installed beside the destination, then renamed into place: an interrupted install never leaves
# a half-filled toolchain that the stamp would vouch for.
work=$(mktemp -d "$tools_dir/.js-install.XXXXXX") || die "cannot create a temporary directory in $tools_dir"
trap 'rm -rf "$work"' EXIT
cp "$pinned/package.json" "$pinned/package-lock.json" "$work/"
log "npm ci of scripts/js-tools (componentize-js, jco, rolldown, typescript) into $dest"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed (is the npm registry reachable?)"
printf '%s\n' "$stamp" >"$work/.installed"
rm -rf "$dest.old"
if [[ -e "$dest" ]]; then
    mv "$dest" "$dest.old" || die "cannot move the old install aside"
fi
mv "$work" "$dest" || die "cannot move the install into $dest"
trap - EXIT
rm -rf "$dest.old"
log "installed $(cd "$dest" && node -p '["@bytecodealliance/componentize-js", "@bytecodealliance/jco", "rolldown", "typescript"].map((p) => p + " " + JSON.parse(require("fs").readFileSync("node_modules/" + p + "/package.json")).version).join(", ")')"
printf '%s\n' "$dest"
