//! Runtime config merging (NOTES row 19).
//!
//! Contract: [`migrate`] moves the deprecated top-level `defaultStorageClassName` and
//! `pvcHeadroomPercent` into `storage.*` when those are unset. [`merge`] overlays the
//! namespace config on the cluster config: scalars and optional fields the namespace sets win
//! (also inside `storage`: a namespace that sets only the class keeps the cluster's headroom),
//! `env` merges by name (`AIM_ENGINE_ARGS` deep-merged), routing annotations merge by key,
//! label propagation and model defaults are taken whole from the namespace when it sets them.
//! Pure.

use kinfer_api::aim::AIMRuntimeConfigSpec;
use kinfer_api::aim::common::{AIMRuntimeRoutingConfig, AIMStorageConfig};

/// The spec with deprecated fields moved into `storage` where that leaves them unset.
pub fn migrate(spec: &AIMRuntimeConfigSpec) -> AIMRuntimeConfigSpec {
    let mut out = spec.clone();
    let class = out.default_storage_class_name.take();
    let headroom = out.pvc_headroom_percent.take();
    if class.is_some() || headroom.is_some() {
        let storage = out.storage.get_or_insert_with(AIMStorageConfig::default);
        if storage.default_storage_class_name.is_none() {
            storage.default_storage_class_name = class;
        }
        if storage.pvc_headroom_percent.is_none() {
            storage.pvc_headroom_percent = headroom;
        }
    }
    out
}

/// `namespace` over `cluster`; see the module contract.
pub fn merge(
    cluster: Option<&AIMRuntimeConfigSpec>,
    namespace: Option<&AIMRuntimeConfigSpec>,
) -> AIMRuntimeConfigSpec {
    let cluster = cluster.map(migrate).unwrap_or_default();
    let Some(ns) = namespace.map(migrate) else {
        return cluster;
    };
    AIMRuntimeConfigSpec {
        default_storage_class_name: None,
        pvc_headroom_percent: None,
        env: crate::env::merge(&[&cluster.env, &ns.env]),
        label_propagation: ns.label_propagation.or(cluster.label_propagation),
        model: ns.model.or(cluster.model),
        routing: merge_routing(cluster.routing, ns.routing),
        storage: match (cluster.storage, ns.storage) {
            (Some(c), Some(n)) => Some(AIMStorageConfig {
                default_storage_class_name: n
                    .default_storage_class_name
                    .or(c.default_storage_class_name),
                pvc_headroom_percent: n.pvc_headroom_percent.or(c.pvc_headroom_percent),
            }),
            (c, n) => n.or(c),
        },
    }
}

fn merge_routing(
    cluster: Option<AIMRuntimeRoutingConfig>,
    ns: Option<AIMRuntimeRoutingConfig>,
) -> Option<AIMRuntimeRoutingConfig> {
    match (cluster, ns) {
        (Some(c), Some(n)) => {
            let mut annotations = c.annotations;
            annotations.extend(n.annotations);
            Some(AIMRuntimeRoutingConfig {
                annotations,
                enabled: n.enabled.or(c.enabled),
                gateway_ref: n.gateway_ref.or(c.gateway_ref),
                path_template: n.path_template.or(c.path_template),
                request_timeout: n.request_timeout.or(c.request_timeout),
            })
        }
        (c, n) => n.or(c),
    }
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::EnvVar;

    use super::*;

    #[test]
    fn namespace_wins_field_by_field() {
        let cluster = AIMRuntimeConfigSpec {
            default_storage_class_name: Some("slow".into()),
            env: vec![EnvVar::new("A", "cluster"), EnvVar::new("B", "cluster")],
            routing: Some(AIMRuntimeRoutingConfig {
                enabled: Some(true),
                path_template: Some("/{.metadata.name}".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ns = AIMRuntimeConfigSpec {
            env: vec![EnvVar::new("B", "ns")],
            routing: Some(AIMRuntimeRoutingConfig {
                request_timeout: Some("180s".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let m = merge(Some(&cluster), Some(&ns));
        assert_eq!(
            m.env,
            vec![EnvVar::new("A", "cluster"), EnvVar::new("B", "ns")]
        );
        let routing = m.routing.unwrap();
        assert_eq!(routing.enabled, Some(true));
        assert_eq!(routing.request_timeout.as_deref(), Some("180s"));
        assert_eq!(routing.path_template.as_deref(), Some("/{.metadata.name}"));
        let storage = m.storage.unwrap();
        assert_eq!(storage.default_storage_class_name.as_deref(), Some("slow"));
        assert_eq!(storage.pvc_headroom_percent, None);
        assert_eq!(storage.headroom_percent(), 10, "the default");
        assert_eq!(m.default_storage_class_name, None, "migrated");
    }

    #[test]
    fn deprecated_headroom_migrates() {
        let spec = AIMRuntimeConfigSpec {
            pvc_headroom_percent: Some(25),
            ..Default::default()
        };
        assert_eq!(
            migrate(&spec).storage.and_then(|s| s.pvc_headroom_percent),
            Some(25)
        );
    }

    #[test]
    fn headroom_survives_a_namespace_that_sets_only_the_class() {
        let cluster = AIMRuntimeConfigSpec {
            storage: Some(AIMStorageConfig {
                default_storage_class_name: Some("slow".into()),
                pvc_headroom_percent: Some(25),
            }),
            ..Default::default()
        };
        let ns = AIMRuntimeConfigSpec {
            storage: Some(AIMStorageConfig {
                default_storage_class_name: Some("fast".into()),
                pvc_headroom_percent: None,
            }),
            ..Default::default()
        };
        let storage = merge(Some(&cluster), Some(&ns)).storage.unwrap();
        assert_eq!(storage.default_storage_class_name.as_deref(), Some("fast"));
        assert_eq!(storage.pvc_headroom_percent, Some(25));
        // The deprecated top-level field of the namespace config counts as set, too.
        let legacy_ns = AIMRuntimeConfigSpec {
            pvc_headroom_percent: Some(40),
            ..Default::default()
        };
        let storage = merge(Some(&cluster), Some(&legacy_ns)).storage.unwrap();
        assert_eq!(
            (
                storage.default_storage_class_name.as_deref(),
                storage.pvc_headroom_percent
            ),
            (Some("slow"), Some(40))
        );
    }
}
