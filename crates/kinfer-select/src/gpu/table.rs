//! The GPU identity table: every fact kinfer knows about a GPU model, as data.
//!
//! Contract: this file is the only place that maps PCI device IDs to model names and model
//! names to VRAM (a vendor's extended resource name comes from `kinfer_api::accelerator`, the
//! one accelerator table), and the only place that
//! holds the default GPU preference order used by template selection. Code elsewhere looks
//! rows up; it never matches on model names. Adding a GPU is adding a row.
//!
//! Sources:
//! - AMD Instinct device IDs: exactly the PCI-ID table of NOTES.md row 8 (aim-engine
//!   `KnownAmdDevices` at the pinned reference commit), pinned by the `amd_rows_are_sourced`
//!   test below.
//! - AMD Radeon Pro / Radeon device IDs: NOTES row 8 says only "plus Radeon/Pro IDs"; the rows
//!   here are aim-engine's `KnownAmdDevices` Radeon entries as they stood before the pinned
//!   commit (stored upstream version `aa418bf`), listed one by one, with upstream's comments, in the test's `RADEON_EXTRAS`.
//!   IDs that upstream added later (`75a8` MI350P, `7551` R9700, `744b` W7900D) are left out
//!   until the reference is re-pinned: they are not in the sources this crate follows.
//! - VRAM: aim-engine `KnownGPUVRAM` (`192G` = 192 GiB) for AMD; the NVIDIA rows carry the
//!   smallest VRAM of the model's common SKUs, so a `minVram` check against the table never
//!   over-promises (a node's `nvidia.com/gpu.memory` label, when present, wins).

/// GPU vendor. The discriminant indexes [`VENDORS`] (checked at compile time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vendor {
    /// AMD Instinct and Radeon GPUs.
    Amd = 0,
    /// NVIDIA GPUs.
    Nvidia = 1,
}

/// One vendor row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VendorSpec {
    /// The vendor this row describes.
    pub vendor: Vendor,
    /// Display name.
    pub name: &'static str,
    /// The extended resource a pod requests GPUs with (from `kinfer_api::accelerator`).
    pub resource_name: &'static str,
    /// Prefix of the model name given to unknown device IDs (`AMD-74C0`), if the vendor is
    /// identified by PCI device ID.
    pub unknown_device_prefix: Option<&'static str>,
}

/// Vendor rows, indexed by `Vendor as usize`.
pub const VENDORS: &[VendorSpec] = &[
    VendorSpec {
        vendor: Vendor::Amd,
        name: "AMD",
        resource_name: kinfer_api::accelerator::AMD_GPU,
        unknown_device_prefix: Some("AMD-"),
    },
    VendorSpec {
        vendor: Vendor::Nvidia,
        name: "NVIDIA",
        resource_name: kinfer_api::accelerator::NVIDIA_GPU,
        unknown_device_prefix: None,
    },
];

// `Vendor::spec` indexes VENDORS by discriminant; prove the layout at compile time.
const _: () = {
    assert!(VENDORS.len() == 2);
    let mut i = 0;
    while i < VENDORS.len() {
        assert!(VENDORS[i].vendor as usize == i);
        i += 1;
    }
};

impl Vendor {
    /// Every vendor, in table order.
    pub const ALL: [Vendor; 2] = [Vendor::Amd, Vendor::Nvidia];

    /// This vendor's row.
    pub fn spec(self) -> &'static VendorSpec {
        &VENDORS[self as usize]
    }

    /// The extended resource name (`amd.com/gpu`, `nvidia.com/gpu`).
    pub fn resource_name(self) -> &'static str {
        self.spec().resource_name
    }

    /// The vendor whose whole-GPU resource `resource` is; `None` for any other resource (a
    /// partition, a vGPU profile).
    pub fn of_resource(resource: &str) -> Option<Vendor> {
        Self::ALL
            .into_iter()
            .find(|v| v.resource_name() == resource)
    }
}

impl std::fmt::Display for Vendor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec().name)
    }
}

/// One GPU model row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpec {
    /// Normalised model name, as node identification and templates spell it (`MI300X`).
    pub model: &'static str,
    /// Vendor.
    pub vendor: Vendor,
    /// Lower-case PCI device IDs (without `0x`) that identify this model, sorted. Empty for
    /// vendors identified by product name.
    pub device_ids: &'static [&'static str],
    /// Per-GPU memory in GiB (the device plugins' `G`), used when no node label says better.
    pub vram_gib: u32,
}

const fn row(
    model: &'static str,
    vendor: Vendor,
    device_ids: &'static [&'static str],
    vram_gib: u32,
) -> GpuSpec {
    GpuSpec {
        model,
        vendor,
        device_ids,
        vram_gib,
    }
}

use Vendor::{Amd, Nvidia};

/// The GPU table.
#[rustfmt::skip]
pub const GPUS: &[GpuSpec] = &[
    // AMD Instinct
    row("MI355X", Amd, &["75a3", "75b3"], 288),
    row("MI350X", Amd, &["75a0", "75b0"], 288),
    row("MI325X", Amd, &["74a5", "74b9"], 256),
    row("MI308X", Amd, &["74a2", "74a8", "74b6"], 128),
    row("MI300X", Amd, &["74a1", "74a9", "74b5", "74bd"], 192),
    row("MI300A", Amd, &["74a0"], 128),
    row("MI250X", Amd, &["7408", "740c"], 128),
    row("MI210",  Amd, &["740f", "7410"], 64),
    row("MI100",  Amd, &["738c", "738e"], 32),
    // AMD Radeon Pro
    row("V710",   Amd, &["7460", "7461"], 32),
    row("W7900",  Amd, &["7448", "744a"], 48),
    row("W7800",  Amd, &["7449", "745e"], 32),
    row("W6900X", Amd, &["73a2"], 32),
    row("W6800",  Amd, &["73a3"], 32),
    row("W6800X", Amd, &["73ab"], 32),
    row("V620",   Amd, &["73a1", "73ae"], 32),
    // AMD Radeon
    row("RX9070", Amd, &["7550"], 16),
    row("RX7900", Amd, &["744c"], 24),
    row("RX6900", Amd, &["73af"], 16),
    row("RX6800", Amd, &["73bf"], 16),
    // NVIDIA (identified by `nvidia.com/gpu.product`, not by device ID)
    row("B200",   Nvidia, &[], 180),
    row("H200",   Nvidia, &[], 141),
    row("H100",   Nvidia, &[], 80),
    row("A100",   Nvidia, &[], 40),
    row("L40S",   Nvidia, &[], 48),
];

/// Default GPU preference for template selection, best first. Every entry is a [`GPUS`] row.
pub const DEFAULT_GPU_PREFERENCE: &[&str] = &[
    "MI355X", "MI350X", "MI325X", "MI300X", "MI308X", "MI300A", "MI250X", "MI210", "B200", "H200",
    "H100", "A100", "L40S",
];

/// The row for a normalised model name.
pub fn spec_for_model(model: &str) -> Option<&'static GpuSpec> {
    GPUS.iter().find(|g| g.model == model)
}

/// The `vendor` row whose device IDs contain `device_id` (lower-case, without `0x`).
pub fn spec_for_device_id(vendor: Vendor, device_id: &str) -> Option<&'static GpuSpec> {
    GPUS.iter()
        .find(|g| g.vendor == vendor && g.device_ids.contains(&device_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn models_are_unique_and_normalised() {
        let mut seen = BTreeSet::new();
        for g in GPUS {
            assert!(seen.insert(g.model), "duplicate model {}", g.model);
            assert_eq!(g.model, g.model.to_ascii_uppercase());
            assert!(g.vram_gib > 0);
        }
    }

    #[test]
    fn device_ids_are_unique_lowercase_hex_and_sorted() {
        let mut seen = BTreeSet::new();
        for g in GPUS {
            let mut sorted = g.device_ids.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, g.device_ids, "{} device IDs not sorted", g.model);
            for id in g.device_ids {
                assert!(seen.insert(*id), "device ID {id} listed twice");
                assert_eq!(id.len(), 4);
                assert!(
                    id.chars()
                        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
                );
            }
        }
    }

    #[test]
    fn device_ids_only_for_vendors_that_use_them() {
        for g in GPUS {
            let uses_ids = g.vendor.spec().unknown_device_prefix.is_some();
            assert!(uses_ids || g.device_ids.is_empty(), "{}", g.model);
            assert!(!uses_ids || !g.device_ids.is_empty(), "{}", g.model);
        }
    }

    #[test]
    fn default_preference_entries_are_table_rows() {
        let mut seen = BTreeSet::new();
        for m in DEFAULT_GPU_PREFERENCE {
            assert!(spec_for_model(m).is_some(), "{m} missing from GPUS");
            assert!(seen.insert(m), "{m} listed twice");
        }
    }

    /// NOTES.md row 8's PCI-ID table, verbatim.
    #[rustfmt::skip]
    const NOTES_ROW_8: &[(&str, &str)] = &[
        ("74a1", "MI300X"), ("74a9", "MI300X"), ("74b5", "MI300X"), ("74bd", "MI300X"),
        ("74a5", "MI325X"), ("74b9", "MI325X"),
        ("74a0", "MI300A"),
        ("74a2", "MI308X"), ("74a8", "MI308X"), ("74b6", "MI308X"),
        ("75a0", "MI350X"), ("75b0", "MI350X"),
        ("75a3", "MI355X"), ("75b3", "MI355X"),
        ("740c", "MI250X"), ("7408", "MI250X"),
        ("740f", "MI210"), ("7410", "MI210"),
        ("738c", "MI100"), ("738e", "MI100"),
    ];

    /// The "plus Radeon/Pro IDs" of row 8: aim-engine `KnownAmdDevices` Radeon entries
    /// (stored upstream version `aa418bf`), with upstream's own comments.
    #[rustfmt::skip]
    const RADEON_EXTRAS: &[(&str, &str)] = &[
        ("7460", "V710"),
        ("7461", "V710"),   // Radeon Pro V710 MxGPU
        ("7448", "W7900"),
        ("744a", "W7900"),  // W7900 Dual Slot
        ("7449", "W7800"),  // W7800 48GB
        ("745e", "W7800"),
        ("73a2", "W6900X"),
        ("73a3", "W6800"),  // W6800 GL-XL
        ("73ab", "W6800X"), // W6800X / W6800X Duo
        ("73a1", "V620"),
        ("73ae", "V620"),   // Radeon Pro V620 MxGPU
        ("7550", "RX9070"), // RX 9070 / 9070 XT
        ("744c", "RX7900"), // RX 7900 XT / 7900 XTX / 7900 GRE / 7900M
        ("73af", "RX6900"),
        ("73bf", "RX6800"), // RX 6800 / 6800 XT / 6900 XT
    ];

    #[test]
    fn amd_rows_are_sourced() {
        let table: BTreeSet<(&str, &str)> = GPUS
            .iter()
            .filter(|g| g.vendor == Vendor::Amd)
            .flat_map(|g| g.device_ids.iter().map(|id| (*id, g.model)))
            .collect();
        let sourced: BTreeSet<(&str, &str)> =
            NOTES_ROW_8.iter().chain(RADEON_EXTRAS).copied().collect();
        assert_eq!(sourced.len(), NOTES_ROW_8.len() + RADEON_EXTRAS.len());
        assert_eq!(table, sourced);
        for (id, model) in NOTES_ROW_8.iter().chain(RADEON_EXTRAS) {
            let found = spec_for_device_id(Vendor::Amd, id).map(|g| g.model);
            assert_eq!(found, Some(*model), "{id}");
        }
        // Every AMD model has a row with IDs: no model without a sourced ID.
        for g in GPUS.iter().filter(|g| g.vendor == Vendor::Amd) {
            assert!(
                sourced.iter().any(|(_, m)| *m == g.model),
                "{} unsourced",
                g.model
            );
        }
    }

    #[test]
    fn device_id_lookup_is_per_vendor() {
        assert_eq!(
            spec_for_device_id(Vendor::Amd, "74a1").map(|g| g.model),
            Some("MI300X")
        );
        assert_eq!(spec_for_device_id(Vendor::Nvidia, "74a1"), None);
    }

    #[test]
    fn vendor_rows() {
        assert_eq!(Vendor::Amd.resource_name(), "amd.com/gpu");
        assert_eq!(Vendor::Nvidia.resource_name(), "nvidia.com/gpu");
        assert_eq!(Vendor::Nvidia.to_string(), "NVIDIA");
    }
}
