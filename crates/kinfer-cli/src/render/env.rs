//! The embedded cluster `kinfer render` works in.
//!
//! Contract: [`Env::start`] starts [`kinfer_testkit::TestCluster`] on a random loopback port with
//! the workload simulator on, installs every kinfer CRD ([`kinfer_api::crds::all`]), the CRDs
//! of the third-party kinds the operators create ([`kinfer_api::third_party::crds`] and the
//! Gateway API HTTPRoute from the `gateway-api` crate's types), and discovers what is served.
//! The client has kube's retry layer off, as the operators run it. Nothing touches a real
//! cluster; nothing is read from `../shared`.

use anyhow::{Context, Result};
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_testkit::TestCluster;
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::{Client, CustomResourceExt};

/// Every CRD render installs: kinfer's, then the third-party kinds the operators create.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = kinfer_api::crds::all();
    crds.extend(kinfer_api::third_party::crds());
    crds.push(HttpRoute::crd());
    crds
}

/// The cluster, a client for it and what it serves.
pub struct Env {
    /// The in-process API server with the simulator.
    pub cluster: TestCluster,
    /// A client (retries off).
    pub client: Client,
    /// Discovery after the CRDs were installed.
    pub discovery: Discovery,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// Starts the cluster; see the module contract.
    pub async fn start() -> Result<Self> {
        let cluster = TestCluster::start_simulated()
            .await
            .context("starting the embedded test cluster")?;
        cluster
            .install_crds(&crds())
            .context("installing the CRDs")?;
        let uri = cluster.url().parse().context("the test cluster's URL")?;
        let mut config = kube::Config::new(uri);
        "default".clone_into(&mut config.default_namespace);
        config.default_retry = false;
        let client = Client::try_from(config).context("building the client")?;
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .context("discovering the served kinds")?;
        Ok(Self {
            cluster,
            client,
            discovery,
        })
    }

    /// The served resource of `apiVersion`/`kind`, in any served version.
    pub fn resolve(&self, api_version: &str, kind: &str) -> Option<(ApiResource, bool)> {
        let gvk = kube::core::GroupVersionKind::gvk(
            super::validate::group_of(api_version),
            super::validate::version_of(api_version),
            kind,
        );
        self.discovery
            .resolve_gvk(&gvk)
            .map(|(ar, caps)| (ar, caps.scope == Scope::Namespaced))
    }

    /// Every listable resource in its preferred version.
    pub fn listable(&self) -> Vec<(ApiResource, ApiCapabilities)> {
        self.discovery
            .groups()
            .flat_map(kube::discovery::ApiGroup::resources_by_stability)
            .filter(|(_, caps)| caps.supports_operation(kube::discovery::verbs::LIST))
            .collect()
    }
}
