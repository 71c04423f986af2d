//! Checking and applying the input documents.
//!
//! Contract of [`apply`]:
//! 1. Every document's `apiVersion`/`kind` must be served by the render cluster (kinfer's kinds,
//!    the third-party kinds, the built-in kinds of [`kinfer_testkit`]); namespaced objects
//!    without a namespace go to `default`; a namespace on a cluster-scoped object is dropped,
//!    as the API server does.
//! 2. Input Namespaces are created first, then every other namespace an input names (and
//!    `extra_namespaces`), so nothing fails for a missing namespace.
//! 3. Each remaining document is checked, in order, by a dry-run create (the CRD schema:
//!    types, required fields, enums, patterns, bounds — answered like the real 422 with field
//!    paths) and by its kind's `Validate` rules ([`super::validate`]). All problems of all
//!    documents are reported together as [`InvalidInputs`]; nothing is created then.
//! 4. Objects are created in a stable order: Nodes, Secrets, ConfigMaps, ServiceAccounts,
//!    runtime configs, then everything else in input order. A Node's `status` (capacity,
//!    allocatable, conditions) is written through its status subresource.

use anyhow::{Context, Result};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::env::Env;
use super::input::{Document, InvalidInput, InvalidInputs};
use super::validate;

/// The field manager of everything render itself writes.
pub const MANAGER: &str = "kinfer-render";

/// An applied input.
#[derive(Debug, Clone)]
pub struct Input {
    /// The document as applied (namespace filled in).
    pub doc: Document,
    /// Its resource.
    pub resource: ApiResource,
    /// Whether it is namespaced.
    pub namespaced: bool,
}

impl Input {
    /// The namespace, for namespaced objects.
    pub fn namespace(&self) -> Option<&str> {
        self.doc.namespace()
    }

    /// An API for this object's kind (in its namespace).
    pub fn api(&self, client: &Client) -> Api<DynamicObject> {
        match self.namespace() {
            Some(ns) if self.namespaced => Api::namespaced_with(client.clone(), ns, &self.resource),
            _ => Api::all_with(client.clone(), &self.resource),
        }
    }

    /// `Kind ns/name` or `Kind name`.
    pub fn display(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.doc.kind(), self.doc.name()),
            None => format!("{} {}", self.doc.kind(), self.doc.name()),
        }
    }
}

fn priority(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "Node" => 1,
        "Secret" | "ConfigMap" | "ServiceAccount" => 2,
        "AIMClusterRuntimeConfig" | "AIMRuntimeConfig" => 3,
        _ => 4,
    }
}

fn resolve(env: &Env, mut doc: Document) -> Result<Input, InvalidInput> {
    let Some((resource, namespaced)) = env.resolve(doc.api_version(), doc.kind()) else {
        return Err(doc.invalid(
            "kind",
            format!(
                "{} {} is not a kind kinfer render knows (kinfer's CRDs, the third-party kinds the operators create, and core kinds such as Namespace, Node, Secret, ConfigMap)",
                doc.api_version(),
                doc.kind()
            ),
        ));
    };
    if let Some(meta) = doc.value["metadata"].as_object_mut() {
        if namespaced {
            if !meta.get("namespace").is_some_and(Value::is_string) {
                meta.insert("namespace".to_owned(), json!("default"));
            }
        } else {
            meta.remove("namespace");
        }
    }
    Ok(Input {
        doc,
        resource,
        namespaced,
    })
}

/// Turns a refused create into input errors; `None` for errors that are not the input's fault.
fn refused(doc: &Document, error: &kube::Error) -> Option<Vec<InvalidInput>> {
    let kube::Error::Api(status) = error else {
        return None;
    };
    match status.code {
        409 => Some(vec![doc.invalid(
            "metadata.name",
            "defined twice: an earlier document creates the same object",
        )]),
        400..=499 => {
            let causes = status
                .details
                .as_ref()
                .map(|d| d.causes.clone())
                .unwrap_or_default();
            if causes.is_empty() {
                Some(vec![doc.invalid("", status.message.clone())])
            } else {
                Some(
                    causes
                        .iter()
                        .map(|c| doc.invalid(c.field.clone(), c.message.clone()))
                        .collect(),
                )
            }
        }
        _ => None,
    }
}

fn dynamic(input: &Input) -> Result<DynamicObject, InvalidInput> {
    serde_json::from_value(input.doc.value.clone()).map_err(|e| {
        input
            .doc
            .invalid("", format!("not a Kubernetes object: {e}"))
    })
}

async fn ensure_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if api.get_opt(name).await?.is_none() {
        let ns = serde_json::from_value(json!({ "metadata": { "name": name } }))?;
        api.create(&post(false), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
    }
    Ok(())
}

fn post(dry_run: bool) -> PostParams {
    PostParams {
        dry_run,
        field_manager: Some(MANAGER.to_owned()),
    }
}

async fn create(client: &Client, input: &Input, dry_run: bool) -> Result<Vec<InvalidInput>> {
    let object = match dynamic(input) {
        Ok(o) => o,
        Err(e) => return Ok(vec![e]),
    };
    match input.api(client).create(&post(dry_run), &object).await {
        Ok(_) => Ok(Vec::new()),
        Err(e) => match refused(&input.doc, &e) {
            Some(problems) => Ok(problems),
            None => Err(e).with_context(|| format!("creating {}", input.display())),
        },
    }
}

/// Checks and applies `docs`; see the module contract. Returns the inputs in apply order.
pub async fn apply(
    env: &Env,
    docs: Vec<Document>,
    extra_namespaces: &[&str],
) -> Result<Vec<Input>> {
    let mut problems = Vec::new();
    let mut inputs = Vec::new();
    for doc in docs {
        match resolve(env, doc) {
            Ok(input) => inputs.push(input),
            Err(e) => problems.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(InvalidInputs(problems).into());
    }
    inputs.sort_by_key(|i| priority(i.doc.kind()));
    let client = &env.client;

    for input in inputs.iter().filter(|i| i.doc.kind() == "Namespace") {
        problems.extend(create(client, input, false).await?);
    }
    let mut namespaces: Vec<&str> = inputs.iter().filter_map(Input::namespace).collect();
    namespaces.extend_from_slice(extra_namespaces);
    namespaces.sort_unstable();
    namespaces.dedup();
    for ns in namespaces {
        ensure_namespace(client, ns).await?;
    }

    let rest: Vec<&Input> = inputs
        .iter()
        .filter(|i| i.doc.kind() != "Namespace")
        .collect();
    for input in &rest {
        let schema = create(client, input, true).await?;
        if schema.is_empty() {
            problems.extend(
                validate::check(input.doc.api_version(), input.doc.kind(), &input.doc.value)
                    .into_iter()
                    .map(|e| input.doc.invalid(e.path, e.message)),
            );
        } else {
            problems.extend(schema);
        }
    }
    if !problems.is_empty() {
        return Err(InvalidInputs(problems).into());
    }
    for input in &rest {
        let refused = create(client, input, false).await?;
        if !refused.is_empty() {
            return Err(InvalidInputs(refused).into());
        }
        if input.doc.kind() == "Node"
            && let Some(status) = input.doc.value.get("status").filter(|s| s.is_object())
        {
            input
                .api(client)
                .patch_status(
                    input.doc.name(),
                    &PatchParams {
                        field_manager: Some(MANAGER.to_owned()),
                        ..PatchParams::default()
                    },
                    &Patch::Merge(json!({ "status": status })),
                )
                .await
                .with_context(|| format!("writing the status of {}", input.display()))?;
        }
    }
    Ok(inputs)
}

/// The current object of `input`, when it exists.
pub async fn current(client: &Client, input: &Input) -> Result<Option<DynamicObject>> {
    input
        .api(client)
        .get_opt(input.doc.name())
        .await
        .with_context(|| format!("reading {}", input.display()))
}

/// `metadata.generation` and `status.observedGeneration` of an object.
pub fn generations(object: &DynamicObject) -> (Option<i64>, Option<i64>) {
    let observed = object.data["status"]["observedGeneration"].as_i64();
    (object.metadata.generation, observed)
}
