"""Which release of the website plugin this build is. `controller.py` builds 0.1.0;
`controller_v2.py` sets `V2` before importing it and builds 0.2.0, whose pages carry a footer
naming it (the Rust example's cargo feature `v2`). Read at call time (`release.V2`), so the
setting made at build time is the one the component's snapshot holds."""

V2 = False


def version() -> str:
    return "0.2.0" if V2 else "0.1.0"
