//! VRAM sizes: Kubernetes quantities (`minVram`), device-plugin label values, and the table.
//!
//! Contract: every size is a byte count (`u64`). A `minVram` is a Kubernetes quantity, so
//! `192G` is 192·10⁹ bytes and `192Gi` is 192·2³⁰; fractional bytes round up (a minimum never
//! shrinks). Device-plugin labels use the GPU vendors' convention instead: `amd.com/gpu.vram`
//! `192G` means 192 GiB, and `nvidia.com/gpu.memory` is a plain number of MiB. The table's
//! `vram_gib` column is GiB.

use std::fmt;

use super::table::GpuSpec;

const KIB: u64 = 1024;
const MIB: u64 = KIB * 1024;
const GIB: u64 = MIB * 1024;
const TIB: u64 = GIB * 1024;

/// Where a VRAM figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VramSource {
    /// A node label (`amd.com/gpu.vram`, `nvidia.com/gpu.memory`).
    Label,
    /// The GPU table.
    Table,
}

/// Per-GPU memory and where the figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vram {
    /// Bytes.
    pub bytes: u64,
    /// Source of the figure.
    pub source: VramSource,
}

impl Vram {
    /// The table figure for a GPU row.
    pub fn from_table(spec: &GpuSpec) -> Self {
        Vram {
            bytes: u64::from(spec.vram_gib) * GIB,
            source: VramSource::Table,
        }
    }
}

impl fmt::Display for Vram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ByteSize(self.bytes))
    }
}

/// Renders a byte count with the largest binary unit that divides it (`192Gi`, `81559Mi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [(TIB, "Ti"), (GIB, "Gi"), (MIB, "Mi"), (KIB, "Ki")];
        match units
            .iter()
            .find(|(size, _)| self.0 != 0 && self.0.is_multiple_of(*size))
        {
            Some((size, unit)) => write!(f, "{}{unit}", self.0 / size),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Parses an AMD device-plugin VRAM label (`192G`, `192Gi`, `196608M`): binary units, `G` is
/// GiB. `None` when the value is not a size.
pub fn parse_amd_vram_label(raw: &str) -> Option<u64> {
    let s = raw.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let number: u64 = s[..digits].parse().ok()?;
    let unit = match s[digits..].trim_end_matches(['i', 'B']) {
        "" => 1,
        "K" | "k" => KIB,
        "M" => MIB,
        "G" => GIB,
        "T" => TIB,
        _ => return None,
    };
    number.checked_mul(unit)
}

/// Parses `nvidia.com/gpu.memory` (MiB as a plain integer, `81559`).
pub fn parse_nvidia_memory_label(raw: &str) -> Option<u64> {
    raw.trim().parse::<u64>().ok()?.checked_mul(MIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(parse_amd_vram_label("192G"), Some(192 * GIB));
        assert_eq!(parse_amd_vram_label("192Gi"), Some(192 * GIB));
        assert_eq!(parse_amd_vram_label("196608M"), Some(192 * GIB));
        assert_eq!(parse_amd_vram_label("lots"), None);
        assert_eq!(parse_nvidia_memory_label("81559"), Some(81_559 * MIB));
        assert_eq!(parse_nvidia_memory_label("80GB"), None);
    }

    #[test]
    fn display() {
        assert_eq!(ByteSize(192 * GIB).to_string(), "192Gi");
        assert_eq!(ByteSize(81_559 * MIB).to_string(), "81559Mi");
        assert_eq!(ByteSize(1000).to_string(), "1000");
        assert_eq!(ByteSize(0).to_string(), "0");
    }
}
