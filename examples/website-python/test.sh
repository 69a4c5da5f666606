#!/bin/sh
# The plugin's unit tests, natively: `python3 -m unittest` against the SDK in this checkout.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
PYTHONPATH="$here/../../guest-controllers/sdk-python${PYTHONPATH:+:$PYTHONPATH}" exec python3 -B -m unittest "$@"
