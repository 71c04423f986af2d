//! `core/v1.EnvVar` as the upstream CRDs embed it (Kubernetes 1.34), shared by every kind that
//! has an `env` list (AIM and ModelService), with the one conversion to and from k8s-openapi and
//! the one set of env rules.
//!
//! Why our own type: upstream's CRDs were generated from Kubernetes 1.34's `k8s.io/api`, whose
//! `EnvVarSource` has `fileKeyRef` (feature gate `EnvFiles`). The k8s-openapi version this
//! workspace builds against (feature `v1_32`) has no such field, so storing env vars as
//! `k8s_openapi::api::core::v1::EnvVar` would silently drop a `fileKeyRef` an upstream manifest
//! uses. [`EnvVar`] and [`EnvVarSource`] are therefore ours: they reuse the k8s-openapi selector
//! types for every source that version has (re-exported here, so the family is importable from
//! one place) and add [`FileKeySelector`] for the one it lacks. The field docs are upstream's,
//! as they appear in the CRDs.
//!
//! Converting to k8s-openapi, for building containers, fails with [`UnrepresentableEnvVar`] on a
//! `fileKeyRef` rather than drop it (which would leave a `valueFrom` with no source); whether to
//! deploy such a spec on a 1.34 cluster by other means is the operator's decision.
//! [`validate_env`] checks Kubernetes' own env rules for every kind, with the same messages.

use k8s_openapi::api::core::v1 as core;
pub use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, ObjectFieldSelector, ResourceFieldSelector, SecretKeySelector,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validation::FieldErrors;

/// EnvVar represents an environment variable present in a Container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Name of the environment variable.
    /// May consist of any printable ASCII characters except '='.
    pub name: String,
    /// Variable references $(VAR_NAME) are expanded
    /// using the previously defined environment variables in the container and
    /// any service environment variables. If a variable cannot be resolved,
    /// the reference in the input string will be unchanged. Double $$ are reduced
    /// to a single $, which allows for escaping the $(VAR_NAME) syntax: i.e.
    /// "$$(VAR_NAME)" will produce the string literal "$(VAR_NAME)".
    /// Escaped references will never be expanded, regardless of whether the variable
    /// exists or not.
    /// Defaults to "".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Source for the environment variable's value. Cannot be used if value is not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
}

impl EnvVar {
    /// A variable with a literal value.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: Some(value.into()),
            value_from: None,
        }
    }
}

/// The source of an environment variable's value; Kubernetes requires exactly one field.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarSource {
    /// Selects a key of a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::config_map_key_selector")]
    pub config_map_key_ref: Option<ConfigMapKeySelector>,
    /// Selects a field of the pod: supports metadata.name, metadata.namespace, `metadata.labels['<KEY>']`, `metadata.annotations['<KEY>']`,
    /// spec.nodeName, spec.serviceAccountName, status.hostIP, status.podIP, status.podIPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::object_field_selector")]
    pub field_ref: Option<ObjectFieldSelector>,
    /// FileKeyRef selects a key of the env file.
    /// Requires the EnvFiles feature gate to be enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_key_ref: Option<FileKeySelector>,
    /// Selects a resource of the container: only resources limits and requests
    /// (limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory and requests.ephemeral-storage) are currently supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_field_selector")]
    pub resource_field_ref: Option<ResourceFieldSelector>,
    /// Selects a key of a secret in the pod's namespace
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::secret_key_selector")]
    pub secret_key_ref: Option<SecretKeySelector>,
}

impl EnvVarSource {
    /// The names of the sources, as [`validate_env`] lists them.
    const SOURCES: &str = "configMapKeyRef, fieldRef, fileKeyRef, resourceFieldRef, secretKeyRef";

    /// The number of sources set; Kubernetes requires exactly one.
    pub fn source_count(&self) -> usize {
        [
            self.config_map_key_ref.is_some(),
            self.field_ref.is_some(),
            self.file_key_ref.is_some(),
            self.resource_field_ref.is_some(),
            self.secret_key_ref.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

/// A key of an env file (`KEY=VALUE` lines) on a volume of the pod: Kubernetes 1.34's
/// `FileKeySelector`, which k8s-openapi `v1_32` lacks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct FileKeySelector {
    /// The key within the env file. An invalid key will prevent the pod from starting.
    /// The keys defined within a source may consist of any printable ASCII characters except '='.
    /// During Alpha stage of the EnvFiles feature gate, the key size is limited to 128 characters.
    pub key: String,
    /// Specify whether the file or its key must be defined. If the file or key
    /// does not exist, then the env var is not published.
    /// If optional is set to true and the specified key does not exist,
    /// the environment variable will not be set in the Pod's containers.
    ///
    /// If optional is set to false and the specified key does not exist,
    /// an error will be returned during Pod creation.
    #[serde(default)]
    pub optional: bool,
    /// The path within the volume from which to select the file.
    /// Must be relative and may not contain the '..' path or start with '..'.
    pub path: String,
    /// The name of the volume mount containing the env file.
    pub volume_name: String,
}

/// An [`EnvVar`] uses a source the k8s-openapi types of this build cannot represent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("env var {name}: valueFrom.fileKeyRef needs Kubernetes 1.34 types")]
pub struct UnrepresentableEnvVar {
    /// The variable's name.
    pub name: String,
}

impl TryFrom<EnvVar> for core::EnvVar {
    type Error = UnrepresentableEnvVar;

    /// The k8s-openapi `EnvVar` for a container; fails on `valueFrom.fileKeyRef`, which has no
    /// counterpart there, rather than leave a `valueFrom` without a source.
    fn try_from(env: EnvVar) -> Result<Self, Self::Error> {
        let value_from = match env.value_from {
            None => None,
            Some(source) if source.file_key_ref.is_some() => {
                return Err(UnrepresentableEnvVar { name: env.name });
            }
            Some(source) => Some(core::EnvVarSource {
                config_map_key_ref: source.config_map_key_ref,
                field_ref: source.field_ref,
                resource_field_ref: source.resource_field_ref,
                secret_key_ref: source.secret_key_ref,
            }),
        };
        Ok(Self {
            name: env.name,
            value: env.value,
            value_from,
        })
    }
}

impl From<core::EnvVar> for EnvVar {
    fn from(env: core::EnvVar) -> Self {
        Self {
            name: env.name,
            value: env.value,
            value_from: env.value_from.map(|source| EnvVarSource {
                config_map_key_ref: source.config_map_key_ref,
                field_ref: source.field_ref,
                file_key_ref: None,
                resource_field_ref: source.resource_field_ref,
                secret_key_ref: source.secret_key_ref,
            }),
        }
    }
}

/// Kubernetes' own rules for a container's env list, which the CRD schema cannot express and the
/// API server would otherwise enforce only on the pod the operator builds: every `name` is
/// non-empty, `value` and `valueFrom` are exclusive, and `valueFrom` names exactly one source.
/// `fileKeyRef` counts as a source like any other: it is valid upstream. `path` is the list's
/// field path (`spec.env`); violations are recorded at `path[i].name` and `path[i].valueFrom`.
pub fn validate_env(path: &str, env: &[EnvVar], errors: &mut FieldErrors) {
    for (i, var) in env.iter().enumerate() {
        if var.name.is_empty() {
            errors.push(format!("{path}[{i}].name"), "must not be empty");
        }
        let Some(source) = &var.value_from else {
            continue;
        };
        if var.value.as_deref().is_some_and(|v| !v.is_empty()) {
            errors.push(
                format!("{path}[{i}].valueFrom"),
                "may not be specified when `value` is not empty",
            );
        }
        if source.source_count() != 1 {
            errors.push(
                format!("{path}[{i}].valueFrom"),
                format!("must specify exactly one of {}", EnvVarSource::SOURCES),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EnvVar, EnvVarSource, FileKeySelector, core, validate_env};
    use crate::validation::FieldErrors;

    fn file_key_ref() -> EnvVarSource {
        EnvVarSource {
            file_key_ref: Some(FileKeySelector {
                key: "token".into(),
                path: "env".into(),
                volume_name: "secrets".into(),
                optional: false,
            }),
            ..EnvVarSource::default()
        }
    }

    #[test]
    fn file_key_ref_fails_to_convert_instead_of_being_dropped() {
        let env: EnvVar = serde_json::from_value(serde_json::json!({
            "name": "TOKEN",
            "valueFrom": {"fileKeyRef": {"key": "token", "path": "env", "volumeName": "secrets"}},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(env.value_from, Some(file_key_ref()));
        let error = core::EnvVar::try_from(env).err();
        assert_eq!(error.map(|e| e.name), Some("TOKEN".to_owned()));
    }

    #[test]
    fn literals_and_other_sources_round_trip() {
        let field_ref = EnvVar {
            name: "POD_IP".into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(core::ObjectFieldSelector {
                    api_version: None,
                    field_path: "status.podIP".into(),
                }),
                ..EnvVarSource::default()
            }),
        };
        for env in [EnvVar::new("A", "1"), field_ref] {
            let k8s = core::EnvVar::try_from(env.clone());
            assert_eq!(k8s.map(EnvVar::from).ok(), Some(env));
        }
    }

    #[test]
    fn env_rules_report_each_violation_at_its_path() {
        let both = EnvVar {
            value_from: Some(file_key_ref()),
            ..EnvVar::new("A", "x")
        };
        let none = EnvVar {
            name: "B".into(),
            value: None,
            value_from: Some(EnvVarSource::default()),
        };
        let env = [EnvVar::new("", "x"), both, none, EnvVar::new("C", "y")];
        let mut errors = FieldErrors::default();
        validate_env("spec.env", &env, &mut errors);
        let found: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                "spec.env[0].name: must not be empty",
                "spec.env[1].valueFrom: may not be specified when `value` is not empty",
                "spec.env[2].valueFrom: must specify exactly one of configMapKeyRef, fieldRef, fileKeyRef, resourceFieldRef, secretKeyRef",
            ]
        );
    }
}
