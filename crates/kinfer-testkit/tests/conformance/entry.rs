use std::path::PathBuf;

use k8s_openapi::api::core::v1::Namespace;
use kinfer_testkit::{RunOptions, TestCluster, client_from_kubeconfig, serve_until, test_client};
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use crate::common::{TIMEOUT, widget_crd};

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kinfer-testkit-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test]
async fn test_client_defaults_to_the_in_process_cluster() {
    if std::env::var_os("KINFER_TEST_KUBECONFIG").is_some() {
        return;
    }
    let env = test_client().await.unwrap();
    assert!(env.cluster().is_some());
    let nss: Api<Namespace> = Api::all(env.client());
    assert!(nss.get("default").await.is_ok());
}

#[tokio::test]
async fn kubeconfig_gives_a_working_client() {
    if crate::common::skip_external("tests the in-process cluster's kubeconfig") {
        return;
    }
    let c = TestCluster::start().await.unwrap();
    let dir = temp_dir("kubeconfig");
    let path = dir.join("config");
    std::fs::write(&path, c.kubeconfig_yaml()).unwrap();
    let client = client_from_kubeconfig(&path).await.unwrap();
    assert_eq!(client.default_namespace(), "default");
    let nss: Api<Namespace> = Api::all(client);
    assert!(nss.get("kube-system").await.is_ok());
    let kc = c.kubeconfig().unwrap();
    assert_eq!(
        kc.clusters[0].cluster.as_ref().unwrap().server.as_deref(),
        Some(c.url().as_str())
    );
}

#[tokio::test]
async fn serve_until_installs_crds_writes_a_kubeconfig_and_stops() {
    let dir = temp_dir("serve");
    let crds = dir.join("crds");
    std::fs::create_dir_all(&crds).unwrap();
    std::fs::write(
        crds.join("widget.yaml"),
        serde_saphyr::to_string(&widget_crd()).unwrap(),
    )
    .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let opts = RunOptions {
        kubeconfig: Some(kubeconfig.clone()),
        crds: vec![crds],
        ..RunOptions::default()
    };
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_until(opts, Some(ready_tx), async move {
        let _ = stop_rx.await;
    }));
    tokio::time::timeout(TIMEOUT, ready_rx)
        .await
        .unwrap()
        .unwrap();
    let client = client_from_kubeconfig(&kubeconfig).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.kinfer.dev", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    assert!(
        widgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    stop_tx.send(()).unwrap();
    tokio::time::timeout(TIMEOUT, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
