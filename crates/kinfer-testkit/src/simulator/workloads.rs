//! Per-kind simulated controllers. Each computes the status its real controller would reach
//! and writes it only when it differs (condition times are kept when a condition's status does
//! not change), so the simulator converges and then stays quiet.
//!
//! - Deployments: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas` = spec
//!   replicas (default 1), `observedGeneration`, conditions Available and Progressing.
//! - Jobs: one Pod `<job>-sim` (owned by the Job, labels `job-name`, `batch.kubernetes.io/job-name`)
//!   run to Succeeded or Failed ([`super::JobOutcome`]); Job conditions Complete/SuccessCriteriaMet
//!   or Failed/FailureTarget. Its log comes from the test's log hook.
//! - KServe InferenceServices: `url`, `address.url`, conditions Ready, PredictorReady,
//!   IngressReady, LatestDeploymentReady.
//! - HTTPRoutes: `status.parents[]` per parentRef with Accepted and ResolvedRefs.
//! - InferencePools: parent status from the HTTPRoutes whose backendRefs name the pool.
//! - PersistentVolumeClaims: phase Bound with the requested capacity.
//! - HorizontalPodAutoscalers: current and desired replicas = minReplicas (default 1).

use serde_json::{Value, json};

use super::JobOutcome;
use crate::commit::{Ctx, Fields, commit};
use crate::state::{State, name_of, namespace_of, now};
use crate::store::{Bucket, Event, EventType};

const MANAGER: &str = "kinfer-simulator";

/// React to one stored change.
pub fn on_event(state: &State, e: &Event) {
    if e.kind == EventType::Deleted {
        return;
    }
    reconcile(state, &e.bucket, &e.object);
}

/// Reconcile every existing object.
pub fn resync(state: &State) {
    let objects: Vec<(Bucket, Value)> = {
        let txn = state.store.txn();
        txn.buckets()
            .flat_map(|(b, m)| m.values().map(move |o| (b.clone(), Value::clone(o))))
            .collect()
    };
    for (b, o) in objects {
        reconcile(state, &b, &o);
    }
}

/// Reconcile one object now.
pub fn reconcile(state: &State, bucket: &Bucket, obj: &Value) {
    let (ns, name) = (namespace_of(obj), name_of(obj));
    if obj["metadata"].get("deletionTimestamp").is_some()
        || state.simulator.is_held(&bucket.1, ns, name)
    {
        return;
    }
    let status = match (bucket.0.as_str(), bucket.1.as_str()) {
        ("apps", "deployments") => Some(deployment(obj)),
        ("batch", "jobs") => job(state, obj),
        ("serving.kserve.io", "inferenceservices") => Some(inference_service(obj)),
        ("gateway.networking.k8s.io", "httproutes") => Some(httproute(obj)),
        (g, "inferencepools") if g.starts_with("inference.networking") => {
            Some(inference_pool(state, g, obj))
        }
        ("", "persistentvolumeclaims") => Some(pvc(obj)),
        ("autoscaling", "horizontalpodautoscalers") => Some(hpa(obj)),
        _ => None,
    };
    if let Some(s) = status {
        write_status(state, bucket, obj, s);
    }
    // A route change can change the parents of pools.
    if bucket.1 == "httproutes" {
        let pools: Vec<(Bucket, Value)> = {
            let txn = state.store.txn();
            txn.buckets()
                .filter(|(b, _)| b.1 == "inferencepools")
                .flat_map(|(b, m)| {
                    m.values()
                        .filter(|p| namespace_of(p) == ns)
                        .map(move |p| (b.clone(), Value::clone(p)))
                })
                .collect()
        };
        for (b, p) in pools {
            reconcile(state, &b, &p);
        }
    }
}

fn condition(t: &str, status: bool, reason: &str, generation: &Value) -> Value {
    json!({ "type": t, "status": if status { "True" } else { "False" }, "reason": reason,
            "message": "", "lastTransitionTime": now(), "observedGeneration": generation })
}

/// Keep `lastTransitionTime` of conditions whose status did not change, recursively.
fn keep_times(new: &mut Value, old: &Value) {
    match new {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if k == "conditions"
                    && let (Some(list), Some(prev)) = (v.as_array_mut(), old[k].as_array())
                {
                    for c in list {
                        if let Some(p) = prev
                            .iter()
                            .find(|p| p["type"] == c["type"] && p["status"] == c["status"])
                        {
                            c["lastTransitionTime"] = p["lastTransitionTime"].clone();
                        }
                    }
                } else {
                    keep_times(v, &old[k]);
                }
            }
        }
        Value::Array(items) => {
            for (i, it) in items.iter_mut().enumerate() {
                keep_times(it, &old[i]);
            }
        }
        _ => {}
    }
}

fn write_status(state: &State, bucket: &Bucket, obj: &Value, mut status: Value) {
    let Some(def) = state.def_for_bucket(bucket) else {
        return;
    };
    let mut txn = state.store.txn();
    let k = (namespace_of(obj).to_owned(), name_of(obj).to_owned());
    let Some(old) = txn.get(bucket, &k).cloned() else {
        return;
    };
    let mut merged = old["status"].clone();
    if !merged.is_object() {
        merged = json!({});
    }
    crate::patch::merge::merge_patch(&mut merged, &status);
    status = merged;
    keep_times(&mut status, &old["status"]);
    if status == old["status"] {
        return;
    }
    let mut new = old.clone();
    new["status"] = status;
    let sub = if def.status_subresource {
        Some("status")
    } else {
        None
    };
    if let Err(e) = commit(
        &mut txn,
        &Ctx {
            state,
            def: &def,
            sub,
            dry_run: false,
        },
        Some(&old),
        new,
        Fields::Update(MANAGER.to_owned()),
    ) {
        tracing::warn!(error = %e, kind = %def.kind, "simulator status write failed");
    }
}

fn deployment(d: &Value) -> Value {
    let r = d["spec"]["replicas"].as_i64().unwrap_or(1);
    let g = &d["metadata"]["generation"];
    json!({
        "observedGeneration": g, "replicas": r, "updatedReplicas": r, "readyReplicas": r, "availableReplicas": r,
        "conditions": [
            condition("Available", true, "MinimumReplicasAvailable", g),
            condition("Progressing", true, "NewReplicaSetAvailable", g),
        ],
    })
}

fn job(state: &State, j: &Value) -> Option<Value> {
    // A suspended Job runs no pod and stays without conditions until resumed.
    if j["spec"]["suspend"] == true {
        return None;
    }
    let (ns, name) = (namespace_of(j), name_of(j));
    let outcome = state.simulator.outcome_for(name);
    let pod_name = format!("{name}-sim");
    let pods: Bucket = (String::new(), "pods".to_owned());
    let exists = state
        .store
        .txn()
        .get(&pods, &(ns.to_owned(), pod_name.clone()))
        .is_some();
    if !exists {
        let def = state.def_for_bucket(&pods)?;
        let template = &j["spec"]["template"];
        let mut labels = template["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels["job-name"] = json!(name);
        labels["batch.kubernetes.io/job-name"] = json!(name);
        let pod = json!({
            "metadata": { "name": pod_name, "namespace": ns, "labels": labels, "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": j["metadata"]["uid"],
                "controller": true, "blockOwnerDeletion": true }] },
            "spec": template["spec"],
        });
        let opts = crate::write::WriteOpts {
            field_manager: Some(MANAGER.to_owned()),
            ..Default::default()
        };
        if let Err(e) = crate::write::create(state, &def, ns, pod, &opts) {
            tracing::warn!(error = %e, "simulated job pod");
        }
    }
    let phase = if outcome == JobOutcome::Succeed {
        "Succeeded"
    } else {
        "Failed"
    };
    let pod = state
        .store
        .txn()
        .get(&pods, &(ns.to_owned(), pod_name.clone()))
        .cloned()?;
    write_status(
        state,
        &pods,
        &pod,
        json!({ "phase": phase, "containerStatuses": [] }),
    );
    let g = &j["metadata"]["generation"];
    let start = j["status"]["startTime"]
        .as_str()
        .map_or_else(now, str::to_owned);
    Some(match outcome {
        JobOutcome::Succeed => json!({
            "startTime": start, "completionTime": j["status"]["completionTime"].as_str().map_or_else(now, str::to_owned),
            "succeeded": 1, "active": 0, "ready": 0,
            "conditions": [condition("SuccessCriteriaMet", true, "CompletionsReached", g), condition("Complete", true, "CompletionsReached", g)],
        }),
        JobOutcome::Fail => json!({
            "startTime": start, "failed": 1, "active": 0, "ready": 0,
            "conditions": [condition("FailureTarget", true, "BackoffLimitExceeded", g), condition("Failed", true, "BackoffLimitExceeded", g)],
        }),
    })
}

fn inference_service(s: &Value) -> Value {
    let url = format!("http://{}.{}.example.com", name_of(s), namespace_of(s));
    let g = &s["metadata"]["generation"];
    json!({
        "url": url,
        "address": { "url": format!("http://{}-predictor.{}.svc.cluster.local", name_of(s), namespace_of(s)) },
        "observedGeneration": g,
        "conditions": [
            condition("IngressReady", true, "Ready", g),
            condition("LatestDeploymentReady", true, "Ready", g),
            condition("PredictorReady", true, "Ready", g),
            condition("Ready", true, "Ready", g),
        ],
    })
}

fn parent_status(parent_ref: &Value, g: &Value, controller: &str) -> Value {
    json!({
        "parentRef": parent_ref,
        "controllerName": controller,
        "conditions": [condition("Accepted", true, "Accepted", g), condition("ResolvedRefs", true, "ResolvedRefs", g)],
    })
}

fn httproute(r: &Value) -> Value {
    let g = &r["metadata"]["generation"];
    let parents: Vec<Value> = r["spec"]["parentRefs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| parent_status(p, g, "kinfer.dev/simulated-gateway"))
        .collect();
    json!({ "parents": parents })
}

fn inference_pool(state: &State, group: &str, p: &Value) -> Value {
    let (ns, name) = (namespace_of(p), name_of(p));
    let g = &p["metadata"]["generation"];
    let mut parents = Vec::new();
    let txn = state.store.txn();
    for (_, routes) in txn.buckets().filter(|(b, _)| b.1 == "httproutes") {
        for r in routes.values().filter(|r| namespace_of(r) == ns) {
            let refs_pool = r["spec"]["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|rule| {
                    rule["backendRefs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|br| br["kind"] == "InferencePool" && br["name"] == name)
                });
            if refs_pool {
                for pr in r["spec"]["parentRefs"].as_array().into_iter().flatten() {
                    if !pr.is_object() {
                        continue;
                    }
                    let mut pr = pr.clone();
                    if pr["kind"].is_null() {
                        pr["kind"] = json!("Gateway");
                    }
                    if pr["group"].is_null() {
                        pr["group"] = json!("gateway.networking.k8s.io");
                    }
                    if !parents.iter().any(|x: &Value| x["parentRef"] == pr) {
                        let mut st = parent_status(&pr, g, "kinfer.dev/simulated-gateway");
                        if let Some(m) = st.as_object_mut() {
                            m.remove("controllerName");
                        }
                        parents.push(st);
                    }
                }
            }
        }
    }
    let field = if group.ends_with("x-k8s.io") {
        "parent"
    } else {
        "parents"
    };
    json!({ field: parents })
}

fn pvc(c: &Value) -> Value {
    json!({
        "phase": "Bound",
        "accessModes": c["spec"]["accessModes"],
        "capacity": { "storage": c["spec"]["resources"]["requests"]["storage"] },
    })
}

fn hpa(h: &Value) -> Value {
    let r = h["spec"]["minReplicas"].as_i64().unwrap_or(1);
    json!({ "currentReplicas": r, "desiredReplicas": r })
}
