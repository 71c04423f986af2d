//! Unit tests of `reference.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn parts(s: &str) -> (String, String, Option<String>, Option<String>) {
    let r = ImageReference::parse(s).unwrap();
    (
        r.registry().to_owned(),
        r.repository().to_owned(),
        r.tag().map(str::to_owned),
        r.digest().map(str::to_owned),
    )
}

#[test]
fn docker_hub_defaults() {
    assert_eq!(
        parts("nginx"),
        (
            "docker.io".into(),
            "library/nginx".into(),
            Some("latest".into()),
            None
        )
    );
    assert_eq!(
        parts("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"),
        (
            "docker.io".into(),
            "amdenterpriseai/aim-qwen-qwen3-32b".into(),
            Some("0.8.5".into()),
            None
        )
    );
    assert_eq!(parts("index.docker.io/nginx:1").1, "library/nginx");
    let r = ImageReference::parse("docker.io/library/nginx").unwrap();
    assert_eq!(r.api_host(), "registry-1.docker.io");
    assert!(r.is_docker_hub());
    assert_eq!(r.to_string(), "docker.io/library/nginx:latest");
}

#[test]
fn registries_ports_tags_digests() {
    assert_eq!(
        parts("localhost:5000/team/app:v1.2-rc_3"),
        (
            "localhost:5000".into(),
            "team/app".into(),
            Some("v1.2-rc_3".into()),
            None
        )
    );
    assert_eq!(parts("localhost/app").0, "localhost");
    assert_eq!(
        parts("ghcr.io/silogen/aim-dummy").2.as_deref(),
        Some("latest")
    );
    assert_eq!(
        parts(&format!("ghcr.io/a/b@{D}")),
        ("ghcr.io".into(), "a/b".into(), None, Some(D.into()))
    );
    assert_eq!(
        parts(&format!("127.0.0.1:5000/a:t@{D}")),
        (
            "127.0.0.1:5000".into(),
            "a".into(),
            Some("t".into()),
            Some(D.into())
        )
    );
    assert_eq!(parts("[::1]:5000/a").0, "[::1]:5000");
    let r = ImageReference::parse(&format!("reg.io/a:t@{D}")).unwrap();
    assert_eq!(r.digest(), Some(D));
    assert_eq!(r.to_string(), format!("reg.io/a:t@{D}"));
    let pinned = ImageReference::parse("reg.io/a:t")
        .unwrap()
        .with_digest(D)
        .unwrap();
    assert_eq!(pinned.digest(), Some(D));
    assert_eq!(
        ImageReference::parse("nginx").unwrap().api_host(),
        "registry-1.docker.io"
    );
}

#[test]
fn rejections_are_typed() {
    use ReferenceError as E;
    assert_eq!(ImageReference::parse(""), Err(E::Empty));
    assert!(matches!(
        ImageReference::parse("Foo_/bar"),
        Err(E::InvalidRegistry(_))
    ));
    assert!(matches!(
        ImageReference::parse("reg.io/Bar"),
        Err(E::UppercaseRepository(_))
    ));
    assert!(matches!(
        ImageReference::parse("reg.io/a..b"),
        Err(E::InvalidRepository(_))
    ));
    assert!(matches!(
        ImageReference::parse("reg.io/a//b"),
        Err(E::InvalidRepository(_))
    ));
    assert!(matches!(
        ImageReference::parse("reg.io/-a"),
        Err(E::InvalidRepository(_))
    ));
    assert!(matches!(
        ImageReference::parse("reg.io/"),
        Err(E::InvalidRepository(_))
    ));
    assert!(matches!(
        ImageReference::parse("a:.bad"),
        Err(E::InvalidTag(_))
    ));
    assert!(matches!(ImageReference::parse("a:"), Err(E::InvalidTag(_))));
    assert!(matches!(
        ImageReference::parse("a@sha256:abc"),
        Err(E::InvalidDigest(_))
    ));
    assert!(matches!(
        ImageReference::parse("a@nocolon"),
        Err(E::InvalidDigest(_))
    ));
    assert!(matches!(
        ImageReference::parse("re_g.io:x/a"),
        Err(E::InvalidRegistry(_))
    ));
    let long = format!("reg.io/{}", "a".repeat(260));
    assert!(matches!(
        ImageReference::parse(&long),
        Err(E::NameTooLong(_))
    ));
    assert!(matches!(
        ImageReference::parse(&format!("a:{}", "t".repeat(129))),
        Err(E::InvalidTag(_))
    ));
}

#[test]
fn separators() {
    assert!(ImageReference::parse("reg.io/a__b.c-d---e_f").is_ok());
    assert!(ImageReference::parse("reg.io/a___b").is_err());
    assert!(ImageReference::parse("reg.io/a.-b").is_err());
}

#[test]
fn host_labels_are_at_most_63_characters() {
    let ok = format!("{}.io/a", "h".repeat(63));
    assert_eq!(ImageReference::parse(&ok).unwrap().registry().len(), 66);
    let long = format!("{}.io/a", "h".repeat(64));
    assert!(matches!(
        ImageReference::parse(&long),
        Err(ReferenceError::InvalidRegistry(_))
    ));
}

#[test]
fn ports_fit_u16_and_digests_are_verifiable() {
    assert!(ImageReference::parse("reg.io:65535/a").is_ok());
    for bad in ["reg.io:99999/a", "reg.io:65536/a", "[::1]:70000/a"] {
        assert!(
            matches!(
                ImageReference::parse(bad),
                Err(ReferenceError::InvalidRegistry(_))
            ),
            "{bad}"
        );
    }
    let blake3 = format!("x@blake3:{}", "a".repeat(64));
    assert!(matches!(
        ImageReference::parse(&blake3),
        Err(ReferenceError::InvalidDigest(_))
    ));
    let sha512 = format!("x@sha512:{}", "a".repeat(128));
    assert!(ImageReference::parse(&sha512).is_ok());
    assert!(
        ImageReference::parse("x:t")
            .unwrap()
            .with_digest(&format!("md5:{}", "a".repeat(32)))
            .is_err()
    );
    let e = ImageReference::parse_spec(&blake3).unwrap_err();
    assert_eq!(e.category(), crate::OciErrorCategory::InvalidSpec);
}

#[test]
fn hosts_are_lower_cased_and_whitespace_is_rejected() {
    assert_eq!(parts("LOCALHOST:5000/x").0, "localhost:5000");
    assert_eq!(parts("Reg.IO/team/app").0, "reg.io");
    assert_eq!(parts("INDEX.docker.io/nginx").1, "library/nginx");
    for bad in [" nginx", "nginx ", "\tnginx", "nginx\n", " "] {
        assert_eq!(
            ImageReference::parse(bad),
            Err(ReferenceError::SurroundingWhitespace),
            "{bad:?}"
        );
    }
}

#[test]
fn from_parts_validates_each_part() {
    let r = ImageReference::from_parts("Reg.io:5000", "team/app", Some("v1"), None).unwrap();
    assert_eq!(r, ImageReference::parse("reg.io:5000/team/app:v1").unwrap());
    let hub = ImageReference::from_parts("index.docker.io", "nginx", None, None).unwrap();
    assert_eq!(hub, ImageReference::parse("nginx").unwrap());
    let local = ImageReference::from_parts("localhost", "a", None, Some(D)).unwrap();
    assert_eq!(
        (local.registry(), local.tag(), local.digest()),
        ("localhost", None, Some(D))
    );
    // A single-label registry would be read back as a Docker Hub namespace.
    assert!(matches!(
        ImageReference::from_parts("registry", "app", None, None),
        Err(ReferenceError::InvalidRegistry(_))
    ));
    // Parts cannot smuggle in other syntax.
    assert!(ImageReference::from_parts("reg.io", "app:v1", None, None).is_err());
    assert!(ImageReference::from_parts("reg.io/x", "app", None, None).is_err());
    assert!(ImageReference::from_parts("reg.io", "app", Some("a@b"), None).is_err());
    assert!(ImageReference::from_parts("reg.io", "App", None, None).is_err());
    for r in [r, hub, local] {
        assert_eq!(ImageReference::parse(&r.to_string()).unwrap(), r);
    }
}
