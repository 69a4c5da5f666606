//! The in-cluster credentials a pod runs with: the API server address from
//! `KUBERNETES_SERVICE_HOST`/`_PORT`, and the ServiceAccount's `token` (re-read when rotated),
//! `ca.crt` and `namespace` files.

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
}
