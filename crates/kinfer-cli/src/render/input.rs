//! Reading the manifests given to `kinfer render -f PATH...`.
//!
//! Contract: each PATH is a file or a directory. Directories are walked recursively in byte
//! order of their entry names, taking files ending in `.yaml`, `.yml` or `.json` (except
//! `kustomization.yaml`/`.yml`, which are kustomize's, not objects). Each file is one or more
//! YAML documents (JSON is YAML), split as kubectl splits them ([`split`]: a line `---`,
//! optionally followed by spaces or a comment, ends a document; nothing between two
//! separators is no document; a document of only comments or blank lines counts but is
//! skipped), so [`Document::index`] (1-based) is the number kubectl would give it.
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

/// The manifest files named by `paths`, in order (directories expanded).
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InvalidInput> {
    kinfer_testkit::files_under(paths, is_manifest).map_err(|(dir, e)| InvalidInput {
        file: dir,
        index: None,
        object: None,
        path: String::new(),
        message: format!("cannot read directory: {e}"),
    })
}

/// Whether `line` (without its newline) is a document separator, as kubectl's YAML reader
/// decides: `---` at the start, then only spaces or a comment.
fn is_separator(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim();
        rest.is_empty() || rest.starts_with('#')
    })
}

/// The documents of a YAML stream with their 1-based numbers; see the module contract. Each
/// document's text is preceded by as many empty lines as the file had before it, so YAML
/// errors name the line of the file.
pub fn split(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut lines_before = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if is_separator(line.trim_end_matches(['\n', '\r'])) {
            if !current.is_empty() {
                let padded = "\n".repeat(lines_before) + &std::mem::take(&mut current);
                out.push((out.len() + 1, padded));
            }
            lines_before = n + 1;
        } else {
            current.push_str(line);
        }
    }
    if !current.is_empty() {
        out.push((out.len() + 1, "\n".repeat(lines_before) + &current));
    }
    out
}

/// Whether a document holds only blank lines and comments.
fn is_blank(document: &str) -> bool {
    document
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
}

/// Parses one file's documents; see the module contract.
pub fn parse_file(file: &Path) -> Result<Vec<Document>, InvalidInput> {
    let text = std::fs::read_to_string(file).map_err(|e| InvalidInput {
        file: file.to_path_buf(),
        index: None,
        object: None,
        path: String::new(),
        message: format!("cannot read: {e}"),
    })?;
    let mut docs = Vec::new();
    for (index, document) in split(&text) {
        if is_blank(&document) {
            continue;
        }
        let value: Value = serde_saphyr::from_str(&document).map_err(|e| InvalidInput {
            file: file.to_path_buf(),
            index: Some(index),
            object: None,
            path: String::new(),
            message: format!("not valid YAML: {e}"),
        })?;
        if value.is_null() {
            continue;
        }
        let doc = Document {
            file: file.to_path_buf(),
            index,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_numbered_as_kubectl_numbers_them() {
        let text = "---\n---\na: 1\n--- # second\n# only a comment\n---\nb: 2\n---\n";
        let docs = split(text);
        let numbers: Vec<usize> = docs.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(docs[0].1, "\n\na: 1\n");
        assert!(is_blank(&docs[1].1));
        assert_eq!(docs[2].1.trim_start(), "b: 2\n");
        assert_eq!(docs[2].1.lines().count(), 7, "b is on line 7 of the file");
        assert_eq!(split("a: 1").len(), 1);
        assert!(split("").is_empty());
        assert!(!is_separator("---x"));
        assert!(!is_separator(" ---"));
        assert!(is_separator("---  "));
    }
}
