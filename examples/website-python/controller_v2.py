"""The second release of the website plugin (0.2.0, pages with a footer): `./build.sh v2`."""

import release

release.V2 = True

from controller import Controller  # noqa: E402  (after the release is set)

__all__ = ["Controller"]
