//! Advice to this host's kernel about the model's own memory.

/// Huge-page size this advice aligns to (x86-64 and most ARM64 hosts).
const HUGE: usize = 2 << 20;

/// Asks for transparent huge pages over the 2 MiB-aligned part of
/// `[start, start + len)` (`madvise(MADV_HUGEPAGE)`), the shape of
/// `pt::mem::ArenaAdvisor`: the model's page-table arena is read by
/// random walks, and with 4 KiB host pages nearly every read of a large
/// table also misses the host's own TLB. Advice only: a refusal (THP
/// `never`, an old kernel, a range too small to hold a huge page) changes
/// nothing and is ignored.
pub fn advise_huge_pages(start: *mut u8, len: usize) {
    let first = (start as usize).next_multiple_of(HUGE);
    let end = (start as usize).saturating_add(len) / HUGE * HUGE;
    if end <= first {
        return;
    }
    // SAFETY: the range lies inside the caller's live allocation and is
    // page aligned; MADV_HUGEPAGE changes how the kernel backs it, never
    // its contents or its mapping.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Advice over a fresh allocation keeps its contents (the range is
    /// aligned inward, so nothing outside it is touched).
    #[test]
    fn advice_keeps_the_memory_as_it_was() {
        let mut v = vec![7u8; 5 << 20];
        advise_huge_pages(v.as_mut_ptr(), v.len());
        advise_huge_pages(v.as_mut_ptr(), 100); // too small: nothing to do
        assert!(v.iter().all(|&b| b == 7));
    }
}
