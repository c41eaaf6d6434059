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
