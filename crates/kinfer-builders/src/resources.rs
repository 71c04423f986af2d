//! Accelerator resources and resource merging.
//!
//! Contract: accelerator types map to extended resources through `kinfer_api::accelerator`,
//! the one table ([`accelerator_resource`]); the count is tensor × data-local parallelism; a
//! user-set count wins with a [`Warning`]; requests and limits of an extended resource are
//! always equal, after injection and after [`merge`] (the API server rejects a pod otherwise).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kinfer_api::modelservice::AcceleratorType;

use crate::error::Warning;

/// The extended resource of an accelerator type; `None` for CPU.
pub fn accelerator_resource(accelerator: AcceleratorType) -> Option<&'static str> {
    accelerator.resource_name()
}

/// Whether `resource` is an extended resource (a domain-qualified name outside
/// `kubernetes.io/`), whose requests must equal its limits.
pub fn is_extended(resource: &str) -> bool {
    resource.contains('/') && !resource.starts_with("kubernetes.io/")
}

/// The device resource `resources` name instead of the accelerator type's whole device
/// (`default`, such as `nvidia.com/gpu`): a MIG slice of the same vendor
/// (`nvidia.com/mig-1g.10gb`), or a resource whose name says it is a GPU (a vGPU profile,
/// `otterscale.com/vgpu`). Other extended resources are not accelerators, the vendor's own
/// network devices included (`nvidia.com/hostdev`, `amd.com/nic`, RDMA). Limits are looked at
/// first, then requests; the first such name in order wins.
pub fn user_device(resources: Option<&ResourceRequirements>, default: &str) -> Option<String> {
    let domain = default.split_once('/').map(|(d, _)| d)?;
    let resources = resources?;
    let device = |name: &String| {
        name != default
            && is_extended(name)
            && name.split_once('/').is_some_and(|(d, device)| {
                let device = device.to_ascii_lowercase();
                (d == domain && device.starts_with("mig-")) || device.contains("gpu")
            })
    };
    [resources.limits.as_ref(), resources.requests.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|m| m.keys().find(|n| device(n)).cloned())
}

/// Accelerators per pod: tensor × data-local parallelism (each at least 1).
pub fn accelerator_count(tensor: i32, data_local: i32) -> i64 {
    i64::from(tensor.max(1)) * i64::from(data_local.max(1))
}

/// Sets `resource` to `count` in requests and limits, unless the user set it (in limits, else
/// requests): then the user's value is used for both and a warning is returned when it differs.
pub fn inject_accelerator(
    resources: Option<ResourceRequirements>,
    resource: &str,
    count: i64,
) -> (ResourceRequirements, Option<Warning>) {
    let mut resources = resources.unwrap_or_default();
    let user = resources
        .limits
        .as_ref()
        .and_then(|l| l.get(resource))
        .or_else(|| resources.requests.as_ref().and_then(|r| r.get(resource)))
        .cloned();
    let (value, warning) = match user {
        Some(user) => {
            let same = kinfer_api::quantity::parse_bytes(&user.0)
                .is_ok_and(|v| u64::try_from(count) == Ok(v));
            let warning = (!same).then(|| Warning::AcceleratorCountOverridden {
                resource: resource.to_owned(),
                computed: count,
                requested: user.0.clone(),
            });
            (user, warning)
        }
        None => (Quantity(count.to_string()), None),
    };
    resources
        .limits
        .get_or_insert_with(BTreeMap::new)
        .insert(resource.to_owned(), value.clone());
    resources
        .requests
        .get_or_insert_with(BTreeMap::new)
        .insert(resource.to_owned(), value);
    (resources, warning)
}

/// `over` merged into `base` per resource name (requests and limits separately); then every
/// extended resource whose request and limit differ is set to the overriding value (`over`'s
/// limit, else its request, else the merged limit) in both, with a
/// [`Warning::ExtendedResourceAligned`].
#[must_use]
pub fn merge(
    mut base: ResourceRequirements,
    over: &ResourceRequirements,
) -> (ResourceRequirements, Vec<Warning>) {
    for (target, source) in [
        (&mut base.requests, &over.requests),
        (&mut base.limits, &over.limits),
    ] {
        if let Some(source) = source {
            let target = target.get_or_insert_with(BTreeMap::new);
            for (k, v) in source {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    if over.claims.is_some() {
        base.claims.clone_from(&over.claims);
    }
    let mut warnings = Vec::new();
    let get = |list: &Option<BTreeMap<String, Quantity>>, k: &str| {
        list.as_ref().and_then(|l| l.get(k)).cloned()
    };
    let keys: Vec<String> = [&base.requests, &base.limits]
        .into_iter()
        .flatten()
        .flat_map(|l| l.keys().cloned())
        .filter(|k| is_extended(k))
        .collect();
    for key in keys {
        let (request, limit) = (get(&base.requests, &key), get(&base.limits, &key));
        if request == limit {
            continue;
        }
        let Some(value) = get(&over.limits, &key)
            .or_else(|| get(&over.requests, &key))
            .or_else(|| limit.clone())
            .or_else(|| request.clone())
        else {
            continue;
        };
        warnings.push(Warning::ExtendedResourceAligned {
            resource: key.clone(),
            requests: request.map(|q| q.0),
            limits: limit.map(|q| q.0),
            value: value.0.clone(),
        });
        for list in [&mut base.requests, &mut base.limits] {
            list.get_or_insert_with(BTreeMap::new)
                .insert(key.clone(), value.clone());
        }
    }
    (base, warnings)
}

/// A resource list from `(name, quantity)` pairs.
pub fn list(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity(v.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_is_tensor_times_data_local() {
        assert_eq!(accelerator_count(4, 2), 8);
        assert_eq!(accelerator_count(0, 0), 1);
    }

    #[test]
    fn computed_count_is_injected_in_requests_and_limits() {
        let (r, w) = inject_accelerator(None, "nvidia.com/gpu", 4);
        assert_eq!(w, None);
        assert_eq!(r.limits.expect("limits")["nvidia.com/gpu"].0, "4");
        assert_eq!(r.requests.expect("requests")["nvidia.com/gpu"].0, "4");
    }

    #[test]
    fn user_count_wins_with_a_warning() {
        let user = ResourceRequirements {
            limits: Some(list(&[("amd.com/gpu", "2".to_owned())])),
            ..ResourceRequirements::default()
        };
        let (r, w) = inject_accelerator(Some(user.clone()), "amd.com/gpu", 4);
        assert_eq!(r.requests.expect("requests")["amd.com/gpu"].0, "2");
        assert!(matches!(
            w,
            Some(Warning::AcceleratorCountOverridden { computed: 4, .. })
        ));
        let (_, same) = inject_accelerator(Some(user), "amd.com/gpu", 2);
        assert_eq!(same, None);
    }

    #[test]
    fn merged_gpu_requests_and_limits_are_aligned_with_a_warning() {
        let base = ResourceRequirements {
            requests: Some(list(&[
                ("amd.com/gpu", "4".to_owned()),
                ("cpu", "8".to_owned()),
            ])),
            limits: Some(list(&[("amd.com/gpu", "4".to_owned())])),
            claims: None,
        };
        let over = ResourceRequirements {
            limits: Some(list(&[
                ("amd.com/gpu", "2".to_owned()),
                ("cpu", "9".to_owned()),
            ])),
            ..ResourceRequirements::default()
        };
        let (merged, warnings) = merge(base.clone(), &over);
        assert_eq!(merged.requests.as_ref().expect("r")["amd.com/gpu"].0, "2");
        assert_eq!(merged.limits.as_ref().expect("l")["amd.com/gpu"].0, "2");
        // CPU is not an extended resource: request 8 and limit 9 stay.
        assert_eq!(merged.requests.as_ref().expect("r")["cpu"].0, "8");
        assert_eq!(
            warnings,
            [Warning::ExtendedResourceAligned {
                resource: "amd.com/gpu".to_owned(),
                requests: Some("4".to_owned()),
                limits: Some("2".to_owned()),
                value: "2".to_owned(),
            }]
        );
        let (_, none) = merge(base.clone(), &base);
        assert!(none.is_empty());
    }

    #[test]
    fn the_vendor_tables_agree() {
        for (accelerator, vendor) in [
            (AcceleratorType::Amd, kinfer_select::gpu::Vendor::Amd),
            (AcceleratorType::Nvidia, kinfer_select::gpu::Vendor::Nvidia),
        ] {
            assert_eq!(accelerator.resource_name(), Some(vendor.resource_name()));
        }
        assert_eq!(accelerator_resource(AcceleratorType::Cpu), None);
        assert_eq!(
            accelerator_resource(AcceleratorType::IntelGaudi),
            Some("habana.ai/gaudi")
        );
    }
}
