//! The RollingUpdate strategy: upstream `rolling.go`. Each sync takes one step — scale the new
//! ReplicaSet up within maxSurge, or the old ones down within maxUnavailable (unhealthy
//! replicas first) — and reports status; the watch brings the next step.

use wasmcm_guest::{Cache, Error};

use crate::sync::Sync;
use crate::util::*;

impl Sync<'_> {
    /// `rolloutRolling`.
    pub(crate) fn rollout_rolling(&mut self, cache: &dyn Cache) -> Result<(), Error> {
        self.count_active_pods(cache)?;
        self.get_all_replica_sets_and_sync_revision(Some(cache))?;
        if self.new_rs.is_none() {
            // A hash collision was counted: the status write brings the next attempt.
            return Ok(());
        }
        if self.reconcile_new_replica_set()? {
            self.sync_rollout_status();
            return Ok(());
        }
        match self.reconcile_old_replica_sets()? {
            Some(true) => {
                self.sync_rollout_status();
                return Ok(());
            }
            // Upstream fails the sync here and retries with backoff; the status update it waits
            // for wakes this Deployment anyway, so the retries only cost reconciles.
            None => return Ok(()),
            Some(false) => {}
        }
        if deployment_complete(&self.d, self.d.status.as_ref().unwrap_or(&Default::default())) {
            self.cleanup_deployment();
        }
        self.sync_rollout_status();
        Ok(())
    }

    /// `reconcileNewReplicaSet`: true when the new ReplicaSet was resized.
    fn reconcile_new_replica_set(&mut self) -> Result<bool, Error> {
        let Some(i) = self.new_rs else { return Ok(false) };
        let replicas = deployment_replicas(&self.d);
        let current = rs_replicas(&self.rss[i].value);
        if current == replicas {
            return Ok(false);
        }
        if current > replicas {
            return Ok(self.scale_and_record(i, replicas));
        }
        let new_count = new_rs_new_replicas(&self.d, &self.all(), &self.rss[i].value, &self.active_pods)
            .map_err(Error::permanent)?;
        Ok(self.scale_and_record(i, new_count))
    }

    /// `reconcileOldReplicaSets`: true when an old ReplicaSet was scaled down, `None` while an
    /// old ReplicaSet's status still counts pods a scale-down of this controller removes.
    fn reconcile_old_replica_sets(&mut self) -> Result<Option<bool>, Error> {
        let Some(new) = self.new_rs else { return Ok(Some(false)) };
        let old_pods = get_replica_count_for_replica_sets(&self.olds());
        if old_pods == 0 {
            return Ok(Some(false));
        }
        let all_pods = get_replica_count_for_replica_sets(&self.all());
        let min_available = deployment_replicas(&self.d).wrapping_sub(max_unavailable(&self.d));
        let new_rs = &self.rss[new].value;
        let new_unavailable = rs_replicas(new_rs).wrapping_sub(available_replicas(new_rs));
        // Old pods are only scaled down as far as the new ReplicaSet's unavailable pods allow,
        // so a new ReplicaSet that never turns available cannot take the deployment down.
        let max_scaled_down = all_pods.wrapping_sub(min_available).wrapping_sub(new_unavailable);
        if max_scaled_down <= 0 {
            return Ok(Some(false));
        }
        let Some(cleaned) = self.cleanup_unhealthy_replicas(max_scaled_down) else { return Ok(None) };
        let scaled = self.scale_down_old_replica_sets_for_rolling_update()?;
        Ok(Some(cleaned.wrapping_add(scaled) > 0))
    }

    /// Old ReplicaSets, oldest first: the order scale-downs take.
    fn olds_by_age(&self) -> Vec<usize> {
        let mut olds: Vec<usize> = self.old_indices();
        olds.sort_by(|a, b| replica_sets_by_creation_timestamp(&self.rss[*a].value, &self.rss[*b].value));
        olds
    }

    /// `cleanupUnhealthyReplicas`: first drop old replicas that are not available anyway, up to
    /// `max_cleanup`; returns how many. `None` where upstream fails with "got invalid request
    /// to scale down": a status with more available pods than the spec wants predates a
    /// scale-down and the ReplicaSet controller has yet to act on it; going on would count pods
    /// on their way out and move the rollout on before they are gone.
    fn cleanup_unhealthy_replicas(&mut self, max_cleanup: i32) -> Option<i32> {
        let mut total = 0i32;
        for i in self.olds_by_age() {
            if total >= max_cleanup {
                break;
            }
            let rs = &self.rss[i].value;
            let (replicas, available) = (rs_replicas(rs), available_replicas(rs));
            if replicas == 0 || replicas == available {
                continue;
            }
            let count = max_cleanup.wrapping_sub(total).min(replicas.wrapping_sub(available));
            let new_count = replicas.wrapping_sub(count);
            if new_count > replicas {
                return None;
            }
            self.scale_and_record(i, new_count);
            total = total.wrapping_add(count);
        }
        Some(total)
    }

    /// `scaleDownOldReplicaSetsForRollingUpdate`: scale old ReplicaSets down, oldest first, as
    /// far as the available pods above minAvailable allow; returns how many.
    fn scale_down_old_replica_sets_for_rolling_update(&mut self) -> Result<i32, Error> {
        let min_available = deployment_replicas(&self.d).wrapping_sub(max_unavailable(&self.d));
        let available_pods = get_available_replica_count_for_replica_sets(&self.all());
        if available_pods <= min_available {
            return Ok(0);
        }
        let to_scale_down = available_pods.wrapping_sub(min_available);
        let mut total = 0i32;
        for i in self.olds_by_age() {
            if total >= to_scale_down {
                break;
            }
            let replicas = rs_replicas(&self.rss[i].value);
            if replicas == 0 {
                continue;
            }
            let count = replicas.min(to_scale_down.wrapping_sub(total));
            let new_count = replicas.wrapping_sub(count);
            if new_count > replicas {
                return Err(Error::retryable(format!(
                    "when scaling down old replica set, got invalid request to scale down {} {replicas} -> {new_count}",
                    self.rss[i].value.metadata.name.as_deref().unwrap_or("")
                )));
            }
            self.scale_and_record(i, new_count);
            total = total.wrapping_add(count);
        }
        Ok(total)
    }
}
