//! The leak report: what is still allocated when an address space is gone.
//!
//! ## Invariants
//!
//! - A table page is in the report exactly when its `allocated` flag is set
//!   (every slot ever handed out is scanned); data frames are counted by the
//!   data allocator and the per-thread lists.

use super::{lock, PhysMem, TABLE_ZONE_BASE};
use crate::sync::Ordering;

/// What [`PhysMem::leaks`] found still allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeakReport {
    /// Physical addresses of table pages still allocated.
    pub tables: Vec<u64>,
    pub data_frames: u64,
    pub data_bytes: u64,
}

impl LeakReport {
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.data_frames == 0
    }
}

impl PhysMem {
    /// Everything still allocated: after an address space is torn down, a
    /// non-empty report is a leak.
    pub fn leaks(&self) -> LeakReport {
        let next = lock(&self.tables).next_slot;
        let mut tables: Vec<u64> = (0..next)
            .filter(|&s| self.meta_of_slot(s).allocated.load(Ordering::Acquire))
            .map(|s| TABLE_ZONE_BASE + (s << self.page_shift))
            .collect();
        if let Some(c) = &self.compact {
            tables.extend(c.allocated());
        }
        let (data_frames, data_bytes) = self.live_data();
        LeakReport {
            tables,
            data_frames,
            data_bytes,
        }
    }
}
