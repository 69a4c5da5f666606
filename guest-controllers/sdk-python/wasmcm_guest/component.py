"""The component's side of the contract: what :func:`wasmcm_guest.export` makes of a
:class:`~wasmcm_guest.Plugin` inside a component built by componentize-py, and the sandbox's
guards. Imported only there (``sys.platform == "wasi"``), where componentize-py's bindings
(``wit_world``, ``componentize_py_types``) exist.

- ``describe`` and ``reconcile`` convert the SDK's types to and from the bindings'; the plugin
  reads the host's cache through :class:`HostCache`.
- Whatever ``reconcile`` raises becomes the contract's ``error``: an :class:`Error` with its
  message and retryability; any other exception retryable, with its type, message and
  traceback (formatted here: the interpreter's own formatter reads source files, which the
  sandbox does not have, and traps). ``describe`` has no error to return: it logs the
  traceback as a panic (the host's trap then quotes it) and traps.
- The guards: a component built with ``--stub-wasi`` has a stub for every WASI import that traps
  when called (a clock, randomness, files, stdio). The common ways in from Python (``time``,
  ``random``, ``os.urandom``, ``open``) raise :class:`SandboxError` instead, saying what to
  use; ``print`` and ``sys.stderr`` go to the host's log. Whatever is left traps, and the host
  names the stub that trapped.

Everything here is imported when the component is built: componentize-py snapshots the
interpreter after the plugin's module is imported, and a module first imported during a call
would be looked for in a file system the sandbox does not have.

Owns the boundary; it must not hold state across calls (every call is a fresh instance).
"""

from __future__ import annotations

import builtins
import io
import os
import random
import sys
import time
from typing import Any, Callable, Optional

from componentize_py_types import Err
from wit_world import exports as _wit_exports
from wit_world.exports import controller as _wc
from wit_world.imports import cache as _wit_cache
from wit_world.imports import log as _wit_log
from wit_world.imports import types as _wt

from .cache import Cache
from .types import (
    Create,
    Delete,
    Error,
    Event,
    EventType,
    Instant,
    Kind,
    Level,
    Outcome,
    Patch,
    PatchType,
    PluginInfo,
    Propagation,
    Request,
    SandboxError,
    Selector,
    Update,
    UpdateStatus,
    dumps,
)

_LEVELS = {
    Level.TRACE: _wit_log.Level.TRACE,
    Level.DEBUG: _wit_log.Level.DEBUG,
    Level.INFO: _wit_log.Level.INFO,
    Level.WARN: _wit_log.Level.WARN,
    Level.ERROR: _wit_log.Level.ERROR,
}

# Whether a call is running: the host's imports may be called only then (not while the
# component is being built, when the plugin's module is imported).
_calling = False


def log(level: Level, message: str) -> None:
    if _calling:
        _wit_log.log(_LEVELS[level], message)


class _LogStream(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr``: whole lines to the host's log."""

    def __init__(self, level: Level) -> None:
        self._level = level
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            log(self._level, line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            log(self._level, self._pending)
            self._pending = ""


def _wit_kind(kind: Kind) -> _wt.Kind:
    return _wt.Kind(kind.api_version, kind.kind)


_OPERATORS = {
    "In": _wt.Operator.IN,
    "NotIn": _wt.Operator.NOT_IN,
    "Exists": _wt.Operator.EXISTS,
    "DoesNotExist": _wt.Operator.DOES_NOT_EXIST,
}


class HostCache(Cache):
    """The host's informer caches, through the contract's ``cache`` import."""

    def get(self, kind: Kind, namespace: str, name: str) -> Optional[str]:
        return _wit_cache.get(_wit_kind(kind), namespace, name)

    def list(self, kind: Kind, namespace: str, selector: Selector = Selector()) -> list[str]:
        wit_selector = _wt.Selector(
            [(k, v) for k, v in selector.match_labels],
            [_wt.Requirement(r.key, _OPERATORS[r.operator.value], list(r.values)) for r in selector.match_expressions],
        )
        return _wit_cache.list(_wit_kind(kind), namespace, wit_selector)

    def list_controlled(self, kind: Kind, namespace: str, owner_uid: str, orphans: bool = False) -> list[str]:
        return _wit_cache.list_controlled(_wit_kind(kind), namespace, owner_uid, orphans)


def _wit_ref(ref: Any) -> _wt.ObjectRef:
    return _wt.ObjectRef(_wit_kind(ref.kind), ref.namespace, ref.name)


_PROPAGATIONS = {
    Propagation.ORPHAN: _wc.Propagation.ORPHAN,
    Propagation.BACKGROUND: _wc.Propagation.BACKGROUND,
    Propagation.FOREGROUND: _wc.Propagation.FOREGROUND,
}

_PATCH_TYPES = {
    PatchType.JSON: _wc.PatchType.JSON,
    PatchType.MERGE: _wc.PatchType.MERGE,
    PatchType.STRATEGIC: _wc.PatchType.STRATEGIC,
}


def _wit_intent(intent: Any) -> Any:
    if isinstance(intent, Create):
        return _wc.Intent_Create(dumps(intent.object))
    if isinstance(intent, Update):
        return _wc.Intent_Update(dumps(intent.object))
    if isinstance(intent, UpdateStatus):
        return _wc.Intent_UpdateStatus(dumps(intent.object))
    if isinstance(intent, Delete):
        propagation = None if intent.propagation is None else _PROPAGATIONS[intent.propagation]
        return _wc.Intent_Delete(_wc.DeleteTarget(_wit_ref(intent.target), intent.uid, propagation))
    if isinstance(intent, Patch):
        return _wc.Intent_Patch(
            _wc.Patch(
                _wit_ref(intent.target),
                _PATCH_TYPES[intent.patch_type],
                intent.body,
                intent.resource_version,
                intent.status,
            )
        )
    if isinstance(intent, Event):
        event_type = _wc.EventType.WARNING if intent.event_type is EventType.WARNING else _wc.EventType.NORMAL
        return _wc.Intent_Event(_wc.Event(_wit_ref(intent.regarding), event_type, intent.reason, intent.message))
    raise TypeError(f"{intent!r} is not an intent (Create, Update, UpdateStatus, Delete, Patch or Event)")


def _wit_outcome(outcome: Any) -> _wc.Outcome:
    if not isinstance(outcome, Outcome):
        raise TypeError(f"reconcile returned {type(outcome).__name__}, not an Outcome")
    return _wc.Outcome([[_wit_intent(i) for i in batch] for batch in outcome.batches], outcome.requeue_after_ms)


def _wit_info(info: PluginInfo) -> _wc.PluginInfo:
    def changes(c: Any) -> _wc.Changes:
        flags = _wc.Changes(0)
        for name in ("CREATED", "UPDATED", "DELETED"):
            if c & type(c)[name]:
                flags |= _wc.Changes[name]
        return flags

    return _wc.PluginInfo(
        info.name,
        info.version,
        _wit_kind(info.primary),
        [_wit_kind(k) for k in info.owns],
        [_wc.Watch(_wit_kind(w.kind), changes(w.wake_on)) for w in info.watches],
        [_wit_kind(k) for k in info.writes],
        info.contract,
    )


def where(error: BaseException) -> str:
    """The innermost frame of ``error``'s traceback outside this module, ``controller.py:12 in
    reconcile``."""
    tb = error.__traceback__
    last = None
    while tb is not None:
        # The guards' frames are this module's: the plugin's own call is the one to name.
        if tb.tb_frame.f_code.co_filename != __file__:
            last = tb
        tb = tb.tb_next
    if last is None:
        return "?"
    code = last.tb_frame.f_code
    return f"{os.path.basename(code.co_filename)}:{last.tb_lineno} in {code.co_name}"


def format_exception(error: BaseException) -> str:
    """``Type: message`` then the traceback, most recent call last, without source lines (the
    sandbox has no files to read them from); chained causes first, as Python prints them."""
    parts: list[str] = []
    seen: set[int] = set()
    current: Optional[BaseException] = error
    chain: list[BaseException] = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    for i, e in enumerate(reversed(chain)):
        if i:
            parts.append("\nDuring handling of the above exception, another exception occurred:\n")
        parts.append("Traceback (most recent call last):")
        tb = e.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename != __file__:
                parts.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}')
            tb = tb.tb_next
        parts.append(f"{type(e).__name__}: {e}")
    return "\n".join(parts)


def _failure(error: BaseException) -> Err:
    """The contract's error for what ``reconcile`` raised."""
    if isinstance(error, SandboxError):
        return Err(_wc.Error(f"{error.message} (at {where(error)})", False))
    if isinstance(error, Error):
        return Err(_wc.Error(error.message, error.retryable))
    return Err(_wc.Error(f"uncaught {type(error).__name__}: {error}\n{format_exception(error)}", True))


def export(plugin_class: Callable[[], Any]) -> type:
    """The class componentize-py exports as the contract's ``controller``."""

    class Controller(_wit_exports.Controller):
        def describe(self) -> _wc.PluginInfo:
            global _calling
            _calling = True
            try:
                return _wit_info(plugin_class().describe())
            except BaseException as e:
                # describe() has no error to return: a panic, which the host's trap quotes.
                log(Level.ERROR, f"panicked: describe() raised {type(e).__name__}: {e}\n{format_exception(e)}")
                raise
            finally:
                _flush()
                _calling = False

        def reconcile(self, request: _wc.Request) -> _wc.Outcome:
            global _calling
            _calling = True
            try:
                now = Instant(request.now.seconds, request.now.nanoseconds)
                req = Request(request.namespace, request.name, now, request.previous_failure, request.settings)
                return _wit_outcome(plugin_class().reconcile(req, HostCache()))
            except Err:
                raise
            except BaseException as e:
                raise _failure(e) from None
            finally:
                _flush()
                _calling = False

    Controller.__qualname__ = Controller.__name__ = "Controller"
    return Controller


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _LogStream):
            stream.flush()


# ---- the guards -----------------------------------------------------------------------------

_NO_CLOCK = (
    "the sandbox offers no clock (a reconcile is a function of its request and the cache, so that a "
    "replay gives the same writes): use request.now, the host's time of this reconcile"
)
_NO_WAIT = "the sandbox offers no way to wait: return Outcome(requeue_after_ms=…) to be called again later"
_NO_RANDOM = (
    "the sandbox offers no randomness (the same request and cache must give the same writes): derive what "
    "you need from the request and the objects (random.Random(seed) with a seed from them works), or let "
    "the API server make unique names with metadata.generateName"
)
_NO_FILES = (
    "the sandbox offers no files: read the cluster through the cache, and configuration from the "
    "manifest's settings (request.settings)"
)


def _refuse(what: str, why: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise SandboxError(f"{what}: {why}")

    refused.__name__ = what.split("(")[0].rpartition(".")[2]
    return refused


def _clock_unless_given(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``time.gmtime(t)`` converts ``t``; ``time.gmtime()`` reads the clock."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if len(args) < (2 if name in ("strftime",) else 1):
            raise SandboxError(f"time.{name}() without a time: {_NO_CLOCK}")
        return original(*args, **kwargs)

    guarded.__name__ = name
    return guarded


def install_guards() -> None:
    for name in (
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "process_time_ns",
        "thread_time",
        "thread_time_ns",
        "clock_gettime",
        "clock_gettime_ns",
    ):
        if hasattr(time, name):
            setattr(time, name, _refuse(f"time.{name}()", _NO_CLOCK))
    time.sleep = _refuse("time.sleep()", _NO_WAIT)
    for name in ("gmtime", "localtime", "ctime", "asctime", "strftime"):
        setattr(time, name, _clock_unless_given(name, getattr(time, name)))
    # The module-level functions share one generator, seeded when the component was built:
    # the same "random" numbers in every call. A Random(seed) of the plugin's own is fine.
    shared = getattr(random, "_inst", None)
    for name in dir(random):
        member = getattr(random, name)
        if shared is not None and getattr(member, "__self__", None) is shared:
            setattr(random, name, _refuse(f"random.{name}()", _NO_RANDOM))
    for name in ("urandom", "getrandom"):
        if hasattr(os, name):
            setattr(os, name, _refuse(f"os.{name}()", _NO_RANDOM))
    builtins.open = io.open = _refuse("open()", _NO_FILES)
    sys.stdout = _LogStream(Level.INFO)
    sys.stderr = _LogStream(Level.WARN)
