//! Start-up: the CRDs the operator needs, and the serving CRDs it follows.
//!
//! Contract:
//! - [`check`] reads CustomResourceDefinitions by name and fails, naming the missing ones with
//!   an install hint, unless every AIM CRD is installed. Reads only.
//! - KServe's and Gateway API's CRDs are optional ([`ServingCrds`], followed at run time by a
//!   [`kinfer_operator::CrdWatch`] over [`SERVING_CRDS`]): without them the catalog (models,
//!   templates and their discovery, runtime configs, caches, artifacts) runs, the objects that
//!   need a missing kind report it (`KindNotInstalled`, naming its CRD), and no watch of a
//!   missing kind is started; the controllers restart with the new set when one appears or
//!   goes ([`crate::controllers::run_following`]). Pure but for [`check`].

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_operator::InstalledCrds;
use kube::core::ApiResource;
use kube::{Api, Client, ResourceExt};

/// KServe CRDs the templates and services create objects of.
pub const KSERVE_CRDS: &[&str] = &[
    "servingruntimes.serving.kserve.io",
    "clusterservingruntimes.serving.kserve.io",
    "inferenceservices.serving.kserve.io",
];

/// The Gateway API HTTPRoute CRD (a service's route).
pub const HTTP_ROUTE_CRD: &str = "httproutes.gateway.networking.k8s.io";

/// Every optional CRD the operator follows.
pub const SERVING_CRDS: [&str; 4] = [
    KSERVE_CRDS[0],
    KSERVE_CRDS[1],
    KSERVE_CRDS[2],
    HTTP_ROUTE_CRD,
];

/// The API group of KServe's kinds.
const KSERVE_GROUP: &str = "serving.kserve.io";
/// The API group of Gateway API's kinds.
const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// Which optional serving CRDs the cluster serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServingCrds {
    /// Every KServe CRD of [`KSERVE_CRDS`].
    pub kserve: bool,
    /// Gateway API's HTTPRoute.
    pub gateway_api: bool,
}

impl Default for ServingCrds {
    /// Everything installed (the in-process uses: `kinfer render`, tests).
    fn default() -> Self {
        Self::ALL
    }
}

impl ServingCrds {
    /// Every serving CRD installed.
    pub const ALL: Self = Self {
        kserve: true,
        gateway_api: true,
    };

    /// The view of what a CRD watch over [`SERVING_CRDS`] reports installed.
    pub fn from_installed(installed: &InstalledCrds) -> Self {
        Self {
            kserve: installed.contains_all(KSERVE_CRDS),
            gateway_api: installed.contains(HTTP_ROUTE_CRD),
        }
    }

    /// Whether the cluster serves `resource`'s kind (kinds of other groups always are).
    pub fn serves(&self, resource: &ApiResource) -> bool {
        match resource.group.as_str() {
            KSERVE_GROUP => self.kserve,
            GATEWAY_GROUP => self.gateway_api,
            _ => true,
        }
    }

    /// The names of the missing CRDs, for a log line.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.kserve {
            out.extend_from_slice(KSERVE_CRDS);
        }
        if !self.gateway_api {
            out.push(HTTP_ROUTE_CRD);
        }
        out
    }
}

/// Errors of the check.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// CRDs are missing.
    #[error(
        "CustomResourceDefinitions not installed: {}. Install AIM's with `aim-operator crds | kubectl apply --server-side -f -` \
         (or `kubectl apply --server-side -k deploy/crds/aim.eai.amd.com`)",
        .0.join(", ")
    )]
    Missing(Vec<String>),
    /// The API server could not be read.
    #[error("read CustomResourceDefinitions: {0}")]
    Read(#[source] Box<kube::Error>),
}

/// Every CRD the operator needs: its own.
pub fn required() -> Vec<String> {
    kinfer_api::aim::crds()
        .iter()
        .map(ResourceExt::name_any)
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    #[test]
    fn kserve_needs_all_three_and_other_groups_are_always_served() {
        let installed = InstalledCrds::from_names([KSERVE_CRDS[0], KSERVE_CRDS[2], HTTP_ROUTE_CRD]);
        let crds = ServingCrds::from_installed(&installed);
        assert_eq!(
            crds,
            ServingCrds {
                kserve: false,
                gateway_api: true
            }
        );
        assert_eq!(crds.missing(), KSERVE_CRDS.to_vec());
        let isvc = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "serving.kserve.io",
            "v1beta1",
            "InferenceService",
        ));
        let job = ApiResource::from_gvk(&GroupVersionKind::gvk("batch", "v1", "Job"));
        assert!(!crds.serves(&isvc));
        assert!(crds.serves(&job));
        assert_eq!(
            ServingCrds::from_installed(&InstalledCrds::from_names(SERVING_CRDS)),
            ServingCrds::ALL
        );
    }
}
