#!/usr/bin/env bash
# What `make test` runs for the TypeScript SDK: the pinned toolchain (scripts/install-js-tools.sh),
# the contract's generated types checked against `jco guest-types` of the repository's wit/ (the
# current contract, which the SDK speaks: jco reads the directory's own .wit files, not the frozen
# wit/0.3.0/ beside them; a stale copy fails, naming the command that refreshes it), then the SDK
# and its unit tests compiled with the pinned TypeScript and run with Node's test runner.
set -euo pipefail
export LC_ALL=C

sdk=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$sdk/../.." && pwd)
tools=$("$root/scripts/install-js-tools.sh")
bin="$tools/node_modules/.bin"

fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
(cd "$root" && "$bin/jco" guest-types wit -n plugin -q -o "$fresh" >/dev/null)
if ! diff -r "$fresh" "$sdk/src/wit" >&2; then
    echo "check.sh: src/wit is stale: run, from the repository's root:" >&2
    echo "  target/tools/js/node_modules/.bin/jco guest-types wit -n plugin -q -o guest-controllers/sdk-typescript/src/wit" >&2
    exit 1
fi

cd "$sdk"
"$bin/tsc" -b tsconfig.test.json
node --test build/test/
