//! `kinfer inspect image REF [--pull-secret FILE]... [--insecure-registry HOST]...`
//!
//! Reads an image's config labels from its registry (no layers are pulled) and prints the AIM
//! metadata as YAML, in the shape of `AIMModel.spec.imageMetadata`: the output can be pasted
//! into a model for an air-gapped cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use kinfer_oci::{ImageReference, Inspector, InspectorConfig, PullSecret};
use serde_json::Value;

/// Arguments of `kinfer inspect image`.
#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// Image reference, e.g. `amdenterpriseai/aim-qwen-qwen3-32b:0.8.5`.
    pub reference: String,
    /// A pull secret: a Kubernetes Secret manifest (`kubernetes.io/dockerconfigjson` or
    /// `kubernetes.io/dockercfg`, YAML or JSON) or a Docker `config.json`. Repeatable.
    #[arg(long = "pull-secret", value_name = "FILE")]
    pub pull_secrets: Vec<PathBuf>,
    /// A registry host (`host[:port]`) to reach over plain HTTP. Repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST")]
    pub insecure_registries: Vec<String>,
}

/// Inspects the image and returns the YAML to print.
pub fn run(args: &ImageArgs) -> Result<String> {
    let reference = ImageReference::parse(&args.reference)
        .with_context(|| format!("invalid image reference {:?}", args.reference))?;
    let secrets = args
        .pull_secrets
        .iter()
        .map(|path| read_pull_secret(path))
        .collect::<Result<Vec<_>>>()?;
    let config = InspectorConfig {
        insecure_registries: args.insecure_registries.clone(),
        ..InspectorConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let image = runtime.block_on(async {
        let inspector = Inspector::new(config)?;
        inspector.inspect_with_secrets(&reference, &secrets).await
    });
    let image = image.with_context(|| format!("inspecting {}", args.reference))?;
    let yaml = serde_saphyr::to_string(&image.metadata).context("rendering YAML")?;
    Ok(format!(
        "# {}\n# digest: {}\n{yaml}",
        args.reference, image.digest
    ))
}

/// Reads a pull secret file: a Secret manifest, or a bare Docker `config.json`.
fn read_pull_secret(path: &Path) -> Result<PullSecret> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("{} is not YAML or JSON", path.display()))?;
    let name = path.display().to_string();
    if doc.get("auths").is_some() {
        return Ok(PullSecret::docker_config_json(name, text.into_bytes()));
    }
    if doc.get("kind").and_then(Value::as_str) != Some("Secret") {
        bail!("{name}: expected a Secret manifest or a Docker config.json with \"auths\"");
    }
    let secret_type = doc
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut data = BTreeMap::new();
    if let Some(Value::Object(entries)) = doc.get("data") {
        for (key, value) in entries {
            let encoded = value.as_str().unwrap_or_default();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .with_context(|| format!("{name}: data.{key} is not base64"))?;
            data.insert(key.clone(), decoded);
        }
    }
    if let Some(Value::Object(entries)) = doc.get("stringData") {
        for (key, value) in entries {
            data.insert(
                key.clone(),
                value.as_str().unwrap_or_default().as_bytes().to_vec(),
            );
        }
    }
    Ok(PullSecret::new(name, secret_type, data))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::read_pull_secret;

    fn file(text: &str) -> tempfile_path::TempFile {
        tempfile_path::TempFile::new(text)
    }

    /// A file in the system temp dir, removed on drop (no extra crate for this).
    mod tempfile_path {
        use std::path::PathBuf;
        use std::sync::atomic::{AtomicUsize, Ordering};

        pub struct TempFile(pub PathBuf);
        static NEXT: AtomicUsize = AtomicUsize::new(0);

        impl TempFile {
            pub fn new(text: &str) -> Self {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let path = std::env::temp_dir()
                    .join(format!("kinfer-cli-test-{}-{n}.yaml", std::process::id()));
                std::fs::write(&path, text).expect("write temp file");
                Self(path)
            }
        }

        impl Drop for TempFile {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn reads_secret_manifests_with_data_and_string_data() {
        let f = file(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\n\
             type: kubernetes.io/dockerconfigjson\n\
             data:\n  .dockerconfigjson: eyJhdXRocyI6e319\n",
        );
        let secret = read_pull_secret(&f.0).expect("parses");
        assert_eq!(secret.secret_type, "kubernetes.io/dockerconfigjson");
        assert_eq!(secret.data[".dockerconfigjson"], br#"{"auths":{}}"#);

        let f = file(
            "kind: Secret\ntype: kubernetes.io/dockerconfigjson\n\
             stringData:\n  .dockerconfigjson: '{\"auths\":{}}'\n",
        );
        let secret = read_pull_secret(&f.0).expect("parses");
        assert_eq!(secret.data[".dockerconfigjson"], br#"{"auths":{}}"#);
    }

    #[test]
    fn reads_a_bare_docker_config() {
        let f = file(r#"{"auths": {"ghcr.io": {"auth": "dTpw"}}}"#);
        let secret = read_pull_secret(&f.0).expect("parses");
        assert_eq!(secret.secret_type, "kubernetes.io/dockerconfigjson");
        let mut out = Vec::new();
        out.write_all(&secret.data[".dockerconfigjson"])
            .expect("write");
        assert!(String::from_utf8(out).expect("utf-8").contains("ghcr.io"));
    }

    #[test]
    fn rejects_other_documents_and_bad_base64() {
        let f = file("kind: ConfigMap\n");
        assert!(read_pull_secret(&f.0).is_err());
        let f = file("kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata: {x: '!!'}\n");
        let error = read_pull_secret(&f.0).expect_err("bad base64").to_string();
        assert!(error.contains("data.x is not base64"), "{error}");
    }
}
