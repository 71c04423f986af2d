//! AMD AIM Engine kinds, `aim.eai.amd.com/v1alpha1`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRDs of every AIM kind.
pub fn crds() -> Vec<CustomResourceDefinition> {
    Vec::new()
}
