//! The in-cluster credentials a pod runs with: the API server address from
//! `KUBERNETES_SERVICE_HOST`/`_PORT`, and the ServiceAccount's `token` (re-read when rotated),
//! `ca.crt` and `namespace` files; and the namespace the host runs in, in a pod or outside one.

use std::path::Path;

/// Where the kubelet mounts a pod's ServiceAccount credentials (`token`, `ca.crt`, `namespace`).
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The ServiceAccount credential directory: `$WASMCM_SERVICEACCOUNT_DIR`, else
/// [`SERVICE_ACCOUNT_DIR`].
pub fn service_account_dir() -> std::path::PathBuf {
    std::env::var_os("WASMCM_SERVICEACCOUNT_DIR")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| SERVICE_ACCOUNT_DIR.into())
}

/// The in-cluster client configuration, as `kube::Config::incluster()` builds it but from the
/// credentials in `dir`: the API server at `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`
/// (an IPv6 address bracketed), trusted through `dir/ca.crt`, authenticated by the bearer token
/// in `dir/token`. The token is given to kube as a file, which it re-reads, so a rotated
/// (projected) token is picked up; so is a rotated `ca.crt`.
pub fn in_cluster_config(dir: &std::path::Path) -> anyhow::Result<kube::Config> {
    use anyhow::Context;
    let host = std::env::var("KUBERNETES_SERVICE_HOST").context("KUBERNETES_SERVICE_HOST is not set")?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").context("KUBERNETES_SERVICE_PORT is not set")?;
    let port: u16 = port.trim().parse().with_context(|| format!("KUBERNETES_SERVICE_PORT {port:?}"))?;
    let url = in_cluster_url(&host, port)?;
    let ca_file = dir.join("ca.crt");
    let ca = std::fs::read_to_string(&ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
    let certs = pem_certificates(&ca).with_context(|| format!("{}: invalid PEM", ca_file.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no PEM certificate", ca_file.display());
    }
    let token_file = dir.join("token");
    // Fail now, clearly, rather than on the first request.
    std::fs::metadata(&token_file).with_context(|| format!("reading {}", token_file.display()))?;
    let mut config = kube::Config::new(url);
    config.root_cert = Some(certs);
    config.root_cert_file = Some(ca_file);
    config.auth_info.token_file = Some(token_file.to_string_lossy().into_owned());
    if let Ok(ns) = std::fs::read_to_string(dir.join("namespace"))
        && !ns.trim().is_empty()
    {
        config.default_namespace = ns.trim().to_string();
    }
    Ok(config)
}

/// `https://host:port`, an IPv6 address bracketed.
fn in_cluster_url(host: &str, port: u16) -> anyhow::Result<hyper::Uri> {
    let host = host.trim();
    let authority = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        _ => format!("{host}:{port}"),
    };
    format!("https://{authority}").parse().map_err(|e| anyhow::anyhow!("API server address {authority}: {e}"))
}

/// The DER bytes of every `CERTIFICATE` block of a PEM bundle.
fn pem_certificates(pem: &str) -> Result<Vec<Vec<u8>>, rustls::pki_types::pem::Error> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    CertificateDer::pem_slice_iter(pem.as_bytes()).map(|c| c.map(|c| c.to_vec())).collect()
}

/// The namespace of a host run outside a pod whose kubeconfig context names none (and of one
/// on its embedded cluster): the namespace deploy/manifests runs it in.
const DEFAULT_HOST_NAMESPACE: &str = "wasmcm";

/// The namespace this host runs in and protects: the pod's in a pod (`flag` must agree);
/// outside one `flag`, else the namespace the kubeconfig context names, else
/// [`DEFAULT_HOST_NAMESPACE`]. A host always has one, so that no plugin acts in it unasked.
/// A context naming `default` counts as naming none: that is where users' workloads live (and
/// what kubeconfigs often spell out), which a host must not withhold from its plugins by
/// accident; `--namespace default` says so on purpose.
pub fn host_namespace(flag: Option<&str>, kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<String> {
    use anyhow::Context;
    if let Some(pod) = pod_namespace() {
        if let Some(flag) = flag.filter(|f| *f != pod) {
            anyhow::bail!("--namespace {flag:?}: this host runs in a pod of namespace {pod:?}, which is its namespace");
        }
        return Ok(pod);
    }
    let namespace = match (flag, kubeconfig) {
        (Some(flag), _) => flag.to_string(),
        (None, Some(path)) => {
            let kc =
                kube::config::Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
            context_namespace(&kc, context)
                .filter(|ns| ns != "default")
                .unwrap_or_else(|| DEFAULT_HOST_NAMESPACE.into())
        }
        (None, None) => DEFAULT_HOST_NAMESPACE.into(),
    };
    if let Some(why) = wasmcm_core::validation::dns1123_label(&namespace).first() {
        anyhow::bail!("--namespace {namespace:?} is not a namespace name: {why}");
    }
    Ok(namespace)
}

/// The namespace the kubeconfig's context `context` (else its current context) names, if any.
fn context_namespace(kc: &kube::config::Kubeconfig, context: Option<&str>) -> Option<String> {
    let name = context.map(String::from).or_else(|| kc.current_context.clone())?;
    let named = kc.contexts.iter().find(|c| c.name == name)?;
    named.context.as_ref()?.namespace.clone().filter(|ns| !ns.is_empty())
}

/// The namespace of the pod this host runs in, if it runs in one.
fn pod_namespace() -> Option<String> {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| std::fs::read_to_string(service_account_dir().join("namespace")).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_cluster_urls_bracket_ipv6() {
        assert_eq!(in_cluster_url("10.96.0.1", 443).unwrap().to_string(), "https://10.96.0.1:443/");
        assert_eq!(in_cluster_url("fd00::1", 6443).unwrap().to_string(), "https://[fd00::1]:6443/");
        assert_eq!(
            in_cluster_url("kubernetes.default.svc", 443).unwrap().to_string(),
            "https://kubernetes.default.svc:443/"
        );
    }

    #[test]
    fn pem_bundles_give_every_certificate() {
        let pem = "junk\n-----BEGIN CERTIFICATE-----\nAAEC\nAw==\n-----END CERTIFICATE-----\n\
                   -----BEGIN CERTIFICATE-----\nBAU=\n-----END CERTIFICATE-----\n";
        assert_eq!(pem_certificates(pem).unwrap(), vec![vec![0, 1, 2, 3], vec![4, 5]]);
        assert!(pem_certificates("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n").is_err());
    }

    #[test]
    fn outside_a_pod_the_host_namespace_is_the_flag_else_the_contexts_else_wasmcm() {
        let kubeconfig = |current: &str| -> kube::config::Kubeconfig {
            serde_json::from_value(serde_json::json!({
                "current-context": current,
                "contexts": [
                    {"name": "plain", "context": {"cluster": "c", "user": "u"}},
                    {"name": "team", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
                    {"name": "default", "context": {"cluster": "c", "user": "u", "namespace": "default"}},
                ],
            }))
            .unwrap()
        };
        assert_eq!(context_namespace(&kubeconfig("team"), None).as_deref(), Some("team-a"));
        assert_eq!(context_namespace(&kubeconfig("plain"), None), None);
        assert_eq!(context_namespace(&kubeconfig("plain"), Some("team")).as_deref(), Some("team-a"));
        assert_eq!(context_namespace(&kubeconfig("missing"), None), None);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, serde_json::to_string(&kubeconfig("team")).unwrap()).unwrap();
        // These run outside a pod (no POD_NAMESPACE, no service-account namespace file).
        if pod_namespace().is_none() {
            assert_eq!(host_namespace(None, Some(&path), None).unwrap(), "team-a");
            assert_eq!(host_namespace(None, Some(&path), Some("plain")).unwrap(), DEFAULT_HOST_NAMESPACE);
            assert_eq!(host_namespace(None, Some(&path), Some("default")).unwrap(), DEFAULT_HOST_NAMESPACE);
            assert_eq!(host_namespace(Some("default"), Some(&path), None).unwrap(), "default");
            assert_eq!(host_namespace(Some("mine"), Some(&path), None).unwrap(), "mine");
            assert_eq!(host_namespace(None, None, None).unwrap(), "wasmcm");
            let e = host_namespace(Some("Not_A_Namespace"), None, None).unwrap_err().to_string();
            assert!(e.starts_with("--namespace \"Not_A_Namespace\" is not a namespace name"), "{e}");
        }
    }
}
