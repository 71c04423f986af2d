//! The three operators, run in-process against the render cluster.
//!
//! Contract: [`Operators::start`] starts each operator's controllers through its library entry
//! point with its default settings (the same defaults as its binary's flags), on the render
//! client, with no metrics server, no leader election and all namespaces watched:
//! - Zerfoo: `zerfoo_operator::controller::{engine, run}` (HTTPRoutes served);
//! - ModelService: `modelservice_operator::controller::run` with the optional CRDs followed by
//!   [`kinfer_operator::CrdWatch`] (render installs all of them before the operators start);
//! - AIM: `aim_operator::controllers::Operator::{start, run}` with the system namespace
//!   `aim-system`.
//!
//! [`reconciled`] says which kinds have a controller here (kinfer's CRDs but
//! [`NOT_YET_RECONCILED`]): an input of any other kinfer kind is
//! applied and printed but nothing reconciles it, and render says so. [`Operators::stop`]
//! asks every controller to finish its in-flight reconciles and stop.

use std::sync::{Arc, LazyLock};

use anyhow::{Context, Result};
use kinfer_state::metrics::Metrics;
use kube::Client;
use kube::discovery::ApiResource;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The namespace the AIM operator runs discovery Jobs of cluster templates in.
pub const AIM_SYSTEM_NAMESPACE: &str = aim_operator::context::DEFAULT_SYSTEM_NAMESPACE;

/// kinfer kinds that no operator in this build reconciles yet. The one list to edit when a
/// kind is added before its controller: every other kind of [`kinfer_api::crds::all`] has a
/// controller here (today all of them do).
pub const NOT_YET_RECONCILED: &[(&str, &str)] = &[];

/// `(group, kind)` of every CRD kinfer defines.
static KINFER_KINDS: LazyLock<Vec<(String, String)>> = LazyLock::new(|| {
    kinfer_api::crds::all()
        .into_iter()
        .map(|crd| (crd.spec.group, crd.spec.names.kind))
        .collect()
});

/// Whether an operator reconciles `group`/`kind` under render: one of kinfer's kinds, not in
/// [`NOT_YET_RECONCILED`].
pub fn reconciled(group: &str, kind: &str) -> bool {
    !not_yet_reconciled(group, kind) && KINFER_KINDS.iter().any(|(g, k)| g == group && k == kind)
}

/// The resource (served version) of every kind an operator reconciles under render.
pub fn reconciled_resources() -> Vec<ApiResource> {
    kinfer_api::crds::all()
        .iter()
        .filter(|crd| reconciled(&crd.spec.group, &crd.spec.names.kind))
        .filter_map(|crd| {
            let version = crd.spec.versions.iter().find(|v| v.served)?;
            Some(ApiResource {
                group: crd.spec.group.clone(),
                version: version.name.clone(),
                api_version: format!("{}/{}", crd.spec.group, version.name),
                kind: crd.spec.names.kind.clone(),
                plural: crd.spec.names.plural.clone(),
            })
        })
        .collect()
}

/// Whether `group`/`kind` is one of kinfer's kinds without a controller in this build.
pub fn not_yet_reconciled(group: &str, kind: &str) -> bool {
    NOT_YET_RECONCILED
        .iter()
        .any(|(g, k)| *g == group && *k == kind)
}

/// The AIM operator's settings under render: the binary's defaults with an offline inspector,
/// so no image inspection or repository listing ever leaves the process (models must carry
/// `spec.imageMetadata`; the others report `RegistryOffline`).
pub fn aim_settings() -> aim_operator::Settings {
    aim_operator::Settings {
        inspector: kinfer_oci::InspectorConfig {
            offline: true,
            ..kinfer_oci::InspectorConfig::default()
        },
        ..aim_operator::Settings::default()
    }
}

/// The running controllers.
#[derive(Debug)]
pub struct Operators {
    stop: watch::Sender<bool>,
    // The ModelService operator's optional-CRD watch (stops with `stop`).
    optional: kinfer_operator::CrdWatch,
    tasks: Vec<JoinHandle<()>>,
}

impl Operators {
    /// Starts every operator; see the module contract.
    pub async fn start(client: &Client) -> Result<Self> {
        aim_operator::controllers::install_crypto_provider();
        let (stop, stop_rx) = watch::channel(false);
        let mut tasks = Vec::new();

        // Zerfoo.
        zerfoo_operator::controller::check_crd(client)
            .await
            .context("zerfoo-operator start-up check")?;
        let routes = zerfoo_operator::controller::routes_served(client)
            .await
            .context("zerfoo-operator route check")?;
        let pipeline =
            zerfoo_operator::ZerfooPipeline::new(zerfoo_operator::OperatorConfig::default())
                .with_routes(routes);
        let engine = zerfoo_operator::controller::engine(client.clone(), pipeline, Metrics::new());
        let options = zerfoo_operator::controller::ControllerOptions {
            routes,
            ..Default::default()
        };
        tasks.push(tokio::spawn(zerfoo_operator::controller::run(
            Arc::clone(&engine),
            client.clone(),
            options,
            stop_rx.clone(),
        )));

        // ModelService.
        let optional = kinfer_operator::CrdWatch::start(
            client,
            &modelservice_operator::optional_crds::NAMES,
            stop_rx.clone(),
        )
        .await
        .context("modelservice-operator optional CRD detection")?;
        let pipeline = modelservice_operator::ModelServicePipeline::new(
            modelservice_operator::OperatorConfig::default(),
            modelservice_operator::OptionalCrds::from_installed(&optional.current()),
        );
        tasks.push(tokio::spawn(modelservice_operator::controller::run(
            client.clone(),
            pipeline,
            Metrics::new(),
            kinfer_operator::ControllerOptions::default(),
            optional.subscribe(),
            stop_rx.clone(),
        )));

        // AIM.
        aim_operator::startup::check(client)
            .await
            .context("aim-operator start-up check")?;
        let operator = aim_operator::controllers::Operator::start(
            client.clone(),
            aim_settings(),
            Metrics::new(),
        )
        .context("aim-operator start")?;
        tasks.push(tokio::spawn(operator.run(stop_rx)));

        Ok(Self {
            stop,
            optional,
            tasks,
        })
    }

    /// Stops the controllers (in-flight reconciles finish first).
    pub async fn stop(self) {
        self.stop.send_replace(true);
        for task in self.tasks {
            let _ = task.await;
        }
        self.optional.stopped().await;
    }
}
