//! The three operators, run in-process against the render cluster.
//!
//! Contract: [`Operators::start`] starts each operator's controllers through its library entry
//! point with its default settings (the same defaults as its binary's flags), on the render
//! client, with no metrics server, no leader election and all namespaces watched:
//! - Zerfoo: `zerfoo_operator::controller::{engine, run}` (HTTPRoutes served);
//! - ModelService: `modelservice_operator::controller::{context, run}` with the optional CRDs
//!   detected once (render installs all of them before the operators start);
//! - AIM: `aim_operator::controllers::Operator::{start, run}` with the system namespace
//!   `aim-system`.
//!
//! [`reconciled`] says which kinds have a controller here: an input of any other kinfer kind is
//! applied and printed but nothing reconciles it, and render says so. [`Operators::stop`]
//! asks every controller to finish its in-flight reconciles and stop.

use std::sync::Arc;

use anyhow::{Context, Result};
use kinfer_state::metrics::Metrics;
use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The namespace the AIM operator runs discovery Jobs of cluster templates in.
pub const AIM_SYSTEM_NAMESPACE: &str = aim_operator::context::DEFAULT_SYSTEM_NAMESPACE;

/// Kinds an operator reconciles under render: `(group, kind)`.
pub const RECONCILED: &[(&str, &str)] = &[
    ("zerfoo.feza.ai", "ZerfooInferenceService"),
    ("model.otterscale.io", "ModelService"),
    ("aim.eai.amd.com", "AIMModel"),
    ("aim.eai.amd.com", "AIMClusterModel"),
    ("aim.eai.amd.com", "AIMServiceTemplate"),
    ("aim.eai.amd.com", "AIMClusterServiceTemplate"),
    ("aim.eai.amd.com", "AIMRuntimeConfig"),
    ("aim.eai.amd.com", "AIMClusterRuntimeConfig"),
    ("aim.eai.amd.com", "AIMClusterModelSource"),
    ("aim.eai.amd.com", "AIMService"),
];

/// kinfer kinds that no operator in this build reconciles yet (AIM part 2).
pub const NOT_YET_RECONCILED: &[(&str, &str)] = &[
    ("aim.eai.amd.com", "AIMTemplateCache"),
    ("aim.eai.amd.com", "AIMArtifact"),
];

/// Whether an operator reconciles `group`/`kind` under render.
pub fn reconciled(group: &str, kind: &str) -> bool {
    RECONCILED.iter().any(|(g, k)| *g == group && *k == kind)
}

/// Whether `group`/`kind` is one of kinfer's kinds without a controller in this build.
pub fn not_yet_reconciled(group: &str, kind: &str) -> bool {
    NOT_YET_RECONCILED
        .iter()
        .any(|(g, k)| *g == group && *k == kind)
}

/// The running controllers.
#[derive(Debug)]
pub struct Operators {
    stop: watch::Sender<bool>,
    // Kept so the ModelService controllers never see the optional-CRD channel close.
    _crds: watch::Sender<modelservice_operator::OptionalCrds>,
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
        let detected = modelservice_operator::optional_crds::detect(client)
            .await
            .context("modelservice-operator optional CRD detection")?;
        let (crds, crds_rx) = watch::channel(detected);
        let pipeline = modelservice_operator::ModelServicePipeline::new(
            modelservice_operator::OperatorConfig::default(),
            detected,
        );
        tasks.push(tokio::spawn(modelservice_operator::controller::run(
            client.clone(),
            pipeline,
            Metrics::new(),
            modelservice_operator::controller::ControllerOptions::default(),
            crds_rx,
            stop_rx.clone(),
        )));

        // AIM.
        aim_operator::startup::check(client)
            .await
            .context("aim-operator start-up check")?;
        let operator = aim_operator::controllers::Operator::start(
            client.clone(),
            aim_operator::Settings::default(),
            Metrics::new(),
        )
        .context("aim-operator start")?;
        tasks.push(tokio::spawn(operator.run(stop_rx)));

        Ok(Self {
            stop,
            _crds: crds,
            tasks,
        })
    }

    /// Stops the controllers (in-flight reconciles finish first).
    pub async fn stop(self) {
        self.stop.send_replace(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}
