//! The OCI image of one binary and its image layout on disk (the contract of docs/images.md):
//! `target/images/<binary>/` holds `oci-layout`, `index.json` (one manifest, its tag in
//! `org.opencontainers.image.ref.name`) and `blobs/sha256/<hex>` for the manifest, the config
//! and the two layers (the base: `/etc/passwd`, `/etc/group`, the CA bundle, `/tmp`,
//! `/home/nonroot`; then the binary at `/usr/local/bin/<binary>`).
//!
//! May: build the documents and write the layout directory. May not: build binaries or talk
//! to a registry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::layer::{self, Entry, Layer};

pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// The user and group the images run as (distroless' `nonroot`).
pub const NONROOT: u64 = 65532;
/// Where the CA bundle goes (the path Debian's ca-certificates uses, which the platform
/// verifier and `SSL_CERT_FILE` find).
pub const CA_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";

/// What an image is made of.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The binary's name (the image's name and title).
    pub name: &'a str,
    /// The static binary.
    pub binary: &'a [u8],
    /// The CA bundle.
    pub ca_bundle: &'a [u8],
    /// `SOURCE_DATE_EPOCH`: every timestamp of the image.
    pub epoch: u64,
    /// The tag (and `org.opencontainers.image.version`).
    pub tag: &'a str,
    /// The commit (`org.opencontainers.image.revision`).
    pub revision: &'a str,
    /// `org.opencontainers.image.source`.
    pub source: &'a str,
    /// `org.opencontainers.image.licenses`.
    pub licenses: &'a str,
}

/// A built image: its blobs by digest, and the manifest's digest and size.
#[derive(Debug, Clone)]
pub struct Image {
    pub blobs: BTreeMap<String, Vec<u8>>,
    pub manifest: Vec<u8>,
    pub manifest_digest: String,
}

fn base_entries(ca_bundle: &[u8]) -> Vec<Entry> {
    let dir = |path: &str, mode, owner| Entry::Dir {
        path: path.to_owned(),
        mode,
        owner,
    };
    let file = |path: &str, content: &[u8]| Entry::File {
        path: path.to_owned(),
        mode: 0o644,
        owner: 0,
        content: content.to_vec(),
    };
    vec![
        dir("etc", 0o755, 0),
        file("etc/group", b"root:x:0:\nnonroot:x:65532:\n"),
        file(
            "etc/passwd",
            b"root:x:0:0:root:/root:/sbin/nologin\n\
              nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
        ),
        dir("etc/ssl", 0o755, 0),
        dir("etc/ssl/certs", 0o755, 0),
        file(CA_BUNDLE, ca_bundle),
        dir("home", 0o755, 0),
        dir("home/nonroot", 0o700, NONROOT),
        dir("tmp", 0o1777, 0),
    ]
}

fn binary_entries(name: &str, binary: &[u8]) -> Vec<Entry> {
    let dir = |path: &str| Entry::Dir {
        path: path.to_owned(),
        mode: 0o755,
        owner: 0,
    };
    vec![
        dir("usr"),
        dir("usr/local"),
        dir("usr/local/bin"),
        Entry::File {
            path: format!("usr/local/bin/{name}"),
            mode: 0o755,
            owner: 0,
            content: binary.to_vec(),
        },
    ]
}

/// Builds the image of `spec`.
pub fn build(spec: &Spec<'_>) -> Result<Image> {
    let created = rfc3339(spec.epoch);
    let base = layer::build(&base_entries(spec.ca_bundle), spec.epoch)?;
    let bin = layer::build(&binary_entries(spec.name, spec.binary), spec.epoch)?;
    let layers: [&Layer; 2] = [&base, &bin];
    let config = json!({
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": format!("{NONROOT}:{NONROOT}"),
            "Entrypoint": [format!("/usr/local/bin/{}", spec.name)],
            "Env": [
                "PATH=/usr/local/bin",
                format!("SSL_CERT_FILE=/{CA_BUNDLE}"),
            ],
            "WorkingDir": "/home/nonroot",
            "Labels": {
                "org.opencontainers.image.source": spec.source,
                "org.opencontainers.image.version": spec.tag,
                "org.opencontainers.image.revision": spec.revision,
                "org.opencontainers.image.licenses": spec.licenses,
                "org.opencontainers.image.title": spec.name,
            },
        },
        "rootfs": {
            "type": "layers",
            "diff_ids": layers.iter().map(|l| l.diff_id.clone()).collect::<Vec<_>>(),
        },
        "history": [
            {"created": created, "created_by": "cargo xtask image: /etc/passwd, /etc/group, CA bundle, /tmp, /home/nonroot"},
            {"created": created, "created_by": format!("cargo xtask image: /usr/local/bin/{}", spec.name)},
        ],
    });
    let config = serde_json::to_vec(&config)?;
    let config_digest = layer::sha256(&config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": descriptor(CONFIG, &config_digest, config.len()),
        "layers": layers
            .iter()
            .map(|l| descriptor(LAYER, &l.digest, l.gzip.len()))
            .collect::<Vec<_>>(),
    }))?;
    let manifest_digest = layer::sha256(&manifest);
    let mut blobs = BTreeMap::new();
    blobs.insert(config_digest.clone(), config);
    for l in layers {
        blobs.insert(l.digest.clone(), l.gzip.clone());
    }
    blobs.insert(manifest_digest.clone(), manifest.clone());
    Ok(Image {
        blobs,
        manifest,
        manifest_digest,
    })
}

fn descriptor(media_type: &str, digest: &str, size: usize) -> Value {
    json!({"mediaType": media_type, "digest": digest, "size": size})
}

/// Writes `image` as an OCI image layout at `dir` (replacing what was there).
pub fn write(image: &Image, dir: &Path, tag: &str) -> Result<PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).with_context(|| format!("creating {}", blobs.display()))?;
    for (digest, data) in &image.blobs {
        let hex = digest.trim_start_matches("sha256:");
        std::fs::write(blobs.join(hex), data)?;
    }
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let mut manifest = descriptor(MANIFEST, &image.manifest_digest, image.manifest.len());
    manifest["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
    manifest["platform"] = json!({"architecture": "amd64", "os": "linux"});
    let index = json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": [manifest]});
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index)?)?;
    Ok(dir.to_owned())
}

/// `YYYY-MM-DDTHH:MM:SSZ` of seconds since the epoch (the civil calendar, proleptic Gregorian).
pub fn rfc3339(epoch: u64) -> String {
    let days = i64::try_from(epoch / 86_400).unwrap_or(i64::MAX);
    let secs = epoch % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_830_000), "2026-11-28T01:40:00Z");
    }

    #[test]
    fn the_same_spec_gives_the_same_manifest_digest() {
        let spec = Spec {
            name: "demo",
            binary: b"\x7fELF",
            ca_bundle: b"certs",
            epoch: 1_700_000_000,
            tag: "0.1.0",
            revision: "abc",
            source: "https://github.com/kinfer/kinfer",
            licenses: "Apache-2.0",
        };
        let a = build(&spec).unwrap();
        let b = build(&spec).unwrap();
        assert_eq!(a.manifest_digest, b.manifest_digest);
        let other = build(&Spec {
            revision: "def",
            ..spec
        })
        .unwrap();
        assert_ne!(a.manifest_digest, other.manifest_digest);
        let manifest: Value = serde_json::from_slice(&a.manifest).unwrap();
        let config_digest = manifest["config"]["digest"].as_str().unwrap();
        let config: Value = serde_json::from_slice(&a.blobs[config_digest]).unwrap();
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(
            config["config"]["Entrypoint"],
            json!(["/usr/local/bin/demo"])
        );
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
    }
}
