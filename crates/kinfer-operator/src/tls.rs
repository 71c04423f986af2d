//! The metrics endpoint's serving certificate.
//!
//! Contract: [`serving_config`] gives the rustls server configuration of the HTTPS metrics
//! listener. With a certificate directory (`--metrics-cert-dir`, as a Secret of cert-manager
//! or of the platform is mounted) it reads `tls.crt` (the chain, leaf first) and `tls.key`
//! (PKCS#8, PKCS#1 or SEC1) from it, read once at start; without one it generates a
//! self-signed ECDSA P-256 certificate at start, for `localhost`, the pod's host name
//! (`HOSTNAME`) and the pod's IP (`POD_IP`) when set, valid from the 1st of January of last
//! year to that of the year after next (a restart makes a new one), kept in memory only
//! (controller-runtime's default: a scraper then skips verification or is given this
//! certificate). TLS 1.2 and 1.3 only, on the ring provider every kinfer binary uses. HTTP/1.1
//! only (ALPN `http/1.1`). Never logs key material.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate file of a certificate directory.
pub const CERT_FILE: &str = "tls.crt";
/// The key file of a certificate directory.
pub const KEY_FILE: &str = "tls.key";

/// Why no serving configuration could be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file of the certificate directory could not be read or parsed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The self-signed certificate could not be generated.
    #[error("generating the self-signed metrics certificate: {0}")]
    Generate(String),
    /// rustls refused the certificate and key.
    #[error("the metrics certificate and key: {0}")]
    Config(#[from] rustls::Error),
}

/// A certificate chain and its key.
#[derive(Debug)]
pub struct Identity {
    /// The chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// Reads `tls.crt` and `tls.key` from `dir`.
    pub fn from_dir(dir: &Path) -> Result<Self, TlsError> {
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        let file_error = |path: &Path, reason: String| TlsError::File {
            path: path.to_path_buf(),
            reason,
        };
        let chain = CertificateDer::pem_file_iter(&cert_path)
            .map_err(|e| file_error(&cert_path, e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| file_error(&cert_path, e.to_string()))?;
        if chain.is_empty() {
            return Err(file_error(&cert_path, "no PEM certificate".to_owned()));
        }
        // The parse error never quotes the key.
        let key = PrivateKeyDer::from_pem_file(&key_path)
            .map_err(|e| file_error(&key_path, e.to_string()))?;
        Ok(Self { chain, key })
    }

    /// A self-signed certificate for `names` (DNS names or IP addresses).
    pub fn self_signed(names: Vec<String>) -> Result<Self, TlsError> {
        let generate = |e: rcgen::Error| TlsError::Generate(e.to_string());
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(generate)?;
        let mut params = rcgen::CertificateParams::new(names).map_err(generate)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "kinfer operator metrics");
        let year = current_year();
        params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
        params.not_after = rcgen::date_time_ymd(year + 2, 1, 1);
        let cert = params.self_signed(&key).map_err(generate)?;
        Ok(Self {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        })
    }
}

/// The current year, UTC, to within a day (the validity has a year of margin either way).
fn current_year() -> i32 {
    const SECONDS_PER_YEAR: u64 = 31_556_952; // the mean Gregorian year
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    1970 + i32::try_from(since_epoch / SECONDS_PER_YEAR).unwrap_or(0)
}

/// The names the generated certificate is for: `localhost`, `HOSTNAME` and `POD_IP` when set.
pub fn default_names() -> Vec<String> {
    let mut names = vec!["localhost".to_owned()];
    for var in ["HOSTNAME", "POD_IP"] {
        if let Ok(v) = std::env::var(var)
            && !v.is_empty()
            && !names.contains(&v)
        {
            names.push(v);
        }
    }
    names
}

/// The server configuration for `identity`.
pub fn config(identity: Identity) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The metrics listener's configuration: from `cert_dir` when given, else self-signed for
/// [`default_names`]; see the module contract.
pub fn serving_config(cert_dir: Option<&Path>) -> Result<Arc<ServerConfig>, TlsError> {
    let identity = match cert_dir {
        Some(dir) => Identity::from_dir(dir)?,
        None => Identity::self_signed(default_names())?,
    };
    config(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_makes_a_config() {
        let id = Identity::self_signed(vec!["localhost".into(), "10.0.0.7".into()]).unwrap();
        assert_eq!(id.chain.len(), 1);
        config(id).unwrap();
    }

    #[test]
    fn a_certificate_directory_is_read_and_its_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("kinfer-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = Identity::from_dir(&dir).unwrap_err().to_string();
        assert!(err.contains(CERT_FILE), "{err}");

        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join(CERT_FILE), cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), "not a key").unwrap();
        let err = Identity::from_dir(&dir).unwrap_err().to_string();
        assert!(err.contains(KEY_FILE), "{err}");

        std::fs::write(dir.join(KEY_FILE), key.serialize_pem()).unwrap();
        let id = Identity::from_dir(&dir).unwrap();
        assert_eq!(id.chain.len(), 1);
        serving_config(Some(&dir)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
