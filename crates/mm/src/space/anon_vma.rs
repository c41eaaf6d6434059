//! Giving a VMA its anon_vma when a fault is about to map an anonymous
//! page in it (Linux mm/rmap.c, `__anon_vma_prepare`). The anon_vma decides
//! which VMAs may merge later (see [`crate::vma`]), so the model tracks
//! which VMAs have one and which share one.
//!
//! Linux prepares it inside the fault handlers that allocate anonymous
//! memory (`vmf_anon_prepare`): a write fault in a private mapping (a new
//! anonymous page, a copy of the zero page or of a file page), and a fault
//! that may map a PMD-sized THP, even a read that ends up mapping the huge
//! zero page (`do_huge_pmd_anonymous_page` prepares before it looks at the
//! zero page). A read fault mapping the small zero page or a file page does
//! not. The model decides this once per fault, before the handler runs,
//! from the same conditions.

use super::AddressSpace;
use crate::vma::{AnonVma, Vma, Vmas};
use pt::Level;
use pt::VirtAddr;

impl AddressSpace {
    /// Gives `vma` an anon_vma if the fault about to be handled at `va`
    /// may map anonymous memory in it. The caller holds the mmap lock (for
    /// reading or writing) and found `vma` in `vmas`.
    #[inline]
    pub(crate) fn anon_vma_prepare_for_fault(&self, vmas: &Vmas, vma: &Vma, va: u64, write: bool) {
        if vma.anon_vma.get().is_some() {
            return;
        }
        let anon = if write {
            !vma.shared
        } else {
            vma.is_anon() && self.thp_allowed(vma, va) && self.pmd_none(va)
        };
        if anon {
            self.anon_vma_prepare(vmas, vma);
        }
    }

    /// Whether the PMD entry for `va` is none (or its table missing): the
    /// condition under which a fault may map a PMD-sized THP there.
    fn pmd_none(&self, va: u64) -> bool {
        let va = VirtAddr::new(va);
        match self.find_pmd_table(va) {
            Ok(pmd_table) => self.pt.is_none(pmd_table, Level::PMD, va),
            Err(_) => true,
        }
    }

    // Linux: mm/rmap.c, __anon_vma_prepare
    /// Shares a compatible neighbour's anon_vma, or makes a new one. Two
    /// faults racing here both install; the first wins, as Linux's re-check
    /// of `vma->anon_vma` under `page_table_lock` has it.
    pub(crate) fn anon_vma_prepare(&self, vmas: &Vmas, vma: &Vma) -> u64 {
        let id = vmas
            .mergeable_anon_vma(vma, self.page_shift)
            .unwrap_or_else(AnonVma::fresh);
        vma.anon_vma.install(id)
    }
}
