//! kinfer's CRDs, manifests, built objects and install on the real control plane
//! (`kinfer_testkit::control_plane`: etcd, kube-apiserver and kube-controller-manager from the
//! pins in `tools/k8s`): what only a real API server can judge (structural schemas, CEL rules
//! and their cost, defaulting, built-in kinds' validation, admission).
//!
//! One control plane for the whole binary. kinfer's CRDs and the third-party CRDs of
//! `../shared/upstream-crds/` are installed once, server-side, before any test uses them;
//! each test works in namespaces of its own.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod built;
mod fence;
mod install;
mod manifests;
mod metrics;
mod quota;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use kinfer_testkit::ControlPlane;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared reference data (`../shared`); CI always has it.
pub fn shared() -> PathBuf {
    kinfer_crdcheck::shared_dir().expect("../shared (set KINFER_SHARED_DIR)")
}

/// The control plane of this binary, with every CRD installed and Established.
pub fn plane() -> &'static ControlPlane {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let plane = ControlPlane::shared().expect("the real control plane");
    READY
        .get_or_init(|| install_crds(plane))
        .as_ref()
        .expect("installing the CRDs");
    plane
}

/// Runs the pinned kubectl against the control plane.
pub fn kubectl(plane: &ControlPlane, args: &[&str]) -> Output {
    plane
        .kubectl()
        .unwrap()
        .args(args)
        .output()
        .expect("kubectl runs")
}

fn kubectl_ok(plane: &ControlPlane, args: &[&str]) -> Result<String, String> {
    let out = kubectl(plane, args);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "kubectl {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn install_crds(plane: &ControlPlane) -> Result<(), String> {
    let crds = root().join("deploy/crds");
    kubectl_ok(
        plane,
        &["apply", "--server-side", "-k", crds.to_str().unwrap()],
    )?;
    let upstream = shared().join("upstream-crds");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&upstream)
        .map_err(|e| format!("{}: {e}", upstream.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        kubectl_ok(
            plane,
            &["apply", "--server-side", "-f", dir.to_str().unwrap()],
        )?;
    }
    kubectl_ok(
        plane,
        &[
            "wait",
            "--for=condition=Established",
            "--all",
            "customresourcedefinitions",
            "--timeout=120s",
        ],
    )?;
    Ok(())
}

/// An admin client and a fresh discovery (after the CRDs were installed).
pub async fn client() -> (kube::Client, Discovery) {
    let plane = tokio::task::spawn_blocking(plane).await.unwrap();
    let client = plane.client().await.unwrap();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    (client, discovery)
}

/// A client of the control plane acting as `user` (a ServiceAccount's user name).
pub async fn client_as(kubeconfig: &Path, user: &str) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.auth_info.impersonate = Some(user.to_owned());
    kube::Client::try_from(config).unwrap()
}

/// Creates `object` unless an object of its name exists (tests share one control plane and
/// may run again); any other failure panics naming `what`.
pub async fn create_unless_exists<K>(api: &Api<K>, object: &K, what: &str)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Creates the namespace unless it exists.
pub async fn ensure_namespace(client: &kube::Client, name: &str) {
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let body = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    create_unless_exists(&nss, &body, &format!("namespace {name}")).await;
}

/// The API of `object`'s kind, in its namespace (or `namespace` when it names none).
pub fn api_for(
    client: &kube::Client,
    discovery: &Discovery,
    object: &Value,
    namespace: &str,
) -> Api<DynamicObject> {
    let (group, version) = split_api_version(object["apiVersion"].as_str().unwrap_or_default());
    let kind = object["kind"].as_str().unwrap_or_default();
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = discovery
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("the server does not serve {gvk:?}"));
    if caps.scope == Scope::Namespaced {
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(namespace);
        Api::namespaced_with(client.clone(), ns, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    }
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// Server-side apply of `object` (a dry run unless `persist`), its namespace created first.
pub async fn apply(
    client: &kube::Client,
    discovery: &Discovery,
    object: &Value,
    namespace: &str,
    persist: bool,
) -> Result<DynamicObject, kube::Error> {
    let ns = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or(namespace);
    ensure_namespace(client, ns).await;
    let api = api_for(client, discovery, object, namespace);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let mut params = PatchParams::apply("kinfer-test").force();
    if !persist {
        params = params.dry_run();
    }
    api.patch(name, &params, &Patch::Apply(object)).await
}

/// The YAML documents of every `.yaml` file under `dir` (recursively, sorted; not
/// `kustomization.yaml`), each with the file it came from.
pub fn documents_under(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut files = Vec::new();
    collect_yaml(dir, &mut files);
    files.sort();
    files
        .into_iter()
        .flat_map(|f| {
            kinfer_crdcheck::load_yaml_documents(&f)
                .into_iter()
                .map(move |d| (f.clone(), d))
        })
        .collect()
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect_yaml(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            && path.file_name().is_some_and(|n| n != "kustomization.yaml")
        {
            out.push(path);
        }
    }
}
