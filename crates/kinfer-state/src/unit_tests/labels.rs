use std::collections::BTreeMap;

use pretty_assertions::assert_eq;

use super::*;

fn scheme() -> LabelScheme {
    LabelScheme {
        domain: "aim.eai.amd.com".into(),
        controller: "service".into(),
        manager: "kinfer-aim-service".into(),
    }
}

fn m(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn glob_table() {
    let cases = [
        ("team-*", "team-a", true),
        ("team-*", "team-", true),
        ("team-*", "xteam-a", false),
        ("team-*", "example.com/team-a", false),
        ("*/team", "example.com/team", true),
        ("*", "a/b", false),
        ("t?am", "team", true),
        ("t?am", "t/am", false),
        ("[ab]c", "bc", true),
        ("[a-c]x", "dx", false),
        ("[^a-c]x", "dx", true),
        ("[!a]x", "ax", true), // Go's filepath.Match negates with `^` only
        ("[!a]x", "bx", false),
        ("\\*", "*", true),
        ("[", "a", false),
        ("exact", "exact", true),
        ("", "", true),
    ];
    for (p, t, want) in cases {
        assert_eq!(glob_match(p, t), want, "{p} {t}");
    }
}

#[test]
fn propagation_rules() {
    let parent = m(&[
        ("aim.eai.amd.com/tier", "gold"),
        ("team-a", "x"),
        ("team-b", "y"),
        ("other", "z"),
        ("example.com/team-c", "w"),
    ]);
    let on = LabelPropagation {
        enabled: true,
        patterns: vec!["team-*".into(), "example.com/*".into()],
    };
    let off = LabelPropagation {
        enabled: false,
        patterns: on.patterns.clone(),
    };
    let system = [
        ("kinfer.dev/managed-by", "kinfer-aim-service"),
        ("aim.eai.amd.com/service.name", "svc"),
    ];

    // Disabled: system and domain labels only.
    let got = propagate(&scheme(), "svc", &parent, &off, &BTreeMap::new(), None);
    let mut want = m(&system);
    want.insert("aim.eai.amd.com/tier".into(), "gold".into());
    assert_eq!(got, want);

    // Enabled: matching user labels too; builder labels win; hand-set live labels win.
    let desired = m(&[("team-a", "builder"), ("aim.eai.amd.com/tier", "builder")]);
    let observed = m(&[("team-b", "by-hand")]);
    let got = propagate(&scheme(), "svc", &parent, &on, &desired, Some(&observed));
    let mut want = m(&system);
    want.extend(m(&[
        ("aim.eai.amd.com/tier", "builder"),
        ("team-a", "builder"),
        ("example.com/team-c", "w"),
    ]));
    assert_eq!(got, want);

    // A live label with the same value is kept in the applied set.
    let observed = m(&[("team-b", "y")]);
    let got = propagate(
        &scheme(),
        "svc",
        &parent,
        &on,
        &BTreeMap::new(),
        Some(&observed),
    );
    assert_eq!(got.get("team-b").map(String::as_str), Some("y"));

    // The builder's app.kubernetes.io labels are never overwritten nor added by the engine
    // (otterscale's `model-operator` is kept for adoption).
    let desired = m(&[("app.kubernetes.io/managed-by", "model-operator")]);
    let got = propagate(&scheme(), "svc", &BTreeMap::new(), &off, &desired, None);
    assert_eq!(
        got.get("app.kubernetes.io/managed-by").map(String::as_str),
        Some("model-operator")
    );
    assert_eq!(
        got.get(MANAGED_BY).map(String::as_str),
        Some("kinfer-aim-service")
    );
    let bare = propagate(
        &scheme(),
        "svc",
        &BTreeMap::new(),
        &off,
        &BTreeMap::new(),
        None,
    );
    assert!(
        !bare.contains_key("app.kubernetes.io/managed-by"),
        "{bare:?}"
    );
}

#[test]
fn shared_objects_get_the_marker_only() {
    let desired = m(&[("app.kubernetes.io/name", "x")]);
    let got = propagate_shared(&scheme(), &desired);
    assert_eq!(
        got,
        m(&[
            ("app.kubernetes.io/name", "x"),
            ("kinfer.dev/managed-by", "kinfer-aim-service")
        ])
    );
    assert!(scheme().is_marked(Some(&got)));
    assert!(!scheme().is_child_of(Some(&got), "svc"));
}

#[test]
fn label_values_are_valid() {
    assert_eq!(label_value("my-svc"), "my-svc");
    assert_eq!(label_value("a b/c"), "a_b_c");
    let long = "x".repeat(100);
    let v = label_value(&long);
    assert!(v.len() <= 63, "{v}");
    assert_ne!(v, label_value(&"x".repeat(101)));
    assert_eq!(v, label_value(&long), "stable");
    assert_eq!(
        scheme().selector("svc"),
        "kinfer.dev/managed-by=kinfer-aim-service,aim.eai.amd.com/service.name=svc"
    );
    assert_eq!(
        scheme().paused_annotation(),
        "aim.eai.amd.com/reconciliation-paused"
    );
}
