//! Start-up checks on CustomResourceDefinitions.
//!
//! Contract: reads CRDs by name, never writes. [`require`] reports every missing CRD at once
//! with the caller's install hint (an operator without its CRDs cannot do anything useful, so
//! the binary exits instead of failing every watch); [`installed`] probes one CRD once. To
//! follow optional CRDs (degrade while missing, pick them up when installed) use
//! [`crate::optional_crds::CrdWatch`]. A read error is an error, never "absent".

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

/// Errors of the CRD checks.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// Required CRDs are not installed.
    #[error("CustomResourceDefinitions not installed: {}; install with {hint}", .names.join(", "))]
    Missing {
        /// The missing CRDs' names.
        names: Vec<String>,
        /// How to install them.
        hint: String,
    },
    /// The CRDs could not be listed.
    #[error("list CustomResourceDefinitions: {source}")]
    List {
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// A CRD could not be read.
    #[error("read CustomResourceDefinition {name}: {source}")]
    Read {
        /// The CRD's name.
        name: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
}

/// Whether the CRD `name` (`<plural>.<group>`) is installed.
pub async fn installed(client: &Client, name: &str) -> Result<bool, CrdError> {
    Api::<CustomResourceDefinition>::all(client.clone())
        .get_opt(name)
        .await
        .map(|crd| crd.is_some())
        .map_err(|source| CrdError::Read {
            name: name.to_owned(),
            source: Box::new(source),
        })
}

/// Fails with every missing name and `hint` unless all `names` are installed.
pub async fn require(client: &Client, names: &[&str], hint: &str) -> Result<(), CrdError> {
    let mut missing = Vec::new();
    for name in names {
        if !installed(client, name).await? {
            missing.push((*name).to_owned());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CrdError::Missing {
            names: missing,
            hint: hint.to_owned(),
        })
    }
}
