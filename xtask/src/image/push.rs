//! `--push`: each image's blobs, then its manifest, to `<registry>/<binary>:<tag>` through
//! `oci-client`, the manifest as the exact bytes of the layout (so the pushed digest is the
//! layout's).
//!
//! May: talk to the one registry named. May not: build anything.

use anyhow::{Context, Result, bail};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::Args;
use super::layout::{Image, MANIFEST};

pub fn all(args: &Args, tag: &str, images: &[(String, Image)]) -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if args.insecure {
        ClientProtocol::Http
    } else {
        ClientProtocol::Https
    };
    let client = Client::new(ClientConfig {
        protocol,
        ..ClientConfig::default()
    });
    let auth = match (&args.username, std::env::var("KINFER_REGISTRY_PASSWORD")) {
        (Some(user), Ok(password)) => RegistryAuth::Basic(user.clone(), password),
        (Some(_), Err(_)) => bail!("--username needs KINFER_REGISTRY_PASSWORD"),
        (None, _) => RegistryAuth::Anonymous,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        for (name, image) in images {
            let reference: Reference = format!("{}/{name}:{tag}", args.registry)
                .parse()
                .with_context(|| {
                    format!("{}/{name}:{tag} is not an image reference", args.registry)
                })?;
            client
                .auth(&reference, &auth, oci_client::RegistryOperation::Push)
                .await
                .with_context(|| format!("authenticating to push {reference}"))?;
            for (digest, data) in &image.blobs {
                if *digest == image.manifest_digest {
                    continue;
                }
                client
                    .push_blob(&reference, data.clone(), digest)
                    .await
                    .with_context(|| format!("pushing {digest} of {reference}"))?;
            }
            client
                .push_manifest_raw(
                    &reference,
                    image.manifest.clone(),
                    MANIFEST.parse().context("the manifest media type")?,
                )
                .await
                .with_context(|| format!("pushing the manifest of {reference}"))?;
            println!("pushed {reference}@{}", image.manifest_digest);
        }
        Ok(())
    })
}
