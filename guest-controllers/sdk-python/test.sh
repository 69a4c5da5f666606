#!/bin/sh
# The SDK's unit tests, natively with this machine's python3 (3.11 or later): tests/test_*.py,
# the README's first plugin among them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec python3 -B -m unittest discover -s tests -t . "$@"
