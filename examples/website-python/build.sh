#!/bin/sh
# Builds the website plugin into a component with the project's pinned componentize-py
# (scripts/install-componentize-py.sh): `./build.sh [v1|v2] [OUTPUT]`, by default v1 into
# build/website.wasm (v2: build/website-v2.wasm). --stub-wasi: the component imports nothing but
# the plugin contract (../../wit). Written beside OUTPUT and renamed into place, so a host
# watching the file swaps in complete builds only.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
release=${1:-v1}
case $release in
v1) app=controller out=${2:-$here/build/website.wasm} ;;
v2) app=controller_v2 out=${2:-$here/build/website-v2.wasm} ;;
*)
    echo "build.sh: unknown release $release (v1 or v2)" >&2
    exit 2
    ;;
esac
# OUTPUT is the caller's path: resolved before the build moves into the plugin's directory.
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
componentize_py=${COMPONENTIZE_PY:-$("$root/scripts/install-componentize-py.sh")}
mkdir -p "$(dirname "$out")"
cd "$here"
"$componentize_py" --quiet --wit-path "$root/wit" --world plugin componentize "$app" \
    --python-path "$here" --python-path "$root/guest-controllers/sdk-python" --stub-wasi --output "$out.new"
mv -f "$out.new" "$out"
