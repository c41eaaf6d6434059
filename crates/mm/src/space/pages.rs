//! What a present entry maps and how it is accounted: the kind of page
//! (zero page, anonymous, page cache), its RSS counter, large folios, and
//! the attributes of the leaf that maps it.

use super::{lock_plain, AddressSpace};
use crate::cache::ObjectKind;
use crate::deferred::Deferred;
use crate::vma::{Backing, Prot, Vma};
use pt::{Attrs, Perms};
use std::sync::atomic::Ordering;

/// Which RSS counter a page counts in (Linux `MM_ANONPAGES`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rss {
    Anon = 0,
    File = 1,
    Shmem = 2,
}

impl Rss {
    /// The counter of a page of a page-cache object of `kind` (Linux
    /// `mm_counter_file`: shmem pages count as MM_SHMEMPAGES).
    pub(crate) fn of_cache(kind: ObjectKind) -> Rss {
        match kind {
            ObjectKind::File => Rss::File,
            ObjectKind::Shmem => Rss::Shmem,
        }
    }
}

/// What a present PTE maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageKind {
    /// The shared zero page (no RSS).
    Zero,
    /// A private anonymous page (freed when unmapped).
    Anon,
    /// A page of a memory object's cache.
    Cache(Rss),
}

/// A large anonymous folio (mTHP or THP): its size and how many of its
/// base pages are still mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Folio {
    pub size: u64,
    pub mapped: u64,
    /// MADV_FREE made it lazily free (Linux: `folio_test_swapbacked`
    /// cleared) and reclaim has not seen it dirty since.
    pub lazyfree: bool,
    /// On the deferred split queue (Linux: `folio->_deferred_list` not
    /// empty; see `deferred_split`).
    pub queued: bool,
    /// Some but not all of its pages are mapped (Linux
    /// `folio_test_partially_mapped`).
    pub partially_mapped: bool,
}

impl Folio {
    /// A folio of `size` bytes with `mapped` base pages mapped, on no queue.
    pub(crate) fn new(size: u64, mapped: u64) -> Folio {
        Folio {
            size,
            mapped,
            lazyfree: false,
            queued: false,
            partially_mapped: false,
        }
    }
}

impl AddressSpace {
    pub(crate) fn rss_add(&self, k: Rss, pages: i64) {
        self.rss.add(k as usize, pages);
    }

    /// What the present PTE for `va` in `vma` mapping `pa` maps.
    pub(crate) fn classify(&self, vma: &Vma, va: u64, pa: u64) -> PageKind {
        if pa == self.zero_pa
            || self
                .huge_zero_pa
                .is_some_and(|h| pa >= h && pa < h + self.pmd_size)
        {
            return PageKind::Zero;
        }
        match &vma.backing {
            Backing::Anon => PageKind::Anon,
            Backing::Object { obj, .. } => {
                let rss = Rss::of_cache(obj.kind);
                if vma.shared {
                    return PageKind::Cache(rss);
                }
                // A private file mapping: the page-cache page, or a COW copy.
                let idx = vma.pgoff_of(va, self.page_shift);
                match obj.lock().get(&idx) {
                    Some(crate::cache::Slot::Cached { pa: c, .. }) if *c == pa => {
                        PageKind::Cache(rss)
                    }
                    _ => PageKind::Anon,
                }
            }
        }
    }

    /// The attributes of a PTE mapping a page of `kind` in `vma` (Linux
    /// `vm_page_prot` plus `maybe_mkwrite` / `can_change_pte_writable`).
    /// PROT_NONE is modelled as a present kernel-only entry: the model's
    /// user accesses fault on it as Linux's `_PAGE_PROTNONE` entries do.
    pub(crate) fn leaf_attrs(&self, vma: &Vma, kind: PageKind, dirty: bool) -> Attrs {
        let writable = match kind {
            PageKind::Zero => false,
            PageKind::Anon => true,
            PageKind::Cache(_) => vma.shared && (!vma.writenotify() || dirty),
        };
        leaf_attrs_of(vma.prot, writable, dirty)
    }

    /// Drops one mapping of the anonymous page at `pa`; frees its folio
    /// (after the flush) when it was the last holder in every space of the
    /// family (Linux `folio_remove_rmap_pte` and `folio_put`; see `share`).
    pub(crate) fn put_anon_page(&self, pa: u64, d: &mut Deferred) {
        self.not_exclusive.remove(pa);
        self.lazyfree_pages.remove(pa);
        if self.nr_folios.load(Ordering::Acquire) > 0 {
            let mut f = lock_plain(&self.folios);
            let mut size = self.page << 1;
            while size <= self.pmd_size {
                let head = pa & !(size - 1);
                if let Some(folio) = f.get_mut(&head) {
                    if folio.size == size {
                        folio.mapped -= 1;
                        if folio.mapped != 0 {
                            // Linux: __folio_remove_rmap queues a folio
                            // left partially mapped (deferred_split_folio).
                            folio.deferred_split(true, self.page);
                        } else {
                            f.remove(&head);
                            self.nr_folios.fetch_sub(1, Ordering::Release);
                            if !self.shares.put(head) {
                                self.shares.written.forget(head, size, self.page);
                                d.frames.push((head, size));
                            }
                        }
                        return;
                    }
                }
                size <<= 1;
            }
        }
        let last = !self.shares.put(pa);
        // A frame in the swap cache whose slot an entry still names stays
        // there (Linux: free_swap_cache frees it only once unused).
        if self.swap_cache_keeps(pa, last) {
            return;
        }
        if last {
            d.frames.push((pa, self.page));
        }
    }

    pub(crate) fn add_folio(&self, head: u64, size: u64) {
        // A new folio is zero-filled: no write has reached it yet.
        self.shares.written.forget(head, size, self.page);
        let mut folio = Folio::new(size, size / self.page);
        if size == self.pmd_size {
            // Linux: __do_huge_pmd_anonymous_page queues every new PMD
            // folio, for the shrinker's underused check (since 6.12).
            folio.deferred_split(false, self.page);
        }
        lock_plain(&self.folios).insert(head, folio);
        self.nr_folios.fetch_add(1, Ordering::Release);
    }
}

/// The attributes of a leaf under `prot`: writable if `prot` allows it and
/// `writable` (the page kind's rule, see `AddressSpace::leaf_attrs`).
/// PROT_NONE leaves are kernel-only and read-only, as Linux keeps them.
fn leaf_attrs_of(prot: Prot, writable: bool, dirty: bool) -> Attrs {
    let perms = if !prot.accessible() {
        Perms {
            read: true,
            write: false,
            exec: false,
            user: false,
        }
    } else {
        Perms {
            read: true,
            write: prot.write && writable,
            exec: prot.exec,
            user: true,
        }
    };
    Attrs {
        perms,
        global: false,
        accessed: true,
        dirty,
        mem_type: pt::MemType::Normal,
    }
}

/// [`AddressSpace::leaf_attrs`] of an anonymous page under `prot`.
pub(crate) fn anon_leaf_attrs(prot: Prot, dirty: bool) -> Attrs {
    leaf_attrs_of(prot, true, dirty)
}
