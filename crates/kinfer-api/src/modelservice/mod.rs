//! ModelService, `model.otterscale.io/v1alpha1`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRDs of the ModelService kinds.
pub fn crds() -> Vec<CustomResourceDefinition> {
    Vec::new()
}
