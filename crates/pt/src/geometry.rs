//! A page-table geometry as data.
//!
//! A geometry says how a virtual address is cut into table indices: the base
//! page (which is also the size of every table page), the index bits of each
//! level, which levels may hold a leaf, and how many entries make a
//! contiguous (ARM) or NAPOT (RISC-V Svnapot) run. Nothing else in ptlab
//! branches on a level count: adding a format is adding a preset here and, if
//! its bits are new, a codec in [`crate::entry`].
//!
//! A [`Geometry`] is its numbers, a [`Layout`] (which it dereferences to),
//! plus the names and level specifications people read. What depends on the
//! architecture (which hardware pages exist, where contiguous runs may sit,
//! the default output width, the codec's per-level word tests) is asked of
//! the geometry's [`crate::entry::Architecture`]; this module names no
//! architecture. Dependencies run `layout` <- `entry` <- `geometry`.
//!
//! Levels are indexed from the leaf: `levels[0]` is the PTE level (L3 on
//! ARM64), the last one is the root.
//!
//! ## Software pages larger than the hardware page
//!
//! The RISC-V 64 KiB proposal keeps the hardware's 4 KiB Sv39 walk but lets
//! the OS manage memory in 64 KiB units. One *software* entry is then a group
//! of `2^(page_shift - hw_page_shift)` = 16 consecutive hardware entries, a
//! table page is 64 KiB (16 hardware tables), and a leaf at the PTE level is a
//! NAPOT run of 16 hardware PTEs. [`Layout::hw_words_per_entry`] is 1 for
//! every other geometry. The software split (38-34, 33-25, 24-16, 15-0 for
//! Sv39) is what [`Layout::index`] computes; the hardware walk uses
//! [`Layout::hw_index`].
//!
//! ## Invariants (checked by [`Geometry::new`])
//!
//! - `levels[0].shift == page_shift`, and each level starts where the one
//!   below ends: `levels[i+1].shift == levels[i].shift + levels[i].bits`.
//! - The root ends at `va_bits`.
//! - A table of a level fits in one table page:
//!   `2^bits * 8 * hw_words_per_entry <= 2^page_shift`.
//! - `levels[0]` is always a leaf level.

use serde::Deserialize;
use thiserror::Error;

use crate::entry::{self, Architecture};
use crate::layout::LevelShape;

pub use crate::layout::{Arch, Layout, ENTRY_BYTES, MAX_LEVELS};

/// One level of a geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelSpec {
    /// As the architecture names it: PGD/P4D/PUD/PMD/PTE, or L0..L3 on ARM64.
    pub name: String,
    /// Lowest virtual-address bit this level indexes (software view).
    pub shift: u32,
    /// Index bits (software view): a table of this level has `2^bits` entries.
    pub bits: u32,
    /// Whether an entry of this level may be a leaf (a page or block).
    pub leaf: bool,
    /// Entries in a contiguous (ARM) or NAPOT (RISC-V) run at this level; 0 if
    /// the architecture has none here.
    pub contig: u32,
}

impl LevelSpec {
    /// Bytes mapped by one entry of this level.
    pub fn entry_size(&self) -> u64 {
        1u64 << self.shift
    }
    /// Entries in one table of this level.
    pub fn entries(&self) -> u64 {
        1u64 << self.bits
    }
    /// Highest virtual-address bit this level indexes (inclusive).
    pub fn high_bit(&self) -> u32 {
        self.shift + self.bits - 1
    }
}

/// How a leaf of a given size is built: at which level, from how many entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafKind {
    pub level: usize,
    /// 1 for a plain leaf; the run length for a contiguous / NAPOT leaf.
    pub entries: u32,
    pub size: u64,
}

impl LeafKind {
    pub fn is_contiguous(&self) -> bool {
        self.entries > 1
    }
}

/// A checked page-table geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    layout: Layout,
    name: String,
    levels: Vec<LevelSpec>,
    description: String,
}

/// A geometry reads as its numbers: `g.page_shift()`, `g.index(level, va)`,
/// and a `&Geometry` is accepted where a codec asks for a `&Layout`.
impl std::ops::Deref for Geometry {
    type Target = Layout;
    #[inline(always)]
    fn deref(&self) -> &Layout {
        &self.layout
    }
}

/// Why a geometry is impossible.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GeometryError {
    #[error("unknown geometry \"{name}\"; known: {known}")]
    UnknownName { name: String, known: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

impl Geometry {
    /// Builds a geometry from its parts, checking every invariant of the module.
    ///
    /// `levels` go from the leaf up (index 0 = leaf); their `shift` is
    /// recomputed from `page_shift` and the bits below, so callers only give
    /// names, bits, leaf and contig.
    ///
    /// # Errors
    /// [`GeometryError::Invalid`] naming the level and the rule it breaks.
    pub fn new(
        name: &str,
        arch: Arch,
        page_shift: u32,
        hw_page_shift: u32,
        oa_bits: u32,
        mut levels: Vec<LevelSpec>,
    ) -> Result<Geometry, GeometryError> {
        let bad = |m: String| Err(GeometryError::Invalid(format!("geometry \"{name}\": {m}")));
        if levels.is_empty() {
            return bad("it has no levels".into());
        }
        if levels.len() > MAX_LEVELS {
            return bad(format!(
                "{} levels; at most {MAX_LEVELS} are supported",
                levels.len()
            ));
        }
        if !(12..=16).contains(&page_shift) {
            return bad(format!(
                "page_shift {page_shift}: the base page must be 4 KiB to 64 KiB (12..=16)"
            ));
        }
        if hw_page_shift > page_shift || hw_page_shift < 12 {
            return bad(format!(
                "hw_page_shift {hw_page_shift}: must be at least 12 and at most page_shift {page_shift}"
            ));
        }
        let a = arch.architecture();
        if !a.hw_page_shifts().contains(&hw_page_shift) {
            return bad(format!(
                "{arch} {}, not 2^{hw_page_shift}",
                a.hw_page_rule()
            ));
        }
        if hw_page_shift != page_shift && !a.software_pages() {
            return bad(format!(
                "{arch} has no software page larger than its hardware page"
            ));
        }
        let group = 1u64 << (page_shift - hw_page_shift);
        let mut shift = page_shift;
        for (i, l) in levels.iter_mut().enumerate() {
            if l.bits == 0 || l.bits > 16 {
                return bad(format!(
                    "level {i} (\"{}\") has {} index bits; expected 1 to 16",
                    l.name, l.bits
                ));
            }
            l.shift = shift;
            let table_bytes = l.entries() * ENTRY_BYTES * group;
            if table_bytes > 1u64 << page_shift {
                return bad(format!(
                    "level {i} (\"{}\"): 2^{} entries of {} bytes need {} bytes, more than one {}-byte table page",
                    l.name,
                    l.bits,
                    ENTRY_BYTES * group,
                    table_bytes,
                    1u64 << page_shift
                ));
            }
            if l.contig != 0 {
                if !l.contig.is_power_of_two() || u64::from(l.contig) > l.entries() {
                    return bad(format!(
                        "level {i} (\"{}\"): a contiguous run of {} entries must be a power of two no larger than the table ({} entries)",
                        l.name, l.contig, l.entries()
                    ));
                }
                if !l.leaf {
                    return bad(format!(
                        "level {i} (\"{}\"): contiguous runs need a level that may hold leaves",
                        l.name
                    ));
                }
                if !a.allows_contiguous_run(i, l.contig, group) {
                    return bad(format!(
                        "level {i} (\"{}\"): {}",
                        l.name,
                        a.contiguous_rule()
                    ));
                }
            }
            shift += l.bits;
        }
        if !levels[0].leaf {
            return bad("the lowest level must hold leaves".into());
        }
        if shift > 64 {
            return bad(format!("the levels index {shift} bits; at most 64"));
        }
        if !(32..=56).contains(&oa_bits) {
            return bad(format!("oa_bits {oa_bits}: expected 32 to 56"));
        }
        let shapes: Vec<LevelShape> = levels
            .iter()
            .map(|l| LevelShape {
                shift: l.shift,
                bits: l.bits,
                leaf: l.leaf,
                contig: l.contig,
            })
            .collect();
        let mut layout = Layout::new(arch, page_shift, hw_page_shift, shift, oa_bits, &shapes);
        // The codec's word tests, computed once (see `layout`'s invariants).
        for level in 0..levels.len() {
            let table = entry::table_fields(&layout, level);
            let leaf = entry::leaf_test(&layout, level);
            layout.set_word_tests(level, table, leaf);
        }
        let g = Geometry {
            layout,
            name: name.to_string(),
            levels,
            description: String::new(),
        };
        Ok(g)
    }

    fn with_description(mut self, d: &str) -> Geometry {
        self.description = d.to_string();
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn description(&self) -> &str {
        &self.description
    }
    pub fn levels(&self) -> &[LevelSpec] {
        &self.levels
    }
    pub fn level(&self, level: usize) -> &LevelSpec {
        &self.levels[level]
    }

    /// The architecture of the geometry's entries: its codec and its rules.
    pub fn architecture(&self) -> &'static dyn Architecture {
        self.arch().architecture()
    }

    /// Every leaf size the geometry allows, ascending, with how it is built.
    pub fn leaf_kinds(&self) -> Vec<LeafKind> {
        let mut v = Vec::new();
        for (i, l) in self.levels.iter().enumerate() {
            if l.leaf {
                v.push(LeafKind {
                    level: i,
                    entries: 1,
                    size: l.entry_size(),
                });
                if l.contig > 1 {
                    v.push(LeafKind {
                        level: i,
                        entries: l.contig,
                        size: l.entry_size() * u64::from(l.contig),
                    });
                }
            }
        }
        v.sort_by_key(|k| k.size);
        v
    }

    /// Every leaf size the geometry allows, ascending.
    pub fn leaf_sizes(&self) -> Vec<u64> {
        self.leaf_kinds().iter().map(|k| k.size).collect()
    }

    /// How a leaf of `size` bytes is built, if the geometry allows it.
    pub fn leaf_kind(&self, size: u64) -> Option<LeafKind> {
        self.leaf_kinds().into_iter().find(|k| k.size == size)
    }

    /// The size of one table page of this geometry, in bytes, as a human string.
    pub fn summary(&self) -> String {
        let names: Vec<&str> = self.levels.iter().rev().map(|l| l.name.as_str()).collect();
        format!(
            "{}: {} levels ({}), {}-bit VA, {} pages",
            self.name,
            self.levels.len(),
            names.join(" > "),
            self.va_bits(),
            human_size(self.page_size())
        )
    }
}

/// `4096` -> "4 KiB", `2097152` -> "2 MiB".
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut u = 0;
    let mut v = bytes;
    while v >= 1024 && v.is_multiple_of(1024) && u < UNITS.len() - 1 {
        v /= 1024;
        u += 1;
    }
    format!("{v} {}", UNITS[u])
}

fn lvl(name: &str, bits: u32, leaf: bool, contig: u32) -> LevelSpec {
    LevelSpec {
        name: name.to_string(),
        shift: 0,
        bits,
        leaf,
        contig,
    }
}

/// Declares the built-in geometries: each name is a geometry file under
/// `crates/pt/presets/` (the form [`from_toml`] reads, with the sources it
/// follows in its comments), compiled into the binary. Adding a preset is
/// adding its file and its name here.
macro_rules! presets {
    ($($name:literal),* $(,)?) => {
        /// Names of the presets, in the order `ptlab geometry list` shows them.
        pub const PRESET_NAMES: &[&str] = &[$($name),*];
        /// The text of each preset's file, in [`PRESET_NAMES`] order.
        const PRESET_FILES: &[&str] =
            &[$(include_str!(concat!("../presets/", $name, ".toml"))),*];
    };
}

presets!(
    "x86-64-4l",
    "x86-64-5l",
    "riscv-sv39",
    "riscv-sv48",
    "riscv-sv57",
    "riscv-sv39-64k",
    "riscv-sv48-64k",
    "arm64-4k-48",
    "arm64-16k-48",
    "arm64-64k-48",
    "arm64-64k-52",
);

/// A built-in geometry by name.
///
/// # Errors
/// [`GeometryError::UnknownName`] listing the known names.
pub fn preset(name: &str) -> Result<Geometry, GeometryError> {
    let Some(i) = PRESET_NAMES.iter().position(|n| *n == name) else {
        return Err(GeometryError::UnknownName {
            name: name.to_string(),
            known: PRESET_NAMES.join(", "),
        });
    };
    let path = format!("crates/pt/presets/{name}.toml");
    // The presets are fixed data: a failure is a bug in that file.
    let g = from_toml(&path, PRESET_FILES[i]).unwrap_or_else(|e| panic!("preset {name}: {e}"));
    assert_eq!(
        g.name(),
        name,
        "{path}: the name key differs from the file name"
    );
    Ok(g)
}

/// Every preset, in [`PRESET_NAMES`] order.
pub fn presets() -> Vec<Geometry> {
    PRESET_NAMES
        .iter()
        .map(|n| preset(n).expect("preset names are known"))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileGeometry {
    name: String,
    arch: String,
    page_shift: u32,
    hw_page_shift: Option<u32>,
    oa_bits: Option<u32>,
    description: Option<String>,
    /// From the root down, as the seeds draw addresses.
    level: Vec<FileLevel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLevel {
    name: String,
    bits: u32,
    #[serde(default)]
    leaf: bool,
    #[serde(default)]
    contig: u32,
}

/// Reads a geometry from TOML text (`path` only names it in errors).
///
/// ```toml
/// name = "x86-like-10bit"
/// arch = "x86-64"          # which entry codec: x86-64, riscv, arm64
/// page_shift = 12
/// [[level]]                # from the root down
/// name = "PGD"
/// bits = 9
/// [[level]]
/// name = "PTE"
/// bits = 9
/// leaf = true
/// ```
///
/// # Errors
/// [`GeometryError::File`] with the line and column of a syntax or type
/// error, or the rule an impossible geometry breaks.
pub fn from_toml(path: &str, text: &str) -> Result<Geometry, GeometryError> {
    let file_err = |message: String| GeometryError::File {
        path: path.to_string(),
        message,
    };
    let fg: FileGeometry = toml::from_str(text).map_err(|e| {
        let (line, col) = crate::text::toml_error_at(text, &e);
        file_err(format!(
            "{line}:{col}: {}",
            e.message().lines().next().unwrap_or("invalid TOML")
        ))
    })?;
    let arch = Arch::parse(&fg.arch).ok_or_else(|| {
        file_err(format!(
            "key \"arch\": unknown architecture \"{}\"; expected x86-64, riscv or arm64",
            fg.arch
        ))
    })?;
    let levels: Vec<LevelSpec> = fg
        .level
        .iter()
        .rev()
        .map(|l| lvl(&l.name, l.bits, l.leaf, l.contig))
        .collect();
    let a = arch.architecture();
    let oa = fg.oa_bits.unwrap_or(a.default_oa_bits());
    // A software page only where the architecture has them, over its
    // smallest hardware page.
    let hw_default = if a.software_pages() {
        fg.page_shift.min(a.hw_page_shifts()[0])
    } else {
        fg.page_shift
    };
    let g = Geometry::new(
        &fg.name,
        arch,
        fg.page_shift,
        fg.hw_page_shift.unwrap_or(hw_default),
        oa,
        levels,
    )
    .map_err(|e| file_err(e.to_string()))?;
    Ok(g.with_description(fg.description.as_deref().unwrap_or("from a geometry file")))
}

/// A preset name or the path of a geometry file.
///
/// # Errors
/// As [`preset`] and [`from_toml`]; an unreadable file names the path.
pub fn load(name_or_path: &str) -> Result<Geometry, GeometryError> {
    if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
        let text = std::fs::read_to_string(name_or_path).map_err(|e| GeometryError::File {
            path: name_or_path.to_string(),
            message: format!("cannot read the geometry file: {e}"),
        })?;
        from_toml(name_or_path, &text)
    } else {
        preset(name_or_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_file_is_declared_and_every_name_has_a_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut declared: Vec<String> = PRESET_NAMES.iter().map(|n| format!("{n}.toml")).collect();
        declared.sort();
        assert_eq!(files, declared);
        for n in PRESET_NAMES {
            assert_eq!(preset(n).unwrap().name(), *n);
        }
    }

    fn split(g: &Geometry) -> Vec<(String, u32, u32)> {
        g.levels()
            .iter()
            .rev()
            .map(|l| (l.name.clone(), l.high_bit(), l.shift))
            .collect()
    }

    #[test]
    fn x86_64_4_level_matches_the_seed_figure() {
        let g = preset("x86-64-4l").unwrap();
        assert_eq!(g.va_bits(), 48);
        assert_eq!(
            split(&g),
            vec![
                ("PGD".into(), 47, 39),
                ("PUD".into(), 38, 30),
                ("PMD".into(), 29, 21),
                ("PTE".into(), 20, 12)
            ]
        );
        assert_eq!(g.leaf_sizes(), vec![4096, 2 << 20, 1 << 30]);
    }

    #[test]
    fn x86_64_5_level_adds_p4d_and_starts_pgd_at_bit_56() {
        let g = preset("x86-64-5l").unwrap();
        assert_eq!(g.va_bits(), 57);
        let s = split(&g);
        assert_eq!(s[0], ("PGD".into(), 56, 48));
        assert_eq!(s[1], ("P4D".into(), 47, 39));
    }

    #[test]
    fn riscv_64k_software_split_matches_the_rfc() {
        let g = preset("riscv-sv39-64k").unwrap();
        assert_eq!(
            split(&g),
            vec![
                ("PGD".into(), 38, 34),
                ("PMD".into(), 33, 25),
                ("PTE".into(), 24, 16)
            ]
        );
        assert_eq!(g.hw_words_per_entry(), 16);
        // The hardware still walks Sv39: 38-30, 29-21, 20-12.
        assert_eq!(
            (g.hw_shift(2), g.hw_bits(2)),
            (30, 9),
            "hardware root covers 38-30"
        );
        assert_eq!((g.hw_shift(1), g.hw_bits(1)), (21, 9));
        assert_eq!((g.hw_shift(0), g.hw_bits(0)), (12, 9));
        assert_eq!(g.leaf_sizes(), vec![64 << 10, 32 << 20, 16 << 30]);
    }

    #[test]
    fn every_preset_keeps_the_invariants() {
        for g in presets() {
            let mut shift = g.page_shift();
            for l in g.levels() {
                assert_eq!(l.shift, shift, "{}", g.name());
                assert!(
                    l.entries() * 8 * g.hw_words_per_entry() <= g.table_bytes(),
                    "{}",
                    g.name()
                );
                shift += l.bits;
            }
            assert_eq!(shift, g.va_bits());
            assert!(g.levels()[0].leaf);
        }
    }

    #[test]
    fn arm_granules_have_their_architected_blocks() {
        let g = preset("arm64-16k-48").unwrap();
        assert_eq!(g.levels()[3].bits, 1, "L0 of 16K/48-bit has two entries");
        assert_eq!(g.leaf_sizes(), vec![16 << 10, 2 << 20, 32 << 20, 1 << 30]);
        let g = preset("arm64-64k-52").unwrap();
        assert_eq!(g.va_bits(), 52);
        assert_eq!(g.levels()[2].bits, 10);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = preset("x86-64-6l").unwrap_err().to_string();
        assert!(
            e.contains("x86-64-6l") && e.contains("riscv-sv39-64k"),
            "{e}"
        );
    }

    #[test]
    fn canonical_addresses() {
        let g = preset("x86-64-4l").unwrap();
        assert!(g.is_canonical(0x7fff_ffff_f000));
        assert!(!g.is_canonical(0x8000_0000_0000));
        assert!(g.is_canonical(0xffff_8000_0000_0000));
        let g5 = preset("x86-64-5l").unwrap();
        assert!(g5.is_canonical(0x8000_0000_0000));
    }

    #[test]
    fn geometry_files_are_checked() {
        let ok = "name = \"t\"\narch = \"x86-64\"\npage_shift = 12\n[[level]]\nname = \"PGD\"\nbits = 9\n[[level]]\nname = \"PTE\"\nbits = 9\nleaf = true\n";
        let g = from_toml("t.toml", ok).unwrap();
        assert_eq!(g.va_bits(), 30);
        assert_eq!(g.levels()[1].name, "PGD");

        let too_wide = ok.replace("bits = 9\nleaf", "bits = 10\nleaf");
        let e = from_toml("t.toml", &too_wide).unwrap_err().to_string();
        assert!(
            e.starts_with("t.toml: ") && e.contains("more than one"),
            "{e}"
        );

        let typo = ok.replace("page_shift", "page_shfit");
        let e = from_toml("t.toml", &typo).unwrap_err().to_string();
        assert!(e.starts_with("t.toml: 3:"), "{e}");

        let no_leaf = ok.replace("leaf = true\n", "");
        let e = from_toml("t.toml", &no_leaf).unwrap_err().to_string();
        assert!(e.contains("lowest level must hold leaves"), "{e}");

        let napot_high = "name = \"t\"\narch = \"riscv\"\npage_shift = 12\n[[level]]\nname = \"PMD\"\nbits = 9\nleaf = true\ncontig = 16\n[[level]]\nname = \"PTE\"\nbits = 9\nleaf = true\n";
        let e = from_toml("t.toml", napot_high).unwrap_err().to_string();
        assert!(e.contains("Svnapot"), "{e}");
    }
}
