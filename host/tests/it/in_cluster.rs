//! The real `wasmcm run` with in-cluster credentials, as the pod of deploy/manifests runs it:
//! no kubeconfig, only KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT and a service-account
//! directory (token, ca.crt, namespace; `WASMCM_SERVICEACCOUNT_DIR` points at a temporary one
//! instead of /var/run/secrets/kubernetes.io/serviceaccount) holding a token of the
//! ServiceAccount wasmcm/wasmcm, bound by the manifests' own RBAC objects (applied with the real
//! kubectl), and the plugin manifest of their ConfigMap as the pod mounts it. It elects itself
//! through the Lease wasmcm/wasmcm and runs a Deployment to completion: the manifests'
//! permissions suffice, the process reads as its ServiceAccount and each plugin writes as its own.

use crate::common;

use std::process::Child;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, PostParams};

/// Stops the host process however the test ends; when the test fails, prints the end of its
/// log first (the log's directory goes with the test).
struct Running(Child, std::path::PathBuf);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.1).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(200).collect();
            eprintln!("the host's log, last {} lines:", tail.len());
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_a_deployment_with_the_manifests_service_account_and_in_cluster_credentials() {
    let (cluster, admin) = common::cluster().await;
    common::kubectl_apply(&cluster.kubeconfig, &common::RBAC_MANIFESTS);

    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugins_dir();
    let log = dir.path().join("wasmcm.log");
    println!("host log: {}", log.display());
    let _host =
        Running(common::in_cluster_host(&cluster, dir.path(), plugins.path(), "wasmcm-test", &log), log.clone());

    // It elects itself in the manifests' lease namespace: the Role of 04-role.yaml.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "wasmcm");
    common::eventually("wasmcm-test to hold the Lease wasmcm/wasmcm", || async {
        let lease = leases.get_opt("wasmcm").await.ok().flatten()?;
        (lease.spec?.holder_identity.as_deref() == Some("wasmcm-test")).then_some(())
    })
    .await;

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "default");
    let web: Deployment = common::web(3, "nginx:1.27");
    deployments.create(&PostParams::default(), &web).await.unwrap();

    common::eventually("3 ready pods", || async { (common::web_pods(&admin).await? == (3, 3)).then_some(()) }).await;
    common::eventually("the Deployment's status to converge", || async {
        let d = deployments.get("web").await.ok()?;
        let s = d.status?;
        let done = s.observed_generation == d.metadata.generation
            && s.replicas == Some(3)
            && s.updated_replicas == Some(3)
            && s.ready_replicas == Some(3)
            && s.available_replicas == Some(3);
        done.then_some(())
    })
    .await;

    // The events are recorded by this process (its POD_NAME), through the ServiceAccount and
    // events.k8s.io/v1 (which alone sets eventTime).
    let events: Api<Event> = Api::namespaced(admin.clone(), "default");
    common::eventually("SuccessfulCreate events reported by wasmcm-test", || async {
        let listed = events.list(&ListParams::default()).await.ok()?;
        listed
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("SuccessfulCreate")
                    && e.reporting_component.as_deref() == Some("wasmcm.dev/replicaset")
                    && e.event_time.is_some()
                    && e.reporting_instance.as_deref() == Some("wasmcm-test")
            })
            .then_some(())
    })
    .await;
    // And still leads: nothing it did lost it the lease.
    let lease = leases.get("wasmcm").await.unwrap();
    assert_eq!(lease.spec.and_then(|s| s.holder_identity).as_deref(), Some("wasmcm-test"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.to_lowercase().contains("forbidden"), "the host was refused something:\n{text}");
}
