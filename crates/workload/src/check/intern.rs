//! Region names after `{tid}` expansion, interned as region ids.

use super::*;

impl<'a, 'd> Checker<'a, 'd> {
    /// Gives every region name (after `{tid}` expansion) its id, in thread
    /// order then program order.
    pub(super) fn intern(&mut self) -> Result<()> {
        for block in &self.doc.blocks {
            let mut lo = usize::MAX;
            each_op(&block.ops, &mut |op| lo = lo.min(op.id));
            self.id_base.push(lo);
        }
        for t in self.threads {
            let block = &self.doc.blocks[t.block];
            let base = self.id_base[t.block];
            let mut ids: Vec<Option<RegionId>> = Vec::new();
            let mut dests: Vec<Option<RegionId>> = Vec::new();
            let mut err = None;
            each_op(&block.ops, &mut |op| {
                let slot = op.id - base;
                if ids.len() <= slot {
                    ids.resize(slot + 1, None);
                    dests.resize(slot + 1, None);
                }
                let Some(name) = op.verb.region() else {
                    return;
                };
                let Some(id) = self.intern_name(name.expand(t.tid), op.at, &mut err) else {
                    return;
                };
                ids[slot] = Some(id);
                if let VerbSyn::Mremap(syntax::MremapSyn { to: Some(to), .. }) = &op.verb {
                    dests[slot] = self.intern_name(to.v.expand(t.tid), to.at, &mut err);
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            self.dest_of.push(dests);
            self.resolved.push(vec![None; ids.len()]);
            self.region_of.push(ids);
        }
        Ok(())
    }

    /// The id of region `name` (first named at `at`), a new one if it has
    /// none yet; `None` (with `err` set) past [`MAX_REGIONS`].
    pub(super) fn intern_name(
        &mut self,
        name: String,
        at: usize,
        err: &mut Option<WorkloadError>,
    ) -> Option<RegionId> {
        if let Some(id) = self.by_name.get(&name) {
            return Some(*id);
        }
        if self.regions.len() >= MAX_REGIONS {
            err.get_or_insert(WorkloadError::Structure {
                at: self.src.loc(at),
                problem: format!("more than {MAX_REGIONS} distinct regions"),
            });
            return None;
        }
        self.regions.push(RegionState {
            name: name.clone(),
            max_size: 0,
            named_at: at,
            mapping: None,
            fixed: None,
            first_map: None,
            last_unmap: None,
        });
        self.by_name.insert(name, self.regions.len() - 1);
        Some(self.regions.len() - 1)
    }
}
