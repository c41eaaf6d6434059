//! The invariant checker: walks the whole tree with the address space
//! quiescent (mmap lock held for writing) and compares what it finds with
//! the counters and the allocator.
//!
//! Checked: the VMAs are ordered, non-empty, page-aligned and do not
//! overlap; every linked table is live, linked once, and its present count
//! equals its present entries; every leaf lies inside a VMA (a huge PMD
//! inside one VMA: a VMA split splits the huge PMDs it straddles) and is counted
//! in the right RSS counter; huge PMDs have a deposited table; the per-level
//! table counts equal a recount (deposits at the PTE level); large folios'
//! map counts equal their mapped PTEs; every live data frame is accounted
//! for (no leak); with eager reclaim no empty PTE table stays linked.

use crate::config::Reclaim;
use crate::space::{lock_plain, AddressSpace, PageKind, Rss};
use crate::vma::Vmas;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

/// What the recount found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recount {
    pub tables_per_level: Vec<u64>,
    pub rss_pages: [i64; 3],
    pub anon_huge_pages: i64,
    pub anon_frames: u64,
    /// Swap entries in the tables, by slot.
    pub swap_slots: std::collections::BTreeMap<u64, u32>,
}

/// The frames one space accounts for, for the family check of fork.
#[derive(Default)]
struct Frames {
    zero: u64,
    anon_small: HashSet<u64>,
    folios: HashSet<u64>,
    objects: Vec<(*const crate::cache::MemObject, u64)>,
}

struct Walk<'a> {
    s: &'a AddressSpace,
    vmas: &'a Vmas,
    seen: HashSet<u64>,
    rc: Recount,
    folio_maps: HashMap<u64, u64>,
    anon_small: HashSet<u64>,
    errors: Vec<String>,
}

impl AddressSpace {
    /// Checks every invariant of the module documentation.
    ///
    /// # Errors
    /// Every violation found, one per line.
    ///
    /// A space that shares memory with another (fork) checks its frames
    /// with [`AddressSpace::check_family`] instead of alone.
    pub fn check_invariants(&self) -> Result<Recount, String> {
        let alone = std::sync::Arc::strong_count(&self.shares) == 1;
        self.check_inner(alone).map(|(rc, _)| rc)
    }

    /// Checks every live space of a fork family (the spaces sharing one
    /// memory and share table; exited ones are skipped): each space's own
    /// invariants, that every live data frame is held by some space, and
    /// that the share table counts each frame's holders exactly (a base
    /// page: one per PTE mapping it; a large folio: one per space holding
    /// it).
    ///
    /// # Errors
    /// Every violation found, one per line.
    pub fn check_family(spaces: &[&AddressSpace]) -> Result<(), String> {
        let mut errors = Vec::new();
        let mut holders: HashMap<u64, u64> = HashMap::new();
        let mut objects: Vec<*const crate::cache::MemObject> = Vec::new();
        let mut expected = 0u64;
        let live: Vec<&&AddressSpace> = spaces
            .iter()
            .filter(|s| !s.exited.load(Ordering::Acquire))
            .collect();
        for s in &live {
            match s.check_inner(false) {
                Err(e) => errors.push(e),
                Ok((_, f)) => {
                    expected += f.zero;
                    for pa in f.anon_small.iter().chain(f.folios.iter()) {
                        *holders.entry(*pa).or_default() += 1;
                    }
                    for (o, n) in f.objects {
                        if !objects.contains(&o) {
                            objects.push(o);
                            expected += n;
                        }
                    }
                }
            }
        }
        expected += holders.len() as u64;
        if let Some(first) = spaces.first() {
            // The swap cache's frames that no live space maps.
            expected += first
                .shares
                .swap
                .slots()
                .into_iter()
                .filter_map(|(_, s)| s.cache)
                .filter(|pa| !holders.contains_key(pa))
                .count() as u64;
            let (live_frames, _) = first.pt.mem().live_data();
            if live_frames != expected {
                errors.push(format!(
                    "family: {live_frames} data frames live, {expected} held by its spaces"
                ));
            }
            let table = lock_plain(&first.shares.extra).clone();
            for (pa, h) in &holders {
                let extra = table.get(pa).copied().unwrap_or(0);
                if extra + 1 != *h {
                    errors.push(format!(
                        "frame {pa:#x}: {h} holders, share table says {}",
                        extra + 1
                    ));
                }
            }
            for pa in table.keys() {
                if !holders.contains_key(pa) {
                    errors.push(format!("share table holds {pa:#x}, no space maps it"));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    fn check_inner(&self, leak_check: bool) -> Result<(Recount, Frames), String> {
        let (vmas, _) = self.vmas.write();
        let g = self.pt.geometry();
        let mut w = Walk {
            s: self,
            vmas: &vmas,
            seen: HashSet::new(),
            rc: Recount {
                tables_per_level: vec![0; g.num_levels()],
                ..Recount::default()
            },
            folio_maps: HashMap::new(),
            anon_small: HashSet::new(),
            errors: Vec::new(),
        };
        w.check_vma_order();
        let root = self.pt.root_level();
        w.rc.tables_per_level[root.get()] = 1;
        w.visit(self.pt.root_table(), root, VirtAddr::new(0));
        let deposits = lock_plain(&self.deposits).clone();
        for (va, t) in &deposits {
            if !self.pt.mem().is_live_table(t.pa()) || !w.seen.insert(t.pa()) {
                w.errors
                    .push(format!("deposit for {va:#x} is freed or also linked"));
            }
            w.rc.tables_per_level[Level::PTE.get()] += 1;
        }
        for (l, n) in w.rc.tables_per_level.iter().enumerate() {
            let l = Level::new(l);
            if *n != self.pt.tables_at(l) {
                w.errors.push(format!(
                    "{l}: {} tables linked or deposited, counter says {}",
                    n,
                    self.pt.tables_at(l)
                ));
            }
        }
        for k in 0..3 {
            let c = self.rss.sum(k);
            if c != w.rc.rss_pages[k] {
                w.errors.push(format!(
                    "rss[{k}]: counter {c}, recount {}",
                    w.rc.rss_pages[k]
                ));
            }
        }
        let slots = w.check_swap();
        let ah = self.anon_huge.load(Ordering::Relaxed);
        if ah != w.rc.anon_huge_pages {
            w.errors.push(format!(
                "anon_huge: counter {ah}, recount {}",
                w.rc.anon_huge_pages
            ));
        }
        let folios = lock_plain(&self.folios).clone();
        for (head, f) in &folios {
            let m = w.folio_maps.get(head).copied().unwrap_or(0);
            if m != f.mapped {
                w.errors.push(format!(
                    "folio {head:#x}: mapped {} but {m} PTEs map it",
                    f.mapped
                ));
            }
        }
        if self.nr_folios.load(Ordering::Relaxed) != folios.len() {
            w.errors.push("nr_folios differs from the registry".into());
        }
        // Leak check: every live data frame is a zero page, a mapped anon
        // page, a large folio or a page of a live object's cache.
        let mut objects: Vec<(*const crate::cache::MemObject, u64)> = Vec::new();
        let mut cache_frames = 0;
        for v in vmas.iter() {
            if let Some(o) = v.object() {
                let p = std::sync::Arc::as_ptr(o);
                if !objects.iter().any(|(q, _)| *q == p) {
                    objects.push((p, o.frames()));
                    cache_frames += o.frames();
                }
            }
        }
        let zero = 1 + u64::from(self.huge_zero_pa.is_some());
        // The swap cache's frames that no PTE of this space maps.
        let swap_cache = slots
            .values()
            .filter_map(|s| s.cache)
            .filter(|pa| !w.anon_small.contains(pa))
            .count() as u64;
        let expected =
            zero + w.anon_small.len() as u64 + folios.len() as u64 + cache_frames + swap_cache;
        let (live, _) = self.pt.mem().live_data();
        if leak_check && live != expected {
            w.errors.push(format!(
                "data frames: {live} live, {expected} accounted for (zero pages {zero}, anon {}, folios {}, cache {cache_frames}, swap cache {swap_cache})",
                w.anon_small.len(),
                folios.len()
            ));
        }
        w.rc.anon_frames = w.anon_small.len() as u64;
        if w.errors.is_empty() {
            let frames = Frames {
                zero,
                anon_small: std::mem::take(&mut w.anon_small),
                folios: folios.keys().copied().collect(),
                objects,
            };
            Ok((w.rc, frames))
        } else {
            Err(w.errors.join("\n"))
        }
    }
}

impl Walk<'_> {
    /// The VMAs are ordered, non-empty, page-aligned and do not overlap.
    fn check_vma_order(&mut self) {
        let mut prev_end = 0;
        for v in self.vmas.iter() {
            if v.start >= v.end
                || v.start < prev_end
                || !v.start.is_multiple_of(self.s.page)
                || !v.end.is_multiple_of(self.s.page)
            {
                self.errors.push(format!(
                    "VMA {:#x}..{:#x} is empty, misaligned or overlaps the one before",
                    v.start, v.end
                ));
            }
            prev_end = v.end;
        }
    }

    /// Every swap entry found names a slot in use, counting at least the
    /// entries of this space, and the space's swap counter equals them.
    /// Returns the swap device's slots in use.
    fn check_swap(&mut self) -> HashMap<u64, crate::swap::Slot> {
        let swapped: i64 = self.rc.swap_slots.values().map(|n| i64::from(*n)).sum();
        // Every entry names a slot in use, which counts at least the
        // entries of this space (the family's other spaces add theirs).
        let slots: HashMap<u64, crate::swap::Slot> =
            self.s.shares.swap.slots().into_iter().collect();
        for (slot, n) in &self.rc.swap_slots {
            match slots.get(slot) {
                None => self
                    .errors
                    .push(format!("swap slot {slot}: named by {n} entries but free")),
                Some(s) if s.count < *n => self.errors.push(format!(
                    "swap slot {slot}: count {} below the {n} entries naming it here",
                    s.count
                )),
                Some(_) => {}
            }
        }
        if swapped != self.s.swapents.load(Ordering::Relaxed) {
            self.errors.push(format!(
                "swap entries: counter {}, recount {swapped}",
                self.s.swapents.load(Ordering::Relaxed)
            ));
        }
        slots
    }

    fn visit(&mut self, table: TableAddr, level: Level, base: VirtAddr) {
        let s = self.s;
        let size = s.pt.entry_size(level);
        let mut present = 0u32;
        for i in 0..s.pt.ptrs_per_table(level) {
            let va = base + i * size;
            let e = match s.pt.read_entry(table, level, va) {
                Ok(e) => e,
                Err(e) => {
                    self.errors
                        .push(format!("corrupt entry at {va:#x} {level}: {e}"));
                    continue;
                }
            };
            match e {
                Entry::Invalid => {}
                Entry::Swap { val } => {
                    present += 1;
                    if !level.is_pte() {
                        self.errors
                            .push(format!("swap entry at {level} for {va:#x}"));
                    }
                    let slot = crate::swap::SwapEntry::from_val(val).slot;
                    *self.rc.swap_slots.entry(slot).or_default() += 1;
                }
                Entry::Table { pa } => {
                    present += 1;
                    if !s.pt.mem().is_live_table(pa) {
                        self.errors
                            .push(format!("table {pa:#x} for {va:#x} is linked but freed"));
                        continue;
                    }
                    if !self.seen.insert(pa) {
                        self.errors.push(format!("table {pa:#x} is linked twice"));
                        continue;
                    }
                    self.rc.tables_per_level[level.down().get()] += 1;
                    self.visit(TableAddr::new(pa), level.down(), va);
                }
                Entry::Leaf { pa, .. } => {
                    present += 1;
                    self.leaf(level, va, pa, size);
                }
            }
        }
        let counted = s.pt.present_entries(table);
        if counted != present {
            self.errors.push(format!(
                "{table} ({level}, {base:#x}): count {counted}, present {present}"
            ));
        }
        if level.is_pte() && present == 0 && s.cfg.reclaim == Reclaim::Eager {
            self.errors.push(format!(
                "eager reclaim left the empty PTE table at {base:#x}"
            ));
        }
    }

    fn leaf(&mut self, level: Level, va: VirtAddr, pa: u64, size: u64) {
        let s = self.s;
        let Some(vma) = self.vmas.find(va.get()) else {
            self.errors
                .push(format!("leaf at {va:#x} outside every VMA"));
            return;
        };
        if level == Level::PMD {
            if va.get() + size > vma.end {
                self.errors.push(format!(
                    "huge PMD at {va:#x} straddles the end of its VMA at {:#x}",
                    vma.end
                ));
            }
            if let Some(rss) = s.file_pmd_rss(vma) {
                // A page-cache folio mapped whole: no deposit.
                self.rc.rss_pages[rss as usize] += (size / s.page) as i64;
                return;
            }
            if !lock_plain(&s.deposits).contains_key(&va.get()) {
                self.errors
                    .push(format!("huge PMD at {va:#x} has no deposited table"));
            }
            if Some(pa) != s.huge_zero_pa {
                let n = (size / s.page) as i64;
                self.rc.rss_pages[Rss::Anon as usize] += n;
                self.rc.anon_huge_pages += n;
                *self.folio_maps.entry(pa).or_default() += size / s.page;
            }
            return;
        }
        if !level.is_pte() {
            self.errors.push(format!("leaf at {level} for {va:#x}"));
            return;
        }
        match s.classify(vma, va.get(), pa) {
            PageKind::Zero => {}
            PageKind::Cache(r) => self.rc.rss_pages[r as usize] += 1,
            PageKind::Anon => {
                self.rc.rss_pages[Rss::Anon as usize] += 1;
                let folios = lock_plain(&s.folios);
                let mut sz = s.page << 1;
                let mut found = false;
                while sz <= s.pmd_size {
                    let head = pa & !(sz - 1);
                    if folios.get(&head).is_some_and(|f| f.size == sz) {
                        *self.folio_maps.entry(head).or_default() += 1;
                        found = true;
                        break;
                    }
                    sz <<= 1;
                }
                if !found && !self.anon_small.insert(pa) {
                    self.errors.push(format!("anon frame {pa:#x} mapped twice"));
                }
            }
        }
    }
}
