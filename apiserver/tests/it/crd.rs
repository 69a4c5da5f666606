//! Custom resources held to their CRD's structural schema, through the real kubectl and
//! kube-rs: upstream's 422 texts for invalid objects, pruning and defaulting, the
//! `fieldValidation` directives (kubectl's --validate=strict|warn|false), status validation,
//! and the scale subresource at the CRD's paths.

use std::path::Path;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmcm_apiserver::Cluster;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            properties:
              image: {type: string, minLength: 1}
              replicas: {type: integer, format: int32, minimum: 0, default: 1}
              mode: {type: string, enum: [fast, safe], default: fast}
              size: {x-kubernetes-int-or-string: true}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas: {type: integer, minimum: 0}
";

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let out = wasmcm_test_support::kubectl(kubeconfig, args, stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

async fn with_crd() -> (Cluster, kube::Client) {
    let (cluster, client) = wasmcm_test_support::cluster().await;
    let kc = cluster.kubeconfig.clone();
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(CRD))).await.unwrap();
    assert!(ok, "the CRD applies: {err}");
    (cluster, client)
}

fn widgets(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    Api::namespaced_with(client.clone(), "default", &ar)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_upstreams_error_for_an_invalid_custom_resource() {
    let (cluster, _client) = with_crd().await;
    let kc = cluster.kubeconfig.clone();
    let bad = widget("w1", "  image: 5\n");
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "The Widget \"w1\" is invalid: spec.image: Invalid value: \"integer\": spec.image in body must be of type \
         string: \"integer\""
    );

    // A replicas path of the scale subresource is also read as the scale reads it.
    let kc = cluster.kubeconfig.clone();
    let bad = widget("w1", "  image: nginx\n  replicas: three\n");
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "The Widget \"w1\" is invalid: \n\
         * spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"\n\
         * .spec.replicas: Invalid value: 0: .spec.replicas accessor error: three is of the type string, expected int64"
    );

    let kc = cluster.kubeconfig.clone();
    let bad = widget("w2", "  replicas: -1\n  mode: slow\n  tags: [a, b, a]\n");
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["create", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    for line in [
        "* spec.image: Required value",
        "* spec.mode: Unsupported value: \"slow\": supported values: \"fast\", \"safe\"",
        "* spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        "* .spec.replicas: Invalid value: -1: should be a non-negative integer",
        "* spec.tags[2]: Duplicate value: \"a\"",
    ] {
        assert!(err.contains(line), "{line:?} in {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_custom_resource_is_defaulted_and_pruned() {
    let (cluster, _client) = with_crd().await;
    let kc = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let good = widget("w1", "  image: nginx\n  size: 10%\n  colour: red\n  extra: {anything: {goes: 1}}\n");
        // --validate=false is fieldValidation=Ignore: unknown fields dropped silently.
        let (ok, _, err) = kubectl(&kc, &["apply", "--validate=false", "-f", "-"], Some(&good));
        assert!(ok, "{err}");
        assert!(!err.contains("Warning"), "{err}");
        let got: Value = serde_json::from_str(&stdout_of(&kc, &["get", "widget", "w1", "-o", "json"])).unwrap();
        assert_eq!(
            got["spec"],
            json!({"image": "nginx", "size": "10%", "replicas": 1, "mode": "fast", "extra": {"anything": {"goes": 1}}})
        );
    })
    .await
    .unwrap();
}

fn stdout_of(kubeconfig: &Path, args: &[&str]) -> String {
    let (ok, out, err) = kubectl(kubeconfig, args, None);
    assert!(ok, "{err}");
    out
}

/// kubectl validates an object whose group version the OpenAPI v3 index lacks (a CRD applied in
/// the same command, a mistyped apiVersion) against `/openapi/v2`, which it reads in protobuf
/// only; a JSON answer fails every such apply with "proto: cannot parse invalid wire-format
/// data" before the server is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_validates_a_group_version_v3_lacks_through_the_protobuf_openapi_v2() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let kc = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let both = format!("{CRD}---\n{}", widget("w1", "  image: nginx\n"));
        let (ok, out, err) = kubectl(&kc, &["apply", "-f", "-"], Some(&both));
        // As on any cluster: the CRD is created, its kind is not mapped yet in this command.
        assert!(!ok);
        assert!(!err.contains("error validating data"), "{err}");
        assert!(err.contains("ensure CRDs are installed first"), "{err}");
        assert_eq!(out.trim(), "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created");

        let mistyped = widget("w1", "  image: nginx\n").replace("example.com/v1", "example.com/v9");
        let (ok, _, err) = kubectl(&kc, &["apply", "-f", "-"], Some(&mistyped));
        assert!(!ok);
        assert!(err.contains("no matches for kind \"Widget\" in version \"example.com/v9\""), "{err}");

        let (ok, out, err) = kubectl(&kc, &["apply", "-f", "-"], Some(&widget("w1", "  image: nginx\n")));
        assert!(ok, "{err}");
        assert_eq!(out.trim(), "widget.example.com/w1 created");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_validate_strict_refuses_and_warn_warns_about_unknown_fields() {
    let (cluster, _client) = with_crd().await;
    let kc = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let with_unknown = widget("w1", "  image: nginx\n  colour: red\n");
        let (ok, _, err) = kubectl(&kc, &["apply", "--validate=strict", "-f", "-"], Some(&with_unknown));
        assert!(!ok);
        assert_eq!(
            err.trim(),
            "Error from server (BadRequest): error when creating \"STDIN\": Widget in version \"v1\" cannot be \
             handled as a Widget: strict decoding error: unknown field \"spec.colour\""
        );

        let (ok, out, err) = kubectl(&kc, &["apply", "--validate=warn", "-f", "-"], Some(&with_unknown));
        assert!(ok, "{err}");
        assert_eq!(err.trim(), "Warning: unknown field \"spec.colour\"");
        assert_eq!(out.trim(), "widget.example.com/w1 created");

        // An existing object: kubectl applies with a merge patch, refused on `patch`.
        let changed = widget("w1", "  image: nginx:2\n  shade: dark\n");
        let (ok, _, err) = kubectl(&kc, &["apply", "--validate=strict", "-f", "-"], Some(&changed));
        assert!(!ok);
        assert!(err.contains("strict decoding error: unknown field \"spec.shade\""), "{err}");
        assert!(err.contains("is invalid: patch: Invalid value: "), "{err}");
        let got: Value = serde_json::from_str(&stdout_of(&kc, &["get", "widget", "w1", "-o", "json"])).unwrap();
        assert_eq!(got["spec"]["image"], "nginx", "a refused patch changes nothing");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_gets_422_causes_status_validation_and_defaults_on_read() {
    let (_cluster, client) = with_crd().await;
    let api = widgets(&client);
    let bad: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"image": "nginx", "replicas": 2.5, "size": true}}))
    .unwrap();
    let kube::Error::Api(e) = api.create(&PostParams::default(), &bad).await.unwrap_err() else { panic!() };
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "Widget.example.com \"w1\" is invalid: [spec.replicas: Invalid value: \"float64\": spec.replicas in body \
         must be of type int32: \"float64\", <nil>: Invalid value: \"\": Checked value must be of type integer with \
         format int32 in spec.replicas, spec.size: Invalid value: \"boolean\": spec.size in body must be of type \
         integer,string: \"boolean\", .spec.replicas: Invalid value: 0: .spec.replicas accessor error: 2.5 is of \
         the type float64, expected int64]"
    );
    // The Status's details carry one cause per error, as kube-apiserver's.
    let req = http::Request::builder()
        .method("POST")
        .uri("/apis/example.com/v1/namespaces/default/widgets")
        .header("Content-Type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(&bad).unwrap()))
        .unwrap();
    let status: Value = match client.send(req).await {
        Ok(resp) => {
            use http_body_util::BodyExt;
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            serde_json::from_slice(&body).unwrap()
        }
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldValueTypeInvalid", "field": "spec.replicas",
        "message": "Invalid value: \"float64\": spec.replicas in body must be of type int32: \"float64\""})
    );

    let good: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"image": "nginx"}}))
    .unwrap();
    let created = api.create(&PostParams::default(), &good).await.unwrap();
    assert_eq!(created.data["spec"]["replicas"], 1);
    assert_eq!(created.metadata.generation, Some(1));

    let status_patch = json!({"status": {"replicas": -1}});
    let kube::Error::Api(e) =
        api.patch_status("w1", &PatchParams::default(), &Patch::Merge(&status_patch)).await.unwrap_err()
    else {
        panic!()
    };
    assert_eq!(
        e.message,
        "Widget.example.com \"w1\" is invalid: [status.replicas: Invalid value: -1: replicas in body should be \
         greater than or equal to 0, .status.replicas: Invalid value: -1: should be a non-negative integer]"
    );

    // The schema gains a default: objects already stored are read with it.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let patch = json!([{"op": "add",
        "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tier",
        "value": {"type": "string", "default": "gold"}}]);
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(patch).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(api.get("w1").await.unwrap().data["spec"]["tier"], "gold");
    let listed = api.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"]["tier"], "gold", "lists default as they read");

    // The schema tightens: the stored value may stay as it is while others change (ratcheting).
    let patch = json!([{"op": "add",
        "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/image/maxLength", "value": 3}]);
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(patch).unwrap()),
    )
    .await
    .unwrap();
    let changed =
        api.patch("w1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"mode": "safe"}}))).await.unwrap();
    assert_eq!(changed.data["spec"]["mode"], "safe");
    assert_eq!(changed.metadata.generation, Some(2), "a spec change bumps the generation");
    let kube::Error::Api(e) = api
        .patch("w1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"image": "nginx:2"}})))
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!(e.message, "Widget.example.com \"w1\" is invalid: spec.image: Too long: may not be more than 3 bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_of_a_custom_resource_omits_the_selector_it_does_not_have() {
    let (_cluster, client) = with_crd().await;
    let api = widgets(&client);
    let w: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"image": "nginx", "replicas": 2}}))
    .unwrap();
    api.create(&PostParams::default(), &w).await.unwrap();
    let req = http::Request::builder()
        .uri("/apis/example.com/v1/namespaces/default/widgets/w1/scale")
        .body(Vec::new())
        .unwrap();
    let scale: Value = client.request(req).await.unwrap();
    assert_eq!(scale["spec"], json!({"replicas": 2}));
    assert_eq!(scale["status"], json!({"replicas": 0}), "no labelSelectorPath: no selector");

    let scaled =
        api.patch_scale("w1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 5}}))).await.unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(api.get("w1").await.unwrap().data["spec"]["replicas"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_kinds_get_the_same_field_validation() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let kc = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  colour: red\ndata: {k: v}\nextra: 1\n";
        let (ok, _, err) = kubectl(&kc, &["apply", "--validate=strict", "-f", "-"], Some(cm));
        assert!(!ok);
        assert_eq!(
            err.trim(),
            "Error from server (BadRequest): error when creating \"STDIN\": ConfigMap in version \"v1\" cannot be \
             handled as a ConfigMap: strict decoding error: unknown field \"extra\", unknown field \"metadata.colour\""
        );
        let (ok, _, err) = kubectl(&kc, &["apply", "--validate=warn", "-f", "-"], Some(cm));
        assert!(ok, "{err}");
        assert_eq!(err.trim(), "Warning: unknown field \"extra\"\nWarning: unknown field \"metadata.colour\"");
        let got: Value = serde_json::from_str(&stdout_of(&kc, &["get", "configmap", "c", "-o", "json"])).unwrap();
        assert!(got.get("extra").is_none() && got["metadata"].get("colour").is_none(), "{got}");
        assert_eq!(got["data"], json!({"k": "v"}));
    })
    .await
    .unwrap();
}

/// `uniqueItems: true` costs a comparison of every pair of items on each write: upstream
/// refuses it in a CRD (list-type `set` is the linear way to say it), and so does this server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_asking_for_unique_items_is_refused_as_upstream_refuses_it() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let kc = cluster.kubeconfig.clone();
    let bad = CRD.replace("                x-kubernetes-list-type: set\n", "                uniqueItems: true\n");
    assert_ne!(bad, CRD);
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "The CustomResourceDefinition \"widgets.example.com\" is invalid: \
         spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: \
         uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_whose_schema_is_not_structural_is_refused_as_upstream_refuses_it() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let kc = cluster.kubeconfig.clone();
    let bad = CRD.replace("              image: {type: string, minLength: 1}", "              image: {minLength: 1}").replace(
        "              replicas: {type: integer, format: int32, minimum: 0, default: 1}",
        "              replicas: {type: integer, format: int32, minimum: 0, default: one}\n              list: {type: array}",
    );
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    let root = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties";
    assert_eq!(
        err.trim(),
        format!(
            "The CustomResourceDefinition \"widgets.example.com\" is invalid: \n\
             * {root}[image].type: Required value: must not be empty for specified object fields\n\
             * {root}[list].items: Required value: must be specified"
        )
    );

    // Structural, but a default of the wrong type.
    let kc = cluster.kubeconfig.clone();
    let bad = CRD.replace("default: 1}", "default: one}");
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || kubectl(&kc, &["apply", "-f", "-"], Some(&bad))).await.unwrap();
    assert!(!ok);
    assert_eq!(
        err.trim(),
        format!(
            "The CustomResourceDefinition \"widgets.example.com\" is invalid: {root}[replicas].default: Invalid \
             value: \"string\":  in body must be of type integer: \"string\""
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_refuses_undeclared_fields_as_its_field_manager_does() {
    let (cluster, _client) = with_crd().await;
    let kc = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let w = widget("w1", "  image: nginx\n  colour: red\n");
        let (ok, _, err) = kubectl(&kc, &["apply", "--server-side", "--validate=false", "-f", "-"], Some(&w));
        assert!(!ok);
        assert_eq!(
            err.trim(),
            "Error from server: failed to create typed patch object (default/w1; example.com/v1, Kind=Widget): \
             .spec.colour: field not declared in schema"
        );
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {k: v}\nextra: 1\n";
        let (ok, _, err) = kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(cm));
        assert!(!ok);
        assert_eq!(
            err.trim(),
            "Error from server: failed to create typed patch object (default/c; /v1, Kind=ConfigMap): .extra: field \
             not declared in schema"
        );
        let good = widget("w1", "  image: nginx\n");
        let (ok, out, err) = kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(&good));
        assert!(ok, "{err}");
        assert_eq!(out.trim(), "widget.example.com/w1 serverside-applied");
    })
    .await
    .unwrap();
}

/// A custom kind that shares a built-in's name is selected by its own fields only: a `Pod` of
/// example.com is no v1 Pod, so `status.phase` selects nothing of it (upstream: 400, "field label
/// not supported"), while the v1 Pods' selector keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_kind_named_as_a_built_in_gets_only_its_own_field_selectors() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pods.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pods, singular: pod, kind: Pod}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
";
    let kubeconfig = cluster.kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let (ok, _, err) = kubectl(&kubeconfig, &["apply", "-f", "-"], Some(crd));
        assert!(ok, "{err}");
        let selected = |resource: &str| {
            let args = ["get", resource, "-A", "--field-selector", "status.phase=Running"];
            (0..50)
                .map(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    kubectl(&kubeconfig, &args, None)
                })
                .find(|(_, _, err)| !err.contains("the server doesn't have a resource type"))
                .expect("the CRD is served")
        };
        let (ok, _, err) = selected("pods.example.com");
        assert!(!ok && err.contains("field label not supported: status.phase"), "{err}");
        let (ok, _, err) = selected("pods");
        assert!(ok, "{err}");
    })
    .await
    .unwrap();
}
