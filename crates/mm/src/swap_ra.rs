//! The windows of swap read-ahead (Linux: mm/swap_state.c). A major fault
//! on a swap entry reads more pages than the one it needs; they wait in the
//! swap cache, unmapped, and a later fault on one is minor. How many it
//! reads grows with the hits on what was read ahead before and shrinks by
//! at most half a step, so sequential access in either direction settles
//! at the largest window and scattered access at one page.
//!
//! Two kinds (Linux picks one for the whole system, `swapin_readahead`):
//! the VMA kind reads the swap entries of the PTEs around the faulting
//! address, its state kept per VMA; the cluster kind reads an aligned block
//! of swap slots around the faulting one, its state kept system-wide.

/// Linux's `SWAP_RA_ORDER_CEILING` on 64-bit: the VMA window is at most
/// 32 pages whatever page-cluster says.
const VMA_ORDER_CEILING: u32 = 5;

/// The saturation of the per-VMA hit count (Linux `SWAP_RA_HITS_MAX`, the
/// six bits it keeps them in).
pub(crate) const VMA_HITS_MAX: u32 = 63;

// Linux: mm/swap_state.c, __swapin_nr_pages
/// The next window in pages: two more than the hits, rounded up to a power
/// of two from four; with no hit, two if `offset` is next to `prev` (either
/// side), else one; at most `max_pages`, at least half the previous window.
pub(crate) fn nr_pages(prev: u64, offset: u64, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        if offset != prev.wrapping_add(1) && offset != prev.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages.min(max_pages).max(prev_win / 2)
}

/// The largest VMA window for `page_cluster`.
pub(crate) fn vma_max_win(page_cluster: u32) -> u32 {
    1 << page_cluster.min(VMA_ORDER_CEILING)
}

/// The largest cluster window for `page_cluster`.
pub(crate) fn cluster_max_pages(page_cluster: u32) -> u32 {
    1u32.checked_shl(page_cluster).unwrap_or(u32::MAX)
}

/// A VMA's read-ahead state (Linux `vma->swap_readahead_info`): the page
/// of the last swap fault or swap-cache find, the last window, the hits
/// since. A VMA that never faulted on swap reads as four hits (Linux's
/// `GET_SWAP_RA_VAL`), so its first major fault reads a large window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VmaRa {
    pub(crate) page: u64,
    pub(crate) win: u32,
    pub(crate) hits: u32,
}

impl Default for VmaRa {
    fn default() -> VmaRa {
        VmaRa {
            page: 0,
            win: 0,
            hits: 4,
        }
    }
}

// Linux: mm/swap_state.c, swap_vma_ra_win
/// The window of a VMA read-ahead for a fault at page `fpage` (a page
/// number: address >> page shift) in a VMA of pages `[vstart, vend)`, with
/// `pmd_pages` pages per PMD: the pages `[start, end)` to read and the new
/// state. Moving forward from the last fault the window starts at the
/// fault; moving back it ends there; else the fault sits in its middle.
/// Clipped to the VMA and to the fault's PMD.
pub(crate) fn vma_window(
    ra: VmaRa,
    fpage: u64,
    vstart: u64,
    vend: u64,
    pmd_pages: u64,
    page_cluster: u32,
) -> (u64, u64, VmaRa) {
    let max_win = vma_max_win(page_cluster);
    if max_win == 1 {
        return (fpage, fpage + 1, ra);
    }
    let win = nr_pages(ra.page, fpage, ra.hits, max_win, ra.win);
    let next = VmaRa {
        page: fpage,
        win,
        hits: 0,
    };
    if win == 1 {
        return (fpage, fpage + 1, next);
    }
    let w = u64::from(win);
    let left = if fpage == ra.page.wrapping_add(1) {
        fpage
    } else if ra.page == fpage + 1 {
        (fpage + 1).saturating_sub(w)
    } else {
        fpage.saturating_sub((w - 1) / 2)
    };
    let right = left + w;
    let pmd = fpage - fpage % pmd_pages;
    let start = left.max(vstart).max(pmd);
    let end = right.min(vend).min(pmd + pmd_pages);
    (start, end, next)
}

// Linux: mm/swap_state.c, swap_cluster_readahead
/// The slots a cluster read-ahead of `pages` around `offset` reads: the
/// aligned block, without slot 0 (the swap header) and past the last slot.
pub(crate) fn cluster_block(offset: u64, pages: u32, last_slot: u64) -> (u64, u64) {
    let mask = u64::from(pages) - 1;
    let start = (offset & !mask).max(1);
    let end = (offset | mask).min(last_slot);
    (start, end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_grows_with_hits_and_shrinks_by_halves() {
        // No hit and not adjacent: one page; adjacent: two.
        assert_eq!(nr_pages(10, 20, 0, 8, 0), 1);
        assert_eq!(nr_pages(10, 11, 0, 8, 0), 2);
        assert_eq!(nr_pages(10, 9, 0, 8, 0), 2);
        // Hits round up to a power of two from four, capped.
        assert_eq!(nr_pages(0, 50, 1, 8, 0), 4);
        assert_eq!(nr_pages(0, 50, 3, 8, 0), 8);
        assert_eq!(nr_pages(0, 50, 30, 8, 0), 8);
        // Never below half the last window.
        assert_eq!(nr_pages(10, 20, 0, 8, 8), 4);
    }

    #[test]
    fn vma_window_follows_the_direction_and_clips() {
        let fresh = VmaRa::default();
        // A first fault reads 8 pages centred on it, clipped to the VMA.
        let (s, e, ra) = vma_window(fresh, 100, 100, 164, 512, 3);
        assert_eq!((s, e, ra.win, ra.hits), (100, 105, 8, 0));
        // Forward after the last fault: starts at it.
        let prev = VmaRa {
            page: 104,
            win: 8,
            hits: 4,
        };
        assert_eq!(vma_window(prev, 105, 100, 164, 512, 3).0, 105);
        assert_eq!(vma_window(prev, 105, 100, 164, 512, 3).1, 113);
        // Backward: ends at it.
        let back = VmaRa {
            page: 160,
            win: 8,
            hits: 3,
        };
        assert_eq!(
            vma_window(back, 159, 100, 164, 512, 3),
            (
                152,
                160,
                VmaRa {
                    page: 159,
                    win: 8,
                    hits: 0
                }
            )
        );
        // Clipped at the PMD boundary (page 512).
        assert_eq!(vma_window(prev, 509, 0, 1024, 512, 3).1, 512);
        // page-cluster 0: no read-ahead.
        assert_eq!(vma_window(fresh, 7, 0, 64, 512, 0), (7, 8, fresh));
    }

    #[test]
    fn cluster_block_is_aligned_without_the_header() {
        assert_eq!(cluster_block(3, 8, 1000), (1, 8));
        assert_eq!(cluster_block(13, 8, 1000), (8, 16));
        assert_eq!(cluster_block(13, 8, 14), (8, 15));
        assert_eq!(cluster_block(13, 1, 1000), (13, 14));
    }
}
