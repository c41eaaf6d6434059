//! Page-table memory per level: table pages, bytes, and how full the tables
//! are, so that internal fragmentation (a 64 KiB table holding one entry) is
//! visible.

use crate::entry::Entry;
use crate::sync::Ordering;
use crate::table::{Level, PageTable, PtError, TableAddr, VirtAddr};

/// The accounting of one level of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelAccount {
    /// Level index (0 = leaf level).
    pub level: usize,
    pub name: String,
    /// Table pages of this level in the tree.
    pub tables: u64,
    /// Bytes of those tables.
    pub bytes: u64,
    /// Present entries over all tables of this level.
    pub present: u64,
    /// Entries those tables could hold.
    pub capacity: u64,
    /// `occupancy[0]` counts tables with no present entry, `occupancy[k]`
    /// (k >= 1) tables with `2^(k-1)` to `2^k - 1` present entries.
    pub occupancy: Vec<u64>,
}

impl LevelAccount {
    /// Present entries per possible entry, 0 to 1.
    pub fn fill(&self) -> f64 {
        if self.capacity == 0 {
            0.0
        } else {
            self.present as f64 / self.capacity as f64
        }
    }
}

/// The bucket of [`LevelAccount::occupancy`] for `present` entries.
pub fn occupancy_bucket(present: u64) -> usize {
    if present == 0 {
        0
    } else {
        present.ilog2() as usize + 1
    }
}

/// Walks the whole tree and accounts every table, root first.
///
/// # Errors
/// [`PtError::Corrupt`] for a reserved encoding.
pub fn account(pt: &PageTable) -> Result<Vec<LevelAccount>, PtError> {
    let g = pt.geometry();
    let mut acc: Vec<LevelAccount> = g
        .levels()
        .iter()
        .enumerate()
        .map(|(i, l)| LevelAccount {
            level: i,
            name: l.name.clone(),
            tables: 0,
            bytes: 0,
            present: 0,
            capacity: 0,
            occupancy: vec![0; l.bits as usize + 2],
        })
        .collect();
    visit(pt, pt.root(), g.root_level(), 0, &mut acc)?;
    acc.reverse();
    Ok(acc)
}

fn visit(
    pt: &PageTable,
    table: u64,
    level: usize,
    base: u64,
    acc: &mut [LevelAccount],
) -> Result<(), PtError> {
    let g = pt.geometry();
    let l = g.level(level);
    let present = u64::from(pt.mem().meta(table).present.load(Ordering::Relaxed));
    let a = &mut acc[level];
    a.tables += 1;
    a.bytes += g.table_bytes();
    a.present += present;
    a.capacity += l.entries();
    a.occupancy[occupancy_bucket(present)] += 1;
    if level == 0 || present == 0 {
        return Ok(());
    }
    for i in 0..l.entries() {
        let va = base + i * l.entry_size();
        if let Entry::Table { pa } =
            pt.read_entry(TableAddr::new(table), Level::new(level), VirtAddr::new(va))?
        {
            visit(pt, pa, level - 1, va, acc)?;
        }
    }
    Ok(())
}
