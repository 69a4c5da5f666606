//! The Recreate strategy: upstream `recreate.go`. Old ReplicaSets go to zero, and the new one
//! is only scaled up once no old pod is left running — old and new pods never run together.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use wasmcm_guest::{Cache, Error};

use crate::sync::Sync;
use crate::util::*;

impl Sync<'_> {
    /// `rolloutRecreate`; `pods` is the deployment's pods by controlling ReplicaSet uid.
    pub(crate) fn rollout_recreate(
        &mut self,
        cache: &dyn Cache,
        pods: &HashMap<String, Vec<Pod>>,
    ) -> Result<(), Error> {
        self.get_all_replica_sets_and_sync_revision(None)?;
        if self.scale_down_old_replica_sets_for_recreate() || self.old_pods_running(pods) {
            self.sync_rollout_status();
            return Ok(());
        }
        if self.new_rs.is_none() {
            self.get_all_replica_sets_and_sync_revision(Some(cache))?;
        }
        if let Some(i) = self.new_rs {
            self.scale_and_record(i, deployment_replicas(&self.d));
        }
        if deployment_complete(&self.d, self.d.status.as_ref().unwrap_or(&Default::default())) {
            self.cleanup_deployment();
        }
        self.sync_rollout_status();
        Ok(())
    }

    /// `scaleDownOldReplicaSetsForRecreate`: true when an old ReplicaSet was scaled down.
    fn scale_down_old_replica_sets_for_recreate(&mut self) -> bool {
        let mut scaled = false;
        for i in self.old_indices() {
            if rs_replicas(&self.rss[i].value) != 0 {
                scaled |= self.scale_and_record(i, 0);
            }
        }
        scaled
    }

    /// `oldPodsRunning`: an old ReplicaSet still counts pods, or a pod of one is not finished
    /// (terminating pods included: they may still be serving).
    fn old_pods_running(&self, pods: &HashMap<String, Vec<Pod>>) -> bool {
        if get_actual_replica_count_for_replica_sets(&self.olds()) > 0 {
            return true;
        }
        let new_uid = self.new_rs().and_then(|rs| rs.metadata.uid.as_deref());
        pods.iter()
            .filter(|(uid, _)| Some(uid.as_str()) != new_uid)
            .flat_map(|(_, p)| p)
            .any(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed" | "Succeeded")))
    }
}
