//! Printers of rbac.authorization.k8s.io RoleBindings and ClusterRoleBindings (kubernetes
//! `pkg/printers/internalversion/printers.go`: printRoleBinding, printClusterRoleBinding, rbac.SubjectsStrings).
//! Roles and ClusterRoles have no printer upstream and get the default convertor.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, items, text, timestamp};

// The printers describe roleRef with the rbac/v1beta1 docs, which lack v1's "This field is immutable."
pub(super) const ROLE_BINDING_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Role",
        "string",
        "",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        0,
    ),
    AGE_COLUMN,
    ("Users", "string", "", "Users in the roleBinding", 1),
    ("Groups", "string", "", "Groups in the roleBinding", 1),
    ("ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", 1),
];

pub(super) const CLUSTER_ROLE_BINDING_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Role",
        "string",
        "",
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        0,
    ),
    AGE_COLUMN,
    ("Users", "string", "", "Users in the clusterRoleBinding", 1),
    ("Groups", "string", "", "Groups in the clusterRoleBinding", 1),
    ("ServiceAccounts", "string", "", "ServiceAccounts in the clusterRoleBinding", 1),
];

// ---- RoleBinding and ClusterRoleBinding (printRoleBinding, rbac.SubjectsStrings)

pub(super) fn binding_row(obj: &Value, now: Timestamp) -> Row {
    let (mut users, mut groups, mut service_accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in items(obj, "/subjects") {
        match text(subject, "/kind") {
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{}", text(subject, "/namespace"), text(subject, "/name")))
            }
            "User" => users.push(text(subject, "/name").to_string()),
            "Group" => groups.push(text(subject, "/name").to_string()),
            _ => {}
        }
    }
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        format!("{}/{}", text(obj, "/roleRef/kind"), text(obj, "/roleRef/name")).into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ])
}
