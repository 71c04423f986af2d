//! A template reads its model from the operator's model cache, which the model watch feeds,
//! while its reconciles are triggered by the template watch: the model cache can lag a
//! template created right after its model. The template must still find the model (a miss is
//! confirmed with the API server), since no model event wakes a template again.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::Duration;

use kinfer_testkit::Fault;
use serde_json::json;
use support::NS;
use support::world::{AIM, IMAGE, World, aim_object};

const TIMEOUT: Duration = Duration::from_secs(30);
/// How late the operator's model watches resume; the template must find its model well
/// before.
const LAG: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_finds_a_model_its_cache_has_not_caught_up_with() {
    let mut w = World::start().await;
    w.run_operator().await;
    w.wait_until("the catalog", TIMEOUT, World::catalog_ready)
        .await;
    let open = w.cluster.counters().count("watch", Some("aimmodels"));
    assert!(open > 0, "the operator watches AIMModels");
    // Every watch is cut; the model watches resume LAG late, the others at once.
    let fired = w.cluster.faults().fired();
    w.cluster
        .faults()
        .inject(Fault::latency("watch", "aimmodels", LAG));
    w.cluster.faults().cut_watches();
    w.wait_until("the model watches to resume", TIMEOUT, |w| {
        let held = w.cluster.faults().fired() - fired;
        (held >= open)
            .then_some(())
            .ok_or_else(|| format!("{held} of {open} model watches held"))
    })
    .await;
    w.create(&aim_object(
        "AIMModel",
        "late",
        Some(NS),
        json!({ "image": IMAGE }),
    ))
    .expect("model");
    w.create(&aim_object(
        "AIMServiceTemplate",
        "late-t",
        Some(NS),
        json!({ "modelName": "late" }),
    ))
    .expect("template");
    w.wait_until("the template's model", LAG / 2, |w| {
        let t = w
            .objects(AIM, "aimservicetemplates")
            .into_iter()
            .find(|t| t["metadata"]["name"] == "late-t")
            .ok_or("no template")?;
        let model = t["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "ModelReady")
            .cloned();
        match model {
            Some(c) if c["status"] == "True" && c["reason"] == "ModelResolved" => Ok(()),
            other => Err(format!("ModelReady: {other:?}")),
        }
    })
    .await;
}
