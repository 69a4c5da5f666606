//! One sync of a Deployment: upstream `syncDeployment` (deployment_controller.go) and the
//! shared steps of `sync.go` — ReplicaSet adoption, new/old ReplicaSet discovery and revision
//! sync, proportional scaling, history cleanup and status.
//!
//! Upstream writes as it goes and rereads nothing; here every write lands on an in-memory
//! working copy ([`Sync`]) and the outcome carries one write per object, so two steps that
//! touch the same ReplicaSet (revision annotations, then scale) never race their own
//! resourceVersion. The host holds the key back until it has observed the ReplicaSets created.

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::Value;
use wasmcm_guest::ownership::{self, Claim};
use wasmcm_guest::{
    Cache, CacheExt, DeleteTarget, Error, Event, EventType, Intent, Kind, Level, ObjectRef, Outcome, Request, Selector,
    log, pod,
};

use crate::util::*;

/// A ReplicaSet of this deployment as this sync leaves it.
pub(crate) struct Rs {
    pub value: ReplicaSet,
    /// The JSON the API served, so an update keeps fields this build does not know; `None` for
    /// one this sync creates. Parsed only if there is something to write.
    served: Option<String>,
    dirty: bool,
}

/// The working state of one sync.
pub struct Sync<'a> {
    pub(crate) req: &'a Request,
    pub(crate) d: Deployment,
    d_json: String,
    /// The deployment's status and annotations as served, to tell whether to write them.
    served_status: Option<DeploymentStatus>,
    served_annotations: Option<std::collections::BTreeMap<String, String>>,
    pub(crate) rss: Vec<Rs>,
    /// ReplicaSets this deployment lets go of (selector no longer matches).
    released: Vec<Value>,
    /// Index into `rss` of the new ReplicaSet, once looked up.
    pub(crate) new_rs: Option<usize>,
    searched: bool,
    /// Events, each with the ReplicaSet (index into `rss`) whose write earns it, if any.
    events: Vec<(Option<usize>, Event)>,
    deletes: Vec<DeleteTarget>,
    /// A create of the new ReplicaSet failed last time: the status saying so goes first, so the
    /// failing create cannot hold it back.
    status_first: bool,
    pub(crate) requeue_after_ms: Option<u64>,
    /// Active pods by the uid of the ReplicaSet controlling them, for the surge bound.
    pub(crate) active_pods: std::collections::BTreeMap<String, i32>,
}

/// The reconcile entry point: upstream `syncDeployment`.
pub fn sync(req: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let Some(obj) = cache.get_as::<Deployment>(&req.namespace, &req.name)? else {
        log(Level::Debug, &format!("Deployment {}/{} has been deleted", req.namespace, req.name));
        return Ok(Outcome::default());
    };
    let mut s = Sync::new(req, obj.value, obj.json);
    let key = format!("{}/{}", req.namespace, req.name);

    let selector = s.d.spec.selector.clone();
    if selector == LabelSelector::default() {
        // An empty selector would select every pod in the namespace; never act on it.
        s.event(
            EventType::Warning,
            "SelectingAll",
            "This deployment is selecting all pods. A non-empty selector is required.".into(),
        );
        let generation = s.d.metadata.generation;
        let status = s.d.status.get_or_insert_with(Default::default);
        if status.observed_generation < generation {
            status.observed_generation = generation;
        }
        return s.finish();
    }
    let selector = Selector::from_label_selector(&selector)
        .map_err(|e| Error::permanent(format!("Deployment {key} has an invalid selector: {e}")))?;

    s.claim_replica_sets(cache, &selector)?;
    if s.d.metadata.deletion_timestamp.is_some() {
        s.sync_status_only()?;
        return s.finish();
    }
    s.check_paused_conditions();
    if s.d.spec.paused == Some(true) {
        s.sync()?;
        return s.finish();
    }
    if s.is_scaling_event()? {
        s.sync()?;
        return s.finish();
    }
    match s.d.spec.strategy.as_ref().and_then(|st| st.type_.as_deref()).unwrap_or("") {
        RECREATE => {
            let pods = s.pod_map(cache, &selector)?;
            s.rollout_recreate(cache, &pods)?;
        }
        ROLLING_UPDATE => s.rollout_rolling(cache)?,
        other => return Err(Error::permanent(format!("unexpected deployment strategy type: {other}"))),
    }
    s.finish()
}

impl<'a> Sync<'a> {
    pub(crate) fn new(req: &'a Request, d: Deployment, d_json: String) -> Self {
        Sync {
            req,
            served_status: d.status.clone(),
            served_annotations: d.metadata.annotations.clone(),
            d,
            d_json,
            rss: Vec::new(),
            released: Vec::new(),
            new_rs: None,
            searched: false,
            events: Vec::new(),
            deletes: Vec::new(),
            status_first: false,
            requeue_after_ms: None,
            active_pods: Default::default(),
        }
    }

    fn name(&self) -> &str {
        self.d.metadata.name.as_deref().unwrap_or("")
    }

    pub(crate) fn event(&mut self, event_type: EventType, reason: &str, message: String) {
        self.event_for(None, event_type, reason, message);
    }

    /// An event recorded only once the write of ReplicaSet `rs` went through.
    fn event_for(&mut self, rs: Option<usize>, event_type: EventType, reason: &str, message: String) {
        let regarding = ObjectRef {
            kind: Kind::of::<Deployment>(),
            namespace: self.req.namespace.clone(),
            name: self.req.name.clone(),
        };
        self.events.push((rs, Event { regarding, event_type, reason: reason.into(), message }));
    }

    pub(crate) fn all(&self) -> Vec<&ReplicaSet> {
        self.rss.iter().map(|r| &r.value).collect()
    }

    pub(crate) fn new_rs(&self) -> Option<&ReplicaSet> {
        self.new_rs.map(|i| &self.rss[i].value)
    }

    /// Indices of every ReplicaSet but the new one.
    pub(crate) fn old_indices(&self) -> Vec<usize> {
        (0..self.rss.len()).filter(|i| Some(*i) != self.new_rs).collect()
    }

    pub(crate) fn olds(&self) -> Vec<&ReplicaSet> {
        self.old_indices().into_iter().map(|i| &self.rss[i].value).collect()
    }

    // -----------------------------------------------------------------------------------------
    // ReplicaSets and pods of this deployment
    // -----------------------------------------------------------------------------------------

    /// `getReplicaSetsForDeployment`: adopt matching orphans, release owned ones that no longer
    /// match, never touch one another controller owns.
    fn claim_replica_sets(&mut self, cache: &dyn Cache, selector: &Selector) -> Result<(), Error> {
        let controller_ref = ownership::new_controller_ref("apps/v1", "Deployment", &self.d.metadata);
        // Those it controls and the orphans it might adopt, from the controller-UID index: one
        // controlled by anything else would be ignored anyway.
        let uid = self.d.metadata.uid.as_deref().unwrap_or("");
        for obj in cache.list_controlled_as::<ReplicaSet>(&self.req.namespace, uid, true)? {
            let matches = selector.matches_opt(obj.value.metadata.labels.as_ref());
            match ownership::claim(&self.d.metadata, &obj.value.metadata, matches) {
                Claim::Owned => self.rss.push(Rs { value: obj.value, served: Some(obj.json), dirty: false }),
                Claim::Adopt => {
                    let mut value = obj.value;
                    value.metadata.owner_references.get_or_insert_with(Vec::new).push(controller_ref.clone());
                    self.rss.push(Rs { value, served: Some(obj.json), dirty: true });
                }
                Claim::Release => self.released.push(ownership::without_owner_ref(obj.raw()?, &controller_ref.uid)?),
                Claim::Ignore => {}
            }
        }
        Ok(())
    }

    /// The active pods each ReplicaSet controls, from the controller-UID index: what a rolling
    /// step counts against maxSurge besides their specs and statuses.
    pub(crate) fn count_active_pods(&mut self, cache: &dyn Cache) -> Result<(), Error> {
        let mut counts = std::collections::BTreeMap::new();
        for rs in &self.rss {
            let Some(uid) = rs.value.metadata.uid.clone() else { continue };
            let pods = cache.list_controlled_as::<Pod>(&self.req.namespace, &uid, false)?;
            counts.insert(uid, pods.iter().filter(|p| pod::is_active(&p.value)).count() as i32);
        }
        self.active_pods = counts;
        Ok(())
    }

    /// `getPodMapForDeployment`: the deployment's pods by the uid of the ReplicaSet controlling
    /// them; every ReplicaSet of the deployment has an entry.
    fn pod_map(&self, cache: &dyn Cache, selector: &Selector) -> Result<HashMap<String, Vec<Pod>>, Error> {
        let mut map: HashMap<String, Vec<Pod>> =
            self.rss.iter().filter_map(|r| r.value.metadata.uid.clone()).map(|uid| (uid, Vec::new())).collect();
        // Upstream lists the namespace's pods by selector and keeps those a ReplicaSet of the
        // deployment controls; the controller-UID index gives exactly those, selector applied.
        for (uid, pods) in map.iter_mut() {
            for p in cache.list_controlled_as::<Pod>(&self.req.namespace, uid, false)? {
                if selector.matches_opt(p.value.metadata.labels.as_ref()) {
                    pods.push(p.value);
                }
            }
        }
        Ok(map)
    }

    // -----------------------------------------------------------------------------------------
    // The new ReplicaSet and revisions
    // -----------------------------------------------------------------------------------------

    /// `getAllReplicaSetsAndSyncRevision`: finds (or, when `create`, creates) the new
    /// ReplicaSet and brings revisions up to date.
    /// `create` carries the cache to check a new name against.
    pub(crate) fn get_all_replica_sets_and_sync_revision(&mut self, create: Option<&dyn Cache>) -> Result<(), Error> {
        // Templates do not change within a sync: look for the new ReplicaSet once.
        if !self.searched {
            let all = self.all();
            self.new_rs =
                find_new_replica_set(&self.d, &all).and_then(|n| all.iter().position(|r| std::ptr::eq(*r, n)));
            self.searched = true;
        }
        let found = self.new_rs;
        let max_old_revision = max_revision(&self.olds());
        let new_revision = (max_old_revision + 1).to_string();
        match found {
            Some(i) => {
                self.sync_existing_new_rs(i, &new_revision);
                Ok(())
            }
            None => match create {
                Some(cache) => self.create_new_rs(cache, &new_revision),
                None => Ok(()),
            },
        }
    }

    fn sync_existing_new_rs(&mut self, i: usize, new_revision: &str) {
        let update = set_new_replica_set_annotations(
            &self.d,
            &self.rss[i].value,
            new_revision,
            true,
            MAX_REV_HISTORY_LENGTH_IN_CHARS,
        );
        let rs = &mut self.rss[i];
        let min_ready_changed =
            rs.value.spec.min_ready_seconds.unwrap_or(0) != self.d.spec.min_ready_seconds.unwrap_or(0);
        if update.changed || min_ready_changed {
            rs.value.metadata.annotations = Some(update.annotations);
            rs.value.spec.min_ready_seconds = self.d.spec.min_ready_seconds.filter(|s| *s != 0);
            rs.dirty = true;
            // Upstream returns here; the deployment's revision follows in the next sync.
            return;
        }
        let revision = revision_string(&rs.value.metadata);
        let rs_name = rs.value.metadata.name.clone().unwrap_or_default();
        set_deployment_revision(self.d.metadata.annotations.get_or_insert_with(Default::default), &revision);
        let has_condition =
            self.d.status.as_ref().is_some_and(|s| get_deployment_condition(s, DEPLOYMENT_PROGRESSING).is_some());
        if has_progress_deadline(&self.d) && !has_condition {
            let message = format!("Found new replica set {rs_name:?}");
            let condition =
                new_deployment_condition(DEPLOYMENT_PROGRESSING, "True", FOUND_NEW_RS_REASON, &message, self.req.now);
            set_deployment_condition(self.d.status.get_or_insert_with(Default::default), condition);
        }
    }

    fn create_new_rs(&mut self, cache: &dyn Cache, new_revision: &str) -> Result<(), Error> {
        let collision_count = self.d.status.as_ref().and_then(|s| s.collision_count);
        let hash = pod_template_hash(&self.d.spec.template, collision_count);
        let mut template: PodTemplateSpec = self.d.spec.template.clone();
        let mut labels = template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
        labels.insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), hash.clone());
        template.metadata.get_or_insert_with(Default::default).labels = Some(labels.clone());
        let mut selector = self.d.spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), hash.clone());
        let name = format!("{}-{hash}", self.name());

        // The name is taken by a ReplicaSet this deployment does not own or with another
        // template: a hash collision. Counting it changes the next hash.
        if let Some(existing) = cache.get_as::<ReplicaSet>(&self.req.namespace, &name)? {
            let ours = ownership::controller_of(&existing.value.metadata)
                .is_some_and(|r| Some(&r.uid) == self.d.metadata.uid.as_ref());
            let empty = PodTemplateSpec::default();
            if !(ours
                && equal_ignore_hash(&self.d.spec.template, existing.value.spec.template.as_ref().unwrap_or(&empty)))
            {
                let status = self.d.status.get_or_insert_with(Default::default);
                status.collision_count = Some(status.collision_count.unwrap_or(0).wrapping_add(1));
                log(
                    Level::Info,
                    &format!("Found a hash collision for deployment {} - bumping collisionCount", self.name()),
                );
                return Ok(());
            }
        }

        let mut rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(self.req.namespace.clone()),
                owner_references: Some(vec![ownership::new_controller_ref("apps/v1", "Deployment", &self.d.metadata)]),
                labels: Some(labels),
                ..Default::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: self.d.spec.min_ready_seconds.filter(|s| *s != 0),
                selector,
                template: Some(template),
            },
            status: None,
        };
        let new_replicas = {
            let olds = self.olds();
            let mut all = olds.clone();
            all.push(&rs);
            new_rs_new_replicas(&self.d, &all, &rs, &self.active_pods).map_err(Error::permanent)?
        };
        rs.spec.replicas = Some(new_replicas);
        let update =
            set_new_replica_set_annotations(&self.d, &rs, new_revision, false, MAX_REV_HISTORY_LENGTH_IN_CHARS);
        rs.metadata.annotations = Some(update.annotations);

        // The host reports a failed write of the last sync; if it was this create, say so in
        // status as upstream does right after the failed call.
        if let Some(failure) = self.req.previous_failure.as_deref().filter(|f| f.contains(&name)) {
            let message = format!("Failed to create new replica set {name:?}: {failure}");
            if has_progress_deadline(&self.d) {
                let condition = new_deployment_condition(
                    DEPLOYMENT_PROGRESSING,
                    "False",
                    FAILED_RS_CREATE_REASON,
                    &message,
                    self.req.now,
                );
                set_deployment_condition(self.d.status.get_or_insert_with(Default::default), condition);
                self.status_first = true;
            }
            self.event(EventType::Warning, FAILED_RS_CREATE_REASON, message);
        }
        if new_replicas > 0 {
            self.event_for(
                Some(self.rss.len()),
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {new_replicas}"),
            );
        }
        set_deployment_revision(self.d.metadata.annotations.get_or_insert_with(Default::default), new_revision);
        if has_progress_deadline(&self.d) && !self.status_first {
            let message = format!("Created new replica set {name:?}");
            let condition = new_deployment_condition(
                DEPLOYMENT_PROGRESSING,
                "True",
                NEW_REPLICA_SET_REASON,
                &message,
                self.req.now,
            );
            set_deployment_condition(self.d.status.get_or_insert_with(Default::default), condition);
        }
        self.rss.push(Rs { value: rs, served: None, dirty: true });
        self.new_rs = Some(self.rss.len() - 1);
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Scaling
    // -----------------------------------------------------------------------------------------

    /// `scaleReplicaSetAndRecordEvent`: true when the size changed.
    pub(crate) fn scale_and_record(&mut self, i: usize, new_scale: i32) -> bool {
        let current = rs_replicas(&self.rss[i].value);
        if current == new_scale {
            return false;
        }
        let operation = if current < new_scale { "up" } else { "down" };
        self.scale_replica_set(i, new_scale, operation)
    }

    /// `scaleReplicaSet`: sets the size and the replicas annotations; records the event when
    /// the size moved.
    pub(crate) fn scale_replica_set(&mut self, i: usize, new_scale: i32, operation: &str) -> bool {
        let replicas = deployment_replicas(&self.d);
        let max = replicas.wrapping_add(max_surge(&self.d));
        let rs = &mut self.rss[i];
        let old_scale = rs_replicas(&rs.value);
        let size_changed = old_scale != new_scale;
        if !size_changed && !replicas_annotations_need_update(&rs.value, replicas, max) {
            return false;
        }
        rs.value.spec.replicas = Some(new_scale);
        if size_changed {
            // What upstream's update returns: a spec change is a new generation, which the
            // ReplicaSet's status has not observed, so the rest of this sync (history cleanup)
            // treats it as upstream's does.
            rs.value.metadata.generation = Some(rs.value.metadata.generation.unwrap_or(0).saturating_add(1));
        }
        set_replicas_annotations(rs.value.metadata.annotations.get_or_insert_with(Default::default), replicas, max);
        rs.dirty = true;
        if size_changed {
            let name = rs.value.metadata.name.clone().unwrap_or_default();
            self.event_for(
                Some(i),
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled {operation} replica set {name} from {old_scale} to {new_scale}"),
            );
        }
        size_changed
    }

    /// `isScalingEvent`: an active ReplicaSet was sized for another deployment size.
    fn is_scaling_event(&mut self) -> Result<bool, Error> {
        self.get_all_replica_sets_and_sync_revision(None)?;
        let replicas = deployment_replicas(&self.d);
        Ok(filter_active_replica_sets(&self.all())
            .iter()
            .any(|rs| desired_replicas_annotation(rs).is_some_and(|desired| desired != replicas)))
    }

    /// `sync`: scaling and status only, for paused deployments and scaling events.
    fn sync(&mut self) -> Result<(), Error> {
        // Revisions are synced without creating: a paused deployment rolls nothing out.
        self.get_all_replica_sets_and_sync_revision(None)?;
        self.scale();
        if self.d.spec.paused == Some(true) {
            self.cleanup_deployment();
        }
        self.sync_deployment_status();
        Ok(())
    }

    fn sync_status_only(&mut self) -> Result<(), Error> {
        self.get_all_replica_sets_and_sync_revision(None)?;
        self.sync_deployment_status();
        Ok(())
    }

    /// `scale`: one active ReplicaSet takes the whole size; otherwise a rolling deployment
    /// spreads the change across active ReplicaSets in proportion to their size.
    fn scale(&mut self) {
        let replicas = deployment_replicas(&self.d);
        let active_or_latest = {
            let olds = self.olds();
            find_active_or_latest(self.new_rs(), &olds).and_then(|a| self.index_of(a))
        };
        if let Some(i) = active_or_latest {
            self.scale_and_record(i, replicas);
            return;
        }
        if is_saturated(&self.d, self.new_rs()) {
            for i in self.old_indices() {
                self.scale_and_record(i, 0);
            }
            return;
        }
        if !is_rolling_update(&self.d) {
            return;
        }
        let mut active: Vec<usize> = (0..self.rss.len()).filter(|i| rs_replicas(&self.rss[*i].value) > 0).collect();
        let all_replicas = active.iter().fold(0i32, |acc, i| acc.wrapping_add(rs_replicas(&self.rss[*i].value)));
        let allowed = if replicas > 0 { replicas.wrapping_add(max_surge(&self.d)) } else { 0 };
        let to_add = allowed.wrapping_sub(all_replicas);
        let operation = match to_add.cmp(&0) {
            std::cmp::Ordering::Greater => {
                active.sort_by(|a, b| replica_sets_by_size_newer(&self.rss[*a].value, &self.rss[*b].value));
                "up"
            }
            std::cmp::Ordering::Less => {
                active.sort_by(|a, b| replica_sets_by_size_older(&self.rss[*a].value, &self.rss[*b].value));
                "down"
            }
            std::cmp::Ordering::Equal => "",
        };
        let mut added = 0i32;
        let mut sizes = Vec::with_capacity(active.len());
        for &i in &active {
            let rs = &self.rss[i].value;
            let size = if to_add != 0 {
                let proportion = get_proportion(Some(rs), &self.d, to_add, added);
                added = added.wrapping_add(proportion);
                rs_replicas(rs).wrapping_add(proportion)
            } else {
                rs_replicas(rs)
            };
            sizes.push(size);
        }
        // The rounding leftover goes to the largest ReplicaSet (the first in sort order).
        if to_add != 0
            && let Some(first) = sizes.first_mut()
        {
            *first = first.wrapping_add(to_add.wrapping_sub(added)).max(0);
        }
        for (i, size) in active.into_iter().zip(sizes) {
            self.scale_replica_set(i, size, operation);
        }
    }

    fn index_of(&self, rs: &ReplicaSet) -> Option<usize> {
        self.rss.iter().position(|r| std::ptr::eq(&r.value, rs))
    }

    /// `cleanupDeployment`: deletes the oldest fully scaled-down old ReplicaSets beyond
    /// `revisionHistoryLimit`.
    pub(crate) fn cleanup_deployment(&mut self) {
        if !has_revision_history_limit(&self.d) {
            return;
        }
        let limit = self.d.spec.revision_history_limit.unwrap_or(0);
        let mut cleanable: Vec<&ReplicaSet> =
            self.olds().into_iter().filter(|rs| rs.metadata.deletion_timestamp.is_none()).collect();
        let diff = cleanable.len() as i64 - i64::from(limit);
        if diff <= 0 {
            return;
        }
        cleanable.sort_by(|a, b| replica_sets_by_revision(a, b));
        let mut deletes = Vec::new();
        for rs in cleanable.into_iter().take(diff as usize) {
            let status = rs.status.as_ref();
            let (status_replicas, observed) =
                status.map_or((0, 0), |s| (s.replicas, s.observed_generation.unwrap_or(0)));
            // Never a ReplicaSet that still has pods, or whose last scale-down is unobserved
            // (one this sync scales down counts as unobserved: `scale_replica_set`).
            if status_replicas != 0 || rs_replicas(rs) != 0 || rs.metadata.generation.unwrap_or(0) > observed {
                continue;
            }
            deletes.push(DeleteTarget {
                target: ObjectRef {
                    kind: Kind::of::<ReplicaSet>(),
                    namespace: self.req.namespace.clone(),
                    name: rs.metadata.name.clone().unwrap_or_default(),
                },
                uid: rs.metadata.uid.clone(),
                propagation: None,
            });
        }
        self.deletes.extend(deletes);
    }

    // -----------------------------------------------------------------------------------------
    // Status
    // -----------------------------------------------------------------------------------------

    /// `checkPausedConditions`: Progressing turns Unknown with DeploymentPaused /
    /// DeploymentResumed; a reported timeout is never overwritten.
    fn check_paused_conditions(&mut self) {
        if !has_progress_deadline(&self.d) {
            return;
        }
        let paused = self.d.spec.paused == Some(true);
        let status = self.d.status.get_or_insert_with(Default::default);
        let reason = get_deployment_condition(status, DEPLOYMENT_PROGRESSING).and_then(|c| c.reason.clone());
        if reason.as_deref() == Some(TIMED_OUT_REASON) {
            return;
        }
        let paused_condition_exists = reason.as_deref() == Some(PAUSED_DEPLOY_REASON);
        let (reason, message) = match (paused, paused_condition_exists) {
            (true, false) => (PAUSED_DEPLOY_REASON, "Deployment is paused"),
            (false, true) => (RESUMED_DEPLOY_REASON, "Deployment is resumed"),
            _ => return,
        };
        set_deployment_condition(
            status,
            new_deployment_condition(DEPLOYMENT_PROGRESSING, "Unknown", reason, message, self.req.now),
        );
    }

    /// `calculateStatus`: counts from the ReplicaSets (their sizes as this sync leaves them),
    /// conditions carried over, Available recomputed.
    pub(crate) fn calculate_status(&self) -> DeploymentStatus {
        let all = self.all();
        let available = get_available_replica_count_for_replica_sets(&all);
        let total = get_replica_count_for_replica_sets(&all);
        let unavailable = total.wrapping_sub(available).max(0);
        let current = self.d.status.clone().unwrap_or_default();
        let mut status = DeploymentStatus {
            observed_generation: self.d.metadata.generation.filter(|g| *g != 0),
            replicas: nonzero(get_actual_replica_count_for_replica_sets(&all)),
            updated_replicas: nonzero(get_actual_replica_count_for_replica_sets(
                &self.new_rs().into_iter().collect::<Vec<_>>(),
            )),
            ready_replicas: nonzero(get_ready_replica_count_for_replica_sets(&all)),
            available_replicas: nonzero(available),
            unavailable_replicas: nonzero(unavailable),
            collision_count: current.collision_count,
            conditions: current.conditions,
            terminating_replicas: None,
        };
        let condition = if available >= deployment_replicas(&self.d).wrapping_sub(max_unavailable(&self.d)) {
            new_deployment_condition(
                DEPLOYMENT_AVAILABLE,
                "True",
                MINIMUM_REPLICAS_AVAILABLE,
                "Deployment has minimum availability.",
                self.req.now,
            )
        } else {
            new_deployment_condition(
                DEPLOYMENT_AVAILABLE,
                "False",
                MINIMUM_REPLICAS_UNAVAILABLE,
                "Deployment does not have minimum availability.",
                self.req.now,
            )
        };
        set_deployment_condition(&mut status, condition);
        status
    }

    /// `syncDeploymentStatus`.
    fn sync_deployment_status(&mut self) {
        self.d.status = Some(self.calculate_status());
    }

    // -----------------------------------------------------------------------------------------
    // The outcome
    // -----------------------------------------------------------------------------------------

    /// Turns the working state into writes: releases, then each ReplicaSet write followed by
    /// the events it earned (so an event is recorded exactly when its write went through, and a
    /// failed write stops the rest, as upstream's sequence of calls), then history cleanup, then
    /// the deployment's status (with its revision annotation) last, so that it only ever
    /// reports what was written.
    pub(crate) fn finish(self) -> Result<Outcome, Error> {
        let mut outcome = Outcome::default();
        let status_write = self.status_write()?;
        if self.status_first {
            outcome.push_batch(status_write.clone().into_iter().collect());
        }
        let (general, mut earned): (Vec<_>, Vec<_>) = self.events.into_iter().partition(|(rs, _)| rs.is_none());
        outcome.push_batch(general.into_iter().map(|(_, e)| Intent::Event(e)).collect());
        outcome.push_batch(self.released.iter().map(|raw| Intent::Update(raw.to_string())).collect());
        for (i, rs) in self.rss.iter().enumerate().filter(|(_, r)| r.dirty) {
            outcome.push_batch(vec![match &rs.served {
                None => Intent::Create(new_replica_set_json(&rs.value)?.to_string()),
                Some(json) => Intent::Update(updated_replica_set_json(json, &rs.value)?.to_string()),
            }]);
            let (mine, rest): (Vec<_>, Vec<_>) = earned.into_iter().partition(|(rs, _)| *rs == Some(i));
            earned = rest;
            outcome.push_batch(mine.into_iter().map(|(_, e)| Intent::Event(e)).collect());
        }
        outcome.push_batch(self.deletes.into_iter().map(Intent::Delete).collect());
        if !self.status_first {
            outcome.push_batch(status_write.into_iter().collect());
        }
        outcome.requeue_after_ms = self.requeue_after_ms;
        Ok(outcome)
    }

    /// The deployment's status write, when its status or annotations moved.
    fn status_write(&self) -> Result<Option<Intent>, Error> {
        let annotations_changed = self.d.metadata.annotations != self.served_annotations;
        if self.d.status == self.served_status && !annotations_changed {
            return Ok(None);
        }
        let mut raw: Value =
            serde_json::from_str(&self.d_json).map_err(|e| Error::retryable(format!("object JSON: {e}")))?;
        let status = serde_json::to_value(self.d.status.clone().unwrap_or_default()).map_err(encode_error)?;
        let mut merged = raw.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
        // Fields this build does not know survive; the ones it computes are replaced.
        for known in STATUS_FIELDS {
            merged.remove(*known);
        }
        if let Value::Object(fields) = status {
            merged.extend(fields);
        }
        raw["status"] = Value::Object(merged);
        // The status subresource of Deployments takes annotations (not labels): this is how
        // the revision annotation reaches the deployment, as upstream.
        if annotations_changed {
            set_map(&mut raw, "/metadata", "annotations", self.d.metadata.annotations.as_ref())?;
        }
        Ok(Some(Intent::UpdateStatus(raw.to_string())))
    }
}

const STATUS_FIELDS: &[&str] = &[
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "terminatingReplicas",
    "collisionCount",
    "conditions",
];

/// Go's `omitempty` on int32 status counts: zero is absent.
fn nonzero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

fn encode_error(e: serde_json::Error) -> Error {
    Error::permanent(format!("cannot encode: {e}"))
}

fn new_replica_set_json(rs: &ReplicaSet) -> Result<Value, Error> {
    let mut v = serde_json::to_value(rs).map_err(encode_error)?;
    v["apiVersion"] = "apps/v1".into();
    v["kind"] = "ReplicaSet".into();
    Ok(v)
}

/// The served JSON with the fields a sync changes (size, minReadySeconds, annotations, owner
/// references) taken from `rs`.
fn updated_replica_set_json(served: &str, rs: &ReplicaSet) -> Result<Value, Error> {
    let mut v: Value = serde_json::from_str(served).map_err(|e| Error::retryable(format!("object JSON: {e}")))?;
    let spec =
        v.get_mut("spec").and_then(Value::as_object_mut).ok_or_else(|| Error::permanent("ReplicaSet has no spec"))?;
    spec.insert("replicas".into(), rs_replicas(rs).into());
    match rs.spec.min_ready_seconds.filter(|s| *s != 0) {
        Some(s) => spec.insert("minReadySeconds".into(), s.into()),
        None => spec.remove("minReadySeconds"),
    };
    set_map(&mut v, "/metadata", "annotations", rs.metadata.annotations.as_ref())?;
    let refs = rs.metadata.owner_references.as_ref().filter(|r| !r.is_empty());
    set_map(&mut v, "/metadata", "ownerReferences", refs)?;
    Ok(v)
}

/// Sets `parent.field` to `value` as JSON, removing it when unset or empty.
fn set_map<T: serde::Serialize>(v: &mut Value, parent: &str, field: &str, value: Option<&T>) -> Result<(), Error> {
    let obj = v
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::permanent(format!("object has no {parent}")))?;
    let encoded = value.map(serde_json::to_value).transpose().map_err(encode_error)?;
    match encoded {
        Some(e) if !matches!(&e, Value::Object(m) if m.is_empty()) => obj.insert(field.into(), e),
        _ => obj.remove(field),
    };
    Ok(())
}
