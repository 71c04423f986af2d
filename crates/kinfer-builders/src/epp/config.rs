//! The EPP plugins configuration and its hash.
//!
//! Contract: the non-PD config scores by queue depth, KV-cache utilisation and prefix-cache
//! hits (weights 2/2/3); the PD config splits prefill and decode by pod role with a
//! prefix-based decider (identical in content to `../shared/reference/modelservice/epp/`,
//! which the tests compare). [`config_hash`] is the SHA-256 hex of the sorted key/value pairs,
//! so it changes exactly when the ConfigMap's data changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::naming;

/// The non-disaggregated plugins configuration.
pub const DEFAULT_PLUGINS: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
";

/// The prefill/decode disaggregation configuration.
pub const PD_CONFIG: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
featureGates:
- prepareDataPlugins
plugins:
- type: prefill-header-handler
- type: prefix-cache-scorer
  parameters:
    maxPrefixBlocksToMatch: 256
    lruCapacityPerServer: 31250
- type: queue-scorer
- type: prefill-filter
- type: decode-filter
- type: max-score-picker
- type: prefix-based-pd-decider
  parameters:
    nonCachedTokens: 16
- type: pd-profile-handler
  parameters:
    primaryPort: 0
    deciderPluginName: prefix-based-pd-decider
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 1
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 1
";

/// Which plugins configuration the EPP runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "kind"
)]
pub enum EppConfig {
    /// [`DEFAULT_PLUGINS`], as `default-plugins.yaml`.
    Default,
    /// [`PD_CONFIG`], as `pd-config.yaml`.
    PrefillDecode,
    /// The caller's text under the caller's file name.
    Custom {
        /// Key in the ConfigMap (a file name).
        file_name: String,
        /// The configuration.
        text: String,
    },
}

impl EppConfig {
    /// The ConfigMap key and content.
    pub fn file(&self) -> (&str, &str) {
        match self {
            EppConfig::Default => ("default-plugins.yaml", DEFAULT_PLUGINS),
            EppConfig::PrefillDecode => ("pd-config.yaml", PD_CONFIG),
            EppConfig::Custom { file_name, text } => (file_name, text),
        }
    }
}

impl EppConfig {
    /// Checks a custom config: its file name must be a valid ConfigMap key (at most 253 of
    /// `[-._a-zA-Z0-9]`) that is not `.` or `..` (the EPP reads `/config/<file>`; a path could
    /// escape it).
    pub fn validate(&self) -> Result<(), Error> {
        let EppConfig::Custom { file_name, .. } = self else {
            return Ok(());
        };
        let valid = !file_name.is_empty()
            && file_name.len() <= 253
            && file_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
            && file_name != "."
            && file_name != "..";
        if valid {
            Ok(())
        } else {
            Err(Error::Input {
                field: "config.fileName",
                reason: format!("{file_name:?} is not a ConfigMap key (a plain file name)"),
            })
        }
    }
}

/// SHA-256 hex of the sorted key/value pairs ([`naming::sha256_hex`]: length-prefixed, so pairs
/// cannot run together).
pub fn config_hash(data: &BTreeMap<String, String>) -> String {
    let parts: Vec<&str> = data
        .iter()
        .flat_map(|(k, v)| [k.as_str(), v.as_str()])
        .collect();
    naming::sha256_hex(&parts)
}
