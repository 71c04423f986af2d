//! Checking and applying the input documents.
//!
//! Contract of [`apply`]:
//! 1. Every document's `apiVersion`/`kind` must be served by the render cluster (kinfer's kinds,
//!    the third-party kinds, the built-in kinds of [`kinfer_testkit`]); namespaced objects
//!    without a namespace go to `default`; a namespace on a cluster-scoped object is dropped,
//!    as the API server does. Two documents naming the same object are an error ("defined
//!    twice", naming the other document) unless they are equal: a repeat is applied once (the
//!    examples each carry their Namespace, and a directory of them holds it several times).
//! 2. Input Namespaces are checked (as in 3) and applied first, then every other namespace an
//!    input names (and `extra_namespaces`) is created, so nothing fails for a missing namespace.
//! 3. Each remaining document is checked, in order: strictly against its CRD schema with
//!    unknown fields as errors ([`super::validate::Strict`], [`super::validate::core_errors`]
//!    for core kinds); then by a dry-run write (the API
//!    server's own schema check: formats, patterns, CEL rules — answered like the real 422
//!    with field paths); then by its kind's type and `Validate` rules
//!    ([`super::validate::check`]). All problems of all documents are reported together as
//!    [`InvalidInputs`]; nothing but input Namespaces is written then.
//! 4. Objects are written in a stable order: Nodes, Secrets, ConfigMaps, ServiceAccounts,
//!    runtime configs, then everything else in input order. An object is created; when it
//!    already exists in the fresh cluster (the `default` Namespace, say) it is server-side
//!    applied over, as `kubectl apply` would. A Node's `status` (capacity, allocatable,
//!    conditions) is written through its status subresource.

use anyhow::{Context, Result};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::env::Env;
use super::input::{Document, InvalidInput, InvalidInputs};
use super::validate::{self, Strict};

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

/// Creates `input`, or server-side applies it when the object already exists; returns the
/// problems the server found with it.
async fn put(client: &Client, input: &Input, dry_run: bool) -> Result<Vec<InvalidInput>> {
    let object = match dynamic(input) {
        Ok(o) => o,
        Err(e) => return Ok(vec![e]),
    };
    let api = input.api(client);
    let result = match api.create(&post(dry_run), &object).await {
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let params = PatchParams {
                dry_run,
                force: true,
                field_manager: Some(MANAGER.to_owned()),
                ..PatchParams::default()
            };
            api.patch(input.doc.name(), &params, &Patch::Apply(&input.doc.value))
                .await
                .map(|_| ())
        }
        other => other.map(|_| ()),
    };
    match result {
        Ok(()) => Ok(Vec::new()),
        Err(e) => match refused(&input.doc, &e) {
            Some(problems) => Ok(problems),
            None => Err(e).with_context(|| format!("writing {}", input.display())),
        },
    }
}

type Key = (String, String, Option<String>, String);

fn key(input: &Input) -> Key {
    (
        input.resource.group.clone(),
        input.doc.kind().to_owned(),
        input.namespace().map(str::to_owned),
        input.doc.name().to_owned(),
    )
}

/// The inputs without the repeats of an earlier document (same object, same content: several
/// example files carrying the same Namespace), and "defined twice" for every document naming
/// an object an earlier document names differently.
fn dedupe(inputs: Vec<Input>) -> (Vec<Input>, Vec<InvalidInput>) {
    let mut first: std::collections::BTreeMap<Key, Input> = std::collections::BTreeMap::new();
    let mut kept = Vec::with_capacity(inputs.len());
    let mut problems = Vec::new();
    for input in inputs {
        match first.get(&key(&input)) {
            Some(earlier) if earlier.doc.value == input.doc.value => {}
            Some(earlier) => problems.push(input.doc.invalid(
                "metadata.name",
                format!(
                    "defined twice: {}: document {} defines the same object differently",
                    earlier.doc.file.display(),
                    earlier.doc.index
                ),
            )),
            None => {
                first.insert(key(&input), input.clone());
                kept.push(input);
            }
        }
    }
    (kept, problems)
}

/// The problems of one non-Namespace input; see step 3 of the module contract.
async fn problems_of(
    client: &Client,
    strict: &mut Strict,
    input: &Input,
) -> Result<Vec<InvalidInput>> {
    let (api_version, kind, value) = (input.doc.api_version(), input.doc.kind(), &input.doc.value);
    let mut schema = strict.errors(api_version, kind, value);
    schema.extend(validate::core_errors(api_version, kind, value));
    let schema: Vec<InvalidInput> = schema
        .into_iter()
        .map(|e| input.doc.invalid(e.path, e.message))
        .collect();
    if !schema.is_empty() {
        return Ok(schema);
    }
    let server = put(client, input, true).await?;
    if !server.is_empty() {
        return Ok(server);
    }
    Ok(validate::check(api_version, kind, value)
        .into_iter()
        .map(|e| input.doc.invalid(e.path, e.message))
        .collect())
}

/// Checks and applies `docs`; see the module contract. Returns the inputs in apply order.
pub async fn apply(
    env: &Env,
    docs: Vec<Document>,
    extra_namespaces: &[&str],
) -> Result<Vec<Input>> {
    let mut problems = Vec::new();
    let mut resolved = Vec::new();
    for doc in docs {
        match resolve(env, doc) {
            Ok(input) => resolved.push(input),
            Err(e) => problems.push(e),
        }
    }
    let (mut inputs, twice) = dedupe(resolved);
    problems.extend(twice);
    if !problems.is_empty() {
        return Err(InvalidInputs(problems).into());
    }
    inputs.sort_by_key(|i| priority(i.doc.kind()));
    let client = &env.client;

    let mut strict = Strict::new(&super::env::crds());
    for input in inputs.iter().filter(|i| i.doc.kind() == "Namespace") {
        let found = problems_of(client, &mut strict, input).await?;
        if found.is_empty() {
            problems.extend(put(client, input, false).await?);
        } else {
            problems.extend(found);
        }
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
        problems.extend(problems_of(client, &mut strict, input).await?);
    }
    if !problems.is_empty() {
        return Err(InvalidInputs(problems).into());
    }
    for input in &rest {
        let refused = put(client, input, false).await?;
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
