//! [`GpuModel`]: a normalised GPU model name, and the normalisation rule.
//!
//! Contract: a `GpuModel` is never empty, is upper case, and is what [`normalize`] returns, so
//! two spellings of the same GPU compare equal (`"Instinct MI300X"`, `"AMD Instinct MI300X"`,
//! `"MI300X (rev 2)"`, `"mi300x"` → `MI300X`; `"NVIDIA-H100-80GB-HBM3"` → `H100`). Only the
//! literal form `AMD-<4 hex digits>` (case-insensitive, nothing around it) is read as a PCI
//! device ID: it maps to the table model when the ID is known and stays `AMD-<ID>` otherwise,
//! so the names node identification gives unknown devices round-trip. Any other spelling
//! (`AMD 7900`, `AMD A100`) is an ordinary model name.

use std::fmt;

use super::table::{self, GpuSpec, Vendor};

/// Words that name a vendor or a product line rather than the model; skipped when looking for
/// the model token.
const NOISE_WORDS: &[&str] = &[
    "AMD", "NVIDIA", "INSTINCT", "RADEON", "PRO", "TESLA", "GEFORCE", "RTX", "QUADRO",
];

/// Series prefixes that are sometimes written apart from their number (`MI 300X`, `RX 7900`).
const SPLIT_SERIES: &[&str] = &["MI", "RX"];

/// A normalised GPU model name (`MI300X`, `H100`, `AMD-74C0`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuModel(String);

impl GpuModel {
    /// Normalises `raw`; `None` when it holds no name at all (empty or separators only).
    pub fn new(raw: &str) -> Option<Self> {
        normalize(raw).map(GpuModel)
    }

    /// The model for a PCI device ID of `vendor` (4 hex digits, case-insensitive, `0x`
    /// optional): the vendor's table model, or `<prefix><ID>` (`AMD-74C0`) for an ID the table
    /// does not know. `None` for a malformed ID or a vendor not identified by device ID.
    pub fn from_device_id(vendor: Vendor, device_id: &str) -> Option<Self> {
        let prefix = vendor.spec().unknown_device_prefix?;
        let id = canonical_device_id(device_id)?;
        if let Some(spec) = table::spec_for_device_id(vendor, &id) {
            return Some(GpuModel(spec.model.to_owned()));
        }
        Some(GpuModel(format!("{prefix}{}", id.to_ascii_uppercase())))
    }

    /// The normalised name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The table row, if the model is known.
    pub fn spec(&self) -> Option<&'static GpuSpec> {
        table::spec_for_model(&self.0)
    }

    /// The vendor: from the table, or from an unknown-device prefix (`AMD-…`).
    pub fn vendor(&self) -> Option<Vendor> {
        self.spec().map(|s| s.vendor).or_else(|| {
            Vendor::ALL.into_iter().find(|v| {
                v.spec()
                    .unknown_device_prefix
                    .is_some_and(|p| self.0.starts_with(p))
            })
        })
    }

    /// The PCI device ID carried by an unknown-device name (`AMD-74C0` → `74c0`).
    pub(crate) fn unknown_device_id(&self) -> Option<String> {
        let vendor = self.vendor()?;
        let id = self.0.strip_prefix(vendor.spec().unknown_device_prefix?)?;
        canonical_device_id(id)
    }
}

impl fmt::Display for GpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for GpuModel {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Lower-case hex device ID without `0x`; `None` unless it is 4 hex digits (a PCI device ID
/// is 16 bits).
pub(crate) fn canonical_device_id(raw: &str) -> Option<String> {
    let lower = raw.trim().to_ascii_lowercase();
    let id = lower.strip_prefix("0x").unwrap_or(&lower);
    let valid = id.len() == 4 && id.chars().all(|c| c.is_ascii_hexdigit());
    valid.then(|| id.to_owned())
}

/// Normalises a GPU model name; `None` when `raw` holds no name.
///
/// Upper-cases, splits on `-`, `_`, space, `/`, `:`, `,` and parentheses, skips vendor and
/// product-line words and memory sizes (`80GB`), and returns the first token that looks like a
/// model (letters and digits with at least one digit). The literal `AMD-<4 hex digits>` maps
/// through the device-ID table. Without a model-like token the first non-noise token (or the
/// first token) is used, so a family label such as `AI` stays `AI`.
pub fn normalize(raw: &str) -> Option<String> {
    let upper = raw.trim().to_ascii_uppercase();
    if let Some(model) = device_id_name(&upper) {
        return Some(model);
    }
    let tokens: Vec<&str> = upper
        .split(['-', '_', ' ', '/', ':', ',', '(', ')', '\t'])
        .filter(|t| !t.is_empty())
        .collect();
    let meaningful: Vec<&str> = tokens
        .iter()
        .copied()
        .filter(|t| !NOISE_WORDS.contains(t) && !is_memory_size(t))
        .collect();
    for (i, token) in meaningful.iter().enumerate() {
        if SPLIT_SERIES.contains(token)
            && let Some(next) = meaningful.get(i + 1)
            && next.starts_with(|c: char| c.is_ascii_digit())
            && is_model_token(next)
        {
            return Some(format!("{token}{next}"));
        }
        if is_model_token(token) {
            return Some((*token).to_owned());
        }
    }
    meaningful
        .first()
        .or_else(|| tokens.first())
        .map(|t| (*t).to_owned())
}

/// The literal `<prefix><4 hex digits>` (`AMD-74A1`, upper-cased input) → the table model or
/// `AMD-<ID>`; `None` for anything else.
fn device_id_name(upper: &str) -> Option<String> {
    Vendor::ALL.into_iter().find_map(|vendor| {
        let id = upper.strip_prefix(vendor.spec().unknown_device_prefix?)?;
        let hex = id.len() == 4 && id.chars().all(|c| c.is_ascii_hexdigit());
        hex.then(|| GpuModel::from_device_id(vendor, id))?
            .map(|m| m.0)
    })
}

/// ASCII letters and digits, at least one digit.
fn is_model_token(token: &str) -> bool {
    token.chars().all(|c| c.is_ascii_alphanumeric()) && token.chars().any(|c| c.is_ascii_digit())
}

/// `80GB`, `192G`, `40GIB`, `16MB` …: a memory size, never a model.
fn is_memory_size(token: &str) -> bool {
    let digits = token.chars().take_while(char::is_ascii_digit).count();
    digits > 0
        && matches!(
            &token[digits..],
            "G" | "GB" | "GIB" | "M" | "MB" | "MIB" | "T" | "TB"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_table() {
        let cases = [
            ("MI300X", Some("MI300X")),
            ("mi300x", Some("MI300X")),
            ("Instinct MI300X", Some("MI300X")),
            ("AMD Instinct MI300X", Some("MI300X")),
            ("Instinct-MI325X", Some("MI325X")),
            ("MI300X (rev 2)", Some("MI300X")),
            ("MI 300X", Some("MI300X")),
            ("NVIDIA-H100-80GB-HBM3", Some("H100")),
            ("NVIDIA H100 80GB HBM3", Some("H100")),
            ("NVIDIA-A100-SXM4-40GB", Some("A100")),
            ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", Some("A100")),
            ("NVIDIA-L40S", Some("L40S")),
            ("NVIDIA-B200", Some("B200")),
            ("Tesla-T4-SHARED", Some("T4")),
            ("RX7900-XTX", Some("RX7900")),
            ("AMD Radeon RX 7900 XTX", Some("RX7900")),
            ("Radeon Pro W7900", Some("W7900")),
            ("AMD-74A1", Some("MI300X")),
            ("amd-74c0", Some("AMD-74C0")),
            (" AMD-74c0 ", Some("AMD-74C0")),
            // Only the literal `AMD-<hex>` is a PCI-ID name.
            ("AMD 7900", Some("7900")),
            ("AMD A100", Some("A100")),
            ("AMD_74A1", Some("74A1")),
            ("AMD-0x74A1", Some("0X74A1")),
            ("AMD-74A10", Some("74A10")),
            ("AI", Some("AI")),
            ("  h200 ", Some("H200")),
            ("", None),
            ("  - / ", None),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize(raw).as_deref(), want, "{raw:?}");
        }
    }

    #[test]
    fn normalisation_is_idempotent_on_table_models() {
        for g in table::GPUS {
            assert_eq!(normalize(g.model).as_deref(), Some(g.model));
        }
    }

    #[test]
    fn device_ids() {
        let m = |id| GpuModel::from_device_id(Vendor::Amd, id).map(|m| m.0);
        assert_eq!(m("74a1").as_deref(), Some("MI300X"));
        assert_eq!(m("0x74A1").as_deref(), Some("MI300X"));
        assert_eq!(m(" 74b9 ").as_deref(), Some("MI325X"));
        assert_eq!(m("74c0").as_deref(), Some("AMD-74C0"));
        assert_eq!(m(""), None);
        assert_eq!(m("zz"), None);
        assert_eq!(m("74a"), None);
        assert_eq!(m("74a10"), None);
        assert_eq!(GpuModel::from_device_id(Vendor::Nvidia, "2330"), None);
        // The vendor filters the table: an AMD ID is no NVIDIA model.
        assert_eq!(GpuModel::from_device_id(Vendor::Nvidia, "74a1"), None);
    }

    #[test]
    fn vendor_and_unknown_id() {
        let unknown = GpuModel::new("AMD-74C0").expect("a name");
        assert_eq!(unknown.vendor(), Some(Vendor::Amd));
        assert_eq!(unknown.unknown_device_id().as_deref(), Some("74c0"));
        let h100 = GpuModel::new("H100").expect("a name");
        assert_eq!(h100.vendor(), Some(Vendor::Nvidia));
        assert_eq!(h100.unknown_device_id(), None);
        assert_eq!(GpuModel::new("AI").expect("a name").vendor(), None);
    }
}
