//! GPU identity: spellings normalise to the table's names, node identification and node
//! affinity agree on every node, and `minVram` matching is a monotone threshold.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use kinfer_select::gpu::{
    Basis, ClusterGpu, ClusterGpus, GPUS, GpuModel, Vendor, device_ids, identify_node, normalize,
    parse_quantity,
};
use proptest::prelude::*;
use proptest::sample::select as pick;

#[test]
fn every_table_model_survives_its_common_spellings() {
    for g in GPUS {
        let m = g.model;
        let spellings: Vec<String> = match g.vendor {
            Vendor::Amd => vec![
                format!("Instinct {m}"),
                format!("AMD Instinct {m}"),
                format!("Instinct-{m}"),
                format!("{m} (rev 2)"),
                format!("amd_{m}"),
            ],
            Vendor::Nvidia => vec![
                format!("NVIDIA-{m}-80GB-HBM3"),
                format!("NVIDIA {m} PCIe"),
                format!("Tesla-{m}-SXM4-40GB"),
            ],
        };
        for s in spellings
            .into_iter()
            .chain([m.to_lowercase(), m.to_owned()])
        {
            assert_eq!(normalize(&s).as_deref(), Some(m), "{s:?}");
        }
        for id in g.device_ids {
            assert_eq!(
                GpuModel::from_device_id(g.vendor, id)
                    .map(|x| x.to_string())
                    .as_deref(),
                Some(m)
            );
            assert_eq!(normalize(&format!("AMD-{id}")).as_deref(), Some(m));
        }
    }
}

#[test]
fn device_ids_are_the_inverse_of_identification() {
    for g in GPUS.iter().filter(|g| g.vendor == Vendor::Amd) {
        let model = GpuModel::new(g.model).expect("a name");
        let ids = device_ids(&model);
        assert_eq!(ids, g.device_ids, "{}", g.model);
        for id in ids {
            let labels = BTreeMap::from([("amd.com/gpu.device-id".to_owned(), id)]);
            let found: Vec<_> = identify_node(&labels)
                .into_iter()
                .map(|n| n.model)
                .collect();
            assert_eq!(found, std::slice::from_ref(&model));
        }
    }
}

#[test]
fn family_only_cluster_can_schedule() {
    // The cluster passes the "GPU in cluster" filter on the family alone; the affinity must
    // admit those nodes, and only them.
    let node = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let family = node(&[("amd.com/gpu.family", "MI300X")]);
    let upper = node(&[("amd.com/gpu.device-id", "0x74A1")]);
    let other = node(&[
        ("amd.com/gpu.device-id", "74a5"),
        ("amd.com/gpu.family", "MI300X"),
    ]);
    let cluster = ClusterGpus::from_nodes([&family, &upper, &other]);
    let mi300x = GpuModel::new("MI300X").expect("a name");
    let by = cluster.get(&mi300x).map(ClusterGpu::identified_by);
    assert_eq!(by, Some(BTreeSet::from([Basis::DeviceId, Basis::Family])));
    let affinity = cluster.node_affinity([&mi300x]).expect("an affinity");
    assert!(affinity.matches(&family));
    assert!(affinity.matches(&upper));
    assert!(!affinity.matches(&other), "identified as MI325X only");
}

#[test]
fn min_vram_quantities() {
    let nodes = [
        BTreeMap::from([("amd.com/gpu.device-id".to_owned(), "74a1".to_owned())]),
        BTreeMap::from([("amd.com/gpu.device-id".to_owned(), "740f".to_owned())]),
        BTreeMap::from([("amd.com/gpu.device-id".to_owned(), "75a3".to_owned())]),
    ];
    let cluster = ClusterGpus::from_nodes(&nodes);
    let at_least = |q: &str| -> Vec<String> {
        let min = parse_quantity(q).expect("a quantity");
        cluster
            .models_with_min_vram(min)
            .into_iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(at_least("64Gi"), ["MI210", "MI300X", "MI355X"]);
    assert_eq!(at_least("65Gi"), ["MI300X", "MI355X"]);
    // 192G (decimal) is less than MI300X's 192GiB; 193Gi is more.
    assert_eq!(at_least("192G"), ["MI300X", "MI355X"]);
    assert_eq!(at_least("193Gi"), ["MI355X"]);
    assert!(at_least("1Ti").is_empty());
    // The affinity for a minVram admits the nodes of every qualifying model.
    let min = parse_quantity("100Gi").expect("a quantity");
    let affinity = cluster
        .node_affinity(cluster.models_with_min_vram(min))
        .expect("AMD models");
    assert!(affinity.matches(&nodes[0]));
    assert!(!affinity.matches(&nodes[1]));
    assert!(affinity.matches(&nodes[2]));
}

/// Device-ID spellings: canonical, upper case, `0x`, unknown IDs, and malformed ones that
/// identification ignores.
const DEVICE_IDS: &[&str] = &[
    "74a1", "74A1", "0x74a1", "0X74B5", "74b5", "74a5", "74B9", "740f", "75a3", "74c0", "0x7FFF",
    "zz", "74a10",
];
const DEVICE_ID_KEYS: &[&str] = &["amd.com/gpu.device-id", "beta.amd.com/gpu.device-id"];
const FAMILY_KEYS: &[&str] = &["amd.com/gpu.family", "beta.amd.com/gpu.family"];
const FAMILIES: &[&str] = &["AI", "ai", "NV", "MI300X", "Instinct-MI325X", "gfx942"];
const PRODUCTS: &[&str] = &[
    "NVIDIA-H100-80GB-HBM3",
    "NVIDIA-H100-PCIe",
    "NVIDIA-A100-SXM4-40GB",
    "Tesla-T4",
];
const COUNTS: &[&str] = &["0", "1", "8", "", "00"];

/// One node's labels in every form identification reads: device-ID values and key-suffix
/// counts (canonical, upper-case, `0x`, malformed), family values and key-suffix counts,
/// NVIDIA products, blank values, and unrelated labels. Values are valid label values.
fn node_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    let pair = |keys: &'static [&'static str], values: &'static [&'static str]| {
        (pick(keys), pick(values)).prop_map(|(k, v)| (k.to_owned(), v.to_owned()))
    };
    let suffix = |keys: &'static [&'static str], names: &'static [&'static str]| {
        (pick(keys), pick(names), pick(COUNTS))
            .prop_map(|(k, n, c)| (format!("{k}.{n}"), c.to_owned()))
    };
    let label = prop_oneof![
        3 => pair(DEVICE_ID_KEYS, DEVICE_IDS),
        2 => suffix(DEVICE_ID_KEYS, DEVICE_IDS),
        2 => pair(FAMILY_KEYS, FAMILIES),
        1 => suffix(FAMILY_KEYS, FAMILIES),
        1 => pair(&["amd.com/gpu.device-id", "amd.com/gpu.family"], &[""]),
        1 => pair(&["nvidia.com/gpu.product"], PRODUCTS),
        1 => pair(&["kubernetes.io/arch"], &["amd64"]),
    ];
    proptest::collection::vec(label, 0..5).prop_map(|pairs| pairs.into_iter().collect())
}

fn identified(labels: &BTreeMap<String, String>) -> BTreeSet<GpuModel> {
    identify_node(labels).into_iter().map(|g| g.model).collect()
}

/// Models worth asking an affinity for: the cluster's, plus table and family models it may
/// lack.
fn asked(cluster: &ClusterGpus, mask: u32) -> Vec<Vec<GpuModel>> {
    let mut pool: BTreeSet<GpuModel> = cluster.models().cloned().collect();
    pool.extend(
        ["MI300X", "MI210", "H100", "AI"]
            .into_iter()
            .filter_map(GpuModel::new),
    );
    let pool: Vec<GpuModel> = pool.into_iter().collect();
    let mut sets: Vec<Vec<GpuModel>> = pool.iter().map(|m| vec![m.clone()]).collect();
    sets.push(
        pool.iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << (i % 32)) != 0)
            .map(|(_, m)| m.clone())
            .collect(),
    );
    sets.push(cluster.models().cloned().collect());
    sets
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// On every node of the cluster, the affinity for a set of models admits the node exactly
    /// when identification reports one of those models for it, however it was identified.
    #[test]
    fn identification_and_affinity_agree(
        nodes in proptest::collection::vec(node_labels(), 1..6),
        mask in any::<u32>(),
    ) {
        let cluster = ClusterGpus::from_nodes(&nodes);
        let found: Vec<BTreeSet<GpuModel>> = nodes.iter().map(identified).collect();
        for models in asked(&cluster, mask) {
            let affinity = cluster.node_affinity(&models);
            if models.iter().any(|m| cluster.contains(m)) {
                prop_assert!(affinity.is_some(), "no affinity for present {:?}", models);
            }
            for (labels, found) in nodes.iter().zip(&found) {
                let want = models.iter().any(|m| found.contains(m));
                let got = affinity.as_ref().is_some_and(|a| a.matches(labels));
                prop_assert_eq!(want, got, "{:?} on {:?}: {:?}", models, labels, affinity);
            }
        }
    }

    #[test]
    fn normalisation_is_idempotent_and_case_insensitive(raw in "[ -~]{0,24}") {
        let once = normalize(&raw);
        prop_assert_eq!(once.as_deref().and_then(normalize), once.clone());
        prop_assert_eq!(normalize(&raw.to_ascii_lowercase()), normalize(&raw.to_ascii_uppercase()));
    }

    #[test]
    fn min_vram_is_a_monotone_threshold(
        labels in proptest::collection::vec(node_labels(), 0..6),
        a in 0u64..(300u64 << 30),
        b in 0u64..(300u64 << 30),
    ) {
        let cluster = ClusterGpus::from_nodes(&labels);
        let (lo, hi) = (a.min(b), a.max(b));
        let at_lo = cluster.models_with_min_vram(lo);
        let at_hi = cluster.models_with_min_vram(hi);
        prop_assert!(at_hi.iter().all(|m| at_lo.contains(m)));
        for m in &at_hi {
            let vram = cluster.get(m).and_then(|g| g.vram).map(|v| v.bytes);
            prop_assert!(hi == 0 || vram.is_some_and(|v| v >= hi));
        }
    }

    #[test]
    fn binary_quantities_parse_exactly(n in 0u64..(1 << 20), unit in 0usize..4) {
        let (suffix, shift) = [("", 0), ("Ki", 10), ("Mi", 20), ("Gi", 30)][unit];
        prop_assert_eq!(parse_quantity(&format!("{n}{suffix}")).ok(), Some(n << shift));
    }
}
