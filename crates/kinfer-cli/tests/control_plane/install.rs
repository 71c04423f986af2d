//! The install: `kubectl kustomize deploy/<dir> | kubectl apply --server-side -f -` against the
//! real API server, every object accepted, for `deploy/default` and for each operator alone;
//! and the user roles aggregated into the built-in `admin`, `edit` and `view` by the real
//! kube-controller-manager.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kinfer_testkit::ControlPlane;

use crate::{plane, root};

/// `kubectl kustomize deploy/<dir>`, applied server-side; asserts that every object was
/// applied.
pub(crate) fn install(plane: &ControlPlane, dir: &str) {
    let rendered = crate::kubectl(
        plane,
        &[
            "kustomize",
            root().join("deploy").join(dir).to_str().unwrap(),
        ],
    );
    assert!(
        rendered.status.success(),
        "kubectl kustomize deploy/{dir}: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let mut apply = plane
        .kubectl()
        .unwrap()
        .args([
            "apply",
            "--server-side",
            "--field-manager=kinfer-install",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(&rendered.stdout)
        .unwrap();
    let out = apply.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl apply deploy/{dir}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects = rendered
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"kind: "))
        .count();
    let applied = stdout
        .lines()
        .filter(|l| l.ends_with(" serverside-applied"))
        .count();
    assert_eq!(
        applied, objects,
        "every object of deploy/{dir} applied:\n{stdout}"
    );
}

/// One test, so the installs do not race each other: each operator alone (its CRDs, RBAC,
/// namespace and Deployment), then `deploy/default` over them (the same objects: an upgrade in
/// place changes nothing).
#[test]
fn each_operator_alone_and_the_default_install_are_accepted_server_side() {
    for dir in [
        "zerfoo-operator",
        "modelservice-operator",
        "aim-operator",
        "default",
    ] {
        install(plane(), dir);
    }
}

/// `kubectl auth can-i VERB RESOURCE -n NS --as USER`.
fn can(plane: &ControlPlane, user: &str, verb: &str, resource: &str, ns: &str) -> bool {
    let out = crate::kubectl(
        plane,
        &["auth", "can-i", verb, resource, "-n", ns, "--as", user],
    );
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// A namespace's editors manage its kinfer objects and its viewers read them, through the
/// built-in roles alone: the clusterrole-aggregation controller folds the kinfer user roles
/// into `edit` and `view`.
#[test]
fn namespace_editors_and_viewers_get_the_kinfer_kinds() {
    let plane = plane();
    // The user roles alone (the installs have their own test).
    for dir in ["aim-operator", "modelservice-operator", "zerfoo-operator"] {
        let out = crate::kubectl(
            plane,
            &[
                "apply",
                "--server-side",
                "--field-manager=kinfer-install",
                "-f",
                root()
                    .join("deploy")
                    .join(dir)
                    .join("user_roles.yaml")
                    .to_str()
                    .unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let ns = "user-roles";
    for args in [
        vec!["create", "namespace", ns],
        vec![
            "create",
            "rolebinding",
            "editors",
            "--clusterrole=edit",
            "--user=alice",
            "-n",
            ns,
        ],
        vec![
            "create",
            "rolebinding",
            "viewers",
            "--clusterrole=view",
            "--user=bob",
            "-n",
            ns,
        ],
    ] {
        let out = crate::kubectl(plane, &args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let kinds = [
        "aimservices.aim.eai.amd.com",
        "aimmodels.aim.eai.amd.com",
        "aimtemplatecaches.aim.eai.amd.com",
        "modelservices.model.otterscale.io",
        "zerfooinferenceservices.zerfoo.feza.ai",
    ];
    // Aggregation is asynchronous: wait (bounded) until the last kind reaches both roles.
    let deadline = Instant::now() + Duration::from_mins(1);
    while !kinds
        .iter()
        .all(|k| can(plane, "alice", "create", k, ns) && can(plane, "bob", "list", k, ns))
    {
        assert!(
            Instant::now() < deadline,
            "the kinfer roles were not aggregated into edit and view within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for kind in kinds {
        assert!(
            can(plane, "alice", "delete", kind, ns),
            "alice deletes {kind}"
        );
        assert!(can(plane, "bob", "get", kind, ns), "bob reads {kind}");
        assert!(
            !can(plane, "bob", "create", kind, ns),
            "bob only reads {kind}"
        );
        assert!(
            !can(plane, "bob", "patch", kind, ns),
            "bob only reads {kind}"
        );
        assert!(
            !can(plane, "alice", "create", kind, "default"),
            "alice's grant is her namespace's"
        );
    }
    assert!(
        !can(
            plane,
            "alice",
            "create",
            "aimclustermodels.aim.eai.amd.com",
            ns
        ),
        "cluster-scoped kinds are not a namespace editor's"
    );
}

/// Every example directory applies with kubectl on a cluster with the CRDs: each file creates
/// the Namespaces it uses. Server-side, so the Namespaces' creation cannot race the other tests
/// of this binary that create the same namespaces (a client-side apply reads, then creates).
#[test]
fn every_example_directory_applies_with_kubectl() {
    let plane = plane();
    let mut dirs = Vec::new();
    example_dirs(&root().join("examples"), &mut dirs);
    assert!(dirs.len() >= 4, "example directories: {dirs:?}");
    for dir in dirs {
        let out = crate::kubectl(
            plane,
            &[
                "apply",
                "--server-side",
                "--field-manager=kinfer-examples",
                "-f",
                dir.to_str().unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "kubectl apply -f {}: {}\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// The directories under `dir` holding `.yaml` files.
fn example_dirs(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    if entries
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "yaml"))
    {
        out.push(dir.to_path_buf());
    }
    for sub in entries.iter().filter(|p| p.is_dir()) {
        example_dirs(sub, out);
    }
}

/// `kubectl get KIND NAME` fails with NotFound.
fn gone(plane: &ControlPlane, args: &[&str]) -> bool {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    let out = crate::kubectl(plane, &all);
    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NotFound")
}

/// The documented uninstall, on a control plane of its own (deleting CRDs must not disturb the
/// other tests): the Zerfoo operator installed alone and an example applied; the example's
/// objects deleted, then `kubectl delete -k deploy/zerfoo-operator` removes the CRD, the
/// operator's namespace (the namespace controller finalizes it), its RBAC and its user roles.
#[tokio::test]
async fn uninstall_removes_what_the_install_created() {
    let plane = ControlPlane::start(kinfer_testkit::control_plane::Options::default())
        .await
        .expect("a control plane of its own");
    install(&plane, "zerfoo-operator");
    let example = root().join("examples/zerfoo/plain.yaml");
    let run = |args: &[&str]| {
        let out = crate::kubectl(&plane, args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // kubectl applies a CRD's objects only once it is Established.
    run(&[
        "wait",
        "--for=condition=Established",
        "crd/zerfooinferenceservices.zerfoo.feza.ai",
    ]);
    run(&["apply", "--server-side", "-f", example.to_str().unwrap()]);
    run(&["delete", "--wait", "zerfooinferenceservices", "--all", "-A"]);
    let deploy = root().join("deploy/zerfoo-operator");
    run(&["delete", "--wait", "-k", deploy.to_str().unwrap()]);
    for what in [
        ["crd", "zerfooinferenceservices.zerfoo.feza.ai"],
        ["namespace", "zerfoo-system"],
        ["clusterrole", "zerfoo-operator"],
        ["clusterrolebinding", "zerfoo-operator"],
        ["clusterrole", "kinfer-zerfoo-edit"],
        ["clusterrole", "kinfer-zerfoo-view"],
    ] {
        assert!(gone(&plane, &what), "{what:?} is still there");
    }
}
