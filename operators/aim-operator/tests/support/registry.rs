//! A real OCI registry for scenario tests: Debian's `docker-registry` as a child process on
//! `127.0.0.1:0`, and images pushed to it with `oci-client` (a config blob carrying labels, a
//! tiny layer, an OCI manifest).
//!
//! - The binary is `$KINFER_REGISTRY_BIN` if set, else `/usr/bin/docker-registry`, installed
//!   with the workspace's `scripts/install-test-deps.sh docker-registry` when missing.
//! - Each [`Registry`] has its own temp directory (config, storage, htpasswd); the bound port is
//!   read from the registry's log and readiness confirmed by polling `GET /v2/` under a
//!   bounded deadline. Dropping it kills and reaps the process and removes the directory.
//!
//! Modelled on `crates/kinfer-oci/tests/support/` (tests cannot import across crates); a shared
//! test-support crate should own one copy.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::json;
use sha2::{Digest as _, Sha256};

pub const USER: &str = "kinfer";
pub const PASSWORD: &str = "s3cret-pass";
/// bcrypt (cost 4) of [`PASSWORD`]; the distribution server only accepts bcrypt entries.
const PASSWORD_BCRYPT: &str = "$2b$04$8aPRFjxbgeKgN2rNL61EV..Q6sIfxv0Z0eCNCqmjfZ9IwVNW8kCJW";
const START_DEADLINE: Duration = Duration::from_secs(30);

pub struct Registry {
    child: Child,
    dir: PathBuf,
    auth: bool,
    /// `127.0.0.1:<port>`
    pub host: String,
}

impl Registry {
    /// A registry without authentication.
    pub async fn start() -> Self {
        Self::spawn(false).await
    }

    /// A registry requiring [`USER`]/[`PASSWORD`] (HTTP basic).
    pub async fn start_with_auth() -> Self {
        Self::spawn(true).await
    }

    async fn spawn(auth: bool) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        // reqwest and oci-client build rustls clients: the process's provider must be chosen.
        aim_operator::controllers::install_crypto_provider();
        let binary = registry_binary();
        let dir = std::env::temp_dir().join(format!(
            "aim-operator-registry-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("data")).expect("registry dir");
        let auth_section = if auth {
            let htpasswd = dir.join("htpasswd");
            std::fs::write(&htpasswd, format!("{USER}:{PASSWORD_BCRYPT}\n")).expect("htpasswd");
            format!(
                "auth:\n  htpasswd:\n    realm: kinfer-test\n    path: {}\n",
                htpasswd.display()
            )
        } else {
            String::new()
        };
        let config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: 127.0.0.1:0\n  secret: kinfer-test-secret\n\
             {auth_section}",
            dir.join("data").display()
        );
        let config_path = dir.join("config.yml");
        std::fs::write(&config_path, config).expect("registry config");
        let mut child = Command::new(&binary)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stderr = child.stderr.take().expect("registry stderr");
        let (tx, rx) = mpsc::channel();
        // Finds the bound address, then keeps draining the log so the server never blocks.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("listening on ") {
                    let addr: String = line[i + "listening on ".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':'))
                        .collect();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
            }
        });
        let mut registry = Self {
            child,
            dir,
            auth,
            host: String::new(),
        };
        registry.host = rx
            .recv_timeout(START_DEADLINE)
            .expect("registry reported no address");
        registry.wait_ready().await;
        registry
    }

    async fn wait_ready(&self) {
        let url = format!("http://{}/v2/", self.host);
        let http = reqwest::Client::new();
        let deadline = Instant::now() + START_DEADLINE;
        let mut pause = Duration::from_millis(5);
        loop {
            if let Ok(r) = http.get(&url).send().await
                && matches!(r.status().as_u16(), 200 | 401)
            {
                return;
            }
            assert!(Instant::now() < deadline, "registry {url} not ready");
            // Poll interval, not synchronisation: the loop exits on the first good answer.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Pushes an image whose config carries `labels` as `repo:tag`; returns the digest.
    pub async fn push(&self, repo: &str, tag: &str, labels: &BTreeMap<String, String>) -> String {
        let auth = if self.auth {
            RegistryAuth::Basic(USER.into(), PASSWORD.into())
        } else {
            RegistryAuth::Anonymous
        };
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        let config = serde_json::to_vec(&json!({
            "architecture": "amd64", "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": []},
        }))
        .expect("config");
        let layer = format!("aim-operator test layer {repo}:{tag}").into_bytes();
        let (layer_digest, config_digest) = (sha256(&layer), sha256(&config));
        let reference = Reference::with_tag(self.host.clone(), repo.to_owned(), tag.to_owned());
        client.store_auth_if_needed(&self.host, &auth).await;
        client
            .push_blob(&reference, layer.clone(), &layer_digest)
            .await
            .expect("push layer");
        client
            .push_blob(&reference, config.clone(), &config_digest)
            .await
            .expect("push config");
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": config.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": layer.len()}],
        }))
        .expect("manifest");
        let digest = sha256(&manifest);
        client
            .push_manifest_raw(
                &reference,
                manifest,
                reqwest::header::HeaderValue::from_static(
                    "application/vnd.oci.image.manifest.v1+json",
                ),
            )
            .await
            .expect("push manifest");
        digest
    }

    /// A `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson` for this registry.
    pub fn docker_config_json(&self) -> String {
        json!({"auths": {self.host.clone(): {"username": USER, "password": PASSWORD}}}).to_string()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// Labels from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn registry_binary() -> PathBuf {
    const DEFAULT: &str = "/usr/bin/docker-registry";
    static INSTALL: Mutex<()> = Mutex::new(());
    if let Some(custom) = std::env::var_os("KINFER_REGISTRY_BIN") {
        return PathBuf::from(custom);
    }
    let binary = PathBuf::from(DEFAULT);
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !binary.exists() {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-test-deps.sh");
        let status = Command::new("bash")
            .arg(&script)
            .arg("docker-registry")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            status.success() && binary.exists(),
            "{DEFAULT} missing after {}",
            script.display()
        );
    }
    binary
}
