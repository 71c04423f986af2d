//! The `kube::Client` of an operator.
//!
//! Contract: configuration from the environment (`KUBECONFIG` / `~/.kube/config`, else the
//! in-cluster service account) or from a given kubeconfig; kube's in-request retry layer is
//! always off, so a failed request reaches the reconcile engine, whose per-object backoff
//! decides (kinfer-state's advice: two retry layers multiply the load on a struggling API
//! server).

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The client could not be configured or built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No usable kubeconfig or in-cluster configuration.
    #[error("load Kubernetes client configuration: {0}")]
    Infer(#[source] Box<kube::config::InferConfigError>),
    /// The given kubeconfig is not usable.
    #[error("load kubeconfig: {0}")]
    Kubeconfig(#[source] Box<kube::config::KubeconfigError>),
    /// The client could not be built.
    #[error("build Kubernetes client: {0}")]
    Build(#[source] Box<kube::Error>),
}

/// A client for `config`, with kube's retry layer off.
pub fn from_config(mut config: kube::Config) -> Result<Client, ClientError> {
    config.default_retry = false;
    Client::try_from(config).map_err(|e| ClientError::Build(Box::new(e)))
}

/// A client from the environment (kubeconfig or in-cluster), with kube's retry layer off.
pub async fn infer() -> Result<Client, ClientError> {
    let config = kube::Config::infer()
        .await
        .map_err(|e| ClientError::Infer(Box::new(e)))?;
    from_config(config)
}

/// A client for the current context of `kubeconfig`, with kube's retry layer off.
pub async fn from_kubeconfig(kubeconfig: Kubeconfig) -> Result<Client, ClientError> {
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| ClientError::Kubeconfig(Box::new(e)))?;
    from_config(config)
}
