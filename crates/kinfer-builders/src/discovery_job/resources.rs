//! CPU and memory of the AIM Jobs' containers: discovery, check-size and download.
//!
//! Contract: every AIM Job container gets requests and limits of CPU and memory: a namespace
//! whose ResourceQuota counts them refuses pods that set none, and a Job without limits is
//! unbounded on its node. [`JobResources::default`] holds unless the operator is told
//! otherwise (the AIM binary's `--<job>-job-requests` and `--<job>-job-limits` flags, read by
//! [`parse_list`] and checked by [`check`]). Upstream sets none; a Job name that upstream's
//! formula gives does not change with the defaults (see [`super::discovery_job`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Requests and limits of each AIM Job's container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobResources {
    /// The discovery dry-run (the AIM image printing its profile).
    pub discovery: ResourceRequirements,
    /// The check-size Job (lists the model's files).
    pub check_size: ResourceRequirements,
    /// The download Job (parallel transfers of tens of GB).
    pub download: ResourceRequirements,
}

fn requirements(requests: [&str; 2], limits: [&str; 2]) -> ResourceRequirements {
    let list = |[cpu, memory]: [&str; 2]| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    ResourceRequirements {
        requests: Some(list(requests)),
        limits: Some(list(limits)),
        ..ResourceRequirements::default()
    }
}

impl Default for JobResources {
    fn default() -> Self {
        Self {
            discovery: requirements(["250m", "512Mi"], ["1", "2Gi"]),
            check_size: requirements(["100m", "128Mi"], ["500m", "512Mi"]),
            download: requirements(["1", "2Gi"], ["4", "8Gi"]),
        }
    }
}

/// A resource list written as `kubectl set resources` takes it: `cpu=1,memory=2Gi`. Names
/// must be resource names, values quantities the API server accepts.
pub fn parse_list(text: &str) -> Result<BTreeMap<String, Quantity>, Error> {
    let mut list = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').ok_or_else(|| Error::Input {
            field: "resources",
            reason: format!("{pair:?} is not name=quantity"),
        })?;
        let (name, value) = (name.trim(), value.trim());
        let named = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'));
        if !named {
            return Err(Error::Input {
                field: "resources",
                reason: format!("{name:?} is not a resource name"),
            });
        }
        if kinfer_api::quantity::parse(value).is_none_or(|v| v < 0.0) {
            return Err(Error::Quantity {
                field: "resources",
                value: value.to_owned(),
            });
        }
        list.insert(name.to_owned(), Quantity(value.to_owned()));
    }
    Ok(list)
}

/// Refuses requirements the API server would refuse in a pod: a request above its limit.
pub fn check(r: &ResourceRequirements) -> Result<(), Error> {
    let (Some(requests), Some(limits)) = (&r.requests, &r.limits) else {
        return Ok(());
    };
    for (name, request) in requests {
        let Some(limit) = limits.get(name) else {
            continue;
        };
        let value = |q: &Quantity| kinfer_api::quantity::parse(&q.0).unwrap_or(f64::NAN);
        if value(request) > value(limit) {
            return Err(Error::Input {
                field: "resources",
                reason: format!(
                    "the {name} request {} is above its limit {}",
                    request.0, limit.0
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_like_kubectl_set_resources() {
        assert_eq!(
            parse_list("cpu=500m, memory=1Gi").unwrap(),
            BTreeMap::from([
                ("cpu".to_owned(), Quantity("500m".into())),
                ("memory".to_owned(), Quantity("1Gi".into())),
            ])
        );
        assert!(parse_list("").unwrap().is_empty());
        for bad in [
            "cpu",
            "cpu=lots",
            "cpu=-1",
            "=1",
            "c pu=1",
            "memory=1.5e-2147483648x",
        ] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_request_above_its_limit_is_refused() {
        let mut r = JobResources::default().download;
        assert!(check(&r).is_ok());
        r.requests
            .as_mut()
            .unwrap()
            .insert("memory".into(), Quantity("9Gi".into()));
        assert!(check(&r).is_err());
    }

    #[test]
    fn every_default_sets_cpu_and_memory_within_their_limits() {
        let d = JobResources::default();
        for r in [&d.discovery, &d.check_size, &d.download] {
            for list in [&r.requests, &r.limits] {
                let keys: Vec<_> = list.as_ref().unwrap().keys().map(String::as_str).collect();
                assert_eq!(keys, ["cpu", "memory"]);
            }
            check(r).unwrap();
        }
    }
}
