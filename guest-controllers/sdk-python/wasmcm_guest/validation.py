"""Label key and value formats as ``k8s.io/apimachinery/pkg/util/validation`` checks them, with
its messages (``wasmcm-core``'s ``validation``, which the API server and the Rust SDK share):
each function returns the errors of a value, none when it is valid. Lengths are in bytes, as
Go's ``len``.

Owns these pure checks; :meth:`wasmcm_guest.Selector.parse` uses them.
"""

from __future__ import annotations

DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)

_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def regex_error(msg: str, fmt: str, examples: list[str]) -> str:
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _dns_label_ok(s: str) -> bool:
    return bool(s) and all(c in _LOWER_ALNUM or c == "-" for c in s) and s[0] in _LOWER_ALNUM and s[-1] in _LOWER_ALNUM


def dns1123_subdomain(s: str) -> list[str]:
    errs = []
    if len(s.encode()) > 253:
        errs.append(max_len(253))
    if not all(_dns_label_ok(label) for label in s.split(".")):
        msg = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, DNS1123_SUBDOMAIN_FMT, ["example.com"]))
    return errs


def _qualified_part_ok(s: str) -> bool:
    return bool(s) and all(c in _ALNUM or c in "-_." for c in s) and s[0] in _ALNUM and s[-1] in _ALNUM


def qualified_name(s: str) -> list[str]:
    """A label key: ``[prefix/]name``, the prefix a DNS subdomain, the name at most 63
    characters."""
    errs = []
    parts = s.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, ["MyName", "my.name", "123-abc"])
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append(f"name part {max_len(63)}")
    if not _qualified_part_ok(name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, ["MyName", "my.name", "123-abc"]))
    return errs


def label_value(s: str) -> list[str]:
    """A label value: empty, or at most 63 characters of a qualified name's."""
    errs = []
    if len(s.encode()) > 63:
        errs.append(max_len(63))
    if s and not _qualified_part_ok(s):
        msg = (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", ["MyValue", "my_value", "12345"]))
    return errs
