//! Start-up check: our CRDs and KServe's must be installed.
//!
//! Contract: reads CustomResourceDefinitions by name; fails with the missing names and an
//! install hint. Reads only.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client, ResourceExt};

/// KServe CRDs the templates create objects of.
pub const KSERVE_CRDS: &[&str] = &[
    "servingruntimes.serving.kserve.io",
    "clusterservingruntimes.serving.kserve.io",
    "inferenceservices.serving.kserve.io",
];

/// Errors of the check.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// CRDs are missing.
    #[error(
        "CustomResourceDefinitions not installed: {}. Install AIM's with `aim-operator crds | kubectl apply -f -` \
         (or `kubectl apply -k deploy/crds`) and KServe's from https://kserve.github.io/website/ (RawDeployment mode)",
        .0.join(", ")
    )]
    Missing(Vec<String>),
    /// The API server could not be read.
    #[error("read CustomResourceDefinitions: {0}")]
    Read(#[source] Box<kube::Error>),
}

/// Every CRD the operator needs.
pub fn required() -> Vec<String> {
    let mut names: Vec<String> = kinfer_api::aim::crds()
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.extend(KSERVE_CRDS.iter().map(|s| (*s).to_owned()));
    names
}

/// Fails unless every required CRD exists.
pub async fn check(client: &Client) -> Result<(), StartupError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut missing = Vec::new();
    for name in required() {
        if api
            .get_opt(&name)
            .await
            .map_err(|e| StartupError::Read(Box::new(e)))?
            .is_none()
        {
            missing.push(name);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StartupError::Missing(missing))
    }
}
