//! The decode and prefill roles: replicas, vLLM parallelism and pod placement.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceRequirements, Toleration};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::env::EnvVar;

/// One serving role (`spec.decode` or `spec.prefill`): a Deployment of vLLM pods.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleSpec {
    /// Pods of this role.
    #[serde(default = "default_one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// vLLM tensor and data parallelism. When unset every degree is 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<ParallelismSpec>,
    /// CPU and memory of the vLLM container. The accelerator resource is computed from
    /// `spec.accelerator.type` and `tensor × dataLocal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_requirements")]
    pub resources: Option<ResourceRequirements>,
    /// Node labels the pods must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Annotations added to the pod template of this role.
    ///
    /// Deliberate extra field: it is absent from the upstream CRD copy
    /// (`otterscale/api` `2229b3ae`), but the otterscale/api v1.0.0 Go types that
    /// model-operator builds against have `RoleSpec.Annotations` and the operator copies it to
    /// the pod template (model-operator PR #55, used e.g. for `sidecar.istio.io/inject`). An API
    /// server serving the upstream CRD copy would prune it; ours keeps it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// vLLM arguments and environment of this role only, over the shared `spec.engine` ones:
    /// `args` come after `spec.engine.args` (vLLM keeps the last value of a flag), `env`
    /// replaces a `spec.engine.env` variable of the same name and adds the others.
    ///
    /// Deliberate extra field (kinfer): upstream shares `spec.engine` between decode and
    /// prefill (NOTES.md g5), so prefill-only or decode-only flags (e.g. a KV-transfer role,
    /// `--enforce-eager` for prefill) were impossible. Optional, so every upstream manifest
    /// means what it meant.
    // Not in the CRD's description on purpose (it would change the generated CRD): a cluster
    // still serving upstream's CRD (no `engine` under the roles) prunes this field silently
    // on write, so the role overrides are dropped without an error; install kinfer's CRD
    // first (docs/modelservice.md, "Upgrading from upstream").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<RoleEngineSpec>,
}

/// Per-role vLLM overrides (`spec.decode.engine`, `spec.prefill.engine`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleEngineSpec {
    /// vLLM arguments appended after `spec.engine.args` in this role's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables of this role's vLLM container, merged by name over
    /// `spec.engine.env` (this role's value wins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
}

impl RoleSpec {
    /// This role's extra vLLM arguments (none when `engine` is unset).
    pub fn engine_args(&self) -> &[String] {
        self.engine.as_ref().map_or(&[], |e| e.args.as_slice())
    }

    /// This role's environment overrides (none when `engine` is unset).
    pub fn engine_env(&self) -> &[EnvVar] {
        self.engine.as_ref().map_or(&[], |e| e.env.as_slice())
    }

    /// The parallelism in effect: the spec's, or all degrees 1 when unset.
    pub fn effective_parallelism(&self) -> ParallelismSpec {
        self.parallelism.clone().unwrap_or_default()
    }
}

/// vLLM parallelism of one pod. Pipeline and expert parallelism go through `engine.args`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParallelismSpec {
    /// `--tensor-parallel-size`: accelerators one model copy is sharded over.
    #[serde(default = "default_one")]
    #[schemars(range(min = 1))]
    pub tensor: i32,
    /// `--data-parallel-size`: data-parallel ranks in total.
    #[serde(default = "default_one")]
    #[schemars(range(min = 1))]
    pub data: i32,
    /// `--data-parallel-size-local`: data-parallel ranks in this pod.
    #[serde(default = "default_one")]
    #[schemars(range(min = 1))]
    pub data_local: i32,
}

impl Default for ParallelismSpec {
    fn default() -> Self {
        Self {
            tensor: 1,
            data: 1,
            data_local: 1,
        }
    }
}

impl ParallelismSpec {
    /// Accelerators one pod needs: `max(tensor, 1) × max(dataLocal, 1)`, as upstream computes it.
    pub fn accelerator_count(&self) -> i64 {
        i64::from(self.tensor.max(1)) * i64::from(self.data_local.max(1))
    }
}

fn default_one() -> i32 {
    1
}
