//! Who a request is, as upstream's `k8s.io/apiserver/pkg/authentication/user.Info`: what
//! authentication establishes and authorization judges.

/// Who a request is, as upstream's `user.Info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The kubeconfig's user: kubeadm's admin, in system:masters (allowed everything).
    pub(crate) fn admin() -> UserInfo {
        UserInfo {
            name: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    pub(crate) fn service_account(namespace: &str, name: &str, uid: &str) -> UserInfo {
        UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}
