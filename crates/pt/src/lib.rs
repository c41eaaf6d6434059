//! `pt`: the page-table engine.
//!
//! Page tables of every geometry ptlab knows (x86-64 4- and 5-level, RISC-V
//! Sv39/48/57 with 4 KiB or a 64 KiB software page, ARM64 4K/16K/64K granules)
//! built as real table pages in simulated physical memory, with bit-exact
//! hardware entries.
//!
//! - [`layout`]: a geometry's numbers (shifts, masks, the codec's word
//!   tests per level): what codecs and walks read.
//! - [`entry`]: the neutral view of an entry, and each architecture as one
//!   [`entry::Architecture`] (its bit-exact codec and its hardware's rules),
//!   dispatched in one place ([`entry::arch`]).
//! - [`geometry`]: a page-table format as data (levels, index bits, leaf
//!   sizes), checked against its architecture's rules; presets and files.
//! - [`mem`]: simulated physical memory: the table-page arena, the metadata
//!   beside each table page, the frame allocators.
//! - [`table`]: one tree: the table layer's primitives (named as Linux's pgtable.h:
//!   `set_ptes`, `ptep_get_and_clear`, `split_huge_leaf`, `contpte_try_unfold`,
//!   `install_table`, ...) over [`Level`] and [`TableAddr`], translate, iterate,
//!   and the tree-wide conveniences map, unmap, protect, free.
//! - [`account`]: table pages, bytes and occupancy per level.
//! - [`text`]: positions in configuration text, for errors that say where.
//! - [`accel`]: the list of host-side accelerations, what each shortcuts,
//!   why it is exact and the test that holds it to the plain path.
//!
//! Modules depend one way: `layout` <- `entry` <- `geometry` <- `table`,
//! and `mem` <- `table` (memory knows no geometry).
//!
//! This crate knows nothing of processes, VMAs or time (docs/design.md).

pub mod accel;
pub mod account;
pub mod entry;
pub mod geometry;
pub mod layout;
pub mod mem;
pub mod sync;
pub mod table;
pub mod text;

pub use entry::{Architecture, Attrs, Entry, MemType, Perms};
pub use geometry::{Arch, Geometry, GeometryError, LevelSpec};
pub use mem::{MemError, PhysMem};
pub use table::{LeafRun, Level, PageTable, PhysAddr, PtError, TableAddr, Translation, VirtAddr};
