//! The tree over a range as indented text, for people reading it.

use super::types::{Level, VirtAddr};
use super::{Mapping, PageTable, PtError, TableAddr};
use crate::entry::{Attrs, Entry};
use std::fmt::Write as _;

impl PageTable {
    // ---------------------------------------------------------------
    // Dump.

    /// The tree over `[va, va + len)` as indented text: one line per table
    /// entry, and runs of leaves with consecutive addresses and equal
    /// attributes grouped on one line.
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn dump(&self, va: VirtAddr, len: u64) -> Result<String, PtError> {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} root {:#x} ({} table)",
            self.geom.name(),
            self.root,
            self.geom.level(self.geom.root_level()).name
        );
        if len > 0 {
            self.dump_walk(
                self.root_table(),
                self.root_level(),
                va,
                va.saturating_add(len - 1),
                1,
                &mut s,
            )?;
        }
        Ok(s)
    }

    fn dump_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        depth: usize,
        s: &mut String,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level.get());
        let below = g.level(level.get().saturating_sub(1));
        let size = l.entry_size();
        let mut group: Option<Mapping> = None;
        let indent = "  ".repeat(depth);
        let flush_group = |group: &mut Option<Mapping>, s: &mut String| {
            if let Some(m) = group.take() {
                let _ = writeln!(
                    s,
                    "{indent}{:#014x}-{:#014x} -> {:#x} {} {}{}",
                    m.va,
                    m.va + (m.size - 1),
                    m.pa,
                    l.name,
                    attrs_str(&m.attrs),
                    if m.contiguous { " contiguous" } else { "" }
                );
            }
        };
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => {
                flush_group(&mut group, s);
                Ok(size)
            }
            Entry::Swap { val } => {
                flush_group(&mut group, s);
                let _ = writeln!(s, "{indent}{:#014x} swap entry {:#x}", va, val);
                Ok(size)
            }
            Entry::Table { pa } => {
                flush_group(&mut group, s);
                let present = self.present_entries(TableAddr::new(pa));
                let _ = writeln!(
                    s,
                    "{indent}{:#014x} {} -> {} table {:#x} ({} of {} present)",
                    va,
                    l.name,
                    below.name,
                    pa,
                    present,
                    below.entries()
                );
                self.dump_walk(
                    TableAddr::new(pa),
                    level.down(),
                    va.max(first),
                    (va + (size - 1)).min(last),
                    depth + 1,
                    s,
                )?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                match &mut group {
                    // Runs of leaves with consecutive addresses and equal
                    // attributes print as one line.
                    Some(gm)
                        if gm.va + gm.size == m.va
                            && gm.pa + gm.size == m.pa
                            && gm.attrs == m.attrs
                            && gm.contiguous == m.contiguous =>
                    {
                        gm.size += m.size
                    }
                    _ => {
                        flush_group(&mut group, s);
                        group = Some(m);
                    }
                }
                Ok(m.size)
            }
        })?;
        flush_group(&mut group, s);
        Ok(())
    }
}

fn attrs_str(a: &Attrs) -> String {
    format!(
        "{}{}{}{}{}{}",
        if a.perms.read { 'r' } else { '-' },
        if a.perms.write { 'w' } else { '-' },
        if a.perms.exec { 'x' } else { '-' },
        if a.perms.user { " user" } else { " kernel" },
        if a.accessed { " A" } else { "" },
        if a.dirty { " D" } else { "" },
    )
}
