//! `pt`: the page-table engine.
//!
//! Page tables of every geometry ptlab knows (x86-64 4- and 5-level, RISC-V
//! Sv39/48/57 with 4 KiB or a 64 KiB software page, ARM64 4K/16K/64K granules)
//! built as real table pages in simulated physical memory, with bit-exact
//! hardware entries.
//!
//! - [`geometry`]: a page-table format as data (levels, index bits, leaf sizes).
//! - [`entry`]: the neutral view of an entry and the bit-exact codecs per architecture.
//! - [`mem`]: simulated physical memory: the table-page arena and the frame allocator.
//! - [`table`]: one tree: the table layer's primitives (named as Linux's pgtable.h:
//!   `set_ptes`, `ptep_get_and_clear`, `split_huge_leaf`, `contpte_try_unfold`,
//!   `install_table`, ...) over [`Level`] and [`TableAddr`], translate, iterate,
//!   and the tree-wide conveniences map, unmap, protect, free.
//! - [`account`]: table pages, bytes and occupancy per level.
//! - [`text`]: positions in configuration text, for errors that say where.
//!
//! This crate knows nothing of processes, VMAs or time (DESIGN.md).

pub mod account;
pub mod entry;
pub mod geometry;
pub mod mem;
pub mod sync;
pub mod table;
pub mod text;

pub use entry::{Attrs, Entry, MemType, Perms};
pub use geometry::{Arch, Geometry, GeometryError, LevelSpec};
pub use mem::{MemError, PhysMem};
pub use table::{Level, PageTable, PtError, TableAddr, Translation};
