//! Promotion through the API: a Plugin object's `spec.rollout.promote: sha256:…` promotes the
//! candidate of that digest (in shadow, or held for declaring wider rights), and
//! `spec.rollout.abandon: sha256:…` drops it, on every replica that runs the plugin. The
//! cluster's RBAC decides who may (a patch of the Plugin), and its audit log records who did;
//! the admin endpoint's promote and abandon stay for hosts that run files only.
//!
//! A decision names the bytes it is about, so a later candidate is not promoted by an old one;
//! it is acted on whenever that candidate is there, as it comes or as the object changes.
//! Reads the objects and the running plugins; changes nothing but their rollouts.

use std::sync::Arc;
use std::time::Duration;

use crate::lifecycle::objects::PluginObjects;
use crate::runtime::plugins::Plugins;

/// How often the candidates are looked at besides the objects' changes (an offer lands after
/// its informers sync).
const TICK: Duration = Duration::from_secs(1);

/// Acts on the objects' decisions until the returned task is dropped or aborted.
pub fn act_on_decisions(objects: Arc<PluginObjects>, plugins: Arc<Plugins>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = objects.changes();
        loop {
            decide(&objects, &plugins);
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                () = tokio::time::sleep(TICK) => {}
            }
        }
    })
}

fn decide(objects: &PluginObjects, plugins: &Plugins) {
    for (name, entry) in objects.entries() {
        let Some(controller) = plugins.get(&name) else { continue };
        let rollout = controller.rollout();
        let Some(candidate) = rollout.current().1 else { continue };
        let digest = candidate.plugin.digest();
        let done = if entry.promote.as_deref() == Some(digest) {
            rollout.promote()
        } else if entry.abandon.as_deref() == Some(digest) {
            rollout.abandon()
        } else {
            continue;
        };
        match done {
            Ok(what) => tracing::info!(plugin = %name, "{what}, as its Plugin object's spec.rollout says"),
            Err(e) => tracing::warn!(plugin = %name, "{e}"),
        }
    }
}
