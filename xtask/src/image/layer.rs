//! Image layers as the OCI image spec wants them, built byte for byte the same from the same
//! inputs: a tar archive with entries in the order given (callers sort them), every entry owned
//! by the uid and gid it names, modified at `SOURCE_DATE_EPOCH`, no user or group names, then
//! gzip with no name and no timestamp in its header.
//!
//! May: build archives in memory. May not: read anything but the files it is handed.

use std::io::Write;

use anyhow::{Context, Result};
use flate2::{Compression, GzBuilder};
use sha2::{Digest, Sha256};

/// One entry of a layer.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A directory (path without a trailing slash).
    Dir { path: String, mode: u32, owner: u64 },
    /// A regular file.
    File {
        path: String,
        mode: u32,
        owner: u64,
        content: Vec<u8>,
    },
}

/// A built layer: its gzip bytes, their digest, and the digest of the tar inside (the
/// config's `diff_id`).
#[derive(Debug, Clone)]
pub struct Layer {
    pub gzip: Vec<u8>,
    pub digest: String,
    pub diff_id: String,
}

/// `sha256:<hex>` of `data`.
pub fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// A layer of `entries`, each stamped `mtime` (seconds since the epoch).
pub fn build(entries: &[Entry], mtime: u64) -> Result<Layer> {
    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        header.set_mtime(mtime);
        match entry {
            Entry::Dir { path, mode, owner } => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(*mode);
                header.set_uid(*owner);
                header.set_gid(*owner);
                header.set_size(0);
                header.set_cksum();
                tar.append_data(&mut header, format!("{path}/"), std::io::empty())
                    .with_context(|| format!("adding {path}/"))?;
            }
            Entry::File {
                path,
                mode,
                owner,
                content,
            } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_uid(*owner);
                header.set_gid(*owner);
                header.set_size(content.len() as u64);
                header.set_cksum();
                tar.append_data(&mut header, path, content.as_slice())
                    .with_context(|| format!("adding {path}"))?;
            }
        }
    }
    let tar = tar.into_inner().context("finishing the tar archive")?;
    let mut gz = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::best());
    gz.write_all(&tar).context("compressing the layer")?;
    let gzip = gz.finish().context("finishing the gzip stream")?;
    Ok(Layer {
        digest: sha256(&gzip),
        diff_id: sha256(&tar),
        gzip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        vec![
            Entry::Dir {
                path: "etc".to_owned(),
                mode: 0o755,
                owner: 0,
            },
            Entry::File {
                path: "etc/group".to_owned(),
                mode: 0o644,
                owner: 0,
                content: b"nonroot:x:65532:\n".to_vec(),
            },
        ]
    }

    #[test]
    fn the_same_entries_give_the_same_bytes() {
        let a = build(&entries(), 1_700_000_000).unwrap();
        let b = build(&entries(), 1_700_000_000).unwrap();
        assert_eq!(a.gzip, b.gzip);
        assert_eq!(a.diff_id, b.diff_id);
        let c = build(&entries(), 1_700_000_001).unwrap();
        assert_ne!(a.diff_id, c.diff_id, "the timestamp is in the archive");
    }

    #[test]
    fn the_archive_holds_the_entries_with_their_owners() {
        let layer = build(&entries(), 1_700_000_000).unwrap();
        let tar = flate2::read::GzDecoder::new(layer.gzip.as_slice());
        let mut archive = tar::Archive::new(tar);
        let seen: Vec<(String, u64, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.uid().unwrap(),
                    h.mtime().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("etc/".to_owned(), 0, 1_700_000_000),
                ("etc/group".to_owned(), 0, 1_700_000_000)
            ]
        );
    }
}
