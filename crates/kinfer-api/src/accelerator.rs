//! The accelerator vendors kinfer knows and the Kubernetes extended resource each vendor's
//! device plugin advertises: the single table every other crate derives resource names from.
//!
//! Contract: one row per vendor; [`Accelerator::resource_name`] is the only mapping from a
//! vendor to its extended resource. Device IDs, VRAM and preference orders live elsewhere
//! (`kinfer-select`'s GPU table), keyed by vendor, and take the resource name from here.

/// `amd.com/gpu`: the AMD GPU device plugin's resource (AIM's default).
pub const AMD_GPU: &str = "amd.com/gpu";
/// `nvidia.com/gpu`: the NVIDIA device plugin's resource.
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";
/// `habana.ai/gaudi`: the Intel Gaudi (Habana) device plugin's resource.
pub const INTEL_GAUDI: &str = "habana.ai/gaudi";
/// `google.com/tpu`: Google's TPU resource on GKE.
pub const GOOGLE_TPU: &str = "google.com/tpu";

/// An accelerator vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Accelerator {
    /// AMD Instinct and Radeon GPUs.
    Amd,
    /// NVIDIA GPUs.
    Nvidia,
    /// Intel Gaudi.
    IntelGaudi,
    /// Google TPUs.
    GoogleTpu,
}

/// One vendor row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceleratorSpec {
    /// The vendor.
    pub accelerator: Accelerator,
    /// Display name.
    pub name: &'static str,
    /// The extended resource pods request devices with.
    pub resource_name: &'static str,
}

/// Every vendor, one row each.
pub const ACCELERATORS: &[AcceleratorSpec] = &[
    AcceleratorSpec {
        accelerator: Accelerator::Amd,
        name: "AMD",
        resource_name: AMD_GPU,
    },
    AcceleratorSpec {
        accelerator: Accelerator::Nvidia,
        name: "NVIDIA",
        resource_name: NVIDIA_GPU,
    },
    AcceleratorSpec {
        accelerator: Accelerator::IntelGaudi,
        name: "Intel Gaudi",
        resource_name: INTEL_GAUDI,
    },
    AcceleratorSpec {
        accelerator: Accelerator::GoogleTpu,
        name: "Google TPU",
        resource_name: GOOGLE_TPU,
    },
];

impl Accelerator {
    /// This vendor's row.
    pub const fn spec(self) -> &'static AcceleratorSpec {
        &ACCELERATORS[self as usize]
    }

    /// The extended resource name (`amd.com/gpu`, `nvidia.com/gpu`, ...).
    pub const fn resource_name(self) -> &'static str {
        self.spec().resource_name
    }

    /// The vendor whose extended resource is `resource`, if any.
    pub fn from_resource_name(resource: &str) -> Option<Self> {
        ACCELERATORS
            .iter()
            .find(|row| row.resource_name == resource)
            .map(|row| row.accelerator)
    }
}

// `Accelerator::spec` indexes the table by discriminant; prove the layout at compile time.
const _: () = {
    let mut i = 0;
    while i < ACCELERATORS.len() {
        assert!(ACCELERATORS[i].accelerator as usize == i);
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendor_maps_to_its_device_plugin_resource() {
        assert_eq!(Accelerator::Amd.resource_name(), "amd.com/gpu");
        assert_eq!(Accelerator::Nvidia.resource_name(), "nvidia.com/gpu");
        assert_eq!(Accelerator::IntelGaudi.resource_name(), "habana.ai/gaudi");
        assert_eq!(Accelerator::GoogleTpu.resource_name(), "google.com/tpu");
        for row in ACCELERATORS {
            assert_eq!(
                Accelerator::from_resource_name(row.resource_name),
                Some(row.accelerator)
            );
        }
        assert_eq!(Accelerator::from_resource_name("cpu"), None);
    }
}
