//! Where transparent huge pages may serve a fault: PMD-sized THP and the
//! multi-size (mTHP) orders, by the configured policy and the VMA's flags.

use super::AddressSpace;
use crate::config::{MthpPolicy, ThpMode};
use crate::vma::Vma;

impl AddressSpace {
    /// Whether PMD-sized THP may serve a fault at `va` in `vma` (Linux
    /// `thp_vma_allowable_order` + `thp_vma_suitable_order`).
    pub(crate) fn thp_allowed(&self, vma: &Vma, va: u64) -> bool {
        if self.huge_zero_pa.is_none() || !vma.is_anon() || vma.flags.nohugepage {
            return false;
        }
        let on = match self.cfg.thp {
            ThpMode::Always => true,
            ThpMode::Madvise => vma.flags.hugepage,
            ThpMode::Never => false,
        };
        let haddr = va & !(self.pmd_size - 1);
        on && haddr >= vma.start && haddr + self.pmd_size <= vma.end
    }

    /// Whether `vma` holds a whole PMD-aligned range of the PMD size, which
    /// a THP outside a fault needs (Linux `__thp_vma_allowable_orders`
    /// when not in a page fault: `thp_vma_suitable_order` at `vm_end -
    /// HPAGE_PMD_SIZE`). MADV_COLLAPSE of a smaller VMA fails with EINVAL
    /// (measured on 6.18: a 1 MiB anonymous mapping), khugepaged skips it.
    pub(crate) fn vma_holds_pmd(&self, vma: &Vma) -> bool {
        vma.end
            .checked_sub(self.pmd_size)
            .is_some_and(|last| (last & !(self.pmd_size - 1)) >= vma.start)
    }

    /// The mTHP sizes allowed at `va` in `vma`, largest first (Linux
    /// `thp_vma_allowable_orders` + `thp_vma_suitable_orders`).
    pub(crate) fn mthp_sizes<'a>(
        &'a self,
        vma: &'a Vma,
        va: u64,
    ) -> impl Iterator<Item = u64> + 'a {
        self.mthp
            .iter()
            .filter(move |(size, pol)| {
                if !vma.is_anon() || vma.flags.nohugepage {
                    return false;
                }
                let on = match pol {
                    MthpPolicy::Always => true,
                    MthpPolicy::Madvise => vma.flags.hugepage,
                    MthpPolicy::Never => false,
                    MthpPolicy::Inherit => match self.cfg.thp {
                        ThpMode::Always => true,
                        ThpMode::Madvise => vma.flags.hugepage,
                        ThpMode::Never => false,
                    },
                };
                let base = va & !(size - 1);
                on && base >= vma.start && base + size <= vma.end
            })
            .map(|(s, _)| *s)
    }
}
