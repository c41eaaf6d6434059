//! `mremap` of a whole region: the checks of docs/format.md, "mremap".

use super::*;

impl<'a, 'd> Checker<'a, 'd> {
    /// `mremap` of the whole of `region` (see "mremap" in docs/format.md):
    /// one VMA (no hole, one set of attributes), of any kind, not grown
    /// past the end of its file or shmem object; without `to`, resized in place (the region's largest size
    /// reserves the room to grow); with `to`, moved onto that region, whose
    /// own mapping (if any, and no longer than the new size) is unmapped
    /// first, and `region` is unmapped after.
    pub(super) fn mremap(
        &mut self,
        t: &Thread,
        op: &OpSyn,
        region: RegionId,
        m: &syntax::MremapSyn,
        now: Moment,
        users: &mut HashMap<RegionId, Vec<User>>,
    ) -> Result<()> {
        let whole = RangeSyn::default();
        let r = self.range(t, op, region, &whole, true)?;
        let mapping = self.mapping(region);
        let first = mapping
            .pages
            .first_where(0, r.len, |_| true)
            .map(|(_, a)| a)
            .expect("range() checked it is mapped");
        if let Some((at, _)) = mapping.pages.first_where(0, r.len, |a| a != first) {
            let problem = format!(
                "changes protection, lock or hugepage advice at offset {}, so it is several VMAs; mremap of more than one VMA is not supported",
                format_size(at)
            );
            return Err(self.region_err(t, op, op.at, region, problem, ""));
        }
        // The object (file, shmem) ends where the region's mmap ended:
        // Linux would grow the mapping past it, but every access there is
        // SIGBUS, which a workload cannot survive.
        if let Some(room) = mapping.object_room.filter(|&room| m.size.v > room) {
            let problem = format!(
                "is a {} mapping whose object ends {} from its start; mremap to size {} would map past the object's end (an access there is SIGBUS)",
                kind_name(mapping.kind, mapping.shared),
                format_size(room),
                format_size(m.size.v)
            );
            return Err(self.region_err(t, op, m.size.at, region, problem, ""));
        }
        let (kind, shared, object_room) = (mapping.kind, mapping.shared, mapping.object_room);
        let new = m.size.v;
        let slot = op.id - self.id_base[t.block];
        let Some(dest) = self.dest_of[t.tid][slot] else {
            let state = &mut self.regions[region];
            state.max_size = state.max_size.max(new);
            let mapping = state.mapping.as_mut().expect("checked above");
            mapping.size = new;
            mapping.pages = Pages::mapped(new, first);
            return self.resolve(t, op, region, r, 0);
        };
        let to = m.to.as_ref().expect("a destination region comes from `to`");
        if dest == region {
            let problem = "is both the mremap's source and its destination (to)".to_string();
            return Err(self.region_err(t, op, to.at, region, problem, ""));
        }
        self.one_changer(t, op, dest, users)?;
        // MREMAP_FIXED unmaps whatever is mapped at the destination first
        // (Linux mremap_to: do_munmap of [new_addr, new_addr + new_len)).
        // A destination mapped past `size` would keep its tail mapped: the
        // region would then be two mappings, which a region is not.
        if let Some(old) = &self.regions[dest].mapping {
            if old.size > new {
                let problem = format!(
                    "is mapped {} long (by the mmap at {}), longer than the mremap's size {}: its tail would stay mapped, which is not supported",
                    format_size(old.size),
                    self.src.line_col(old.at),
                    format_size(new)
                );
                return Err(self.region_err(
                    t,
                    op,
                    to.at,
                    dest,
                    problem,
                    "; munmap it first, or remap to its size",
                ));
            }
        }
        let src = &mut self.regions[region];
        if let Some(at) = m.dontunmap {
            if new != r.len {
                let problem = format!(
                    "is {} long, and mremap with dontunmap = true keeps the size (Linux: EINVAL), but size is {}",
                    format_size(r.len),
                    format_size(new)
                );
                return Err(self.region_err(t, op, at, region, problem, ""));
            }
            // The source stays mapped, empty, unlocked (Linux:
            // dontunmap_complete clears VM_LOCKED and VM_LOCKONFAULT); its
            // attributes are otherwise the same.
            let mapping = src.mapping.as_mut().expect("checked above");
            mapping.pages.update(0, r.len, |a| Attrs {
                locked: false,
                onfault: false,
                ..a
            });
        } else {
            src.mapping = None;
            src.last_unmap = Some((now, op.at));
        }
        let d = &mut self.regions[dest];
        d.max_size = d.max_size.max(new);
        d.first_map.get_or_insert(now);
        d.last_unmap = None;
        d.mapping = Some(Mapping {
            size: new,
            kind,
            shared,
            object_room,
            at: op.at,
            tid: t.tid,
            pages: Pages::mapped(new, first),
        });
        self.resolve(t, op, region, r, 0)
    }
}
