//! Serving pods: per-role engine overrides over the shared engine, every pull secret available
//! to the ModelPack unpack, bounded scratch volumes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, container, minimal, pod_spec};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Volume};
use modelservice_operator::config::DEFAULT_MODEL_SIZE_LIMIT;
use serde_json::json;

fn env(c: &Container, name: &str) -> Option<String> {
    c.env
        .iter()
        .flatten()
        .filter(|v| v.name == name)
        .map(|v| v.value.clone().unwrap_or_default())
        .next_back()
}

fn volumes(d: &Deployment) -> Vec<Volume> {
    pod_spec(d).volumes.clone().unwrap()
}

#[tokio::test]
async fn role_engine_args_and_env_override_the_shared_ones_per_role() {
    let h = Harness::start().await;
    let mut ms = minimal("roles", "default");
    ms["spec"]["engine"] = json!({
        "args": ["--max-model-len=4096"],
        "env": [{"name": "SHARED", "value": "s"}, {"name": "LEVEL", "value": "shared"}]
    });
    ms["spec"]["routingProxy"] = json!({});
    ms["spec"]["decode"]["engine"] = json!({
        "args": ["--max-model-len=8192", "--enforce-eager"],
        "env": [{"name": "LEVEL", "value": "decode"}]
    });
    ms["spec"]["prefill"] = json!({
        "replicas": 1,
        "engine": {"env": [{"name": "ONLY_PREFILL", "value": "p"}]}
    });
    h.create(&ms).await;
    h.wait_ready("default", "roles").await;

    let decode: Deployment = h.get("default", "roles-decode").await.unwrap();
    let vllm = container(&decode, "vllm");
    let args = vllm.args.clone().unwrap();
    // Generated args first, then the shared ones, then the role's: vLLM keeps the last value.
    let tail: Vec<&str> = args[args.len() - 3..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "--max-model-len=4096",
            "--max-model-len=8192",
            "--enforce-eager"
        ]
    );
    assert_eq!(env(&vllm, "LEVEL").as_deref(), Some("decode"));
    assert_eq!(
        vllm.env
            .iter()
            .flatten()
            .filter(|v| v.name == "LEVEL")
            .count(),
        1,
        "merged by name, not repeated"
    );
    assert_eq!(env(&vllm, "SHARED").as_deref(), Some("s"));
    assert_eq!(env(&vllm, "ONLY_PREFILL"), None);

    let prefill: Deployment = h.get("default", "roles-prefill").await.unwrap();
    let vllm = container(&prefill, "vllm");
    let args = vllm.args.clone().unwrap();
    assert_eq!(
        args.last().map(String::as_str),
        Some("--max-model-len=4096")
    );
    assert!(!args.contains(&"--enforce-eager".to_owned()));
    assert_eq!(env(&vllm, "LEVEL").as_deref(), Some("shared"));
    assert_eq!(env(&vllm, "ONLY_PREFILL").as_deref(), Some("p"));
}

#[tokio::test]
async fn an_invalid_role_env_fails_with_its_field_path() {
    let h = Harness::start().await;
    let mut ms = minimal("badenv", "default");
    // Both a value and a source: the API server would reject the Deployment.
    ms["spec"]["decode"]["engine"] = json!({"env": [{
        "name": "X", "value": "v",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}
    }]});
    h.create(&ms).await;
    let ms = h
        .wait_ms("default", "badenv", "SpecValid False", |ms| {
            common::has(ms, "SpecValid", "False")
        })
        .await;
    let c = common::condition(&ms, "SpecValid").unwrap();
    assert!(
        c.message.contains("spec.decode.engine.env[0].valueFrom"),
        "{}",
        c.message
    );
    assert!(
        h.get::<Deployment>("default", "badenv-decode")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn every_pull_secret_is_mounted_for_the_unpack_and_scratch_volumes_are_bounded() {
    let h = Harness::start().await;
    let mut ms = minimal("secrets", "default");
    ms["spec"]["model"]["imagePullSecrets"] = json!([{"name": "mirror"}, {"name": "origin"}]);
    h.create(&ms).await;
    h.wait_ready("default", "secrets").await;
    let decode: Deployment = h.get("default", "secrets-decode").await.unwrap();

    let pod = pod_spec(&decode);
    let pulled: Vec<&str> = pod
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(pulled, ["mirror", "origin"]);

    let volumes = volumes(&decode);
    let docker = volumes.iter().find(|v| v.name == "docker-config").unwrap();
    let sources = docker.projected.as_ref().unwrap().sources.clone().unwrap();
    let mounted: Vec<(String, String)> = sources
        .iter()
        .map(|s| {
            let secret = s.secret.as_ref().unwrap();
            let item = &secret.items.as_ref().unwrap()[0];
            assert_eq!(item.key, ".dockerconfigjson");
            (secret.name.clone(), item.path.clone())
        })
        .collect();
    assert_eq!(
        mounted,
        [
            ("mirror".to_owned(), "0/config.json".to_owned()),
            ("origin".to_owned(), "1/config.json".to_owned())
        ]
    );
    let unpack = container(&decode, "model-unpack");
    assert!(
        unpack
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == "docker-config"
                && m.mount_path == "/.docker"
                && m.read_only == Some(true))
    );
    let script = &unpack.command.as_ref().unwrap()[2];
    assert!(
        script.contains("for config in /.docker/0 /.docker/1;"),
        "each secret is tried in order: {script}"
    );
    assert!(
        script.contains("DOCKER_CONFIG=\"$config\" kit unpack"),
        "{script}"
    );
    assert!(!script.contains("--plain-http"), "{script}");

    for name in ["model", "model-tmp"] {
        let v = volumes.iter().find(|v| v.name == name).unwrap();
        assert_eq!(
            v.empty_dir
                .as_ref()
                .unwrap()
                .size_limit
                .as_ref()
                .map(|q| q.0.as_str()),
            Some(DEFAULT_MODEL_SIZE_LIMIT),
            "{name} is bounded by default"
        );
    }
}
