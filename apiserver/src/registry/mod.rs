//! The registry's types, as kube-apiserver's `pkg/registry` holds them: which resource types
//! are served (`resources`; a custom resource's schema rules are `custom`'s), and one
//! `strategy` per type with the hooks its storage runs (`hooks`: what they reach of the server;
//! `services` and `certificates` hold two types' own). Below the state, which holds the
//! registry; the generic verbs that read it are `api`'s, above the state.

pub(crate) mod certificates;
pub(crate) mod hooks;
pub(crate) mod resources;
pub(crate) mod services;
pub(crate) mod strategy;
