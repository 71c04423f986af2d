//! The scenarios: which operator binary runs, which CRDs the cluster serves, what each of the
//! N custom resources looks like, what it depends on (a [`Catalog`], created and counted
//! before the CRs), and what convergence means (every CR's status at
//! `observedGeneration == generation`, in the state the simulator lets it reach, and every
//! child it should own present).

pub mod aim;

use std::collections::HashSet;

use anyhow::{Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_testkit::TestCluster;
use kube::CustomResourceExt;
use serde_json::{Value, json};

/// Namespaces the CRs (and the unrelated objects) are spread over.
pub const NAMESPACES: usize = 4;

/// The namespace of CR number `i`.
pub fn namespace_of(i: usize) -> String {
    format!("bench-{}", i % NAMESPACES)
}

/// A resource the harness reads: `(group, plural)`.
pub type Resource = (&'static str, &'static str);

/// An object the harness creates: `(apiVersion, plural, namespace, object)`.
pub type NewObject = (&'static str, &'static str, String, Value);

/// What the CRs depend on and the operator must settle before (or while) they are created:
/// created after the idle figure, its writes and memory counted apart so they do not distort
/// the per-CR figures.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// One line for the notes: what the catalog is.
    pub describe: &'static str,
    /// Cluster context created before the operator starts (Nodes, namespaces, simulated
    /// logs): not the operator's work, so not counted.
    pub context: fn(&TestCluster) -> Result<()>,
    /// The catalog objects, created at once.
    pub objects: fn() -> Vec<NewObject>,
    /// `(settled, expected)`: how far the operator has brought the catalog.
    pub progress: fn(&TestCluster) -> (usize, usize),
}

/// One scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `zerfoo`, `modelservice` or `aim`.
    pub name: &'static str,
    /// The `controller` label of the operator's metrics for the CR's own controller: reconcile
    /// counts and latencies are read from it (`None`: summed over every controller, for
    /// operators with one controller per CR kind only).
    pub controller: Option<&'static str>,
    /// The operator binary's file name.
    pub binary: &'static str,
    /// Flags after `run` (besides the admin addresses).
    pub args: Vec<String>,
    /// The custom resource: `(apiVersion, plural, kind)`.
    pub api_version: &'static str,
    /// Plural of the custom resource.
    pub plural: &'static str,
    /// Kind of the custom resource.
    pub kind: &'static str,
    /// The kinds of the children a CR owns.
    pub child_resources: Vec<Resource>,
    /// Children per CR when converged (the minimum writes per CR is this plus one status);
    /// `None` when it depends on the operator's settings: convergence then waits for the
    /// statuses only, and the children are counted once the operator is quiet.
    pub children_per_cr: Option<u32>,
    /// `(JSON pointer, value)` a converged CR's status holds besides its generation (the
    /// state the simulator lets it reach); `None`: the generation only.
    pub converged: Option<(&'static str, &'static str)>,
    /// What the CRs depend on, created before them.
    pub catalog: Option<Catalog>,
    /// Builds CR number `i`.
    pub make: fn(usize) -> Value,
}

impl Scenario {
    /// The scenario called `name`.
    pub fn named(name: &str, concurrency: u16) -> Result<Self> {
        let mut s = match name {
            "zerfoo" => zerfoo(),
            "modelservice" => modelservice(),
            "aim" => aim::scenario(),
            other => bail!("unknown scenario {other:?} (zerfoo, modelservice, aim)"),
        };
        s.args
            .extend(["--concurrency".to_owned(), concurrency.to_string()]);
        Ok(s)
    }

    /// `(group, plural)` of the custom resource.
    pub fn resource(&self) -> (&'static str, &'static str) {
        let group = self.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        (group, self.plural)
    }

    /// Installs every CRD the operator needs, its namespaces and the catalog's context.
    pub fn prepare(&self, cluster: &TestCluster) -> Result<()> {
        cluster.install_crds(&crds())?;
        for i in 0..NAMESPACES {
            create(cluster, namespace(&namespace_of(i)))?;
        }
        if let Some(catalog) = &self.catalog {
            (catalog.context)(cluster)?;
        }
        Ok(())
    }

    /// How far `cluster` is: `(CRs whose status observed their generation, children present)`.
    pub fn progress(&self, cluster: &TestCluster) -> (usize, usize) {
        let (group, plural) = self.resource();
        let crs = cluster.objects(group, plural);
        let uids: HashSet<&str> = crs
            .iter()
            .filter_map(|o| o["metadata"]["uid"].as_str())
            .collect();
        let observed = crs.iter().filter(|o| self.is_converged(o)).count();
        let children = self
            .child_resources
            .iter()
            .flat_map(|(g, p)| cluster.objects(g, p))
            .filter(|c| {
                c["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r["uid"].as_str().is_some_and(|u| uids.contains(u)))
                    })
            })
            .count();
        (observed, children)
    }

    /// Whether the status of `cr` observed its generation and holds [`Self::converged`].
    fn is_converged(&self, cr: &Value) -> bool {
        let generation = cr["metadata"]["generation"].as_i64();
        generation.is_some()
            && cr["status"]["observedGeneration"].as_i64() == generation
            && self
                .converged
                .is_none_or(|(pointer, want)| cr.pointer(pointer) == Some(&json!(want)))
    }
}

/// A Namespace to create.
pub fn namespace(name: &str) -> NewObject {
    (
        "v1",
        "namespaces",
        String::new(),
        json!({ "metadata": { "name": name } }),
    )
}

/// Creates `object` in-process (not counted: only the operator's requests are).
pub fn create(cluster: &TestCluster, (api_version, plural, ns, object): NewObject) -> Result<()> {
    cluster
        .create_object(api_version, plural, &ns, object)
        .map(drop)
        .map_err(Into::into)
}

/// Our CRDs, the third-party stand-ins and HTTPRoute, as `kinfer render` installs them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut all = kinfer_api::crds::all();
    all.extend(kinfer_api::third_party::crds());
    all.push(gateway_api::httproutes::HttpRoute::crd());
    all
}

/// N ZerfooInferenceServices without canary, autoscaling or gateway: three children each
/// (Deployment `<name>-primary`, Services `<name>-svc` and `<name>-primary`).
fn zerfoo() -> Scenario {
    Scenario {
        name: "zerfoo",
        binary: "zerfoo-operator",
        controller: None,
        args: Vec::new(),
        api_version: "zerfoo.feza.ai/v1",
        plural: "zerfooinferenceservices",
        kind: "ZerfooInferenceService",
        child_resources: vec![("apps", "deployments"), ("", "services")],
        children_per_cr: Some(3),
        converged: None,
        catalog: None,
        make: |i| {
            json!({
                "apiVersion": "zerfoo.feza.ai/v1",
                "kind": "ZerfooInferenceService",
                "metadata": { "name": format!("svc-{i:05}"), "namespace": namespace_of(i) },
                "spec": {
                    "modelRef": "llama3-8b-q4",
                    "replicas": 1,
                    "resources": { "cpu": "1", "memory": "2Gi" }
                }
            })
        },
    }
}

/// N minimal ModelServices (one decode replica, NVIDIA), under the operator's defaults
/// (Istio provider, default Gateway route, metrics auth): the children depend on those
/// defaults, so they are counted rather than fixed. Every kind a ModelService owns is listed,
/// the Endpoint Picker's token Secret included; the metrics-auth ClusterRoleBinding carries no
/// owner reference, so it is not a child here (it and the finalizer are writes beyond the
/// minimum, necessary ones: see docs/operations.md).
fn modelservice() -> Scenario {
    Scenario {
        name: "modelservice",
        binary: "modelservice-operator",
        controller: None,
        args: Vec::new(),
        api_version: "model.otterscale.io/v1alpha1",
        plural: "modelservices",
        kind: "ModelService",
        child_resources: vec![
            ("apps", "deployments"),
            ("", "services"),
            ("", "configmaps"),
            ("", "secrets"),
            ("", "serviceaccounts"),
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("inference.networking.k8s.io", "inferencepools"),
            ("gateway.networking.k8s.io", "httproutes"),
            ("networking.istio.io", "destinationrules"),
            ("monitoring.coreos.com", "podmonitors"),
            ("monitoring.coreos.com", "servicemonitors"),
        ],
        children_per_cr: None,
        converged: None,
        catalog: None,
        make: |i| {
            json!({
                "apiVersion": "model.otterscale.io/v1alpha1",
                "kind": "ModelService",
                "metadata": { "name": format!("ms-{i:05}"), "namespace": namespace_of(i) },
                "spec": {
                    "model": { "name": "test/model", "image": "registry.example.com/models/test:v1" },
                    "engine": {},
                    "accelerator": { "type": "nvidia" },
                    "decode": { "replicas": 1 }
                }
            })
        },
    }
}

/// Unrelated object number `i`: a Pod, Secret or ConfigMap in turn, `(plural, object)`.
pub fn unrelated(i: usize) -> (&'static str, Value) {
    let ns = namespace_of(i);
    let name = format!("unrelated-{i:05}");
    let payload = "x".repeat(512);
    match i % 3 {
        0 => (
            "pods",
            json!({ "metadata": { "name": name, "namespace": ns, "labels": { "app": "other" } },
                    "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }),
        ),
        1 => (
            "secrets",
            json!({ "metadata": { "name": name, "namespace": ns }, "stringData": { "k": payload } }),
        ),
        _ => (
            "configmaps",
            json!({ "metadata": { "name": name, "namespace": ns }, "data": { "k": payload } }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_child_resource_of_a_custom_group_is_served_by_an_installed_crd() {
        let served: HashSet<(String, String)> = crds()
            .iter()
            .map(|c| (c.spec.group.clone(), c.spec.names.plural.clone()))
            .collect();
        for name in ["zerfoo", "modelservice", "aim"] {
            let s = Scenario::named(name, 1).unwrap_or_else(|e| panic!("{e}"));
            for (group, plural) in &s.child_resources {
                let builtin = matches!(*group, "" | "apps" | "rbac.authorization.k8s.io");
                assert!(
                    builtin || served.contains(&((*group).to_owned(), (*plural).to_owned())),
                    "{name}: {group}/{plural} is no installed CRD, so its children are never counted"
                );
            }
        }
    }
}
