//! The resource registry: which kinds are served, under which group/version/plural, their scope,
//! whether they have a status subresource, and (for CRDs) their OpenAPI schema.
//!
//! Built-in kinds come from a fixed table; every `CustomResourceDefinition` stored through the API
//! adds one [`ResourceDef`] per served version. Objects of all versions of one resource share one
//! storage bucket (conversion strategy `None`: only `apiVersion` is rewritten).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// One served resource (group, version, plural).
#[derive(Debug, Clone)]
pub struct ResourceDef {
    /// API group, empty for core.
    pub group: String,
    /// Version such as `v1`.
    pub version: String,
    /// Kind such as `Deployment`.
    pub kind: String,
    /// Plural resource name such as `deployments`.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Namespaced or cluster scoped.
    pub namespaced: bool,
    /// Whether `/status` is a subresource (the main endpoint then ignores status).
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Short names for discovery.
    pub short_names: Vec<String>,
    /// The CRD's `openAPIV3Schema`, when this is a custom resource.
    pub schema: Option<Arc<Value>>,
    /// Whether this is a custom resource (strategic merge patch is then refused).
    pub custom: bool,
    /// Extra subresources: `log` for pods, `scale` for scalable workloads ([`crate::scale`]).
    pub extra_subresources: Vec<String>,
}

impl ResourceDef {
    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage bucket key shared by all versions.
    pub fn bucket(&self) -> (String, String) {
        (self.group.clone(), self.plural.clone())
    }
}

/// Built-in kinds: (group, version, kind, plural, namespaced, status, generation, short names).
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
    bool,
    &'static [&'static str],
);

const BUILTINS: &[Builtin] = &[
    (
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        true,
        false,
        &["ns"],
    ),
    ("", "v1", "Node", "nodes", false, true, false, &["no"]),
    ("", "v1", "Pod", "pods", true, true, true, &["po"]),
    ("", "v1", "Service", "services", true, true, false, &["svc"]),
    (
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        false,
        false,
        &["sa"],
    ),
    ("", "v1", "Secret", "secrets", true, false, false, &[]),
    (
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        false,
        false,
        &["cm"],
    ),
    ("", "v1", "Event", "events", true, false, false, &["ev"]),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
        false,
        &["pvc"],
    ),
    (
        "",
        "v1",
        "Endpoints",
        "endpoints",
        true,
        false,
        false,
        &["ep"],
    ),
    (
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        true,
        true,
        &["deploy"],
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        true,
        true,
        &["rs"],
    ),
    (
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        true,
        true,
        &["sts"],
    ),
    ("batch", "v1", "Job", "jobs", true, true, true, &[]),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
        false,
        &["hpa"],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        false,
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        false,
        false,
        &[],
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        false,
        false,
        &[],
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        false,
        false,
        &["ev"],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
        true,
        &["crd", "crds"],
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        true,
        true,
        &["pdb"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        false,
        true,
        &["netpol"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
        false,
        true,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
        false,
        true,
        &[],
    ),
    // Stored, not enforced: admission policies are judged on the real control plane.
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
        true,
        true,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
        false,
        true,
        &[],
    ),
];

/// All served resources, keyed by (group, version, plural).
#[derive(Debug, Clone)]
pub struct Registry {
    defs: BTreeMap<(String, String, String), ResourceDef>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut defs = BTreeMap::new();
        for &(group, version, kind, plural, namespaced, status, generation, short) in BUILTINS {
            let def = ResourceDef {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: kind.to_owned(),
                plural: plural.to_owned(),
                singular: kind.to_lowercase(),
                namespaced,
                status_subresource: status,
                generation,
                short_names: short.iter().map(|s| (*s).to_owned()).collect(),
                schema: None,
                custom: false,
                extra_subresources: match plural {
                    "pods" => vec!["log".to_owned()],
                    "deployments" | "replicasets" | "statefulsets" => {
                        vec![crate::scale::SCALE.to_owned()]
                    }
                    _ => Vec::new(),
                },
            };
            defs.insert(
                (group.to_owned(), version.to_owned(), plural.to_owned()),
                def,
            );
        }
        Self { defs }
    }
}

impl Registry {
    /// The resource served at group/version/plural.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceDef> {
        self.defs
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
    }

    /// The resource for an `apiVersion` and `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceDef> {
        let (group, version) = split_api_version(api_version);
        self.defs
            .values()
            .find(|d| d.group == group && d.version == version && d.kind == kind)
    }

    /// Every served resource.
    pub fn all(&self) -> impl Iterator<Item = &ResourceDef> {
        self.defs.values()
    }

    /// Groups with their versions, in registration order of versions (sorted).
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in self.defs.values() {
            let v = out.entry(d.group.clone()).or_default();
            if !v.contains(&d.version) {
                v.push(d.version.clone());
            }
        }
        out
    }

    /// Add (or replace) the resources of one CRD object; returns whether anything changed.
    pub fn install_crd(&mut self, crd: &Value) {
        self.remove_crd(crd);
        let spec = &crd["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_owned();
        let names = &spec["names"];
        let plural = names["plural"].as_str().unwrap_or_default().to_owned();
        let kind = names["kind"].as_str().unwrap_or_default().to_owned();
        let singular = names["singular"]
            .as_str()
            .map_or_else(|| kind.to_lowercase(), str::to_owned);
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        let short_names: Vec<String> = names["shortNames"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"].as_bool() == Some(false) {
                continue;
            }
            let version = v["name"].as_str().unwrap_or_default().to_owned();
            let schema = v["schema"]["openAPIV3Schema"].clone();
            let def = ResourceDef {
                group: group.clone(),
                version: version.clone(),
                kind: kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                namespaced,
                status_subresource: v["subresources"]["status"].is_object(),
                generation: true,
                short_names: short_names.clone(),
                schema: if schema.is_object() {
                    Some(Arc::new(schema))
                } else {
                    None
                },
                custom: true,
                extra_subresources: Vec::new(),
            };
            self.defs
                .insert((group.clone(), version, plural.clone()), def);
        }
    }

    /// Stop serving the resources of one CRD object.
    pub fn remove_crd(&mut self, crd: &Value) {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        self.defs
            .retain(|(g, _, p), d| !(d.custom && g == group && p == plural));
    }
}

/// `apps/v1` -> (`apps`, `v1`); `v1` -> (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}
