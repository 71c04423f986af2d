//! kinfer's CRDs, the upstream samples of the groups kinfer serves, and `examples/` on the real
//! API server; and a table of invalid manifests refused at the same field by the real server
//! and by the embedded cluster (kinfer-testkit), CEL rules included.

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::discovery::Discovery;
use serde_json::{Value, json};

use crate::{apply, client, documents_under, root, shared};

/// The groups kinfer serves (the kaiwo `aim.silogen.ai` samples are not served).
const SERVED_GROUPS: [&str; 3] = ["aim.eai.amd.com", "model.otterscale.io", "zerfoo.feza.ai"];

fn served(doc: &Value) -> bool {
    let group = doc["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(g, _)| g);
    SERVED_GROUPS.contains(&group)
}

/// A namespace name for a file (its stem, cut to fit, lowercase).
fn namespace_for(prefix: &str, file: &std::path::Path) -> String {
    let stem: String = file
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = format!("{prefix}-{stem}");
    name[..name.len().min(63)].trim_end_matches('-').to_owned()
}

#[tokio::test]
async fn every_kinfer_crd_is_established_with_its_cel_rules() {
    let (client, _) = client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let ours = crate::documents_under(&root().join("deploy/crds"));
    assert!(ours.len() >= 12, "deploy/crds holds every kinfer kind");
    for (file, doc) in ours {
        let name = doc["metadata"]["name"].as_str().unwrap();
        let live = crds.get(name).await.unwrap();
        let status = live.status.unwrap_or_default();
        let established = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "{}: {name} is not Established", file.display());
        // The server kept every CEL rule (it drops none it accepted).
        let rules = |v: &Value| v.to_string().matches("x-kubernetes-validations").count();
        let live = serde_json::to_value(&live.spec).unwrap();
        assert_eq!(rules(&live), rules(&doc["spec"]), "{name}: CEL rules");
    }
}

/// Dry-run applies every document; returns the refusals.
async fn refusals(
    client: &kube::Client,
    discovery: &Discovery,
    docs: &[(PathBuf, Value)],
    prefix: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (file, doc) in docs {
        let ns = namespace_for(prefix, file);
        if let Err(e) = apply(client, discovery, doc, &ns, false).await {
            out.push(format!(
                "{} ({} {}): {e}",
                file.display(),
                doc["kind"].as_str().unwrap_or_default(),
                doc["metadata"]["name"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}

#[tokio::test]
async fn every_upstream_sample_of_the_served_groups_is_accepted() {
    let (client, discovery) = client().await;
    let mut docs = documents_under(&shared().join("reference/aim/samples"));
    docs.extend(documents_under(
        &shared().join("reference/modelservice/samples"),
    ));
    docs.retain(|(_, d)| served(d));
    assert!(docs.len() >= 15, "samples found: {}", docs.len());
    let refused = refusals(&client, &discovery, &docs, "sample").await;
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

#[tokio::test]
async fn every_example_is_accepted() {
    let (client, discovery) = client().await;
    let docs = documents_under(&root().join("examples"));
    assert!(docs.len() >= 15, "examples found: {}", docs.len());
    let refused = refusals(&client, &discovery, &docs, "example").await;
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

/// One invalid manifest: a valid base with one change, the fields the schema names (which
/// the embedded cluster must name too), and the fields only CEL rules the embedded cluster
/// does not evaluate name (its known difference: it accepts those).
struct Case {
    what: &'static str,
    base: Value,
    /// Applied first and kept: the case is then an update of it.
    before: Option<Value>,
    schema: &'static [&'static str],
    cel: &'static [&'static str],
}

fn zerfoo(spec: Value) -> Value {
    let mut s = json!({"modelRef": "llama3-8b-q4", "replicas": 2});
    merge(&mut s, spec);
    json!({"apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
           "metadata": {"name": "z"}, "spec": s})
}

fn aim_service(spec: Value) -> Value {
    let mut s = json!({"model": {"name": "llama-3-1-8b-instruct"}});
    merge(&mut s, spec);
    json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
           "metadata": {"name": "s"}, "spec": s})
}

fn model_service(spec: Value) -> Value {
    let mut s = json!({"model": {"name": "Qwen/Qwen3-8B",
                                 "image": "registry.example.com/modelpacks/qwen3-8b:v1"},
                       "engine": {"args": ["--max-model-len=4096"]},
                       "accelerator": {"type": "nvidia"},
                       "decode": {"replicas": 1, "parallelism": {"tensor": 1}}});
    merge(&mut s, spec);
    json!({"apiVersion": "model.otterscale.io/v1alpha1", "kind": "ModelService",
           "metadata": {"name": "m"}, "spec": s})
}

/// JSON merge patch (RFC 7386): `null` removes.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}

fn cases() -> Vec<Case> {
    let case = |what, base, schema, cel| Case {
        what,
        base,
        before: None,
        schema,
        cel,
    };
    vec![
        // Schema: required, enum, pattern, bounds.
        case(
            "required",
            zerfoo(json!({"modelRef": null})),
            &["spec.modelRef"],
            &[],
        ),
        case(
            "enum",
            model_service(json!({"accelerator": {"type": "tpu"}})),
            &["spec.accelerator.type"],
            &[],
        ),
        case(
            "pattern",
            zerfoo(json!({"healthCheck": {"path": "/h", "interval": "soon", "timeout": "5s"}})),
            &["spec.healthCheck.interval"],
            &[],
        ),
        case(
            "minimum",
            zerfoo(json!({"replicas": 0})),
            &["spec.replicas"],
            &[],
        ),
        case(
            "maximum",
            zerfoo(json!({"canary": {"modelRef": "m2", "weight": 101}})),
            &["spec.canary.weight"],
            &[],
        ),
        case(
            "minimum (AIM)",
            aim_service(json!({"minReplicas": 0})),
            &["spec.minReplicas"],
            &[],
        ),
        // CEL rules.
        case(
            "CEL: minReplicas <= maxReplicas",
            zerfoo(json!({"minReplicas": 3, "maxReplicas": 2})),
            &[],
            &["spec.minReplicas"],
        ),
        case(
            "CEL: replicas within the bounds",
            zerfoo(json!({"replicas": 5, "minReplicas": 1, "maxReplicas": 3})),
            &[],
            &["spec.replicas"],
        ),
        case(
            "CEL: exactly one model reference",
            aim_service(json!({"model": {"image": "amdenterpriseai/aim-x:1"}})),
            &[],
            &["spec.model"],
        ),
        case(
            "CEL: hardware names a gpu or a cpu",
            aim_service(json!({"overrides": {"hardware": {}}})),
            &[],
            &["spec.overrides.hardware"],
        ),
        case(
            "CEL: a GPU model or a minimum VRAM, not both",
            aim_service(
                json!({"overrides": {"hardware": {"gpu": {"model": "MI300X", "minVram": "64Gi", "requests": 1}}}}),
            ),
            &[],
            &["spec.overrides.hardware.gpu"],
        ),
        case(
            "CEL: a custom model has a source",
            aim_service(json!({"model": {"name": null, "custom": {
                "baseImage": "amdenterpriseai/aim-base:1",
                "hardware": {"gpu": {"requests": 1}},
                "modelSources": []}}})),
            &["spec.model.custom.modelSources"],
            &["spec.model.custom"],
        ),
        Case {
            what: "CEL: the model is immutable",
            base: aim_service(json!({"model": {"name": "another-model"}})),
            before: Some(aim_service(json!({}))),
            schema: &["spec.model"],
            cel: &[],
        },
    ]
}

/// The fields a 422 names (without the field-less causes), or `None` when accepted.
async fn refused_fields(
    client: &kube::Client,
    discovery: &Discovery,
    case: &Case,
    namespace: &str,
) -> Option<BTreeSet<String>> {
    if let Some(before) = &case.before {
        apply(client, discovery, before, namespace, true)
            .await
            .unwrap_or_else(|e| panic!("{}: the valid object: {e}", case.what));
    }
    match apply(client, discovery, &case.base, namespace, false).await {
        Ok(_) => None,
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{}: {s:?}", case.what);
            Some(
                s.details
                    .map(|d| d.causes)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| c.field)
                    .filter(|f| f != "<nil>" && !f.is_empty())
                    .collect(),
            )
        }
        Err(e) => panic!("{}: {e}", case.what),
    }
}

#[tokio::test]
async fn invalid_manifests_are_refused_at_the_same_field_by_both_servers() {
    let (real, real_discovery) = client().await;
    let embedded = kinfer_testkit::TestCluster::start().await.unwrap();
    for crd in kinfer_testkit::load_crds(&[root().join("deploy/crds")]).unwrap() {
        embedded.install_crd_value(crd).unwrap();
    }
    let embedded_client = embedded.client().unwrap();
    let embedded_discovery = Discovery::new(embedded_client.clone()).run().await.unwrap();
    let mut problems = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let ns = format!("invalid-{i}");
        let expected: BTreeSet<String> = case
            .schema
            .iter()
            .chain(case.cel)
            .map(|f| (*f).to_owned())
            .collect();
        let on_real = refused_fields(&real, &real_discovery, case, &ns).await;
        if on_real.as_ref() != Some(&expected) {
            problems.push(format!(
                "{}: the real server named {on_real:?}, expected {expected:?}",
                case.what
            ));
        }
        // The embedded cluster names the schema's fields; it does not evaluate the other CEL
        // rules (a known difference, crates/kinfer-testkit/src/lib.rs), so a case that only
        // they refuse is accepted there.
        let schema: BTreeSet<String> = case.schema.iter().map(|f| (*f).to_owned()).collect();
        let on_embedded = refused_fields(&embedded_client, &embedded_discovery, case, &ns).await;
        let want = (!schema.is_empty()).then_some(schema);
        if on_embedded != want {
            problems.push(format!(
                "{}: the embedded cluster named {on_embedded:?}, expected {want:?}",
                case.what
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
