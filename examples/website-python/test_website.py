"""The plugin's logic natively, against the SDK's in-memory cache: ./test.sh (the Rust
example's src/tests.rs, case for case where they overlap)."""

from __future__ import annotations

import copy
import unittest

import children
import controller
import release
import wasmcm_guest as wg
from controller import DEFAULT_REGISTRY, FINALIZER, WebsitePlugin, reconcile
from wasmcm_guest import Instant, MemoryCache, Outcome, Request
from website import Website

UID = "5e1f0000-0000-4000-8000-000000000001"
NOW = Instant.parse_rfc3339("2026-11-26T08:00:00Z")


def website(finalizers: list[str]) -> dict:
    return {
        "apiVersion": "example.wasmcm.dev/v1",
        "kind": "Website",
        "metadata": {"name": "blog", "namespace": "web", "uid": UID, "generation": 1, "resourceVersion": "10", "finalizers": finalizers},
        "spec": {"image": "nginx:1.27", "replicas": 2, "content": "<h1>Hello</h1>"},
    }


def run(objects: list[dict], settings: str = "{}") -> Outcome:
    return reconcile(Request("web", "blog", NOW, settings=settings), MemoryCache(objects))


VERBS = {wg.Create: "create", wg.Update: "update", wg.UpdateStatus: "update-status"}


def summary(outcome: Outcome) -> list[list[tuple[str, str, str]]]:
    return [[(VERBS[type(i)], i.object["kind"], i.object["metadata"]["name"]) for i in batch] for batch in outcome.batches]


def written(outcome: Outcome, kind: str, name: str) -> dict:
    return next(i.object for i in outcome.intents() if i.object["kind"] == kind and i.object["metadata"]["name"] == name)


def live_children(replicas: int, ready: int, image: str) -> list[dict]:
    site = Website.from_json(website([FINALIZER]))
    content = children.content(site)
    content["metadata"]["resourceVersion"] = "11"
    deployment = children.deployment(site)
    deployment["metadata"].update(resourceVersion="12", generation=1)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(image=image, imagePullPolicy="IfNotPresent")
    deployment["spec"]["strategy"] = {"type": "RollingUpdate"}
    deployment["status"] = {"observedGeneration": 1, "replicas": replicas, "readyReplicas": ready, "updatedReplicas": replicas, "availableReplicas": ready}
    registry = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DEFAULT_REGISTRY, "namespace": "web", "resourceVersion": "13"},
        "data": {"blog": "nginx:1.27", "shop": "nginx:1.26"},
    }
    return [content, deployment, registry]


def with_status(site: dict, outcome: Outcome) -> dict:
    site = copy.deepcopy(site)
    site["status"] = written(outcome, "Website", "blog")["status"]
    return site


class WebsiteTests(unittest.TestCase):
    def test_describes_a_plugin_for_websites(self) -> None:
        info = WebsitePlugin().describe()
        self.assertEqual(info.primary, wg.Kind("example.wasmcm.dev/v1", "Website"))
        self.assertEqual(info.version, "0.1.0")
        self.assertIn(info.primary, info.writes, "the finalizer and status are writes of the Website")

    def test_a_new_website_gets_the_finalizer_and_nothing_else(self) -> None:
        outcome = run([website([])])
        self.assertEqual(summary(outcome), [[("update", "Website", "blog")]])
        site = written(outcome, "Website", "blog")
        self.assertEqual(site["metadata"]["finalizers"], [FINALIZER])
        self.assertEqual(site["metadata"]["resourceVersion"], "10", "the update is preconditioned on what was read")

    def test_then_children_and_registry_entry_are_created_before_status(self) -> None:
        outcome = run([website([FINALIZER])])
        self.assertEqual(
            summary(outcome),
            [
                [("create", "ConfigMap", "blog-content"), ("create", "Deployment", "blog"), ("create", "ConfigMap", DEFAULT_REGISTRY)],
                [("update-status", "Website", "blog")],
            ],
        )
        deployment = written(outcome, "Deployment", "blog")
        owner = deployment["metadata"]["ownerReferences"][0]
        self.assertEqual((owner["kind"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]), ("Website", UID, True, True))
        self.assertEqual(deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"], "blog-content")
        registry = written(outcome, "ConfigMap", DEFAULT_REGISTRY)
        self.assertEqual(registry["data"], {"blog": "nginx:1.27"})
        self.assertNotIn("ownerReferences", registry["metadata"], "the registry is shared, owned by no Website")
        conditions = written(outcome, "Website", "blog")["status"]["conditions"]
        self.assertEqual([(c["type"], c["status"]) for c in conditions], [("Ready", "False"), ("Progressing", "True")])
        self.assertEqual((conditions[1]["reason"], conditions[1]["lastTransitionTime"]), ("Creating", "2026-11-26T08:00:00Z"))

    def test_status_follows_the_deployment_and_settles(self) -> None:
        site = website([FINALIZER])
        rolling = run([site, *live_children(1, 0, "nginx:1.27")])
        self.assertEqual(summary(rolling), [[("update-status", "Website", "blog")]], "no child needs a write")
        site = with_status(site, rolling)
        self.assertEqual(site["status"]["conditions"][1]["reason"], "RollingOut")
        self.assertEqual(site["status"]["conditions"][0]["message"], "0/2 replicas ready")
        site = with_status(site, run([site, *live_children(2, 2, "nginx:1.27")]))
        self.assertEqual((site["status"]["conditions"][0]["reason"], site["status"]["conditions"][1]["reason"]), ("Available", "Complete"))
        # Nothing changed: nothing to write, not even a status with a new time.
        self.assertEqual(run([site, *live_children(2, 2, "nginx:1.27")]), Outcome())

    def test_transition_times_move_only_when_a_status_changes(self) -> None:
        site = website([FINALIZER])
        site["status"] = {
            "observedGeneration": 1, "replicas": 1, "readyReplicas": 0, "updatedReplicas": 1,
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "Unavailable", "message": "0/2 replicas ready", "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"},
                {"type": "Progressing", "status": "True", "reason": "RollingOut", "message": "1/2 updated, 0/2 replicas ready", "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"},
            ],
        }  # fmt: skip
        conditions = written(run([site, *live_children(2, 1, "nginx:1.27")]), "Website", "blog")["status"]["conditions"]
        self.assertEqual((conditions[0]["message"], conditions[0]["lastTransitionTime"]), ("1/2 replicas ready", "2026-11-26T07:00:00Z"))

    def test_a_spec_change_updates_only_the_fields_the_plugin_owns(self) -> None:
        site = website([FINALIZER])
        site["spec"]["image"] = "nginx:1.28"
        outcome = run([site, *live_children(2, 2, "nginx:1.27")])
        deployment = written(outcome, "Deployment", "blog")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual((container["image"], container["imagePullPolicy"]), ("nginx:1.28", "IfNotPresent"), "the API server's defaults stay")
        self.assertEqual(deployment["spec"]["strategy"], {"type": "RollingUpdate"})
        self.assertEqual(written(outcome, "ConfigMap", DEFAULT_REGISTRY)["data"], {"blog": "nginx:1.28", "shop": "nginx:1.26"})

    def test_deletion_removes_the_registry_entry_then_the_finalizer(self) -> None:
        site = website([FINALIZER])
        site["metadata"]["deletionTimestamp"] = "2026-11-26T07:59:00Z"
        outcome = run([site, *live_children(2, 2, "nginx:1.27")])
        self.assertEqual(summary(outcome), [[("update", "ConfigMap", DEFAULT_REGISTRY)], [("update", "Website", "blog")]])
        self.assertEqual(written(outcome, "ConfigMap", DEFAULT_REGISTRY)["data"], {"shop": "nginx:1.26"})
        self.assertEqual(written(outcome, "Website", "blog")["metadata"]["finalizers"], [])
        site["metadata"]["finalizers"] = []
        self.assertEqual(run([site]), Outcome(), "without its finalizer, nothing to do")

    def test_a_child_of_someone_else_is_left_alone_and_reported(self) -> None:
        content, deployment, registry = live_children(2, 2, "nginx:1.27")
        deployment["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
        outcome = run([website([FINALIZER]), content, deployment, registry])
        self.assertEqual(summary(outcome), [[("update-status", "Website", "blog")]])
        ready = written(outcome, "Website", "blog")["status"]["conditions"][0]
        self.assertEqual((ready["reason"], ready["message"]), ("ChildConflict", "Deployment blog exists and is not controlled by this Website"))

    def test_the_registry_is_named_by_the_settings(self) -> None:
        outcome = run([website([FINALIZER])], settings='{"registry": "sites"}')
        self.assertEqual(written(outcome, "ConfigMap", "sites")["data"], {"blog": "nginx:1.27"})
        with self.assertRaises(wg.Permanent) as refused:
            run([website([FINALIZER])], settings='{"registry": 7}')
        self.assertIn("settings", refused.exception.message)

    def test_a_new_release_updates_the_children_it_wrote(self) -> None:
        written_by_v1 = live_children(2, 2, "nginx:1.27")
        release.V2 = True
        try:
            outcome = run([website([FINALIZER]), *written_by_v1])
        finally:
            release.V2 = False
        content = written(outcome, "ConfigMap", "blog-content")
        self.assertEqual(content["data"]["index.html"], "<h1>Hello</h1>\n<footer>served by website 0.2.0</footer>\n")
        self.assertEqual(written(outcome, "Deployment", "blog")["metadata"]["annotations"][children.VERSION_ANNOTATION], "0.2.0")

    def test_the_export_serves_the_plugin(self) -> None:
        self.assertEqual(controller.Controller().describe().name, "website")


if __name__ == "__main__":
    unittest.main()
