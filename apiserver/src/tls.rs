//! Credentials of the embedded API server: a CA, a serving certificate and the admin's client
//! certificate made at start, a random bearer token, and the kubeconfig that carries them to
//! clients. All in memory: only the admin's client key leaves it, in the kubeconfig that
//! `files` writes (as kubeadm's admin.conf carries it).
//!
//! Clients may present a certificate of this CA (kube-apiserver's `--client-ca-file`); who it
//! names is `auth`'s to read.

use std::sync::Arc;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

pub(crate) struct Credentials {
    pub ca_pem: String,
    pub token: String,
    pub admin: ClientCertificate,
    pub server_config: Arc<rustls::ServerConfig>,
}

/// A client certificate and its key, PEM.
#[derive(Clone, Debug)]
pub(crate) struct ClientCertificate {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The admin's subject, as kubeadm's admin.conf names it: the same identity as the admin token's.
const ADMIN_USER: &str = "kubernetes-admin";
const ADMIN_GROUP: &str = "system:masters";

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

    let admin_key = KeyPair::generate()?;
    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin.distinguished_name.push(DnType::CommonName, ADMIN_USER);
    admin.distinguished_name.push(DnType::OrganizationName, ADMIN_GROUP);
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let admin_cert = admin.signed_by(&admin_key, &issuer)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone())?;
    // A certificate is asked for, not required: most clients present a bearer token instead.
    let client_verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()?;
    let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(
            vec![cert.der().clone(), ca_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    // kubectl and client-go speak HTTP/2 when offered; watches multiplex over one connection.
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Credentials {
        ca_pem: ca_cert.pem(),
        token: random_token(),
        admin: ClientCertificate { cert_pem: admin_cert.pem(), key_pem: admin_key.serialize_pem() },
        server_config: Arc::new(server_config),
    })
}

/// A kubeconfig with one cluster, user and context named `wasmcm`: the user presents `token`,
/// and `client`'s certificate if given (the admin's carries both, so a client that sends no
/// token, as a bare TLS connector does, is the admin all the same).
pub(crate) fn kubeconfig(
    server: &str,
    ca_pem: Option<&str>,
    token: &str,
    client: Option<&ClientCertificate>,
) -> String {
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let cluster = match ca_pem {
        Some(ca) => format!("    server: {server}\n    certificate-authority-data: {}\n", b64(ca)),
        None => format!("    server: {server}\n"),
    };
    let certificate = client.map_or(String::new(), |c| {
        format!("    client-certificate-data: {}\n    client-key-data: {}\n", b64(&c.cert_pem), b64(&c.key_pem))
    });
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: wasmcm\n  cluster:\n{cluster}users:\n- name: wasmcm\n  user:\n    token: {token}\n{certificate}\
         contexts:\n- name: wasmcm\n  context:\n    cluster: wasmcm\n    user: wasmcm\n    namespace: default\ncurrent-context: wasmcm\n"
    )
}
