//! A real OCI distribution server (Debian's `docker-registry`) as a child process.
//!
//! - The binary is `$KINFER_REGISTRY_BIN` if set, else `/usr/bin/docker-registry`; when the
//!   latter is missing, the workspace's `scripts/install-test-deps.sh docker-registry` runs
//!   (serialised within the test process; it apt-installs the package, and is a no-op once
//!   the binary exists).
//! - Each [`Registry`] gets a temp directory with its own config and storage, listens on
//!   `127.0.0.1:0`, and reports the port it bound in its log; readiness is then confirmed by
//!   polling `GET /v2/` under a bounded deadline.
//! - With htpasswd auth, a bcrypt htpasswd file holds [`USER`]/[`PASSWORD`]; with token auth
//!   the registry sends clients to a token realm (see `support::token`).
//! - Dropping a [`Registry`] kills and reaps the process and removes the directory.
//! - [`Registry::push`] pushes a labelled image with the registry's own credentials, and
//!   [`Registry::docker_config_json`] is a pull secret for it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use oci_client::secrets::RegistryAuth;

use super::images::Pusher;

/// The user of an htpasswd registry.
pub const USER: &str = "kinfer";
/// Its password.
pub const PASSWORD: &str = "s3cret-pass";
/// bcrypt (cost 4) of [`PASSWORD`], generated once with
/// `python3 -c "import crypt; print(crypt.crypt('s3cret-pass', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))"`.
/// The distribution server only accepts bcrypt htpasswd entries.
const PASSWORD_BCRYPT: &str = "$2b$04$8aPRFjxbgeKgN2rNL61EV..Q6sIfxv0Z0eCNCqmjfZ9IwVNW8kCJW";

const START_DEADLINE: Duration = Duration::from_secs(30);
/// The `service` a token-auth registry names in its challenge.
pub const SERVICE: &str = "kinfer-test-registry";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Auth {
    None,
    Htpasswd,
    Token(String),
}

/// A running registry; see the module contract.
#[derive(Debug)]
pub struct Registry {
    child: Child,
    dir: PathBuf,
    auth: Auth,
    /// `127.0.0.1:<port>`
    pub host: String,
}

impl Registry {
    /// Starts a registry without authentication.
    pub async fn start() -> Self {
        Self::spawn(Auth::None).await
    }

    /// Starts a registry that requires [`USER`]/[`PASSWORD`] (HTTP basic, htpasswd).
    pub async fn start_with_auth() -> Self {
        Self::spawn(Auth::Htpasswd).await
    }

    /// Starts a registry that demands a bearer token from `realm` (the distribution server's
    /// `silly` token auth: it challenges with `Bearer realm=…,service=…` and accepts any
    /// `Authorization` header; the realm decides who gets a token).
    pub async fn start_with_token_realm(realm: &str) -> Self {
        Self::spawn(Auth::Token(realm.to_owned())).await
    }

    async fn spawn(auth: Auth) -> Self {
        let binary = registry_binary();
        let dir = unique_dir();
        std::fs::create_dir_all(dir.join("data")).expect("create registry dir");
        let auth_section = match &auth {
            Auth::None => String::new(),
            Auth::Htpasswd => {
                let htpasswd = dir.join("htpasswd");
                std::fs::write(&htpasswd, format!("{USER}:{PASSWORD_BCRYPT}\n"))
                    .expect("write htpasswd");
                format!(
                    "auth:\n  htpasswd:\n    realm: kinfer-test\n    path: {}\n",
                    htpasswd.display()
                )
            }
            Auth::Token(realm) => {
                format!("auth:\n  silly:\n    realm: {realm}\n    service: {SERVICE}\n")
            }
        };
        let config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {data}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:0\n  secret: kinfer-test-secret\n\
             {auth_section}",
            data = dir.join("data").display()
        );
        let config_path = dir.join("config.yml");
        std::fs::write(&config_path, config).expect("write registry config");

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
        // Reads the log for the bound address, then keeps draining it so the server never
        // blocks on a full pipe. Ends when the process dies.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = listening_addr(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr);
                }
                if std::env::var_os("KINFER_REGISTRY_LOG").is_some() {
                    eprintln!("[registry] {line}");
                }
            }
        });
        let mut registry = Self {
            child,
            dir,
            auth,
            host: String::new(),
        };
        let Ok(addr) = rx.recv_timeout(START_DEADLINE) else {
            let status = registry.child.try_wait().ok().flatten();
            panic!(
                "registry did not report its address within {START_DEADLINE:?} (exit status {status:?})"
            );
        };
        registry.host = addr;
        registry.wait_ready().await;
        registry
    }

    /// Polls `GET /v2/` until the server answers (200, or 401 with auth), bounded.
    async fn wait_ready(&self) {
        let url = format!("http://{}/v2/", self.host);
        crate::ensure_crypto_provider();
        let http = reqwest::Client::new();
        let deadline = Instant::now() + START_DEADLINE;
        let mut pause = Duration::from_millis(5);
        loop {
            if let Ok(r) = http.get(&url).send().await
                && matches!(r.status().as_u16(), 200 | 401)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "registry at {url} not ready within {START_DEADLINE:?}"
            );
            // Poll interval, not synchronisation: the loop exits on the first good answer.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}

impl Registry {
    /// A [`Pusher`] for this registry with its credentials (basic for htpasswd registries).
    pub fn pusher(&self) -> Pusher {
        let auth = match self.auth {
            Auth::Htpasswd => RegistryAuth::Basic(USER.into(), PASSWORD.into()),
            Auth::None | Auth::Token(_) => RegistryAuth::Anonymous,
        };
        Pusher::with_auth(&self.host, auth)
    }

    /// Pushes an `amd64` image whose config carries `labels` as `repo:tag`; returns the
    /// manifest digest.
    pub async fn push(&self, repo: &str, tag: &str, labels: &BTreeMap<String, String>) -> String {
        self.pusher()
            .push_image(repo, Some(tag), labels, "amd64")
            .await
    }

    /// A `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson` for this registry with
    /// [`USER`]/[`PASSWORD`].
    pub fn docker_config_json(&self) -> String {
        serde_json::json!({"auths": {self.host.clone(): {"username": USER, "password": PASSWORD}}})
            .to_string()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `... msg="listening on 127.0.0.1:41234" ...` → `127.0.0.1:41234`
fn listening_addr(line: &str) -> Option<String> {
    let rest = &line[line.find("listening on ")? + "listening on ".len()..];
    let addr: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    (!addr.is_empty()).then_some(addr)
}

fn unique_dir() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "kinfer-oci-registry-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The registry binary: `$KINFER_REGISTRY_BIN` as given, else `/usr/bin/docker-registry`,
/// installed with the crate's script when missing.
fn registry_binary() -> PathBuf {
    const DEFAULT: &str = "/usr/bin/docker-registry";
    static INSTALL: Mutex<()> = Mutex::new(());
    if let Some(custom) = std::env::var_os("KINFER_REGISTRY_BIN") {
        let custom = PathBuf::from(custom);
        assert!(
            custom.exists(),
            "KINFER_REGISTRY_BIN={} does not exist",
            custom.display()
        );
        return custom;
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
        assert!(status.success(), "{} failed: {status}", script.display());
        assert!(
            binary.exists(),
            "{DEFAULT} still missing after {}",
            script.display()
        );
    }
    binary
}
