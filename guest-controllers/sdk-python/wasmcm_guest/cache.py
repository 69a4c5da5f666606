"""The read-only cache view a plugin reads the cluster through, typed reads over it, and an
in-memory implementation for native unit tests.

Inside the host, :class:`Cache` reads the host's informer caches: eventually consistent,
possibly behind the plugin's own last writes, limited to the kinds the plugin declared and the
namespaces its manifest lets it act in. Reading a kind the plugin did not declare fails the call.

Owns reading and decoding; it must not touch the host's imports (``component`` implements
:class:`Cache` over them).
"""

from __future__ import annotations

import abc
import copy
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Mapping, Optional, TypeVar, Union

from .types import Kind, Retryable, Selector, dumps

T = TypeVar("T")


class Resource:
    """A plugin's own type of an object, readable with the typed reads: a class with ``KIND`` and
    ``from_json`` (a classmethod from the decoded object). ``from_json`` may raise ``KeyError``,
    ``TypeError`` or ``ValueError`` for an object it cannot read; the read then fails, naming the
    object."""

    KIND: ClassVar[Kind]

    @classmethod
    def from_json(cls, data: dict) -> Any:
        raise NotImplementedError


#: What a typed read takes: a :class:`Kind` (the objects come as ``dict``) or a
#: :class:`Resource` class (they come as what its ``from_json`` makes).
ReadAs = Union[Kind, type]


@dataclass
class Object(Generic[T]):
    """An object read from the cache: decoded (``value``), and its JSON as served (``json``)."""

    value: T
    json: str

    def raw(self) -> dict:
        """A fresh, mutable copy of the object as the cache served it: writes start from it, so
        they keep every field (and the ``resourceVersion`` their precondition is)."""
        return json.loads(self.json)


def _kind_of(read_as: ReadAs) -> Kind:
    if isinstance(read_as, Kind):
        return read_as
    kind = getattr(read_as, "KIND", None)
    if not isinstance(kind, Kind):
        raise TypeError(f"{read_as!r} is neither a Kind nor a Resource class with a KIND")
    return kind


def _decode(read_as: ReadAs, text: str) -> Object[Any]:
    kind = _kind_of(read_as)
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        value = data if isinstance(read_as, Kind) else read_as.from_json(copy.deepcopy(data))
        return Object(value, text)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        try:
            meta = json.loads(text).get("metadata") or {}
            name = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        except (ValueError, AttributeError):
            name = "<unnamed>"
        raise Retryable(f"cannot decode {kind.kind} {name} from the cache: {type(e).__name__}: {e}") from None


class Cache(abc.ABC):
    """The host's informer caches, read-only. The three raw reads are the contract's; the typed
    reads decode them."""

    @abc.abstractmethod
    def get(self, kind: Kind, namespace: str, name: str) -> Optional[str]:
        """One object's JSON, if the cache holds it (namespace empty for a cluster-scoped kind)."""

    @abc.abstractmethod
    def list(self, kind: Kind, namespace: str, selector: Selector = Selector()) -> list[str]:
        """Objects of ``kind`` in ``namespace`` (all if empty) matching ``selector``. Costs every
        object of the namespace: prefer :meth:`list_controlled` for what an owner controls."""

    @abc.abstractmethod
    def list_controlled(self, kind: Kind, namespace: str, owner_uid: str, orphans: bool = False) -> list[str]:
        """Objects of ``kind`` in ``namespace`` whose controller ownerReference has ``owner_uid``,
        then, when ``orphans``, those with no controller (adoption candidates), each group by
        name. Costs what it returns."""

    def get_as(self, read_as: ReadAs, namespace: str, name: str) -> Optional[Object[Any]]:
        """:meth:`get`, decoded; :class:`Retryable` naming the object if it cannot be."""
        text = self.get(_kind_of(read_as), namespace, name)
        return None if text is None else _decode(read_as, text)

    def list_as(self, read_as: ReadAs, namespace: str, selector: Selector = Selector()) -> list[Object[Any]]:
        """:meth:`list`, decoded."""
        return [_decode(read_as, t) for t in self.list(_kind_of(read_as), namespace, selector)]

    def list_controlled_as(
        self, read_as: ReadAs, namespace: str, owner_uid: str, orphans: bool = False
    ) -> list[Object[Any]]:
        """:meth:`list_controlled`, decoded."""
        return [_decode(read_as, t) for t in self.list_controlled(_kind_of(read_as), namespace, owner_uid, orphans)]


def controller_uid(metadata: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The uid of the controller ownerReference in ``metadata`` (``""`` if it has none), or
    ``None`` when nothing controls the object."""
    for ref in (metadata or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else ""
    return None


class MemoryCache(Cache):
    """A cache of objects held in memory, for unit tests: reads answer in name order, as the
    host's do. It checks none of the sandbox's rules (declared kinds, read caps, deadline)."""

    def __init__(self, objects: Any = ()) -> None:
        # kind -> (namespace, name) -> (labels, controller uid, JSON)
        self._kinds: dict[Kind, dict[tuple[str, str], tuple[dict, Optional[str], str]]] = {}
        for o in objects:
            self.insert(o)

    def insert(self, obj: Union[Mapping[str, Any], str]) -> None:
        """Adds or replaces an object (a ``dict`` or JSON) under its kind, namespace and name;
        ``ValueError`` if it lacks ``apiVersion``, ``kind`` or ``metadata.name``."""
        data = json.loads(obj) if isinstance(obj, str) else obj
        meta = data.get("metadata") or {}
        for what, value in (("apiVersion", data.get("apiVersion")), ("kind", data.get("kind"))):
            if not isinstance(value, str):
                raise ValueError(f"object has no {what}")
        if not isinstance(meta.get("name"), str):
            raise ValueError("object has no metadata.name")
        labels = meta.get("labels") or {}
        if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
            raise ValueError(f"{data['kind']} {meta.get('namespace', '')}/{meta['name']}: metadata.labels: not a map of strings")
        kind = Kind(data["apiVersion"], data["kind"])
        key = (meta.get("namespace") or "", meta["name"])
        self._kinds.setdefault(kind, {})[key] = (dict(labels), controller_uid(meta), dumps(data))

    def remove(self, kind: Kind, namespace: str, name: str) -> None:
        self._kinds.get(kind, {}).pop((namespace, name), None)

    def __len__(self) -> int:
        return sum(len(objects) for objects in self._kinds.values())

    def _sorted(self, kind: Kind) -> list[tuple[tuple[str, str], tuple[dict, Optional[str], str]]]:
        return sorted(self._kinds.get(kind, {}).items())

    def get(self, kind: Kind, namespace: str, name: str) -> Optional[str]:
        entry = self._kinds.get(kind, {}).get((namespace, name))
        return None if entry is None else entry[2]

    def list(self, kind: Kind, namespace: str, selector: Selector = Selector()) -> list[str]:
        return [
            text
            for (ns, _), (labels, _, text) in self._sorted(kind)
            if (not namespace or ns == namespace) and selector.matches(labels)
        ]

    def list_controlled(self, kind: Kind, namespace: str, owner_uid: str, orphans: bool = False) -> list[str]:
        entries = [(c, text) for (ns, _), (_, c, text) in self._sorted(kind) if ns == namespace]
        found = [text for c, text in entries if c == owner_uid]
        if orphans:
            found += [text for c, text in entries if c is None]
        return found
