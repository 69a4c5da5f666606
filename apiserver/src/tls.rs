//! Credentials of the embedded API server: a CA and a serving certificate made at start, a
//! random bearer token, and the kubeconfig that carries them to clients. All in memory: the
//! keys are never written anywhere, and `files` writes the kubeconfigs.

use std::sync::Arc;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

pub(crate) struct Credentials {
    pub ca_pem: String,
    pub token: String,
    pub server_config: Arc<rustls::ServerConfig>,
}

pub(crate) fn random_token() -> String {
    let mut b = [0u8; 32];
    let _ = getrandom::fill(&mut b);
    hex::encode(b)
}

/// A fresh CA and a certificate for `hosts` (names or IP addresses) signed by it.
pub(crate) fn credentials(hosts: &[String]) -> anyhow::Result<Credentials> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "wasmcm-cluster-ca");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::from_params(&ca, &ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(hosts.to_vec())?;
    params.distinguished_name.push(DnType::CommonName, "wasmcm-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let cert = params.signed_by(&key, &issuer)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    // kubectl and client-go speak HTTP/2 when offered; watches multiplex over one connection.
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Credentials { ca_pem: ca_cert.pem(), token: random_token(), server_config: Arc::new(server_config) })
}

/// A kubeconfig with one cluster, user and context named `wasmcm`.
pub(crate) fn kubeconfig(server: &str, ca_pem: Option<&str>, token: &str) -> String {
    let cluster = match ca_pem {
        Some(ca) => format!(
            "    server: {server}\n    certificate-authority-data: {}\n",
            base64::engine::general_purpose::STANDARD.encode(ca)
        ),
        None => format!("    server: {server}\n"),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: wasmcm\n  cluster:\n{cluster}users:\n- name: wasmcm\n  user:\n    token: {token}\n\
         contexts:\n- name: wasmcm\n  context:\n    cluster: wasmcm\n    user: wasmcm\n    namespace: default\ncurrent-context: wasmcm\n"
    )
}
