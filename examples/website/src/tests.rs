//! The plugin's logic natively, against an in-memory cache: `cargo test`.

use serde_json::{Value, json};
use wasmcm_guest::{Instant, Intent, MemoryCache, Outcome, Request};

use crate::children::VERSION_ANNOTATION;
use crate::*;

const UID: &str = "5e1f0000-0000-4000-8000-000000000001";

fn now() -> Instant {
    Instant::parse_rfc3339("2026-11-26T08:00:00Z").unwrap()
}

fn website(finalizers: &[&str]) -> Value {
    json!({
        "apiVersion": "example.wasmcm.dev/v1", "kind": "Website",
        "metadata": {"name": "blog", "namespace": "web", "uid": UID, "generation": 1,
                     "resourceVersion": "10", "finalizers": finalizers},
        "spec": {"image": "nginx:1.27", "replicas": 2, "content": "<h1>Hello</h1>"},
    })
}

fn run(objects: &[Value]) -> Outcome {
    run_with(objects, "{}")
}

fn run_with(objects: &[Value], settings: &str) -> Outcome {
    let cache = MemoryCache::from_objects(objects).unwrap();
    let mut request = Request::new("web", "blog", now());
    request.settings = settings.into();
    reconcile(&request, &cache).unwrap()
}

/// Each batch as (verb, kind, name) triples, and the objects written.
fn summary(outcome: &Outcome) -> Vec<Vec<(String, String, String)>> {
    outcome
        .batches
        .iter()
        .map(|batch| {
            batch
                .iter()
                .map(|intent| {
                    let (verb, json) = match intent {
                        Intent::Create(o) => ("create", o),
                        Intent::Update(o) => ("update", o),
                        Intent::UpdateStatus(o) => ("update-status", o),
                        other => panic!("unexpected intent {other:?}"),
                    };
                    let o: Value = serde_json::from_str(json).unwrap();
                    (verb.into(), o["kind"].as_str().unwrap().into(), o["metadata"]["name"].as_str().unwrap().into())
                })
                .collect()
        })
        .collect()
}

fn written(outcome: &Outcome, kind: &str, name: &str) -> Value {
    outcome
        .intents()
        .find_map(|intent| {
            let (Intent::Create(o) | Intent::Update(o) | Intent::UpdateStatus(o)) = intent else { return None };
            let o: Value = serde_json::from_str(o).unwrap();
            (o["kind"] == kind && o["metadata"]["name"] == name).then_some(o)
        })
        .unwrap_or_else(|| panic!("no write of {kind} {name} in {outcome:?}"))
}

fn triple(verb: &str, kind: &str, name: &str) -> (String, String, String) {
    (verb.into(), kind.into(), name.into())
}

/// The children as the API server holds them after the plugin created them: with defaults
/// it did not write, and the Deployment's status as given.
fn live_children(replicas: i32, ready: i32, image: &str) -> Vec<Value> {
    let site: Website = serde_json::from_value(website(&[FINALIZER])).unwrap();
    let mut content = children::content(&site).unwrap();
    content["metadata"]["resourceVersion"] = json!("11");
    let mut deployment = children::deployment(&site).unwrap();
    deployment["metadata"]["resourceVersion"] = json!("12");
    deployment["metadata"]["generation"] = json!(1);
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    deployment["spec"]["strategy"] = json!({"type": "RollingUpdate"});
    deployment["status"] = json!({"observedGeneration": 1, "replicas": replicas, "readyReplicas": ready,
                                  "updatedReplicas": replicas, "availableReplicas": ready});
    let registry = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": DEFAULT_REGISTRY, "namespace": "web", "resourceVersion": "13"},
        "data": {"blog": "nginx:1.27", "shop": "nginx:1.26"}});
    vec![content, deployment, registry]
}

/// `site` and `others`, as one cache's objects.
fn with(site: impl std::borrow::Borrow<Value>, others: Vec<Value>) -> Vec<Value> {
    [vec![site.borrow().clone()], others].concat()
}

fn with_status(mut site: Value, outcome: &Outcome) -> Value {
    site["status"] = written(outcome, "Website", "blog")["status"].clone();
    site
}

#[test]
fn describes_a_plugin_for_websites() {
    use wasmcm_guest::Controller;
    let info = WebsiteController::describe();
    assert_eq!(info.primary, wasmcm_guest::Kind::new("example.wasmcm.dev/v1", "Website"));
    assert_eq!(info.version, VERSION);
    assert!(info.writes.contains(&info.primary), "the finalizer and status are writes of the Website");
}

#[test]
fn a_new_website_gets_the_finalizer_and_nothing_else() {
    let outcome = run(&[website(&[])]);
    assert_eq!(summary(&outcome), [vec![triple("update", "Website", "blog")]]);
    let site = written(&outcome, "Website", "blog");
    assert_eq!(site["metadata"]["finalizers"], json!([FINALIZER]));
    assert_eq!(site["metadata"]["resourceVersion"], "10", "the update is preconditioned on what was read");
}

#[test]
fn then_children_and_registry_entry_are_created_before_status() {
    let outcome = run(&[website(&[FINALIZER])]);
    assert_eq!(
        summary(&outcome),
        [
            vec![
                triple("create", "ConfigMap", "blog-content"),
                triple("create", "Deployment", "blog"),
                triple("create", "ConfigMap", DEFAULT_REGISTRY),
            ],
            vec![triple("update-status", "Website", "blog")],
        ]
    );
    let deployment = written(&outcome, "Deployment", "blog");
    let owner = &deployment["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["uid"], &owner["controller"], &owner["blockOwnerDeletion"]),
        (&json!("Website"), &json!(UID), &json!(true), &json!(true))
    );
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"], "blog-content");
    let content = written(&outcome, "ConfigMap", "blog-content");
    assert_eq!(content["metadata"]["ownerReferences"][0]["uid"], UID);
    assert!(content["data"]["index.html"].as_str().unwrap().starts_with("<h1>Hello</h1>"));
    let registry = written(&outcome, "ConfigMap", DEFAULT_REGISTRY);
    assert_eq!(registry["data"], json!({"blog": "nginx:1.27"}));
    assert!(registry["metadata"].get("ownerReferences").is_none(), "the registry is shared, owned by no Website");

    let status = &written(&outcome, "Website", "blog")["status"];
    assert_eq!(status["observedGeneration"], 1);
    let conditions = status["conditions"].as_array().unwrap();
    assert_eq!(conditions[0]["type"], "Ready");
    assert_eq!(conditions[0]["status"], "False");
    assert_eq!(conditions[1]["type"], "Progressing");
    assert_eq!(conditions[1]["status"], "True");
    assert_eq!(conditions[1]["reason"], "Creating");
    assert_eq!(conditions[1]["lastTransitionTime"], "2026-11-26T08:00:00Z");
}

#[test]
fn status_follows_the_deployment_and_settles() {
    let site = website(&[FINALIZER]);
    let rolling = run(&with(&site, live_children(1, 0, "nginx:1.27")));
    assert_eq!(summary(&rolling), [vec![triple("update-status", "Website", "blog")]], "no child needs a write");
    let site = with_status(site, &rolling);
    assert_eq!(site["status"]["conditions"][1]["reason"], "RollingOut");
    assert_eq!(site["status"]["conditions"][0]["message"], "0/2 replicas ready");

    let ready = run(&with(&site, live_children(2, 2, "nginx:1.27")));
    let site = with_status(site, &ready);
    assert_eq!(site["status"]["readyReplicas"], 2);
    let ready_condition = &site["status"]["conditions"][0];
    assert_eq!((&ready_condition["status"], &ready_condition["reason"]), (&json!("True"), &json!("Available")));
    assert_eq!(site["status"]["conditions"][1]["reason"], "Complete");

    // Nothing changed: nothing to write, not even a status with a new time.
    let settled = run(&with(site, live_children(2, 2, "nginx:1.27")));
    assert_eq!(settled, Outcome::default());
}

#[test]
fn transition_times_move_only_when_a_status_changes() {
    let mut site = website(&[FINALIZER]);
    site["status"] = json!({"observedGeneration": 1, "replicas": 1, "readyReplicas": 0, "updatedReplicas": 1,
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Unavailable", "message": "0/2 replicas ready",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"},
            {"type": "Progressing", "status": "True", "reason": "RollingOut", "message": "1/2 updated, 0/2 replicas ready",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"}]});
    let outcome = run(&with(site, live_children(2, 1, "nginx:1.27")));
    let conditions = &written(&outcome, "Website", "blog")["status"]["conditions"];
    assert_eq!(conditions[0]["message"], "1/2 replicas ready");
    assert_eq!(conditions[0]["lastTransitionTime"], "2026-11-26T07:00:00Z", "still False");
}

#[test]
fn a_spec_change_updates_only_the_fields_the_plugin_owns() {
    let mut site = website(&[FINALIZER]);
    site["metadata"]["generation"] = json!(2);
    site["spec"]["image"] = json!("nginx:1.28");
    site["spec"]["replicas"] = json!(3);
    let outcome = run(&with(site, live_children(2, 2, "nginx:1.27")));
    assert_eq!(
        summary(&outcome),
        [
            vec![triple("update", "Deployment", "blog"), triple("update", "ConfigMap", DEFAULT_REGISTRY)],
            vec![triple("update-status", "Website", "blog")],
        ]
    );
    let deployment = written(&outcome, "Deployment", "blog");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.28");
    assert_eq!(container["imagePullPolicy"], "IfNotPresent", "the API server's defaults are kept");
    assert_eq!(deployment["metadata"]["resourceVersion"], "12");
    let registry = written(&outcome, "ConfigMap", DEFAULT_REGISTRY);
    assert_eq!(registry["data"], json!({"blog": "nginx:1.28", "shop": "nginx:1.26"}));
    let status = &written(&outcome, "Website", "blog")["status"];
    assert_eq!(status["observedGeneration"], 2);
    assert_eq!(status["conditions"][0]["status"], "False", "not ready while the new spec rolls out");
}

#[test]
fn deletion_removes_the_registry_entry_then_the_finalizer() {
    let mut site = website(&["other.io/keep", FINALIZER]);
    site["metadata"]["deletionTimestamp"] = json!("2026-11-26T07:59:00Z");
    let outcome = run(&with(site, live_children(2, 2, "nginx:1.27")));
    assert_eq!(
        summary(&outcome),
        [vec![triple("update", "ConfigMap", DEFAULT_REGISTRY)], vec![triple("update", "Website", "blog")]]
    );
    assert_eq!(written(&outcome, "ConfigMap", DEFAULT_REGISTRY)["data"], json!({"shop": "nginx:1.26"}));
    assert_eq!(written(&outcome, "Website", "blog")["metadata"]["finalizers"], json!(["other.io/keep"]));
}

#[test]
fn deletion_without_an_entry_only_removes_the_finalizer_and_without_it_does_nothing() {
    let mut site = website(&[FINALIZER]);
    site["metadata"]["deletionTimestamp"] = json!("2026-11-26T07:59:00Z");
    let outcome = run(std::slice::from_ref(&site));
    assert_eq!(summary(&outcome), [vec![triple("update", "Website", "blog")]]);
    site["metadata"]["finalizers"] = json!(["other.io/keep"]);
    assert_eq!(run(&[site]), Outcome::default());
}

#[test]
fn a_child_of_someone_else_is_left_alone_and_reported() {
    let mut objects = live_children(2, 2, "nginx:1.27");
    objects[1]["metadata"]["ownerReferences"] = json!([]);
    objects[1]["spec"]["replicas"] = json!(9);
    let outcome = run(&with(website(&[FINALIZER]), objects));
    assert_eq!(summary(&outcome), [vec![triple("update-status", "Website", "blog")]]);
    let ready = &written(&outcome, "Website", "blog")["status"]["conditions"][0];
    assert_eq!(ready["reason"], "ChildConflict");
    assert!(ready["message"].as_str().unwrap().contains("Deployment blog exists"), "{ready}");
}

#[test]
fn the_registry_is_named_by_the_settings() {
    let outcome = run_with(&[website(&[FINALIZER])], r#"{"registry": "sites"}"#);
    assert_eq!(written(&outcome, "ConfigMap", "sites")["data"], json!({"blog": "nginx:1.27"}));
    let cache = MemoryCache::from_objects(&[website(&[FINALIZER])]).unwrap();
    let mut request = Request::new("web", "blog", now());
    request.settings = r#"{"registry": 7}"#.into();
    assert!(!reconcile(&request, &cache).unwrap_err().retryable);
}

#[test]
fn every_child_names_the_release_that_wrote_it() {
    let outcome = run(&[website(&[FINALIZER])]);
    for (kind, name) in [("ConfigMap", "blog-content"), ("Deployment", "blog")] {
        assert_eq!(written(&outcome, kind, name)["metadata"]["annotations"][VERSION_ANNOTATION], VERSION);
    }
    let page = written(&outcome, "ConfigMap", "blog-content")["data"]["index.html"].as_str().unwrap().to_string();
    assert_eq!(page.contains("<footer>served by website 0.2.0</footer>"), cfg!(feature = "v2"), "{page}");
}

#[test]
fn a_new_release_updates_the_children_it_wrote() {
    let mut objects = live_children(2, 2, "nginx:1.27");
    objects[0]["metadata"]["annotations"][VERSION_ANNOTATION] = json!("0.0.9");
    objects[1]["metadata"]["annotations"][VERSION_ANNOTATION] = json!("0.0.9");
    let outcome = run(&with(website(&[FINALIZER]), objects));
    let updated: Vec<_> = summary(&outcome)[0].iter().map(|(verb, _, name)| format!("{verb} {name}")).collect();
    assert_eq!(updated, ["update blog-content", "update blog"]);
}
