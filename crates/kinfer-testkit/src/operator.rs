//! An operator run inside a test's process, as its binary runs it: its own client under its
//! own name, and its run loop as a task that a test can kill where it stands (mid-reconcile
//! included) and start again with a fresh process state. The fault-matrix and bad-input
//! harnesses of every operator hold one, so the task's life cycle is written once here; the
//! operator's client itself is the operator crate's (`kinfer_operator::client`, kube's retry
//! layer off), built from [`TestCluster::kubeconfig_as`]. Also here: reading which object
//! controls a child ([`controllers`]), the ownership every harness checks.

use std::future::Future;

use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{Error, TestCluster};

impl TestCluster {
    /// A kubeconfig whose client impersonates `user` ([`TestCluster::kubeconfig_yaml_as`]):
    /// the cluster counts that client's requests under `user`
    /// ([`crate::Counters::by_client`]), apart from the test's own.
    pub fn kubeconfig_as(&self, user: &str) -> Result<kube::config::Kubeconfig, Error> {
        kube::config::Kubeconfig::from_yaml(&self.kubeconfig_yaml_as(user))
            .map_err(|e| Error::Kubeconfig(e.to_string()))
    }
}

/// An operator's run loop spawned as a task, holding the shutdown signal its binary wires to
/// SIGTERM (never sent: a test stops an operator the hard way). Dropping it aborts the task.
#[derive(Debug)]
pub struct OperatorTask {
    /// Kept so the run loop's receiver never sees its sender gone (which reads as shutdown).
    _shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl OperatorTask {
    /// Spawns `run(shutdown)` on the current runtime.
    pub fn spawn<F>(run: impl FnOnce(watch::Receiver<bool>) -> F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = watch::channel(false);
        Self {
            _shutdown: tx,
            task: tokio::spawn(run(rx)),
        }
    }

    /// Whether the run loop is still running (a panic in it ends the task).
    pub fn alive(&self) -> bool {
        !self.task.is_finished()
    }
}

impl Drop for OperatorTask {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The controller owner references of the stored object `o` (an operator's child has exactly
/// one, to its owner's uid).
pub fn controllers(o: &Value) -> Vec<&Value> {
    o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["controller"] == true)
        .collect()
}

/// Whether a controller owner reference of `o` names `uid`.
pub fn controlled_by(o: &Value, uid: &str) -> bool {
    controllers(o).iter().any(|r| r["uid"] == uid)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn alive_until_its_run_loop_panics_or_it_is_dropped() {
        let (tx, mut rx) = watch::channel(false);
        let looping = OperatorTask::spawn(|mut shutdown| async move {
            // Ends only if the shutdown signal is sent or its sender dropped.
            let _ = shutdown.changed().await;
            tx.send_replace(true);
        });
        let crashing = OperatorTask::spawn(|_| async { panic!("a reconcile panicked") });
        crate::wait::holds("the panicking task ended", Duration::from_secs(5), || {
            !crashing.alive()
        })
        .await;
        assert!(looping.alive(), "the run loop saw a shutdown nobody sent");
        drop(looping);
        // Aborted, not shut down: the loop never got to report a shutdown.
        assert!(rx.changed().await.is_err(), "the run loop saw a shutdown");
        assert!(!*rx.borrow());
    }

    #[test]
    fn controllers_are_the_owner_references_marked_controller() {
        let o = serde_json::json!({ "metadata": { "ownerReferences": [
            { "uid": "a", "controller": true },
            { "uid": "b" },
            { "uid": "c", "controller": false },
        ] } });
        assert_eq!(controllers(&o), [&o["metadata"]["ownerReferences"][0]]);
        assert!(controlled_by(&o, "a"));
        assert!(!controlled_by(&o, "b"));
        assert!(!controlled_by(&o, "c"));
        assert!(controllers(&serde_json::json!({ "metadata": {} })).is_empty());
    }

    #[tokio::test]
    async fn kubeconfig_as_names_the_user() {
        let cluster = TestCluster::start().await.expect("cluster");
        let kubeconfig = cluster.kubeconfig_as("op").expect("kubeconfig");
        let user = kubeconfig.auth_infos[0].auth_info.as_ref().expect("user");
        assert_eq!(user.impersonate.as_deref(), Some("op"));
    }
}
