"""The SDK natively: the cache and its typed reads, selectors, time, conditions, finalizers,
ownership and adoption, the outcome builder, errors and JSON, as the Rust SDK's native tests
check them."""

import json
import unittest

import wasmcm_guest as wg
from wasmcm_guest import Claim, Instant, Kind, MemoryCache, Outcome, Selector

POD = Kind("v1", "Pod")


def pod(ns: str, name: str, owner=None, labels=None) -> dict:
    refs = [] if owner is None else [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": owner[0], "controller": owner[1]}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "ownerReferences": refs, "labels": labels or {}}}


class CacheTests(unittest.TestCase):
    def test_get_list_and_typed_reads(self) -> None:
        c = MemoryCache([pod("x", "a", labels={"app": "web"}), pod("x", "b"), pod("y", "c", labels={"app": "web"})])
        web = Selector.labels({"app": "web"})
        self.assertEqual(len(c.list(POD, "x", web)), 1)
        self.assertEqual(len(c.list(POD, "x")), 2)
        self.assertEqual(len(c.list(POD, "", web)), 2)
        a = c.get_as(POD, "x", "a")
        self.assertEqual(a.value["metadata"]["name"], "a")
        a.raw()["metadata"]["name"] = "changed"
        self.assertEqual(a.raw()["metadata"]["name"], "a", "raw() is a fresh copy")
        self.assertIsNone(c.get_as(POD, "x", "zz"))

    def test_controlled_objects_then_orphans_of_one_namespace(self) -> None:
        c = MemoryCache([
            pod("x", "b-mine", ("u1", True)), pod("x", "a-mine", ("u1", True)), pod("x", "theirs", ("u2", True)),
            pod("x", "z-orphan"), pod("x", "not-controller", ("u1", False)), pod("y", "elsewhere", ("u1", True)),
        ])  # fmt: skip
        names = lambda orphans: [o.value["metadata"]["name"] for o in c.list_controlled_as(POD, "x", "u1", orphans)]  # noqa: E731
        self.assertEqual(names(False), ["a-mine", "b-mine"])
        self.assertEqual(names(True), ["a-mine", "b-mine", "not-controller", "z-orphan"])

    def test_typed_reads_of_a_resource_and_broken_objects_named(self) -> None:
        class Widget(wg.Resource):
            KIND = Kind("example.com/v1", "Widget")

            def __init__(self, size: int) -> None:
                self.size = size

            @classmethod
            def from_json(cls, data: dict) -> "Widget":
                return cls(int(data["spec"]["size"]))

        c = MemoryCache([{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "x"}, "spec": {"size": 3}}])
        self.assertEqual(c.get_as(Widget, "x", "w").value.size, 3)
        c.insert({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad", "namespace": "x"}, "spec": {}})
        with self.assertRaises(wg.Retryable) as e:
            c.list_as(Widget, "x")
        self.assertIn("Widget x/bad", e.exception.message)
        with self.assertRaises(ValueError):
            c.insert({"kind": "Pod"})

    def test_selectors_as_label_selectors(self) -> None:
        s = Selector.from_label_selector({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}]})
        self.assertTrue(s.matches({"app": "web", "tier": "edge"}))
        self.assertFalse(s.matches({"app": "web"}))
        self.assertTrue(Selector.everything().matches(None))
        self.assertTrue(Selector.from_label_selector({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}).matches({}))
        with self.assertRaises(wg.Permanent):
            Selector.from_label_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


class SelectorTests(unittest.TestCase):
    """wasmcm-core's selector tests (the Rust SDK's Selector), restated."""

    def test_query_selectors_parse_like_kubectl(self) -> None:
        s = Selector.parse("app=web,tier in (front, edge),env!=prod,team,!canary")
        self.assertTrue(s.matches({"app": "web", "tier": "edge", "team": "a"}))
        self.assertTrue(s.matches({"app": "web", "tier": "front", "team": "a", "env": "dev"}))
        self.assertFalse(s.matches({"app": "web", "tier": "front", "team": "a", "env": "prod"}))
        self.assertFalse(s.matches({"app": "web", "tier": "front", "team": "a", "canary": "1"}))
        self.assertFalse(s.matches({"app": "web", "tier": "back", "team": "a"}))
        s = Selector.parse("app==web,zone notin (a,b),example.com/team")
        self.assertTrue(s.matches({"app": "web", "example.com/team": "x"}))
        self.assertFalse(s.matches({"app": "web", "zone": "a", "example.com/team": "x"}))
        self.assertTrue(Selector.parse("").is_empty())
        for bad in ["a in (b", "a=b c", "-a=b", "a=-b-", "a/b/c=d"]:
            with self.assertRaises(wg.Permanent, msg=bad):
                Selector.parse(bad)

    def test_parse_errors_say_what_as_the_rust_sdk_does(self) -> None:
        cases = {
            "a in (b": 'unable to parse requirement: unbalanced parentheses in "a in (b"',
            "a like (b)": 'unable to parse requirement: unknown operator "like"',
            "a=b c": 'unable to parse requirement: invalid label value "b c": a valid label must be an empty string '
            "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "/x": 'unable to parse requirement: invalid label key "/x": prefix part must be non-empty',
            "a/b/c": 'unable to parse requirement: invalid label key "a/b/c": a qualified name must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')",
            "x" * 64: f'unable to parse requirement: invalid label key "{"x" * 64}": name part must be no more than 63 '
            "characters",
        }
        for text, message in cases.items():
            with self.assertRaises(wg.Permanent, msg=text) as raised:
                Selector.parse(text)
            self.assertEqual(raised.exception.message, message)

    def test_parsed_selectors_read_the_cache(self) -> None:
        c = MemoryCache([pod("x", "a", labels={"app": "web", "tier": "edge"}), pod("x", "b", labels={"app": "web"})])
        names = [o.value["metadata"]["name"] for o in c.list_as(POD, "x", Selector.parse("app=web,tier"))]
        self.assertEqual(names, ["a"])
        self.assertEqual(c.kinds(), [POD])


class PodTests(unittest.TestCase):
    """The Rust SDK's pod tests, restated."""

    def test_readiness_and_availability(self) -> None:
        ready = {"metadata": {}, "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}  # fmt: skip
        now = Instant.parse_rfc3339("2026-01-01T00:00:10Z")
        self.assertTrue(wg.pod.is_ready(ready))
        self.assertEqual(wg.pod.ready_since(ready), "2026-01-01T00:00:00Z")
        self.assertTrue(wg.pod.is_available(ready, 0, now))
        self.assertTrue(wg.pod.is_available(ready, 9, now))
        self.assertFalse(wg.pod.is_available(ready, 10, now), "must be strictly before now")
        self.assertTrue(wg.pod.is_available(ready, 10, Instant(now.seconds, 1)))
        not_ready = {"metadata": {}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        self.assertFalse(wg.pod.is_ready(not_ready))
        self.assertIsNone(wg.pod.ready_since(not_ready))
        self.assertFalse(wg.pod.is_available(not_ready, 0, now))

    def test_activity(self) -> None:
        self.assertTrue(wg.pod.is_active({"metadata": {}, "status": {"phase": "Pending"}}))
        self.assertFalse(wg.pod.is_active({"metadata": {}, "status": {"phase": "Failed"}}))
        self.assertFalse(wg.pod.is_active({"metadata": {}, "status": {"phase": "Succeeded"}}))
        self.assertFalse(wg.pod.is_active({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}))

    def test_pods_come_from_the_template(self) -> None:
        t = {"metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
             "spec": {"containers": [{"name": "c", "image": "i", "futureField": True}]}}  # fmt: skip
        ref = wg.new_controller_ref("apps/v1", "ReplicaSet", {"name": "rs", "uid": "u"})
        p = wg.pod.pod_from_template(t, "ns", "rs", ref)
        self.assertEqual(p["metadata"]["generateName"], "rs-")
        self.assertEqual(p["metadata"]["namespace"], "ns")
        self.assertEqual(p["metadata"]["annotations"]["a"], "b")
        self.assertEqual(p["metadata"]["ownerReferences"][0]["uid"], "u")
        self.assertTrue(p["spec"]["containers"][0]["futureField"])
        p["spec"]["containers"][0]["image"] = "changed"
        self.assertEqual(t["spec"]["containers"][0]["image"], "i", "the pod is a copy")
        with self.assertRaises(wg.Permanent) as raised:
            wg.pod.pod_from_template({"spec": {}}, "ns", "rs", ref)
        self.assertEqual(raised.exception.message, "unable to create pods, no labels")
        self.assertEqual(wg.pod._pod_name_prefix("Bad_Name"), "Bad_Name")
        self.assertEqual(wg.pod.pod_from_template({"metadata": {"labels": {"a": "b"}}}, "n", "p", ref)["spec"], {})


class MetaTests(unittest.TestCase):
    def test_time_round_trips_and_formats_as_kubernetes(self) -> None:
        t = Instant.parse_rfc3339("2026-01-02T03:04:05.5Z")
        self.assertEqual((t.nanoseconds, t.rfc3339(), t.time()), (500_000_000, "2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05Z"))
        self.assertEqual(Instant.parse_rfc3339("2026-01-02T04:04:05+01:00").seconds, Instant.parse_rfc3339("2026-01-02T03:04:05Z").seconds)
        self.assertEqual(Instant(10).since("1970-01-01T00:00:04Z"), 6.0)
        with self.assertRaises(ValueError):
            Instant.parse_rfc3339("yesterday")

    def test_conditions_keep_their_transition_time_unless_the_status_changes(self) -> None:
        now = Instant.parse_rfc3339("2026-11-26T08:00:00Z")
        later = Instant.parse_rfc3339("2026-11-26T09:00:00Z")
        conditions: list = []
        self.assertTrue(wg.set_condition(conditions, wg.condition("Ready", "False", "Unavailable", "", now, 1)))
        self.assertFalse(wg.set_condition(conditions, wg.condition("Ready", "False", "Unavailable", "", later, 1)))
        self.assertEqual(conditions[0]["lastTransitionTime"], "2026-11-26T08:00:00Z")
        self.assertTrue(wg.set_condition(conditions, wg.condition("Ready", "True", "Available", "", later, 1)))
        self.assertEqual(conditions[0]["lastTransitionTime"], "2026-11-26T09:00:00Z")
        self.assertTrue(wg.set_condition(conditions, wg.condition("Progressing", "False", "Complete", "", later)))
        self.assertEqual([c["type"] for c in conditions], ["Ready", "Progressing"])
        self.assertNotIn("observedGeneration", conditions[1])
        self.assertTrue(wg.is_condition_true(conditions, "Ready"))

    def test_finalizers_null_is_empty_and_other_shapes_are_refused(self) -> None:
        raw = {"metadata": {"finalizers": None}}
        self.assertFalse(wg.remove_finalizer(raw, "a.io/b"))
        self.assertTrue(wg.add_finalizer(raw, "a.io/b"))
        self.assertFalse(wg.add_finalizer(raw, "a.io/b"))
        self.assertEqual(raw["metadata"]["finalizers"], ["a.io/b"])
        self.assertTrue(wg.has_finalizer(raw["metadata"], "a.io/b"))
        self.assertTrue(wg.remove_finalizer(raw, "a.io/b"))
        with self.assertRaises(wg.Permanent):
            wg.add_finalizer({"metadata": {"finalizers": "a.io/b"}}, "a.io/b")

    def test_claim_follows_controller_ref_manager(self) -> None:
        def meta(uid: str, owner=None, **extra) -> dict:
            refs = [] if owner is None else [{"uid": owner, "controller": True}]
            return {"uid": uid, "namespace": "ns", "ownerReferences": refs, **extra}

        owner = meta("rs")
        self.assertEqual(wg.claim(owner, meta("p", "rs"), True), Claim.OWNED)
        self.assertEqual(wg.claim(owner, meta("p", "rs"), False), Claim.RELEASE)
        self.assertEqual(wg.claim(owner, meta("p", "other"), True), Claim.IGNORE)
        self.assertEqual(wg.claim(owner, meta("p"), True), Claim.ADOPT)
        self.assertEqual(wg.claim(owner, meta("p"), False), Claim.IGNORE)
        self.assertEqual(wg.claim(owner, meta("p", deletionTimestamp="t"), True), Claim.IGNORE)
        self.assertEqual(wg.claim(meta("rs", deletionTimestamp="t"), meta("p", "rs"), False), Claim.IGNORE)
        self.assertEqual(wg.claim(owner, {**meta("p"), "namespace": "other"}, True), Claim.IGNORE)
        ref = wg.new_controller_ref("apps/v1", "ReplicaSet", {"name": "rs", "uid": "u1"})
        adopted = wg.with_owner_ref({"metadata": {"name": "p", "ownerReferences": [{"uid": "other"}]}, "extra": 1}, ref)
        self.assertEqual(adopted["metadata"]["ownerReferences"][1], {**ref, "controller": True, "blockOwnerDeletion": True})
        self.assertEqual(wg.without_owner_ref(adopted, "u1")["metadata"]["ownerReferences"], [{"uid": "other"}])
        self.assertEqual(wg.controller_uid(adopted["metadata"]), None)

    def test_merge_patch(self) -> None:
        v = {"a": {"b": 1, "c": 2}, "d": [1], "e": 3}
        self.assertEqual(wg.merge_patch(v, {"a": {"b": 9, "c": None}, "d": [2, 3], "f": {"g": 1}}), {"a": {"b": 9}, "d": [2, 3], "e": 3, "f": {"g": 1}})


class ContractTests(unittest.TestCase):
    def test_outcomes_skip_empty_batches_and_intents_take_objects_or_json(self) -> None:
        o = Outcome().push_batch([wg.Create('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}')]).push_batch([])
        o.push_batch([wg.UpdateStatus({"apiVersion": "example.com/v1", "kind": "Greeting"})]).requeue_after(30_000)
        self.assertEqual((len(o.batches), len(list(o.intents())), o.requeue_after_ms), (2, 2, 30_000))
        with self.assertRaises(wg.Permanent):
            wg.Update("[1]")

    def test_patches_and_deletes_carry_what_contract_0_4_0_added(self) -> None:
        self.assertEqual(wg.CONTRACT_VERSION, "0.4.0")
        pod = wg.ObjectRef(Kind("v1", "Pod"), "demo", "pi-x7k2q")
        labelled = wg.Patch.merge(pod, {"metadata": {"labels": {"tier": "web"}}}).with_resource_version("42")
        self.assertEqual(
            (labelled.patch_type, labelled.body, labelled.resource_version, labelled.status),
            (wg.PatchType.MERGE, '{"metadata":{"labels":{"tier":"web"}}}', "42", False),
        )
        status = wg.Patch.strategic(pod, {"status": {"phase": "Failed"}}).to_status()
        self.assertEqual((status.patch_type, status.status, status.resource_version), (wg.PatchType.STRATEGIC, True, None))
        ops = wg.Patch.json(pod, ({"op": "remove", "path": "/metadata/annotations/old"},))
        self.assertEqual((ops.patch_type, ops.body), (wg.PatchType.JSON, '[{"op":"remove","path":"/metadata/annotations/old"}]'))
        # A JSON patch is a list of operations, the others an object: a slip fails the reconcile
        # for good, here rather than as the server's 400 later.
        with self.assertRaises(wg.Permanent):
            wg.Patch.json(pod, {"op": "remove"})
        with self.assertRaises(wg.Permanent):
            wg.Patch.merge(pod, [{"op": "remove"}])
        unpinned = wg.remove_finalizer_patch(pod, "batch.kubernetes.io/job-tracking")
        self.assertEqual(unpinned.patch_type, wg.PatchType.STRATEGIC)
        self.assertEqual(json.loads(unpinned.body), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"]}})
        self.assertIsNone(wg.Delete(pod).propagation)
        self.assertEqual(wg.Delete(pod, propagation=wg.Propagation.BACKGROUND).propagation.value, "Background")
        o = Outcome().push_batch([labelled, wg.Delete(pod, "u1", wg.Propagation.ORPHAN)])
        self.assertEqual([type(i).__name__ for i in o.intents()], ["Patch", "Delete"])

    def test_errors_say_whether_to_retry(self) -> None:
        self.assertTrue(wg.Retryable("later").retryable)
        self.assertFalse(wg.Permanent("never").retryable)
        self.assertFalse(wg.SandboxError("no clock").retryable)

    def test_json_is_written_as_serde_json_writes_it(self) -> None:
        self.assertEqual(wg.dumps({"b": 1, "a": ["é", None, True]}), '{"a":["é",null,true],"b":1}')

    def test_native_export_checks_describe(self) -> None:
        class Broken(wg.Plugin):
            def describe(self):
                return "not info"

            def reconcile(self, request, cache):
                return Outcome()

        with self.assertRaises(TypeError):
            wg.export(Broken)
        self.assertFalse(wg.IN_COMPONENT)


if __name__ == "__main__":
    unittest.main()
