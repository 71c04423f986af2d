//! Zerfoo's child names (upstream zerfoo `serve/operator`): `<name>-primary`,
//! `<name>-canary`, `<name>-svc`, `<name>-hpa`, plus kinfer's `<name>-route`.
//!
//! Contract: every name goes through [`super::child_name`], so a parent whose name is clean and
//! short gets exactly upstream's name, and any other parent (dots, more than 63 characters with
//! the suffix) a deterministic hashed DNS-1035 label that is valid as a Deployment, Service,
//! HPA and HTTPRoute name alike (the Deployment and the Service of a track share a name).

use super::types::{Dns1035Label, NameError};
use super::{DNS1123_LABEL_MAX, child_name};

/// The children's names of one ZerfooInferenceService.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Primary Deployment and its track Service: `<name>-primary`.
    pub primary: Dns1035Label,
    /// Canary Deployment and its track Service: `<name>-canary`.
    pub canary: Dns1035Label,
    /// The Service selecting both tracks: `<name>-svc`.
    pub service: Dns1035Label,
    /// The HorizontalPodAutoscaler: `<name>-hpa`.
    pub hpa: Dns1035Label,
    /// The HTTPRoute: `<name>-route`.
    pub route: Dns1035Label,
}

/// `<parent>-<suffix>`, hashed when that is not a clean label.
fn child(parent: &str, suffix: &str) -> Result<Dns1035Label, NameError> {
    child_name(&[parent, suffix], &[parent], DNS1123_LABEL_MAX)
}

/// The names for the service called `parent`; see the module contract.
pub fn names(parent: &str) -> Result<Names, NameError> {
    Ok(Names {
        primary: child(parent, "primary")?,
        canary: child(parent, "canary")?,
        service: child(parent, "svc")?,
        hpa: child(parent, "hpa")?,
        route: child(parent, "route")?,
    })
}

#[cfg(test)]
mod tests {
    use super::names;
    use crate::naming::Dns1035Label;
    use crate::naming::is_dns1035_label;

    #[test]
    fn upstream_names_for_clean_parents() {
        let n = names("my-llama").unwrap();
        assert_eq!(
            [&n.primary, &n.canary, &n.service, &n.hpa, &n.route].map(Dns1035Label::as_str),
            [
                "my-llama-primary",
                "my-llama-canary",
                "my-llama-svc",
                "my-llama-hpa",
                "my-llama-route"
            ]
        );
    }

    #[test]
    fn long_or_dotted_parents_get_valid_distinct_stable_names() {
        let long = "a".repeat(60);
        for parent in [long.as_str(), "llama.v3"] {
            let n = names(parent).unwrap();
            let all = [&n.primary, &n.canary, &n.service, &n.hpa, &n.route];
            for name in all {
                assert!(is_dns1035_label(name.as_str()), "{name}");
            }
            let distinct: std::collections::BTreeSet<_> = all.iter().collect();
            assert_eq!(distinct.len(), 5);
            assert_eq!(names(parent).unwrap(), n);
        }
        // Pinned: a changed rule would orphan live objects.
        assert_eq!(
            names("llama.v3").unwrap().primary.as_str(),
            "llama-v3-primary-73f40e80"
        );
    }
}
