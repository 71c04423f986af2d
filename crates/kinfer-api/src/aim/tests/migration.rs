//! kaiwo (`aim.silogen.ai`) AIMServices migrate to the expected aim-engine objects.

use serde_json::json;

use super::super::*;
use super::{read, reference, schema_check, service};
use crate::validation::Validate;

fn migrate_sample(file: &str) -> Option<(AIMService, Vec<String>)> {
    let dir = reference()?;
    let text = read(&dir.join("samples").join(file));
    let legacy: LegacyAimService =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let (service, warnings) = migrate(&legacy);
    if let Err(errors) = service.validate() {
        panic!("{file}: {errors}");
    }
    let value = serde_json::to_value(&service).unwrap_or_else(|e| panic!("{e}"));
    schema_check::<AIMService>(&value, file);
    Some((service, warnings))
}

#[test]
fn kaiwo_overrides_sample_migrates() {
    let Some((migrated, warnings)) = migrate_sample("kaiwo_11_aimservice_overrides.yaml") else {
        return;
    };
    let expected = service(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "default-template-overrides"},
        "spec": {
            "model": {"name": "default-testing-llama-3-8b"},
            "overrides": {"metric": "throughput", "precision": "fp8"},
            "caching": {"mode": "Dedicated"},
        },
    }));
    pretty_assertions::assert_eq!(migrated, expected);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn kaiwo_kv_cache_sample_migrates_and_reports_the_kv_cache() {
    let Some((migrated, warnings)) = migrate_sample("kaiwo_12_aimservice_kvcache.yaml") else {
        return;
    };
    let expected = service(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "dummy-w-kvcache"},
        "spec": {
            "model": {"image": "ghcr.io/silogen/aim-dummy:0.1.8"},
            "storage": {"defaultStorageClassName": "rwx-nfs"},
            "caching": {"mode": "Dedicated"},
        },
    }));
    pretty_assertions::assert_eq!(migrated, expected);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("spec.kvCache dropped"),
        "{warnings:?}"
    );
}

#[test]
fn kaiwo_renamed_fields_migrate() {
    let legacy: LegacyAimService = serde_saphyr::from_str(
        r"
apiVersion: aim.silogen.ai/v1alpha1
kind: AIMService
metadata:
  name: svc
  namespace: team-a
  labels: {team: a}
  uid: 0b6c3e0e-0000-0000-0000-000000000000
spec:
  model: {ref: llama, autoDiscovery: false}
  templateRef: llama-mi300x
  template: {allowUnoptimized: true}
  cacheModel: true
  pvcHeadroomPercent: 20
  runtimeConfigName: gpu
  labelPropagation: {enabled: true, match: [team]}
  overrides:
    gpuSelector: {model: MI300X, count: 2}
",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (migrated, warnings) = migrate(&legacy);
    let expected = service(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "svc", "namespace": "team-a", "labels": {"team": "a"}},
        "spec": {
            "model": {"name": "llama"},
            "template": {"name": "llama-mi300x", "allowUnoptimized": true},
            "caching": {"mode": "Shared"},
            "storage": {"pvcHeadroomPercent": 20},
            "runtimeConfigName": "gpu",
            "overrides": {"hardware": {"gpu": {"model": "MI300X", "requests": 2}}},
        },
    }));
    pretty_assertions::assert_eq!(migrated, expected);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("spec.labelPropagation dropped"))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("spec.model.autoDiscovery (false) dropped"))
    );
}

#[test]
fn kaiwo_unknown_fields_are_rejected() {
    let result: Result<LegacyAimService, _> = serde_saphyr::from_str(
        "apiVersion: aim.silogen.ai/v1alpha1\nkind: AIMService\nmetadata: {name: s}\nspec:\n  model: {ref: m}\n  kvcache: {type: redis}\n",
    );
    assert!(result.is_err());
}
