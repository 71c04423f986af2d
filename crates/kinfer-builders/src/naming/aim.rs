//! AIM Engine's name rules, byte for byte, so kinfer adopts the objects aim-engine created.
//!
//! Everything here ports aim-engine `internal/utils/naming.go` (`GenerateDerivedName`,
//! `computeHash`, `SanitizeLabelValue`, `ExtractImageParts`) and `internal/utils/utils.go`
//! (`MakeRFC1123Compliant`), and the call sites listed on each function, with
//! `../shared/reference/aim/NOTES.md` row 27 as the contract:
//!
//! - each part is lowercased, every character outside `[a-z0-9-]` becomes one `-` (no
//!   collapsing: `a..b` gives `a--b`), trimmed of `-`, cut to 63 and trimmed again; a part left
//!   empty becomes `part`;
//! - the hash is the SHA-256 hex of the Go `encoding/json` encodings of the inputs joined by
//!   `|` ([`HashInput`]), cut to `hash_len` characters; the suffix is always appended when there
//!   are hash inputs;
//! - while the name is longer than `max_len`, the longest part (the first of equals) loses its
//!   last character and any `-` it then ends with; a part is never cut below one character;
//! - the result is `<part>-...-<part>[-<hash>]`.
//!
//! Where upstream would emit a name longer than `max_len` (every part already one character),
//! these functions return [`NameError::TooShort`] instead.

use k8s_openapi::api::core::v1::EnvVar;
use sha2::{Digest, Sha256};

use super::types::{Dns1123Label, NameError};
use super::{DNS1123_LABEL_MAX, LABEL_VALUE_MAX};

/// Upstream's default hash length.
pub const AIM_HASH_LEN: usize = 8;

/// One input of upstream's name hash, encoded exactly as Go's `encoding/json` would encode the
/// Go value upstream passes.
#[derive(Debug, Clone, PartialEq)]
pub enum HashInput {
    /// A Go `string` (or a string-kinded type such as `types.UID`).
    Str(String),
    /// A Go integer.
    Int(i64),
    /// A Go `[]string`, in its order (upstream does not sort typed slices).
    Strings(Vec<String>),
    /// A Go `[]corev1.EnvVar`, in its order; `nil` when empty.
    Env(Vec<EnvVar>),
}

impl From<&str> for HashInput {
    fn from(value: &str) -> Self {
        Self::Str(value.to_owned())
    }
}

impl From<String> for HashInput {
    fn from(value: String) -> Self {
        Self::Str(value)
    }
}

impl From<i64> for HashInput {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl HashInput {
    /// Go's `json.Marshal` of this value.
    pub fn go_json(&self) -> String {
        let mut out = String::new();
        match self {
            HashInput::Str(s) => go_json_string(&mut out, s),
            HashInput::Int(i) => out.push_str(&i.to_string()),
            HashInput::Strings(list) => {
                out.push('[');
                for (i, s) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go_json_string(&mut out, s);
                }
                out.push(']');
            }
            HashInput::Env(env) if env.is_empty() => out.push_str("null"),
            HashInput::Env(env) => {
                out.push('[');
                for (i, var) in env.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go_json_env(&mut out, var);
                }
                out.push(']');
            }
        }
        out
    }
}

/// Go's `encoding/json` string encoding (HTML-safe, as `json.Marshal` does).
fn go_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u32;
                out.push_str("\\u00");
                out.push(char::from(HEX[(b >> 4) as usize & 0xf]));
                out.push(char::from(HEX[b as usize & 0xf]));
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A Go struct field: `,"name":` (the comma unless first).
fn field(out: &mut String, first: &mut bool, name: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    go_json_string(out, name);
    out.push(':');
}

/// `corev1.EnvVar` in Go's field order: `name`, `value` (omitempty), `valueFrom` (omitempty),
/// and the selectors in their Go field order.
fn go_json_env(out: &mut String, var: &EnvVar) {
    out.push('{');
    let mut first = true;
    field(out, &mut first, "name");
    go_json_string(out, &var.name);
    if let Some(value) = var.value.as_deref().filter(|v| !v.is_empty()) {
        field(out, &mut first, "value");
        go_json_string(out, value);
    }
    if let Some(from) = &var.value_from {
        field(out, &mut first, "valueFrom");
        out.push('{');
        let mut first = true;
        if let Some(f) = &from.field_ref {
            field(out, &mut first, "fieldRef");
            out.push('{');
            let mut inner = true;
            if let Some(v) = f.api_version.as_deref().filter(|v| !v.is_empty()) {
                field(out, &mut inner, "apiVersion");
                go_json_string(out, v);
            }
            field(out, &mut inner, "fieldPath");
            go_json_string(out, &f.field_path);
            out.push('}');
        }
        if let Some(r) = &from.resource_field_ref {
            field(out, &mut first, "resourceFieldRef");
            out.push('{');
            let mut inner = true;
            if let Some(v) = r.container_name.as_deref().filter(|v| !v.is_empty()) {
                field(out, &mut inner, "containerName");
                go_json_string(out, v);
            }
            field(out, &mut inner, "resource");
            go_json_string(out, &r.resource);
            // A Go `resource.Quantity` struct is never omitted; its zero value renders "0".
            field(out, &mut inner, "divisor");
            go_json_string(out, r.divisor.as_ref().map_or("0", |q| q.0.as_str()));
            out.push('}');
        }
        let key_ref = |out: &mut String, name: &str, key: &str, optional: Option<bool>| {
            out.push('{');
            let mut inner = true;
            if !name.is_empty() {
                field(out, &mut inner, "name");
                go_json_string(out, name);
            }
            field(out, &mut inner, "key");
            go_json_string(out, key);
            if let Some(optional) = optional {
                field(out, &mut inner, "optional");
                out.push_str(if optional { "true" } else { "false" });
            }
            out.push('}');
        };
        if let Some(c) = &from.config_map_key_ref {
            field(out, &mut first, "configMapKeyRef");
            key_ref(out, &c.name, &c.key, c.optional);
        }
        if let Some(s) = &from.secret_key_ref {
            field(out, &mut first, "secretKeyRef");
            key_ref(out, &s.name, &s.key, s.optional);
        }
        out.push('}');
    }
    out.push('}');
}

/// Upstream's `computeHash`: SHA-256 hex over the JSON of each input joined by `|`.
pub fn aim_hash(inputs: &[HashInput]) -> String {
    let joined: Vec<String> = inputs.iter().map(HashInput::go_json).collect();
    hex::encode(Sha256::digest(joined.join("|").as_bytes()))
}

/// Upstream's `MakeRFC1123Compliant`: lowercase, each character outside `[a-z0-9-]` becomes
/// `-`, trimmed of `-`, cut to 63, trailing `-` trimmed.
pub fn make_rfc1123_compliant(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            // Go's per-rune simple lowercase mapping (`İ` → `i`, `K` (Kelvin) → `k`).
            let l = c.to_lowercase().next().unwrap_or(c);
            if l.is_ascii_lowercase() || l.is_ascii_digit() || l == '-' {
                l
            } else {
                '-'
            }
        })
        .collect();
    out = out.trim_matches('-').to_owned();
    out.truncate(DNS1123_LABEL_MAX);
    out.trim_end_matches('-').to_owned()
}

/// Upstream's `GenerateDerivedName(parts, WithHashSource(hash...), WithHashLength(hash_len),
/// WithMaxLength(max_len))`; see the module contract.
pub fn generate_derived_name(
    parts: &[&str],
    hash: &[HashInput],
    hash_len: usize,
    max_len: usize,
) -> Result<Dns1123Label, NameError> {
    if parts.is_empty() || max_len == 0 || max_len > DNS1123_LABEL_MAX || hash_len > 64 {
        return Err(NameError::TooShort { max_len, min: 1 });
    }
    let mut parts: Vec<String> = parts
        .iter()
        .map(|p| {
            let s = make_rfc1123_compliant(p);
            if s.is_empty() { "part".to_owned() } else { s }
        })
        .collect();
    let suffix = if hash_len > 0 && !hash.is_empty() {
        aim_hash(hash)[..hash_len].to_owned()
    } else {
        String::new()
    };
    let length = |parts: &[String]| -> usize {
        let joined = parts.iter().map(|p| p.len() + 1).sum::<usize>();
        if suffix.is_empty() {
            joined - 1
        } else {
            joined + suffix.len()
        }
    };
    while length(&parts) > max_len {
        let mut longest = 0;
        for i in 1..parts.len() {
            if parts[i].len() > parts[longest].len() {
                longest = i;
            }
        }
        let part = &mut parts[longest];
        if part.len() <= 1 {
            break;
        }
        part.pop();
        while part.ends_with('-') {
            part.pop();
        }
    }
    let min = length(&parts);
    if min > max_len {
        return Err(NameError::TooShort { max_len, min });
    }
    let mut name = parts.join("-");
    if !suffix.is_empty() {
        name.push('-');
        name.push_str(&suffix);
    }
    Dns1123Label::new(name)
}

/// Upstream's `SanitizeLabelValue`: lowercased, runs of characters outside `[a-z0-9._-]`
/// become one `_`, `_.-` trimmed from both ends, cut to 63 and trimmed again. `None` when
/// nothing is left (upstream returns an error and uses the empty value).
pub fn aim_label_value(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut bad = false;
    for c in s.chars() {
        let l = c.to_lowercase().next().unwrap_or(c);
        if l.is_ascii_lowercase() || l.is_ascii_digit() || matches!(l, '.' | '_' | '-') {
            if bad {
                out.push('_');
            }
            bad = false;
            out.push(l);
        } else {
            bad = true;
        }
    }
    if bad {
        out.push('_');
    }
    let trim = |c: char| matches!(c, '_' | '.' | '-');
    let mut value = out.trim_matches(trim).to_owned();
    if value.len() > LABEL_VALUE_MAX {
        value.truncate(LABEL_VALUE_MAX);
        let end = value.trim_end_matches(trim).len();
        value.truncate(end);
    }
    (!value.is_empty()).then_some(value)
}

/// Upstream's `sanitizeNameComponent`: lowercase, runs of `[^a-z0-9-]` become `-`, runs of `-`
/// collapse, trimmed of `-`.
fn sanitize_name_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_owned()
}

/// The name and tag upstream's `ExtractImageParts` derives from an image reference (the tag is
/// the first 6 digest characters for `@sha256:` references, `latest` when absent), sanitised.
pub fn image_name_and_tag(image: &str) -> Option<(String, String)> {
    let repository = match image.find('/') {
        Some(i) if i > 0 => {
            let first = &image[..i];
            if first.contains('.') || first.contains(':') || first == "localhost" {
                &image[i + 1..]
            } else {
                image
            }
        }
        _ => image,
    };
    let last = repository.rsplit('/').next().unwrap_or(repository);
    let (name, tag) = if let Some((name, digest)) = last.split_once('@') {
        let (_, hash) = digest.split_once(':')?;
        if hash.is_empty() {
            return None;
        }
        (name, hash.chars().take(6).collect::<String>())
    } else if let Some((name, tag)) = last.split_once(':') {
        if tag.is_empty() {
            return None;
        }
        (name, tag.to_owned())
    } else {
        (last, "latest".to_owned())
    };
    let (name, tag) = (sanitize_name_component(name), sanitize_name_component(&tag));
    (!name.is_empty() && !tag.is_empty()).then_some((name, tag))
}

/// The metric's short form in template names (`latency` → `lat`, `throughput` → `thr`).
fn metric_short(metric: &str) -> &str {
    match metric {
        "latency" => "lat",
        "throughput" => "thr",
        other => other,
    }
}

/// A recommended deployment, as template names see it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deployment<'a> {
    /// `gpuModel` (`MI300X`), empty when absent.
    pub gpu_model: &'a str,
    /// `gpuCount`, 0 when absent.
    pub gpu_count: i64,
    /// `metric`, empty when absent.
    pub metric: &'a str,
    /// `precision`, empty when absent.
    pub precision: &'a str,
}

/// NOTES row 4 (aim-engine `internal/aimservicetemplate/utils.go` `GenerateTemplateName`): the
/// auto-generated template of a model's recommended deployment,
/// `[image, "<count>x-<gpu>-<lat|thr>-<precision>"]` hashed over
/// `"<model>-<image>[-<gpu>][-x<count>][-<metric>][-<precision>]"`, 4 hex.
pub fn template_name(
    model: &str,
    image: &str,
    deployment: Deployment<'_>,
) -> Result<Dns1123Label, NameError> {
    let d = deployment;
    let mut suffix = Vec::new();
    if d.gpu_count > 0 && !d.gpu_model.is_empty() {
        suffix.push(format!("{}x-{}", d.gpu_count, d.gpu_model));
    } else if !d.gpu_model.is_empty() {
        suffix.push(d.gpu_model.to_owned());
    } else if d.gpu_count > 0 {
        suffix.push(format!("x{}", d.gpu_count));
    }
    if !d.metric.is_empty() {
        suffix.push(metric_short(d.metric).to_owned());
    }
    if !d.precision.is_empty() {
        suffix.push(d.precision.to_owned());
    }
    let mut hash = format!("{model}-{image}");
    if !d.gpu_model.is_empty() {
        hash.push('-');
        hash.push_str(d.gpu_model);
    }
    if d.gpu_count > 0 {
        hash.push_str("-x");
        hash.push_str(&d.gpu_count.to_string());
    }
    for field in [d.metric, d.precision] {
        if !field.is_empty() {
            hash.push('-');
            hash.push_str(field);
        }
    }
    generate_derived_name(
        &[image, &suffix.join("-")],
        &[HashInput::Str(hash)],
        4,
        DNS1123_LABEL_MAX,
    )
}

/// A service's overrides, as derived template names see them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides<'a> {
    /// `hardware.gpu.model`.
    pub gpu_model: Option<&'a str>,
    /// `hardware.gpu.requests` (0: unset).
    pub gpu_count: i64,
    /// `precision`.
    pub precision: Option<&'a str>,
    /// `metric`.
    pub metric: Option<&'a str>,
}

/// NOTES row 12 (aim-engine `internal/aimservice/template.go` `generateDerivedTemplateName`):
/// `[base, "ovr", <gpu lower>, "<n>gpu", precision, metric]` hashed over
/// `("gpu", model, "count", n, "precision", p, "metric", m)` (present pairs only), 4 hex; the
/// base name itself when nothing is overridden.
pub fn derived_template_name(
    base: &str,
    overrides: Overrides<'_>,
) -> Result<Dns1123Label, NameError> {
    let mut parts = vec![base.to_owned(), "ovr".to_owned()];
    let mut hash: Vec<HashInput> = Vec::new();
    if let Some(gpu) = overrides.gpu_model.filter(|g| !g.is_empty()) {
        parts.push(gpu.to_lowercase());
        hash.extend(["gpu".into(), gpu.into()]);
    }
    if overrides.gpu_count > 0 {
        parts.push(format!("{}gpu", overrides.gpu_count));
        hash.extend(["count".into(), overrides.gpu_count.into()]);
    }
    for (key, value) in [
        ("precision", overrides.precision),
        ("metric", overrides.metric),
    ] {
        if let Some(value) = value {
            parts.push(value.to_owned());
            hash.extend([key.into(), value.into()]);
        }
    }
    if parts.len() == 2 {
        return Dns1123Label::new(base);
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    generate_derived_name(&refs, &hash, 4, DNS1123_LABEL_MAX)
}

/// A custom template of a custom model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CustomTemplate<'a> {
    /// Index in `spec.customTemplates` (0 for the implicit single template).
    pub index: i64,
    /// `name` (the alias), empty when absent.
    pub alias: &'a str,
    /// `profile.precision`, empty when absent.
    pub precision: &'a str,
    /// `profile.metric`, empty when absent.
    pub metric: &'a str,
    /// GPU count, 0 when absent.
    pub gpu_count: i64,
    /// GPU model, empty when absent.
    pub gpu_model: &'a str,
}

/// NOTES row 5 (aim-engine `internal/aimmodel/template.go`): `[model, "custom", alias?,
/// precision?, gpuModel?]` hashed over `(model, index, alias, precision, metric, count,
/// gpuModel)`, 8 hex. The hash inputs' Go types are taken from NOTES (strings, integers);
/// not verified against the upstream source.
pub fn custom_template_name(model: &str, t: CustomTemplate<'_>) -> Result<Dns1123Label, NameError> {
    let mut parts = vec![model, "custom"];
    parts.extend(
        [t.alias, t.precision, t.gpu_model]
            .into_iter()
            .filter(|p| !p.is_empty()),
    );
    generate_derived_name(
        &parts,
        &[
            model.into(),
            t.index.into(),
            t.alias.into(),
            t.precision.into(),
            t.metric.into(),
            t.gpu_count.into(),
            t.gpu_model.into(),
        ],
        AIM_HASH_LEN,
        DNS1123_LABEL_MAX,
    )
}

/// NOTES row 13 (aim-engine `internal/aimservice/model.go` `GenerateModelName`): the AIMModel
/// auto-created for a service's image, `[imageName, tag]` hashed over the image URI, e.g.
/// `aim-qwen-qwen3-32b-0-8-5-cdc1fb22`.
pub fn image_model_name(image: &str) -> Result<Dns1123Label, NameError> {
    let image = image.trim();
    let (name, tag) = image_name_and_tag(image).ok_or_else(|| NameError::Invalid {
        kind: "image reference",
        value: image.to_owned(),
    })?;
    generate_derived_name(
        &[&name, &tag],
        &[image.into()],
        AIM_HASH_LEN,
        DNS1123_LABEL_MAX,
    )
}

/// KServe's `<isvc>-predictor-<namespace>` hostname label.
const PREDICTOR_INFIX: &str = "-predictor-";

/// NOTES row 14 (aim-engine `internal/aimservice/kserve.go` `GenerateInferenceServiceName`):
/// `[service]` hashed over the namespace, at most `63 - len("-predictor-") - len(namespace)`,
/// e.g. `qwen-chat-a04542d9`: the suffix is always present. Fails for namespaces over 42.
pub fn inference_service_name(service: &str, namespace: &str) -> Result<Dns1123Label, NameError> {
    let max = DNS1123_LABEL_MAX.saturating_sub(PREDICTOR_INFIX.len() + namespace.len());
    if max < 10 {
        return Err(NameError::NamespaceTooLong {
            namespace: namespace.to_owned(),
            max: DNS1123_LABEL_MAX - PREDICTOR_INFIX.len() - 10,
        });
    }
    generate_derived_name(&[service], &[namespace.into()], AIM_HASH_LEN, max)
}

/// NOTES row 17 (aim-engine `internal/aimservice/httproute.go`): the HTTPRoute of an
/// AIMService, `[service]` hashed over the namespace, at most 63 (equal to the
/// InferenceService's name unless that had to be cut further).
pub fn route_name(service: &str, namespace: &str) -> Result<Dns1123Label, NameError> {
    generate_derived_name(
        &[service],
        &[namespace.into()],
        AIM_HASH_LEN,
        DNS1123_LABEL_MAX,
    )
}

/// Upstream's name for `parts` hashed over `hash`, unless a part does not survive into it
/// verbatim: then the hash also covers every part's full text, so inputs that differ only in
/// what was cut (or in characters a name cannot hold, `a.b` and `a-b`) get different names.
///
/// The rule of both template cache names (NOTES row 20). Upstream hashes only the namespace
/// (Shared) or the service UID (Dedicated), so two templates whose names agree in the
/// characters the name keeps get one cache name, and services then either re-apply that
/// cache at each other without end (Shared; upstream's own `qwen3-32b` MI300X latency fp8
/// and fp16 templates do) or find their own cache serving the previous template (Dedicated,
/// after the template changed). A name whose parts all survive is upstream's, so caches the
/// upstream operator created are still found.
fn derived_name_keeping_parts(
    parts: &[&str],
    hash: &[HashInput],
) -> Result<Dns1123Label, NameError> {
    let upstream = generate_derived_name(parts, hash, AIM_HASH_LEN, DNS1123_LABEL_MAX)?;
    // `<part>-...-<part>-<hash>` with every part unchanged: no other input maps to this name.
    let name = upstream.as_str();
    let verbatim = name.len() == parts.iter().map(|p| p.len() + 1).sum::<usize>() + AIM_HASH_LEN
        && name.starts_with(&format!("{}-", parts.join("-")));
    if verbatim {
        return Ok(upstream);
    }
    let mut hash = hash.to_vec();
    hash.extend(parts.iter().map(|&p| HashInput::from(p)));
    generate_derived_name(parts, &hash, AIM_HASH_LEN, DNS1123_LABEL_MAX)
}

/// NOTES row 20 (aim-engine `internal/aimservice/caching.go` `GenerateTemplateCacheName`):
/// the Shared-mode AIMTemplateCache of a template, `[template]` hashed over the namespace
/// (and the template's name when it does not survive verbatim: [`derived_name_keeping_parts`]).
pub fn shared_template_cache_name(
    template: &str,
    namespace: &str,
) -> Result<Dns1123Label, NameError> {
    derived_name_keeping_parts(&[template], &[namespace.into()])
}

/// NOTES row 20: the Dedicated-mode AIMTemplateCache of a service, upstream's name:
/// `[template, service]` hashed over the service's UID, so the Dedicated caches of existing
/// services (upstream's or an earlier kinfer's) keep their names and their downloads. When a
/// cut makes it the name of the service's cache of another template (its previous one), the
/// service uses [`dedicated_template_cache_name_of_template`] instead.
pub fn dedicated_template_cache_name(
    template: &str,
    service: &str,
    service_uid: &str,
) -> Result<Dns1123Label, NameError> {
    generate_derived_name(
        &[template, service],
        &[service_uid.into()],
        AIM_HASH_LEN,
        DNS1123_LABEL_MAX,
    )
}

/// The Dedicated cache name that is the template's alone: [`dedicated_template_cache_name`]
/// when both names survive in it verbatim, else hashed over both full names too
/// ([`derived_name_keeping_parts`]), so two templates of one service never share it.
pub fn dedicated_template_cache_name_of_template(
    template: &str,
    service: &str,
    service_uid: &str,
) -> Result<Dns1123Label, NameError> {
    derived_name_keeping_parts(&[template, service], &[service_uid.into()])
}

/// NOTES row 21 (aim-engine `internal/aimtemplatecache/reconcile.go` `generateArtifactName`):
/// `[sourceUri with '.'→'-']` hashed over `(sourceUri, env, storageClass[, "dedicated",
/// templateCache])`, 10 hex. `env` is the cache env merged with the source's; upstream merges
/// through a Go map, so with more than one variable its order (and name) is not stable
/// upstream: callers pass it sorted by name.
pub fn artifact_name(
    source_uri: &str,
    env: &[EnvVar],
    storage_class: &str,
    dedicated_cache: Option<&str>,
) -> Result<Dns1123Label, NameError> {
    let mut hash = vec![
        source_uri.into(),
        HashInput::Env(env.to_vec()),
        storage_class.into(),
    ];
    if let Some(cache) = dedicated_cache {
        hash.extend(["dedicated".into(), cache.into()]);
    }
    generate_derived_name(
        &[&source_uri.replace('.', "-")],
        &hash,
        10,
        DNS1123_LABEL_MAX,
    )
}

/// NOTES row 22 (aim-engine `internal/aimartifact/{pvc,download}.go`): an artifact's child,
/// `[artifact, stage]` hashed over the artifact's UID; `stage` is `check-size`, `cache` (the
/// PVC) or `download`.
pub fn artifact_child_name(
    artifact: &str,
    artifact_uid: &str,
    stage: &str,
) -> Result<Dns1123Label, NameError> {
    generate_derived_name(
        &[artifact, stage],
        &[artifact_uid.into()],
        AIM_HASH_LEN,
        DNS1123_LABEL_MAX,
    )
}

/// NOTES row 24 (aim-engine `internal/aimclustermodelsource`): a catalog AIMClusterModel,
/// `[repository, tag]` hashed over `(registry, repository, tag)`, 6 hex.
pub fn cluster_model_name(
    registry: &str,
    repository: &str,
    tag: &str,
) -> Result<Dns1123Label, NameError> {
    generate_derived_name(
        &[repository, tag],
        &[registry.into(), repository.into(), tag.into()],
        6,
        DNS1123_LABEL_MAX,
    )
}

/// What a discovery Job's name hashes (NOTES section c).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiscoveryHash<'a> {
    /// The model's name.
    pub model: &'a str,
    /// The AIM image.
    pub image: &'a str,
    /// The service account, empty when absent.
    pub service_account: &'a str,
    /// The template's env (names and literal values are hashed; `valueFrom` is not).
    pub env: &'a [EnvVar],
    /// Pull secret names.
    pub image_pull_secrets: &'a [String],
    /// Metric, empty when absent.
    pub metric: &'a str,
    /// Precision, empty when absent.
    pub precision: &'a str,
    /// `(gpu model, gpu requests)` when the template has a GPU section.
    pub gpu: Option<(&'a str, i64)>,
    /// Profile ID, empty when absent.
    pub profile_id: &'a str,
    /// What kinfer adds to upstream's inputs (the Job's resources when not the default),
    /// hashed last; empty gives upstream's name.
    pub kinfer: &'a str,
}

/// NOTES section c (aim-engine `internal/aimservicetemplate/discovery.go` `BuildDiscoveryJob`):
/// `discover-<template[:45]>-<hex(sha256(in)[:4])>` where `in` concatenates, without
/// separators, model, image, service account, each env `name+value`, each pull secret, metric,
/// precision, GPU model and count, profile ID. The template is cut by bytes, unsanitised.
pub fn discovery_job_name(template: &str, h: DiscoveryHash<'_>) -> Result<Dns1123Label, NameError> {
    let mut input = format!("{}{}{}", h.model, h.image, h.service_account);
    for var in h.env {
        input.push_str(&var.name);
        input.push_str(var.value.as_deref().unwrap_or_default());
    }
    for secret in h.image_pull_secrets {
        input.push_str(secret);
    }
    input.push_str(h.metric);
    input.push_str(h.precision);
    if let Some((model, count)) = h.gpu {
        input.push_str(model);
        input.push_str(&count.to_string());
    }
    input.push_str(h.profile_id);
    input.push_str(h.kinfer);
    let digest = Sha256::digest(input.as_bytes());
    let mut cut = template.len().min(45);
    while !template.is_char_boundary(cut) {
        cut -= 1;
    }
    Dns1123Label::new(format!(
        "discover-{}-{}",
        &template[..cut],
        hex::encode(&digest[..4])
    ))
}

#[cfg(test)]
#[path = "aim_tests.rs"]
mod tests;
