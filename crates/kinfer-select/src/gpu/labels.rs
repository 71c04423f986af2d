//! The node labels that name a GPU model, and the [`Evidence`] each one leaves.
//!
//! Contract: `read` applies the identification rules to one node's labels and returns every
//! (vendor, model, evidence) it finds, each evidence being the label exactly as written on the
//! node (key and raw value), so a node selector built from it matches the same nodes with
//! Kubernetes' exact string comparison.
//!
//! - AMD device IDs ([`Basis::DeviceId`]): the values of `amd.com/gpu.device-id` and
//!   `beta.amd.com/gpu.device-id`, and the key-suffix form `amd.com/gpu.device-id.<id>` (and
//!   `beta.`) whose value, a count, is neither empty nor `"0"`. IDs are 4 hex digits,
//!   case-insensitive, `0x` optional; they map through the table, unknown IDs become
//!   `AMD-<ID>`. Every source counts (upstream stops at the first).
//! - AMD family ([`Basis::Family`]): only when no device ID was found, the values of
//!   `amd.com/gpu.family` and `beta.amd.com/gpu.family` and the key-suffix forms, normalised.
//!   Every source counts (upstream stops at the first; the union is what a node selector can
//!   express exactly).
//! - NVIDIA ([`Basis::Product`]): `nvidia.com/gpu.product` (GPU feature discovery), normalised.
//!
//! Values are compared after trimming; Kubernetes label values cannot contain whitespace, so
//! for real nodes the raw value and the trimmed one are the same.

use std::collections::BTreeMap;

use super::model::GpuModel;
use super::table::Vendor;

/// `amd.com/gpu.device-id`: the PCI device ID (`74a1`).
pub const AMD_DEVICE_ID: &str = "amd.com/gpu.device-id";
/// The beta spelling of [`AMD_DEVICE_ID`].
pub const AMD_DEVICE_ID_BETA: &str = "beta.amd.com/gpu.device-id";
/// `amd.com/gpu.family` (`AI`, `NV`, …), the fallback.
pub const AMD_FAMILY: &str = "amd.com/gpu.family";
/// The beta spelling of [`AMD_FAMILY`].
pub const AMD_FAMILY_BETA: &str = "beta.amd.com/gpu.family";
/// `amd.com/gpu.vram` (`192G`, GiB).
pub const AMD_VRAM: &str = "amd.com/gpu.vram";
/// The beta spelling of [`AMD_VRAM`].
pub const AMD_VRAM_BETA: &str = "beta.amd.com/gpu.vram";
/// `nvidia.com/gpu.product` from GPU feature discovery (`NVIDIA-H100-80GB-HBM3`).
pub const NVIDIA_PRODUCT: &str = "nvidia.com/gpu.product";
/// `nvidia.com/gpu.memory` from GPU feature discovery (MiB).
pub const NVIDIA_MEMORY: &str = "nvidia.com/gpu.memory";

/// Device-ID label keys (value form, and prefixes of the key-suffix form).
pub(crate) const AMD_DEVICE_ID_KEYS: [&str; 2] = [AMD_DEVICE_ID, AMD_DEVICE_ID_BETA];
/// Family label keys (value form, and prefixes of the key-suffix form).
const AMD_FAMILY_KEYS: [&str; 2] = [AMD_FAMILY, AMD_FAMILY_BETA];

/// Which kind of label named a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Basis {
    /// An AMD PCI device ID: exact.
    DeviceId,
    /// The AMD GPU family, used only on nodes without a device ID.
    Family,
    /// The NVIDIA product name.
    Product,
}

/// One label that named a GPU model on a node, exactly as written there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// The label's value names the model (`amd.com/gpu.device-id=0x74A1`).
    Value {
        /// Which kind of label.
        basis: Basis,
        /// Label key.
        key: &'static str,
        /// Raw label value.
        value: String,
    },
    /// The label key's suffix names the model and the value is a count other than `""` and
    /// `"0"` (`amd.com/gpu.device-id.74a1=8`).
    KeySuffix {
        /// Which kind of label.
        basis: Basis,
        /// Full label key, as written.
        key: String,
        /// Raw label value (the count).
        count: String,
    },
}

impl Evidence {
    /// Which kind of label this is.
    pub fn basis(&self) -> Basis {
        match self {
            Evidence::Value { basis, .. } | Evidence::KeySuffix { basis, .. } => *basis,
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        match self {
            Evidence::Value { key, .. } => key,
            Evidence::KeySuffix { key, .. } => key,
        }
    }

    /// The raw label value.
    pub fn value(&self) -> &str {
        match self {
            Evidence::Value { value, .. } => value,
            Evidence::KeySuffix { count, .. } => count,
        }
    }
}

/// Every (vendor, model, evidence) one node's labels give, per the module rules.
pub(crate) fn read(labels: &BTreeMap<String, String>) -> Vec<(Vendor, GpuModel, Evidence)> {
    let by_id = |id: &str| GpuModel::from_device_id(Vendor::Amd, id);
    let mut found: Vec<(Vendor, GpuModel, Evidence)> =
        named(labels, Basis::DeviceId, &AMD_DEVICE_ID_KEYS, by_id)
            .map(|(m, e)| (Vendor::Amd, m, e))
            .collect();
    if found.is_empty() {
        found.extend(
            named(labels, Basis::Family, &AMD_FAMILY_KEYS, GpuModel::new)
                .map(|(m, e)| (Vendor::Amd, m, e)),
        );
    }
    if let Some(value) = labels.get(NVIDIA_PRODUCT)
        && let Some(model) = GpuModel::new(value)
    {
        let evidence = Evidence::Value {
            basis: Basis::Product,
            key: NVIDIA_PRODUCT,
            value: value.clone(),
        };
        found.push((Vendor::Nvidia, model, evidence));
    }
    found
}

/// Models named by the values of `keys` and by `<key>.<name>` suffix keys with a count.
fn named<'a>(
    labels: &'a BTreeMap<String, String>,
    basis: Basis,
    keys: &'a [&'static str],
    model: impl Fn(&str) -> Option<GpuModel> + Copy + 'a,
) -> impl Iterator<Item = (GpuModel, Evidence)> + 'a {
    let values = keys.iter().copied().filter_map(move |key| {
        let value = labels.get(key)?;
        let evidence = Evidence::Value {
            basis,
            key,
            value: value.clone(),
        };
        Some((model(value.trim())?, evidence))
    });
    let suffixes = keys.iter().copied().flat_map(move |prefix| {
        labels.iter().filter_map(move |(key, count)| {
            let suffix = key.strip_prefix(prefix)?.strip_prefix('.')?;
            let counted = !matches!(count.trim(), "" | "0");
            let evidence = Evidence::KeySuffix {
                basis,
                key: key.clone(),
                count: count.clone(),
            };
            (counted && !suffix.is_empty())
                .then(|| model(suffix))?
                .map(|m| (m, evidence))
        })
    });
    values.chain(suffixes)
}

/// The first non-blank value among `keys`, trimmed.
pub(crate) fn value<'a>(labels: &'a BTreeMap<String, String>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .filter_map(|k| labels.get(*k))
        .map(|v| v.trim())
        .find(|v| !v.is_empty())
}
