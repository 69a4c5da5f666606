"""The SDK for writing Kubernetes controllers as wasmcm plugins in Python.

A plugin is pure controller logic: the host owns everything that talks to the cluster
(informer caches, work queues, retries, leader election, the API writes) and calls the plugin
with one key at a time. The plugin reads what it needs from the :class:`Cache` and returns the
writes it wants as an :class:`Outcome`, which the host checks against what the plugin declared
and performs. The contract is ``wit/reconciler.wit`` (:data:`CONTRACT_VERSION`), the same as
Rust plugins'; componentize-py builds the plugin into a component importing nothing else.

- The contract's types: :class:`Plugin`, :class:`PluginInfo`, :class:`Watch`, :class:`Request`,
  :class:`Outcome` and its intents (:class:`Create`, :class:`Update`, :class:`UpdateStatus`,
  :class:`Delete` with its :class:`Propagation`, :class:`Patch`, :class:`Event`), the errors (:class:`Retryable`, :class:`Permanent`),
  :func:`log`.
- :class:`Cache` and its typed reads (``get_as``, ``list_as``, ``list_controlled_as``);
  :class:`MemoryCache` for unit tests; :class:`Resource` for a plugin's own types.
- :mod:`wasmcm_guest.meta`: conditions, finalizers, controller references and adoption, merge
  patches; :mod:`wasmcm_guest.pod`: pod readiness and availability, pods from a template.
- :class:`Selector`: from a ``LabelSelector`` (``from_label_selector``) or kubectl's form
  (``parse``), and matching.
- :func:`export`: the component's entry point.

README.md beside this package builds a first plugin and explains the model it runs in.

Owns the package's public surface; the component's boundary is ``component``.
"""

from __future__ import annotations

import abc
import sys
from typing import Callable

from . import meta, pod
from .cache import Cache, MemoryCache, Object, ReadAs, Resource, controller_uid
from .meta import (
    Claim,
    add_finalizer,
    claim,
    condition,
    controller_of,
    find_condition,
    has_finalizer,
    is_condition_true,
    is_deleting,
    merge_patch,
    new_controller_ref,
    remove_finalizer,
    remove_finalizer_patch,
    set_condition,
    with_owner_ref,
    without_owner_ref,
)
from .types import (
    CONTRACT_VERSION,
    Changes,
    Create,
    Delete,
    Error,
    Event,
    EventType,
    Instant,
    Intent,
    Kind,
    Level,
    ObjectRef,
    Operator,
    Outcome,
    Patch,
    PatchType,
    Permanent,
    PluginInfo,
    Propagation,
    Request,
    Requirement,
    Retryable,
    SandboxError,
    Selector,
    Update,
    UpdateStatus,
    Watch,
    dumps,
)

#: Whether this code runs inside a component (componentize-py's interpreter reports ``wasi``).
IN_COMPONENT = sys.platform == "wasi"

if IN_COMPONENT:
    from . import component as _component

    _component.install_guards()


class Plugin(abc.ABC):
    """A controller: :meth:`describe` says what it reconciles and may touch, :meth:`reconcile`
    computes for one key what should be written. A new instance serves every call (a plugin
    instance lives for exactly one call in the host), so there is nothing to keep in ``self``
    from one reconcile to the next."""

    @abc.abstractmethod
    def describe(self) -> PluginInfo:
        """What the plugin is and may read and write. Called once when the host loads it; it
        must depend on nothing but the build."""

    @abc.abstractmethod
    def reconcile(self, request: Request, cache: Cache) -> Outcome:
        """One reconcile of ``request``'s key: reads through ``cache``, returns the writes that
        bring the cluster towards what the primary object asks for, or raises
        :class:`Retryable` or :class:`Permanent`. Must be a function of the request and what the
        cache holds."""


def log(level: Level, message: str) -> None:
    """Logs a line through the host, which tags it with the plugin and the key (at most 100 lines
    or 64 KiB a call, 4096 bytes a line). Natively it writes warnings and errors to stderr and
    drops the rest, so tests stay quiet. ``print`` in a component logs at info."""
    if IN_COMPONENT:
        _component.log(level, message)
    elif level >= Level.WARN:
        print(f"[{level.name}] {message}", file=sys.stderr)


def export(plugin_class: Callable[[], Plugin]) -> type:
    """The plugin's entry point: ``Controller = export(MyPlugin)`` at the top level of the module
    componentize-py builds (it exports the class named ``Controller``). Inside the component the
    class serves the contract's ``describe`` and ``reconcile`` with a new ``MyPlugin()`` for
    each, the host's cache behind the :class:`Cache`, and whatever ``reconcile`` raises turned
    into the contract's error. Natively it checks that ``describe()`` answers and returns a class
    whose instances call the plugin as it is."""
    if IN_COMPONENT:
        return _component.export(plugin_class)
    info = plugin_class().describe()
    if not isinstance(info, PluginInfo):
        raise TypeError(f"{plugin_class.__name__}.describe() returned {type(info).__name__}, not a PluginInfo")

    class Controller:
        plugin = plugin_class

        def describe(self) -> PluginInfo:
            return plugin_class().describe()

        def reconcile(self, request: Request, cache: Cache) -> Outcome:
            return plugin_class().reconcile(request, cache)

    return Controller


__all__ = [
    "CONTRACT_VERSION",
    "Cache",
    "Changes",
    "Claim",
    "Create",
    "Delete",
    "Error",
    "Event",
    "EventType",
    "IN_COMPONENT",
    "Instant",
    "Intent",
    "Kind",
    "Level",
    "MemoryCache",
    "Object",
    "ObjectRef",
    "Operator",
    "Outcome",
    "Patch",
    "PatchType",
    "Permanent",
    "Plugin",
    "PluginInfo",
    "Propagation",
    "ReadAs",
    "Request",
    "Requirement",
    "Resource",
    "Retryable",
    "SandboxError",
    "Selector",
    "Update",
    "UpdateStatus",
    "Watch",
    "add_finalizer",
    "claim",
    "condition",
    "controller_of",
    "controller_uid",
    "dumps",
    "export",
    "find_condition",
    "has_finalizer",
    "is_condition_true",
    "is_deleting",
    "log",
    "meta",
    "pod",
    "merge_patch",
    "new_controller_ref",
    "remove_finalizer",
    "remove_finalizer_patch",
    "set_condition",
    "with_owner_ref",
    "without_owner_ref",
]

