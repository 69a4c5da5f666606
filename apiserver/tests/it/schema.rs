//! What the server writes and describes as kube-apiserver does: objects' JSON in Go's field
//! order with the trailing newline, the OpenAPI schemas `kubectl explain` prints, and strict
//! field validation of built-in kinds (`fieldValidation`, kubectl's `--validate`).

use std::process::Output;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use wasmcm_apiserver::Cluster;

fn kubectl(cluster: &Cluster, args: &[&str], stdin: Option<&str>) -> Output {
    wasmcm_test_support::kubectl(&cluster.kubeconfig, args, stdin)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The body of a GET, byte for byte.
async fn raw_get(client: &kube::Client, path: &str) -> String {
    let req = http::Request::builder().method("GET").uri(path).body(Vec::new()).unwrap();
    client.request_text(req).await.expect("GET succeeds")
}

/// `s` with each `(placeholder, value)` put in, JSON-escaped as Go writes strings.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values.iter().fold(template.to_owned(), |t, (k, v)| t.replace(k, v))
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_are_written_in_go_struct_order_with_a_trailing_newline() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "order", "labels": {"z": "1", "a": "2"}, "annotations": {"note": "<b>&</b>"}},
        "data": {"b": "2", "a": "1"},
        "immutable": false,
    }))
    .unwrap();
    let pp = PostParams { field_manager: Some("test".into()), ..Default::default() };
    cms.create(&pp, &cm).await.unwrap();
    let body = raw_get(&client, "/api/v1/namespaces/default/configmaps/order").await;
    let v: Value = serde_json::from_str(&body).unwrap();
    let meta = &v["metadata"];
    let s = |p: &str| meta.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
    // What kube-apiserver writes for this ConfigMap: TypeMeta, ObjectMeta and ConfigMap in Go's
    // field order (ConfigMap: immutable, data, binaryData), maps sorted, HTML characters
    // escaped, a newline after.
    let golden = fill(
        "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"order\",\"namespace\":\"default\",\
         \"uid\":\"UID\",\"resourceVersion\":\"RV\",\"creationTimestamp\":\"TS\",\"labels\":{\"a\":\"2\",\"z\":\"1\"},\
         \"annotations\":{\"note\":\"\\u003cb\\u003e\\u0026\\u003c/b\\u003e\"},\"managedFields\":[{\"manager\":\"test\",\
         \"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"TS\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":\
         {\"f:data\":{\".\":{},\"f:a\":{},\"f:b\":{}},\"f:immutable\":{},\"f:metadata\":{\"f:annotations\":{\".\":{},\
         \"f:note\":{}},\"f:labels\":{\".\":{},\"f:a\":{},\"f:z\":{}}}}}]},\"immutable\":false,\
         \"data\":{\"a\":\"1\",\"b\":\"2\"}}\n",
        &[("UID", &s("/uid")), ("RV", &s("/resourceVersion")), ("TS", &s("/creationTimestamp"))],
    );
    assert_eq!(body, golden);

    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client.clone(), "default");
    let d = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "replicas": 1,
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
    }))
    .unwrap();
    deployments.create(&pp, &d).await.unwrap();
    let body = raw_get(&client, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert!(body.ends_with("}\n"), "{body}");
    assert!(
        body.starts_with("{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"web\","),
        "{body}"
    );
    let keys = |from: &str, keys: &[&str]| {
        let at: Vec<usize> = keys.iter().map(|k| from.find(&format!("\"{k}\":")).unwrap_or(usize::MAX)).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?} out of order in {from}");
    };
    // DeploymentSpec's Go order, then DeploymentStatus after spec; defaulted fields included.
    let spec = &body[body.find("\"spec\":").unwrap()..];
    keys(
        spec,
        &["replicas", "selector", "template", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds", "status"],
    );
    // Container: name, image, ..., resources, ..., terminationMessagePath, imagePullPolicy.
    let container = &body[body.find("\"containers\":").unwrap()..];
    keys(
        container,
        &["name", "image", "resources", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"],
    );
    // PodSpec: containers before restartPolicy, terminationGracePeriodSeconds, dnsPolicy, schedulerName.
    keys(
        container,
        &[
            "containers",
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "dnsPolicy",
            "securityContext",
            "schedulerName",
        ],
    );

    // Lists: kind, apiVersion, metadata, items; items each in their kind's order, without their
    // kind and apiVersion (kube-apiserver gives only a typed list its TypeMeta).
    let list = raw_get(&client, "/api/v1/namespaces/default/configmaps?labelSelector=a%3D2").await;
    assert!(
        list.starts_with("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"),
        "{list}"
    );
    assert!(list.contains(",\"items\":[{\"metadata\":{\"name\":\"order\","), "{list}");
    assert!(list.ends_with("]}\n"), "{list}");

    // A Status: kind, apiVersion, metadata, status, message, reason, details, code.
    let req = http::Request::builder().uri("/api/v1/namespaces/default/configmaps/missing").body(Vec::new()).unwrap();
    let status = client.send(req.map(kube::client::Body::from)).await.unwrap();
    let bytes = http_body_util::BodyExt::collect(status.into_body()).await.unwrap().to_bytes();
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"missing\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"missing\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explain_prints_upstreams_descriptions_and_fields() {
    let (cluster, _client) = wasmcm_test_support::cluster().await;
    let out = tokio::task::block_in_place(|| kubectl(&cluster, &["explain", "deployment.spec.strategy"], None));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n",
        "FIELD: strategy <DeploymentStrategy>",
        "    The deployment strategy to use to replace existing pods with new ones.\n    \
         DeploymentStrategy describes how to replace existing pods with new ones.",
        "  rollingUpdate\t<RollingUpdateDeployment>\n    Rolling update config params. Present only if DeploymentStrategyType =\n    RollingUpdate.",
        "  type\t<string>\n    Type of deployment. Can be \"Recreate\" or \"RollingUpdate\". Default is\n    RollingUpdate.",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let out = tokio::task::block_in_place(|| kubectl(&cluster, &["explain", "pods", "--recursive"], None));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "KIND:       Pod\nVERSION:    v1\n",
        "  metadata\t<ObjectMeta>\n",
        "  spec\t<PodSpec>\n    activeDeadlineSeconds\t<integer>\n    affinity\t<Affinity>\n",
        "    containers\t<[]Container> -required-\n",
        "      ports\t<[]ContainerPort>\n        containerPort\t<integer> -required-\n",
        "  status\t<PodStatus>\n",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn openapi_documents_carry_the_served_kinds_schemas() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let v3: Value = serde_json::from_str(&raw_get(&client, "/openapi/v3/apis/apps/v1").await).unwrap();
    let schemas = &v3["components"]["schemas"];
    let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    assert_eq!(
        deployment["properties"]["spec"],
        json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}],
               "description": "Specification of the desired behavior of the Deployment."})
    );
    assert_eq!(
        schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]["x-kubernetes-patch-strategy"],
        "retainKeys"
    );
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert!(schemas["io.k8s.api.apps.v1.DeploymentList"].is_object());
    assert!(schemas.get("io.k8s.api.core.v1.Pod").is_none(), "a group version's document holds only what it reaches");

    let v2: Value = serde_json::from_str(&raw_get(&client, "/openapi/v2").await).unwrap();
    let spec = &v2["definitions"]["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"];
    assert_eq!(spec["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentSpec");
    assert!(v2["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object());

    // The protobuf form client-go asks for (kubectl reads nothing else there; see crd.rs), and
    // kube-openapi's 406 for a form it does not serve.
    let get = |accept: &str| {
        http::Request::builder().uri("/openapi/v2").header("Accept", accept).body(kube::client::Body::empty()).unwrap()
    };
    let pb = client.send(get("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")).await.unwrap();
    assert_eq!(pb.status(), 200);
    assert_eq!(pb.headers()["content-type"], "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    let body = http_body_util::BodyExt::collect(pb.into_body()).await.unwrap().to_bytes();
    assert_eq!(&body[..5], b"\x0a\x032.0", "Document.swagger first");
    let needle = b"io.k8s.api.apps.v1.DeploymentSpec";
    assert!(body.windows(needle.len()).any(|w| w == needle));
    let refused = client.send(get("application/xml")).await.unwrap();
    assert_eq!(refused.status(), 406);
    let json_preferred = client.send(get("application/json;q=0.9, application/xml")).await.unwrap();
    assert_eq!(json_preferred.headers()["content-type"], "application/json");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crds_schema_is_published_under_its_group_version_and_explained() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let (cluster, client) = wasmcm_test_support::cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let index: Value = serde_json::from_str(&raw_get(&client, "/openapi/v3").await).unwrap();
    assert!(index["paths"].get("apis/stable.example.com/v1").is_none(), "{index}");
    let schema = json!({"type": "object", "description": "A widget.", "properties": {
        "spec": {"type": "object", "description": "What the widget should be.",
                 "properties": {"size": {"type": "integer", "description": "How big."}}}}});
    let crd = serde_json::from_value(json!({
        "metadata": {"name": "widgets.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]},
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let v3: Value = serde_json::from_str(&raw_get(&client, "/openapi/v3/apis/stable.example.com/v1").await).unwrap();
    let widget = &v3["components"]["schemas"]["com.example.stable.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(widget["properties"]["spec"]["properties"]["size"]["description"], "How big.");
    assert_eq!(
        widget["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(v3["components"]["schemas"]["com.example.stable.v1.WidgetList"].is_object());
    let index: Value = serde_json::from_str(&raw_get(&client, "/openapi/v3").await).unwrap();
    assert!(
        index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].is_string(),
        "the cached index follows: {index}"
    );

    let out = tokio::task::block_in_place(|| kubectl(&cluster, &["explain", "widgets.spec"], None));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("GROUP:      stable.example.com\nKIND:       Widget\nVERSION:    v1\n"), "{text}");
    assert!(text.contains("    What the widget should be.\n"), "{text}");
    assert!(text.contains("  size\t<integer>\n    How big.\n"), "{text}");
}

const UNKNOWN_FIELD: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: strict
spec:
  foo: bar
  replicas: 1
  selector:
    matchLabels: {app: strict}
  template:
    metadata:
      labels: {app: strict}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        imagePullPolicyy: Always
";

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_validate_strict_refuses_and_warn_warns_of_unknown_fields() {
    let (cluster, client) = wasmcm_test_support::cluster().await;
    let out = tokio::task::block_in_place(|| {
        kubectl(&cluster, &["apply", "--validate=strict", "-f", "-"], Some(UNKNOWN_FIELD))
    });
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be \
         handled as a Deployment: strict decoding error: unknown field \"spec.foo\", unknown field \
         \"spec.template.spec.containers[0].imagePullPolicyy\"\n"
    );
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client.clone(), "default");
    assert!(deployments.get_opt("strict").await.unwrap().is_none(), "a refused create stores nothing");

    let out = tokio::task::block_in_place(|| {
        kubectl(&cluster, &["apply", "--validate=warn", "-f", "-"], Some(UNKNOWN_FIELD))
    });
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "Warning: unknown field \"spec.foo\"\nWarning: unknown field \"spec.template.spec.containers[0].imagePullPolicyy\"\n"
    );
    assert_eq!(stdout(&out), "deployment.apps/strict created\n");
    let stored: Value =
        serde_json::from_str(&raw_get(&client, "/apis/apps/v1/namespaces/default/deployments/strict").await).unwrap();
    let spec = stored["spec"].to_string();
    assert!(!spec.contains("\"foo\"") && !spec.contains("imagePullPolicyy"), "undeclared fields are dropped: {spec}");

    // The object exists now: kubectl patches it (strategic merge), and the patched object is
    // what upstream checks.
    let changed = UNKNOWN_FIELD.replace("foo: bar", "foo: baz");
    let out =
        tokio::task::block_in_place(|| kubectl(&cluster, &["apply", "--validate=strict", "-f", "-"], Some(&changed)));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "strict decoding error: unknown field \"spec.foo\", unknown field \
             \"spec.template.spec.containers[0].imagePullPolicyy\""
        ),
        "{}",
        stderr(&out)
    );

    // --validate=false (Ignore): accepted without a word, and still dropped.
    let out =
        tokio::task::block_in_place(|| kubectl(&cluster, &["apply", "--validate=false", "-f", "-"], Some(&changed)));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}
