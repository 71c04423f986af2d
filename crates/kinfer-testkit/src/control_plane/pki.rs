//! The control plane's keys and certificates, generated in process for each start: a CA, the
//! API server's serving certificate for `127.0.0.1` and `localhost`, client certificates (the
//! admin in `system:masters`, the controller manager as `system:kube-controller-manager`) and
//! the service-account signing key.
//!
//! May: generate keys (ECDSA P-256 through rcgen on ring, the tree's one provider) and return
//! PEM text. May not: write files or start anything; [`super`] decides where the PEM goes.

use std::net::{IpAddr, Ipv4Addr};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::Error;

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct Pair {
    /// The certificate.
    pub cert: String,
    /// The private key (PKCS#8).
    pub key: String,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair").finish_non_exhaustive()
    }
}

/// Everything one control plane needs.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA certificate and key; the API server trusts client certificates it signed.
    pub ca: Pair,
    /// The API server's serving certificate.
    pub serving: Pair,
    /// `CN=kinfer-admin, O=system:masters`.
    pub admin: Pair,
    /// `CN=system:kube-controller-manager` (the identity the bootstrap RBAC grants).
    pub controller_manager: Pair,
    /// The service-account token signing key (PKCS#8) ...
    pub service_account_key: String,
    /// ... and its public half.
    pub service_account_public: String,
}

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` takes
fn err(e: rcgen::Error) -> Error {
    Error::ControlPlane(format!("generating certificates: {e}"))
}

impl Pki {
    /// New keys and certificates.
    pub fn generate() -> Result<Self, Error> {
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kinfer-test-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
        let ca = Pair {
            cert: ca_cert.pem(),
            key: ca_key.serialize_pem(),
        };
        let issuer = Issuer::new(ca_params, ca_key);

        let serving = leaf(
            &issuer,
            "kube-apiserver",
            None,
            &["localhost", "kubernetes", "kubernetes.default"],
            &[
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            ],
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let admin = leaf(
            &issuer,
            "kinfer-admin",
            Some("system:masters"),
            &[],
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let controller_manager = leaf(
            &issuer,
            "system:kube-controller-manager",
            None,
            &[],
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let sa = KeyPair::generate().map_err(err)?;
        Ok(Self {
            ca,
            serving,
            admin,
            controller_manager,
            service_account_key: sa.serialize_pem(),
            service_account_public: sa.public_key_pem(),
        })
    }
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    common_name: &str,
    organization: Option<&str>,
    dns: &[&str],
    ips: &[IpAddr],
    usage: ExtendedKeyUsagePurpose,
) -> Result<Pair, Error> {
    let key = KeyPair::generate().map_err(err)?;
    let mut params =
        CertificateParams::new(dns.iter().map(|d| (*d).to_owned()).collect::<Vec<_>>())
            .map_err(err)?;
    params
        .subject_alt_names
        .extend(ips.iter().copied().map(SanType::IpAddress));
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if let Some(o) = organization {
        params.distinguished_name.push(DnType::OrganizationName, o);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, issuer).map_err(err)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_is_pem() {
        let pki = Pki::generate().unwrap();
        for pair in [&pki.ca, &pki.serving, &pki.admin, &pki.controller_manager] {
            assert!(pair.cert.starts_with("-----BEGIN CERTIFICATE-----"));
            assert!(pair.key.starts_with("-----BEGIN PRIVATE KEY-----"));
        }
        assert!(
            pki.service_account_public
                .starts_with("-----BEGIN PUBLIC KEY-----")
        );
    }
}
