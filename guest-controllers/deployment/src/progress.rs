//! Rollout progress: upstream `progress.go`. The Progressing condition (with the progress
//! deadline), ReplicaFailure lifted from the ReplicaSets, and the requeue that notices a
//! deadline passing when nothing else changes.

use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};

use crate::sync::Sync;
use crate::util::*;

impl Sync<'_> {
    /// `syncRolloutStatus`.
    pub(crate) fn sync_rollout_status(&mut self) {
        let mut status = self.calculate_status();
        if !has_progress_deadline(&self.d) {
            remove_deployment_condition(&mut status, DEPLOYMENT_PROGRESSING);
        }
        let current = self.d.status.as_ref().and_then(|s| get_deployment_condition(s, DEPLOYMENT_PROGRESSING)).cloned();
        let complete_already = status.replicas == status.updated_replicas
            && current.as_ref().is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE_REASON));
        if has_progress_deadline(&self.d) && !complete_already {
            let subject = match self.new_rs() {
                Some(rs) => format!("ReplicaSet {:?}", rs.metadata.name.as_deref().unwrap_or("")),
                None => format!("Deployment {:?}", self.d.metadata.name.as_deref().unwrap_or("")),
            };
            let now = self.req.now;
            if deployment_complete(&self.d, &status) {
                let message = format!("{subject} has successfully progressed.");
                let c =
                    new_deployment_condition(DEPLOYMENT_PROGRESSING, "True", NEW_RS_AVAILABLE_REASON, &message, now);
                set_deployment_condition(&mut status, c);
            } else if deployment_progressing(&self.d, &status) {
                let message = format!("{subject} is progressing.");
                let mut c =
                    new_deployment_condition(DEPLOYMENT_PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, &message, now);
                // Progress refreshes the update time (the deadline restarts) but is no transition.
                if let Some(current) = &current {
                    if current.status.as_deref() == Some("True") {
                        c.last_transition_time = current.last_transition_time.clone();
                    }
                    remove_deployment_condition(&mut status, DEPLOYMENT_PROGRESSING);
                }
                set_deployment_condition(&mut status, c);
            } else if deployment_timed_out(&self.d, &status, now) {
                let message = format!("{subject} has timed out progressing.");
                let c = new_deployment_condition(DEPLOYMENT_PROGRESSING, "False", TIMED_OUT_REASON, &message, now);
                set_deployment_condition(&mut status, c);
            }
        }
        match self.replica_failures().into_iter().next() {
            Some(failure) => set_deployment_condition(&mut status, failure),
            None => remove_deployment_condition(&mut status, DEPLOYMENT_REPLICA_FAILURE),
        }
        if self.d.status.as_ref() == Some(&status) {
            self.requeue_after_ms = self.requeue_stuck_deployment(&status);
        }
        self.d.status = Some(status);
    }

    /// `getReplicaFailures`: the new ReplicaSet's ReplicaFailure conditions, or else any
    /// ReplicaSet's.
    fn replica_failures(&self) -> Vec<DeploymentCondition> {
        let failures = |rs: &k8s_openapi::api::apps::v1::ReplicaSet| -> Vec<DeploymentCondition> {
            rs.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .filter(|c| c.type_.as_deref() == Some(DEPLOYMENT_REPLICA_FAILURE))
                .map(replica_set_to_deployment_condition)
                .collect()
        };
        let from_new = self.new_rs().map(failures).unwrap_or_default();
        if !from_new.is_empty() {
            return from_new;
        }
        self.all().into_iter().flat_map(failures).collect()
    }

    /// `requeueStuckDeployment`: when the rollout is still running against a deadline, look
    /// again just after it passes (`lastUpdateTime + deadline - now`, plus a second), measured
    /// on the request's clock. Upstream requeues at once, rate limited, below one second; a
    /// plain second here gives the same result without the spin.
    fn requeue_stuck_deployment(&self, status: &DeploymentStatus) -> Option<u64> {
        let current = self.d.status.as_ref().and_then(|s| get_deployment_condition(s, DEPLOYMENT_PROGRESSING))?;
        if !has_progress_deadline(&self.d)
            || deployment_complete(&self.d, status)
            || current.reason.as_deref() == Some(TIMED_OUT_REASON)
        {
            return None;
        }
        let deadline = i64::from(self.d.spec.progress_deadline_seconds.unwrap_or(0)) * 1000;
        let since_update = current
            .last_update_time
            .as_ref()
            .map_or(i64::MAX, |t| self.req.now.since(t).as_millis().clamp(i64::MIN as i128, i64::MAX as i128) as i64);
        let after = deadline.saturating_sub(since_update);
        Some(after.max(0) as u64 + 1000)
    }
}
