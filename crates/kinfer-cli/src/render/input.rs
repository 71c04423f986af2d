//! Reading the manifests given to `kinfer render -f PATH...`.
//!
//! Contract: each PATH is a file or a directory. Directories are walked recursively in byte
//! order of their entry names, taking files ending in `.yaml`, `.yml` or `.json` (except
//! `kustomization.yaml`/`.yml`, which are kustomize's, not objects). Each file is one or more
//! YAML documents (JSON is YAML); empty documents are skipped but still counted, so
//! [`Document::index`] (1-based) is the position a user sees when counting `---` separators.
//! Every document must be a mapping with string `apiVersion`, `kind` and `metadata.name`;
//! anything else is an [`InvalidInput`] naming the file, the document and the field.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One YAML document of an input file.
#[derive(Debug, Clone)]
pub struct Document {
    /// The file it came from, as given (or as found under a given directory).
    pub file: PathBuf,
    /// 1-based position of the document in the file.
    pub index: usize,
    /// The object.
    pub value: Value,
}

impl Document {
    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or_default()
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `metadata.namespace`, when set.
    pub fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }

    /// `file: document N (Kind ns/name)`, the prefix of every message about this document.
    pub fn origin(&self) -> String {
        let object = match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
            None => format!("{} {}", self.kind(), self.name()),
        };
        format!(
            "{}: document {} ({object})",
            self.file.display(),
            self.index
        )
    }

    /// An [`InvalidInput`] about `path` in this document.
    pub fn invalid(&self, path: impl Into<String>, message: impl Into<String>) -> InvalidInput {
        InvalidInput {
            file: self.file.clone(),
            index: Some(self.index),
            object: Some(self.origin()),
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Input that cannot be rendered: unreadable, not YAML, or an invalid object. `kinfer` exits
/// with [`crate::exit::INVALID_INPUT`].
#[derive(Debug, Clone)]
pub struct InvalidInput {
    /// The file.
    pub file: PathBuf,
    /// 1-based document index, when the problem is inside a document.
    pub index: Option<usize>,
    /// `file: document N (Kind ns/name)`, when the document is an object.
    pub object: Option<String>,
    /// Field path (`spec.canary.weight`), empty when the problem is the whole document or file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.object, self.index) {
            (Some(object), _) => write!(f, "{object}")?,
            (None, Some(i)) => write!(f, "{}: document {i}", self.file.display())?,
            (None, None) => write!(f, "{}", self.file.display())?,
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InvalidInput {}

/// Several invalid documents, reported together so a user fixes them in one edit.
#[derive(Debug, Clone)]
pub struct InvalidInputs(pub Vec<InvalidInput>);

impl fmt::Display for InvalidInputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid input")?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidInputs {}

fn is_manifest(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == "kustomization.yaml" || name == "kustomization.yml" {
        return false;
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InvalidInput> {
    let unreadable = |e: std::io::Error| InvalidInput {
        file: dir.to_path_buf(),
        index: None,
        object: None,
        path: String::new(),
        message: format!("cannot read directory: {e}"),
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, out)?;
        } else if is_manifest(&entry) {
            out.push(entry);
        }
    }
    Ok(())
}

/// The manifest files named by `paths`, in order (directories expanded).
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InvalidInput> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut out)?;
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// Parses one file's documents; see the module contract.
pub fn parse_file(file: &Path) -> Result<Vec<Document>, InvalidInput> {
    let whole = |message: String| InvalidInput {
        file: file.to_path_buf(),
        index: None,
        object: None,
        path: String::new(),
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|e| whole(format!("cannot read: {e}")))?;
    let values: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| whole(format!("not valid YAML: {e}")))?;
    let mut docs = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        if value.is_null() {
            continue;
        }
        let doc = Document {
            file: file.to_path_buf(),
            index: i + 1,
            value,
        };
        check_shape(&doc)?;
        docs.push(doc);
    }
    Ok(docs)
}

fn check_shape(doc: &Document) -> Result<(), InvalidInput> {
    let bare = |path: &str, message: &str| InvalidInput {
        file: doc.file.clone(),
        index: Some(doc.index),
        object: None,
        path: path.to_owned(),
        message: message.to_owned(),
    };
    if !doc.value.is_object() {
        return Err(bare(
            "",
            "a document must be a Kubernetes object (a mapping)",
        ));
    }
    for field in ["apiVersion", "kind"] {
        if doc.value[field].as_str().is_none_or(str::is_empty) {
            return Err(bare(field, "required (a non-empty string)"));
        }
    }
    if doc.value["metadata"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        return Err(bare(
            "metadata.name",
            "required (a non-empty string; generateName is not supported by render)",
        ));
    }
    if let Some(ns) = doc.value["metadata"].get("namespace")
        && !ns.is_string()
    {
        return Err(doc.invalid("metadata.namespace", "must be a string"));
    }
    Ok(())
}

/// Every document of every file under `paths`.
pub fn read(paths: &[PathBuf]) -> Result<Vec<Document>, InvalidInput> {
    let mut docs = Vec::new();
    for file in files(paths)? {
        docs.extend(parse_file(&file)?);
    }
    Ok(docs)
}
