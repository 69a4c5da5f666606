"""The contract's types (``wit/reconciler.wit``, ``wasmcm:reconciler@0.4.0``) as plain Python.

A plugin works with these; ``wasmcm_guest.component`` converts them to and from
componentize-py's bindings at the component's boundary, so the same code runs natively in unit
tests. Objects are Kubernetes JSON: intents take a ``dict`` (or a JSON string) and the SDK
serialises it (:func:`dumps`).

Owns the types and their conversions to JSON; it must not touch the host's imports.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from . import validation

#: The contract version these types implement; a plugin declares it in
#: :attr:`PluginInfo.contract`, and the host refuses one of another major or minor version.
CONTRACT_VERSION = "0.4.0"

#: A Kubernetes object as decoded JSON.
JsonObject = dict


def dumps(value: Any) -> str:
    """JSON as the Rust SDK's ``serde_json`` writes it: compact, keys sorted, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, order=True)
class Kind:
    """A kind as the API names it: ``Kind("apps/v1", "Deployment")``."""

    api_version: str
    kind: str

    @property
    def group(self) -> str:
        """The API group: ``""`` for the core group (``v1``)."""
        return self.api_version.rpartition("/")[0]

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


@dataclass(frozen=True)
class ObjectRef:
    """One object by kind, namespace and name (namespace empty: cluster-scoped, or the key's)."""

    kind: Kind
    namespace: str
    name: str


class Operator(enum.Enum):
    """A label selector requirement's operator, as ``metav1.LabelSelectorOperator``."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True)
class Requirement:
    """One requirement on one label key, as a ``LabelSelectorRequirement``."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Selector:
    """A label selector, as ``metav1.LabelSelector`` matches: every pair of ``match_labels`` and
    every requirement of ``match_expressions``. The empty selector selects everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @staticmethod
    def everything() -> Selector:
        return Selector()

    @staticmethod
    def labels(labels: Mapping[str, str]) -> Selector:
        """Equality on each label, sorted by key."""
        return Selector(match_labels=tuple(sorted(labels.items())))

    @staticmethod
    def from_label_selector(selector: Mapping[str, Any]) -> Selector:
        """``metav1.LabelSelectorAsSelector`` of an object's ``spec.selector``; raises
        :class:`Permanent` for an invalid operator or values, with apimachinery's words."""
        match_labels = tuple(sorted((selector.get("matchLabels") or {}).items()))
        expressions = []
        for expr in selector.get("matchExpressions") or []:
            values = tuple(expr.get("values") or ())
            try:
                operator = Operator(expr.get("operator"))
            except ValueError:
                raise Permanent(f"{expr.get('operator')!r} is not a valid label selector operator") from None
            key = expr.get("key", "")
            if operator in (Operator.IN, Operator.NOT_IN) and not values:
                raise Permanent(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
            if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
                raise Permanent(f"values set must be empty for exists and does not exist (key {key!r})")
            expressions.append(Requirement(key, operator, values))
        return Selector(match_labels, tuple(expressions))

    @staticmethod
    def parse(text: str) -> Selector:
        """``labels.Parse``, the form kubectl's ``-l`` takes: ``a=b``, ``a==b``, ``a!=b``,
        ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, joined by commas; raises
        :class:`Permanent` with the Rust SDK's words for what it cannot parse."""
        expressions = []
        for term in _split_terms(text):
            term = term.strip()
            if not term:
                continue
            if term.startswith("!"):
                requirement = Requirement(_label_key(term[1:]), Operator.DOES_NOT_EXIST)
            elif "(" in term:
                head, _, rest = term.partition("(")
                words = head.split()
                if len(words) != 2:
                    raise Permanent(f"unable to parse requirement: {_quote(term)}")
                key, op = words
                if op not in ("in", "notin"):
                    raise Permanent(f"unable to parse requirement: unknown operator {_quote(op)}")
                operator = Operator.IN if op == "in" else Operator.NOT_IN
                requirement = Requirement(_label_key(key), operator, _set_values("(" + rest))
            elif "!=" in term:
                key, _, value = term.partition("!=")
                requirement = Requirement(_label_key(key), Operator.NOT_IN, (_label_value(value),))
            elif "=" in term:
                key, _, value = term.partition("==") if "==" in term else term.partition("=")
                requirement = Requirement(_label_key(key), Operator.IN, (_label_value(value),))
            else:
                requirement = Requirement(_label_key(term), Operator.EXISTS)
            expressions.append(requirement)
        return Selector(match_expressions=tuple(expressions))

    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Optional[Mapping[str, str]]) -> bool:
        labels = labels or {}
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for r in self.match_expressions:
            value = labels.get(r.key)
            if r.operator is Operator.IN and (value is None or value not in r.values):
                return False
            if r.operator is Operator.NOT_IN and value is not None and value in r.values:
                return False
            if r.operator is Operator.EXISTS and value is None:
                return False
            if r.operator is Operator.DOES_NOT_EXIST and value is not None:
                return False
        return True


def _quote(text: str) -> str:
    """A string as Rust's ``{:?}`` shows it, so messages read as the Rust SDK's."""
    return json.dumps(text, ensure_ascii=False)


def _split_terms(text: str) -> list[str]:
    """Splits on commas outside parentheses."""
    depth, start, terms = 0, 0, []
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
        if depth < 0:
            break
    if depth != 0:
        raise Permanent(f"unable to parse requirement: unbalanced parentheses in {_quote(text)}")
    terms.append(text[start:])
    return terms


def _set_values(rest: str) -> tuple[str, ...]:
    inner = rest.strip()
    if not (inner.startswith("(") and inner.endswith(")") and len(inner) >= 2):
        raise Permanent(f"unable to parse requirement: expected a set in parentheses, found {_quote(rest)}")
    return tuple(_label_value(v) for v in inner[1:-1].split(","))


def _label_key(key: str) -> str:
    """A key as ``labels.Parse`` takes it: a qualified name (``[prefix/]name``)."""
    key = key.strip()
    errors = validation.qualified_name(key)
    if errors:
        raise Permanent(f"unable to parse requirement: invalid label key {_quote(key)}: {errors[0]}")
    return key


def _label_value(value: str) -> str:
    value = value.strip()
    errors = validation.label_value(value)
    if errors:
        raise Permanent(f"unable to parse requirement: invalid label value {_quote(value)}: {errors[0]}")
    return value


class Changes(enum.Flag):
    """Which changes of a watched kind wake a key (:attr:`Watch.wake_on`)."""

    NONE = 0
    CREATED = enum.auto()
    UPDATED = enum.auto()
    DELETED = enum.auto()
    ALL = CREATED | UPDATED | DELETED


@dataclass(frozen=True)
class Watch:
    """A kind read beyond the primary and owned ones, and which of its changes wake the primary
    above an object of it (its controller, or its controller's controller)."""

    kind: Kind
    wake_on: Changes = Changes.ALL


@dataclass(frozen=True)
class PluginInfo:
    """What a plugin is and may do: the answer of :meth:`Plugin.describe`, read once at load."""

    #: A DNS label (lowercase letters, digits and '-', at most 63 characters).
    name: str
    #: Free text of at most 256 bytes.
    version: str
    #: The kind it reconciles: keys are ``namespace/name`` of objects of this kind.
    primary: Kind
    #: Kinds it controls (a controller ownerReference to a primary): their changes wake it.
    owns: Sequence[Kind] = ()
    #: Other kinds it reads, and which of their changes wake it.
    watches: Sequence[Watch] = ()
    #: Kinds it may create, update, update the status of or delete; events may always be made.
    writes: Sequence[Kind] = ()
    #: The contract it was built against.
    contract: str = CONTRACT_VERSION


@dataclass(frozen=True, order=True)
class Instant:
    """A point in time, Unix seconds and nanoseconds. Plugins have no clock: ``now`` comes with
    each request, so that a reconcile is a function of its request and cache."""

    seconds: int
    nanoseconds: int = 0

    @staticmethod
    def parse_rfc3339(text: str) -> Instant:
        """``2026-01-02T03:04:05Z``, with optional fractional seconds and an offset."""
        m = _RFC3339.fullmatch(text)
        if not m:
            raise ValueError(f"invalid RFC 3339 time {text!r}")
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
            raise ValueError(f"invalid RFC 3339 time {text!r}")
        fraction = (m.group(7) or "")[:9].ljust(9, "0")
        offset = 0
        if m.group(8) not in ("Z", "z"):
            sign = -1 if m.group(8)[0] == "-" else 1
            offset = sign * (int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
        seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
        return Instant(seconds, int(fraction))

    def rfc3339(self) -> str:
        """RFC 3339 in UTC, fractional seconds only when there are any (``…05.5Z``)."""
        text = self.time()[:-1]
        if self.nanoseconds:
            text += "." + f"{self.nanoseconds:09d}".rstrip("0")
        return text + "Z"

    def time(self) -> str:
        """As ``metav1.Time`` serialises: whole seconds, UTC (``2026-01-02T03:04:05Z``)."""
        days, second = divmod(self.seconds, 86400)
        year, month, day = _civil_from_days(days)
        hour, rest = divmod(second, 3600)
        return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}Z"

    def since(self, time: str) -> float:
        """Seconds from the RFC 3339 ``time`` (a ``lastTransitionTime``) to this instant."""
        then = Instant.parse_rfc3339(time)
        return (self.seconds - then.seconds) + (self.nanoseconds - then.nanoseconds) / 1e9


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm): no clock, no
    time zone database, no module beyond the interpreter."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


@dataclass(frozen=True)
class Request:
    """What one reconcile is asked: the key, the host's time, and what it knows of the last
    attempt."""

    namespace: str
    name: str
    now: Instant
    #: Why the writes of the previous reconcile of this key failed, if they did.
    previous_failure: Optional[str] = None
    #: The manifest's ``settings``, a JSON object (``{}`` when none).
    settings: str = "{}"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def settings_json(self) -> dict:
        """The settings decoded; :class:`Permanent` if they are not a JSON object."""
        try:
            value = json.loads(self.settings)
        except ValueError as e:
            raise Permanent(f"settings: {e}") from None
        if not isinstance(value, dict):
            raise Permanent("settings: not a JSON object")
        return value


def _object(value: Union[Mapping[str, Any], str]) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise Permanent(f"an intent's object is not JSON: {e}") from None
    if not isinstance(value, Mapping):
        raise Permanent(f"an intent's object must be a JSON object, not {type(value).__name__}")
    return dict(value)


@dataclass
class Create:
    """POST the object; ``metadata.generateName`` is honoured."""

    object: dict

    def __init__(self, object: Union[Mapping[str, Any], str]) -> None:
        self.object = _object(object)


@dataclass
class Update:
    """PUT the object, its ``metadata.resourceVersion`` the precondition; status is ignored by
    kinds with a status subresource."""

    object: dict

    def __init__(self, object: Union[Mapping[str, Any], str]) -> None:
        self.object = _object(object)


@dataclass
class UpdateStatus:
    """PUT to the status subresource: status changes, never spec."""

    object: dict

    def __init__(self, object: Union[Mapping[str, Any], str]) -> None:
        self.object = _object(object)


class Propagation(enum.Enum):
    """``DeleteOptions.propagationPolicy``: what a delete does with the objects whose
    ownerReferences name the deleted one."""

    #: They stay, their ownerReference to it removed.
    ORPHAN = "Orphan"
    #: The object goes at once; the garbage collector deletes them after.
    BACKGROUND = "Background"
    #: The object stays (with a ``foregroundDeletion`` finalizer) until they are gone.
    FOREGROUND = "Foreground"


@dataclass
class Delete:
    """DELETE the object (an empty namespace is the key's), only the one of ``uid`` when given;
    already gone counts as done. ``propagation`` ``None`` is the server's default for the kind
    (batch/v1 Jobs orphan their pods)."""

    target: ObjectRef
    uid: Optional[str] = None
    propagation: Optional[Propagation] = None


class PatchType(enum.Enum):
    """How the API server applies a :class:`Patch`: the Content-Type it is sent with."""

    #: RFC 6902 JSON patch (``application/json-patch+json``): a list of operations.
    JSON = "json"
    #: RFC 7386 JSON merge patch (``application/merge-patch+json``).
    MERGE = "merge"
    #: Kubernetes strategic merge patch (``application/strategic-merge-patch+json``): lists of
    #: built-in kinds merge by their keys; the server refuses it for custom resources (415).
    STRATEGIC = "strategic"


@dataclass
class Patch:
    """PATCH one object (an empty namespace is the key's), or its status subresource: the API
    server applies ``body`` to the object as it stands, so only what the patch names changes and
    nothing needs to be read first. A target that is gone fails the batch (404). Made with
    :meth:`merge`, :meth:`strategic` or :meth:`json`::

        Patch.merge(pod, {"metadata": {"labels": {"tier": "web"}}}).with_resource_version("42")
    """

    target: ObjectRef
    patch_type: PatchType
    #: The patch document as JSON: a list of operations for ``JSON``, an object otherwise.
    body: str
    #: Applied only while the object is at this resourceVersion (409 Conflict otherwise).
    resource_version: Optional[str] = None
    #: Patch the status subresource instead of the object.
    status: bool = False

    @staticmethod
    def merge(target: ObjectRef, body: Mapping[str, Any]) -> Patch:
        """An RFC 7386 merge patch: objects merge key by key, ``None`` removes a key, anything
        else (lists included) replaces."""
        return Patch(target, PatchType.MERGE, dumps(_patch_body(body, Mapping, "an object")))

    @staticmethod
    def strategic(target: ObjectRef, body: Mapping[str, Any]) -> Patch:
        """A strategic merge patch: as a merge patch, but lists of built-in kinds merge by their
        keys and ``$patch``, ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``
        directives apply. Built-in kinds only."""
        return Patch(target, PatchType.STRATEGIC, dumps(_patch_body(body, Mapping, "an object")))

    @staticmethod
    def json(target: ObjectRef, operations: Sequence[Mapping[str, Any]]) -> Patch:
        """An RFC 6902 JSON patch: ``operations`` is the list of operations."""
        return Patch(target, PatchType.JSON, dumps(list(_patch_body(operations, list, "a list of operations"))))

    def with_resource_version(self, resource_version: str) -> Patch:
        """The same patch, applied only while the object is at ``resource_version``."""
        return dataclasses.replace(self, resource_version=resource_version)

    def to_status(self) -> Patch:
        """The same patch, of the status subresource."""
        return dataclasses.replace(self, status=True)


def _patch_body(body: Any, expected: type, what: str) -> Any:
    # A tuple of operations is as good as a list; a string is not (it would be sent as one JSON
    # string, which every server refuses).
    if expected is list and isinstance(body, tuple):
        body = list(body)
    if not isinstance(body, expected):
        raise Permanent(f"a patch's body must be {what}, not {type(body).__name__}")
    return body


class EventType(enum.Enum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass
class Event:
    """An Event about an object of the key's namespace, recorded after the batches have run."""

    regarding: ObjectRef
    event_type: EventType
    reason: str
    message: str


Intent = Union[Create, Update, UpdateStatus, Delete, Event, Patch]


@dataclass
class Outcome:
    """What a reconcile returns: writes in batches (those of one batch may run concurrently; a
    failure stops every later batch), and whether to come back without a change."""

    batches: list[list[Intent]] = field(default_factory=list)
    #: Reconcile this key again this many milliseconds after the request's ``now``, even if
    #: nothing changes; honoured once every write succeeded.
    requeue_after_ms: Optional[int] = None

    def push_batch(self, batch: Sequence[Intent]) -> Outcome:
        """Adds a batch, skipping an empty one so the host sees only real steps."""
        if batch:
            self.batches.append(list(batch))
        return self

    def requeue_after(self, milliseconds: int) -> Outcome:
        self.requeue_after_ms = milliseconds
        return self

    def intents(self) -> Iterator[Intent]:
        """Every intent, batch after batch."""
        for batch in self.batches:
            yield from batch


class Error(Exception):
    """Why a reconcile failed, and whether retrying the same key later can help. Raise
    :class:`Retryable` or :class:`Permanent` from ``reconcile``."""

    retryable: bool = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Retryable(Error):
    """A failure that may pass: the host retries the key with backoff."""

    retryable = True


class Permanent(Error):
    """A failure retrying cannot fix (an invalid spec): the host logs it and leaves the key until
    a change wakes it."""

    retryable = False


class SandboxError(Permanent):
    """A plugin called something the sandbox does not offer (a clock, randomness, files, the
    network, the process' environment): the message says what to use instead."""


class Level(enum.IntEnum):
    """The level of a :func:`wasmcm_guest.log` line, as the host's ``tracing`` levels."""

    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4
