//! When a reconcile of an object was first asked for: the start of its queue wait.
//!
//! Contract: [`Triggers`] is a cheap, cloneable handle the controller's watch streams call as
//! each trigger arrives, before the controller queues it: [`Triggers::object`] for an event of
//! the reconciled object itself, [`Triggers::owners_of`] for an event of an object it owns
//! (each owner reference of the engine's kind, in the owned object's namespace, as
//! kube-runtime maps owned objects to owners; only for an owner already remembered, so the
//! delete events of a deleted owner's children do not bring its memory back after
//! [`super::Engine::forget`]). Only the first trigger since the object's last
//! reconcile started counts (later ones join the same queued reconcile); the engine observes
//! the wait (`kinfer_reconcile_queue_wait_seconds`) when that reconcile starts. A held
//! reconcile (`Retry-After`) does not end the wait. Every recorded trigger counts in
//! `workqueue_adds_total`. Nothing here does I/O.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::memory::Memory;
use crate::clock::Clock;
use crate::metrics::ControllerMetrics;
use crate::pipeline::ObjectKey;

/// Records trigger arrivals for one engine; see the module contract.
#[derive(Clone)]
pub struct Triggers {
    memory: Arc<Memory>,
    clock: Arc<dyn Clock>,
    kind: String,
    group: String,
    metrics: ControllerMetrics,
}

impl std::fmt::Debug for Triggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Triggers")
            .field("kind", &self.kind)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl Triggers {
    pub(super) fn new(
        memory: Arc<Memory>,
        clock: Arc<dyn Clock>,
        kind: String,
        group: String,
        metrics: ControllerMetrics,
    ) -> Self {
        Self {
            memory,
            clock,
            kind,
            group,
            metrics,
        }
    }

    fn key(&self, namespace: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            kind: self.kind.clone(),
            group: self.group.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// An event of the reconciled object (`meta` is its metadata).
    pub fn object(&self, meta: &ObjectMeta) {
        if let Some(name) = meta.name.as_deref() {
            self.metrics.triggered();
            self.memory
                .seen(&self.key(meta.namespace.as_deref(), name), self.clock.now());
        }
    }

    /// An event of an object (`meta`) owned by objects of the engine's kind.
    pub fn owners_of(&self, meta: &ObjectMeta) {
        for owner in meta.owner_references.iter().flatten() {
            let group = owner
                .api_version
                .rsplit_once('/')
                .map_or("", |(group, _)| group);
            if owner.kind == self.kind && group == self.group {
                let key = self.key(meta.namespace.as_deref(), &owner.name);
                self.metrics.triggered();
                self.memory.seen_if_known(&key, self.clock.now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;
    use crate::clock::{ManualClock, elapsed};

    fn meta(name: &str, owners: &[(&str, &str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            owner_references: Some(
                owners
                    .iter()
                    .map(|(api_version, kind, name)| OwnerReference {
                        api_version: (*api_version).into(),
                        kind: (*kind).into(),
                        name: (*name).into(),
                        uid: format!("uid-{name}"),
                        ..OwnerReference::default()
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn the_first_trigger_of_a_known_object_starts_its_wait() {
        let clock = Arc::new(ManualClock::at_epoch_2026());
        let memory = Arc::new(Memory::default());
        let t = Triggers::new(
            Arc::clone(&memory),
            clock.clone(),
            "Toy".into(),
            "example.com".into(),
            crate::metrics::Metrics::new().controller("toy"),
        );
        let key = t.key(Some("ns"), "a");
        let t0 = clock.now();

        // A child's event before its owner was ever seen (or after it was forgotten): nothing.
        t.owners_of(&meta("a-child", &[("example.com/v1", "Toy", "a")]));
        assert_eq!(memory.len(), 0);

        t.object(&meta("a", &[]));
        clock.advance(Duration::from_secs(1));
        // Later triggers join the pending one; other kinds and groups are not ours.
        t.owners_of(&meta(
            "a-child",
            &[
                ("example.com/v1", "Toy", "a"),
                ("v1", "Toy", "b"),
                ("example.com/v1", "Other", "c"),
            ],
        ));
        assert_eq!(memory.len(), 1);
        clock.advance(Duration::from_secs(1));
        let started = memory.start(&key, clock.now());
        assert_eq!(
            started.map(|s| elapsed(s, clock.now())),
            Some(Duration::from_secs(2))
        );
        assert_eq!(started, Some(t0));

        // After the start, a child's event starts the next wait.
        t.owners_of(&meta("a-child", &[("example.com/v1", "Toy", "a")]));
        assert_eq!(memory.start(&key, clock.now()), Some(clock.now()));
    }
}
