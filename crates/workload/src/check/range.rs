//! Ranges of an op: inside the region, mapped, and a thread's slice of a split touch.

use super::*;

impl<'a, 'd> Checker<'a, 'd> {
    /// The op's range in the region as mapped now; with `whole`, every page
    /// of it must be mapped.
    pub(super) fn range(
        &self,
        t: &Thread,
        op: &OpSyn,
        region: RegionId,
        syn: &RangeSyn,
        whole: bool,
    ) -> Result<Range> {
        let state = &self.regions[region];
        let Some(m) = &state.mapping else {
            let problem = match &state.last_unmap {
                Some((_, at)) => format!(
                    "is not mapped here (the munmap at {} unmapped it)",
                    self.src.line_col(*at)
                ),
                None => "is not mapped here".to_string(),
            };
            let hint =
                "; mmap it earlier in this thread, or in another thread before a barrier both pass";
            return Err(self.region_err(t, op, op.at, region, problem, hint));
        };
        let offset = syn.offset.as_ref().map_or(0, |o| o.v);
        if offset >= m.size {
            let at = syn.offset.as_ref().map_or(op.at, |o| o.at);
            let problem = format!(
                "has size {} here, but offset {} lies past its end",
                format_size(m.size),
                format_size(offset)
            );
            return Err(self.region_err(t, op, at, region, problem, ""));
        }
        let len = syn.len.as_ref().map_or(m.size - offset, |l| l.v);
        let end = offset.checked_add(len).filter(|e| *e <= m.size);
        let Some(end) = end else {
            let at = syn.len.as_ref().map_or(op.at, |l| l.at);
            let problem = format!(
                "has size {} here, but offset {} + len {} reaches past its end",
                format_size(m.size),
                format_size(offset),
                format_size(len)
            );
            return Err(self.region_err(t, op, at, region, problem, ""));
        };
        if whole {
            if let Some(hole) = m.pages.first_hole(offset, end) {
                let problem = format!(
                    "is not mapped at offset {} (part of it was unmapped), inside the range of this {}",
                    format_size(hole),
                    op.verb.name()
                );
                return Err(self.region_err(t, op, op.at, region, problem, ""));
            }
        }
        Ok(Range { offset, len })
    }

    /// Narrows a touch to thread `t`'s slice and count.
    pub(super) fn split(&self, t: &Thread, op: &OpSyn, whole: Range) -> Result<(Range, u64)> {
        let (VerbSyn::Touch(touch) | VerbSyn::NodeOf(touch)) = &op.verb else {
            unreachable!("split is for touches and node_of")
        };
        let n = t.block_count as u64;
        let (range, count) = match touch.split {
            None => (whole, touch.count.as_ref().map(|c| c.v)),
            Some(part_at) => {
                let unit = FORMAT_PAGE * n;
                if !whole.len.is_multiple_of(unit) {
                    return Err(WorkloadError::BadValue {
                        at: self.src.loc(part_at),
                        key: "part".into(),
                        context: self.context(t, op),
                        expected: format!(
                            "a range that splits into equal 4 KiB multiples among the block's {n} threads (a multiple of {})",
                            format_size(unit)
                        ),
                        found: format!("\"split\" over {}", format_size(whole.len)),
                    });
                }
                let len = whole.len / n;
                let range = Range {
                    offset: whole.offset + len * t.index_in_block as u64,
                    len,
                };
                let count = match &touch.count {
                    None => None,
                    Some(c) if c.v % n == 0 => Some(c.v / n),
                    Some(c) => {
                        return Err(WorkloadError::BadValue {
                            at: self.src.loc(c.at),
                            key: "count".into(),
                            context: self.context(t, op),
                            expected: format!(
                                "with part = \"split\", a count that divides evenly among the block's {n} threads"
                            ),
                            found: c.v.to_string(),
                        });
                    }
                };
                (range, count)
            }
        };
        let count = count.unwrap_or_else(|| range.len.div_ceil(touch.stride));
        Ok((range, count))
    }
}
