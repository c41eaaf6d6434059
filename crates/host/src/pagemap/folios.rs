//! Which folios map a process's memory, per VMA: order-0 pages, large
//! folios mapped by PTEs (multi-size THP, Linux 6.8 onwards; large
//! page-cache folios) and PMD-mapped THPs, with their sizes; and the runs
//! an arm64 contiguous-PTE (contpte) or RISC-V Svnapot mapping would fold
//! into one TLB entry. What tools/mm/thpmaps computes, without Python.
//!
//! Read from /proc/PID/pagemap (the page frame number of each present
//! page, bits 0-54, given only to CAP_SYS_ADMIN) and /proc/kpageflags
//! (one u64 per frame: KPF_COMPOUND_HEAD, KPF_COMPOUND_TAIL, KPF_THP,
//! KPF_ZERO_PAGE). A folio is its head frame and the tail frames after it;
//! its size is read from kpageflags whole, so a folio mapped only in part
//! still shows its true size. A folio is counted once, in the VMA where
//! its first mapped page lies.
//!
//! Invariants: nothing is written; reads are bounded by the deadline (the
//! result then says it is partial); a process that exits while read is
//! [`ReadError::NoProcess`].

use super::{classify, ReadError, Vma};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// kpageflags bits (include/uapi/linux/kernel-page-flags.h).
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
const KPF_THP: u64 = 1 << 22;
const KPF_ZERO_PAGE: u64 = 1 << 24;

/// Pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN: u64 = (1 << 55) - 1;

/// Base pages a contpte (arm64, 4 KiB granule) or Svnapot (RISC-V, 64 KiB
/// NAPOT) entry folds: 16, naturally aligned in both address spaces.
pub const CONT_PAGES: u64 = 16;

/// Folios of one size and mapping in one VMA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FolioSize {
    /// The folio's size, bytes (the base page for order 0).
    pub bytes: u64,
    /// log2 of its base pages.
    pub order: u32,
    /// Mapped by a PMD leaf (else by PTEs).
    pub pmd_mapped: bool,
    /// Whether kpageflags marks it a transparent huge page (anonymous
    /// large folios, mTHP included).
    pub thp: bool,
    pub count: u64,
}

/// One VMA's folios.
#[derive(Debug, Clone, Serialize)]
pub struct VmaFolios {
    pub start: u64,
    pub end: u64,
    pub path: String,
    /// By size, smallest first; PTE-mapped before PMD-mapped.
    pub sizes: Vec<FolioSize>,
    /// Aligned runs of [`CONT_PAGES`] present pages of one folio, physically
    /// contiguous and aligned: what contpte or Svnapot would fold.
    pub cont_runs: u64,
    /// TLB entries those folds save (15 each); a PMD-mapped THP already
    /// saves 511 against PTEs (counted apart in `pmd_tlb_saved`).
    pub cont_tlb_saved: u64,
    pub pmd_tlb_saved: u64,
    /// Table pages the folds save: none (a contiguous run still has its 16
    /// PTEs); a PMD-mapped THP needs no PTE table of its own (anonymous
    /// ones keep one deposited, so the memory is not saved).
    pub cont_tables_saved: u64,
    pub pmd_pte_tables_unlinked: u64,
}

/// Every VMA's folios.
#[derive(Debug, Clone, Serialize)]
pub struct Folios {
    pub vmas: Vec<VmaFolios>,
    /// False when the deadline stopped the read.
    pub complete: bool,
}

impl Folios {
    /// Folios of `bytes` in all VMAs, mapped by PMDs or not.
    pub fn count(&self, bytes: u64, pmd_mapped: bool) -> u64 {
        self.vmas
            .iter()
            .flat_map(|v| &v.sizes)
            .filter(|s| s.bytes == bytes && s.pmd_mapped == pmd_mapped)
            .map(|s| s.count)
            .sum()
    }
}

/// The two files, and the folio heads already sized.
struct Reader {
    pid: u32,
    pagemap: File,
    kpageflags: File,
    /// head PFN -> (pages, flags of the head).
    heads: BTreeMap<u64, (u64, u64)>,
}

impl Reader {
    fn flags(&self, pfn: u64, out: &mut [u64]) -> Result<usize, ReadError> {
        let mut buf = vec![0u8; out.len() * 8];
        let n = self
            .kpageflags
            .read_at(&mut buf, pfn * 8)
            .map_err(|e| classify(self.pid, "/proc/kpageflags", e))?;
        for (o, c) in out.iter_mut().zip(buf[..n].chunks_exact(8)) {
            *o = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        Ok(n / 8)
    }

    /// The head of the folio holding `pfn` (flags `f`) and its pages.
    fn folio(&mut self, pfn: u64, f: u64) -> Result<(u64, u64, u64), ReadError> {
        if f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) == 0 {
            return Ok((pfn, 1, f));
        }
        let mut head = pfn;
        if f & KPF_COMPOUND_TAIL != 0 {
            // Back to the head: at most a PUD-sized folio's frames.
            let mut one = [0u64; 1];
            loop {
                if head == 0 || pfn - head > 1 << 18 {
                    return Ok((pfn, 1, f));
                }
                head -= 1;
                if self.flags(head, &mut one)? == 0 {
                    return Ok((pfn, 1, f));
                }
                if one[0] & KPF_COMPOUND_HEAD != 0 {
                    break;
                }
            }
        }
        if let Some(&(pages, hf)) = self.heads.get(&head) {
            return Ok((head, pages, hf));
        }
        let mut hf = [0u64; 1];
        self.flags(head, &mut hf)?;
        let mut pages = 1;
        let mut chunk = vec![0u64; 512];
        'outer: loop {
            let n = self.flags(head + pages, &mut chunk)?;
            for &t in &chunk[..n] {
                if t & KPF_COMPOUND_TAIL == 0 || t & KPF_COMPOUND_HEAD != 0 {
                    break 'outer;
                }
                pages += 1;
            }
            if n < chunk.len() || pages >= 1 << 18 {
                break;
            }
        }
        self.heads.insert(head, (pages, hf[0]));
        Ok((head, pages, hf[0]))
    }
}

/// Reads the folios mapping each of `vmas` in process `pid`. `pmd_mapped`
/// says whether the page at an address is mapped by a PMD leaf (from the
/// snapshot's PAGEMAP_SCAN runs).
///
/// # Errors
/// [`ReadError::NotPermitted`] without the privilege PFNs need (root, or
/// CAP_SYS_ADMIN), naming the file; [`ReadError::NoProcess`] if the
/// process exits; [`ReadError::Io`] otherwise.
pub fn read(
    pid: u32,
    vmas: &[Vma],
    page_size: u64,
    deadline: Instant,
    pmd_mapped: &dyn Fn(u64) -> bool,
) -> Result<Folios, ReadError> {
    let path = format!("/proc/{pid}/pagemap");
    let pagemap = File::open(&path).map_err(|e| classify(pid, &path, e))?;
    let kpageflags =
        File::open("/proc/kpageflags").map_err(|e| classify(pid, "/proc/kpageflags", e))?;
    let mut r = Reader {
        pid,
        pagemap,
        kpageflags,
        heads: BTreeMap::new(),
    };
    let mut out = Folios {
        vmas: Vec::new(),
        complete: true,
    };
    for v in vmas {
        if Instant::now() > deadline {
            out.complete = false;
            break;
        }
        out.vmas.push(read_vma(&mut r, v, page_size, pmd_mapped)?);
    }
    Ok(out)
}

/// One present page: its address, frame and folio.
#[derive(Clone, Copy)]
struct Page {
    va: u64,
    pfn: u64,
    head: u64,
}

fn read_vma(
    r: &mut Reader,
    v: &Vma,
    page_size: u64,
    pmd_mapped: &dyn Fn(u64) -> bool,
) -> Result<VmaFolios, ReadError> {
    let mut seen: BTreeMap<u64, ()> = BTreeMap::new();
    let mut sizes: BTreeMap<(u64, bool, bool), u64> = BTreeMap::new();
    let mut pages: Vec<Page> = Vec::new();
    let mut va = v.start;
    let mut buf = vec![0u8; 512 * 8];
    let mut flags = [0u64; 1];
    while va < v.end {
        let n = (((v.end - va) / page_size) as usize).min(512);
        let got = r
            .pagemap
            .read_at(&mut buf[..n * 8], va / page_size * 8)
            .map_err(|e| classify(r.pid, "pagemap", e))?;
        if got == 0 {
            // The process is gone, or its memory map with it.
            return Err(ReadError::NoProcess { pid: r.pid });
        }
        for (i, c) in buf[..got].chunks_exact(8).enumerate() {
            let e = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            let at = va + i as u64 * page_size;
            if e & PM_PRESENT == 0 {
                continue;
            }
            let pfn = e & PM_PFN;
            if pfn == 0 {
                return Err(ReadError::NotPermitted {
                    pid: r.pid,
                    path: format!("/proc/{}/pagemap (page frame numbers)", r.pid),
                });
            }
            r.flags(pfn, &mut flags)?;
            if flags[0] & KPF_ZERO_PAGE != 0 {
                continue;
            }
            let (head, fpages, hf) = r.folio(pfn, flags[0])?;
            pages.push(Page { va: at, pfn, head });
            if seen.insert(head, ()).is_none() {
                let pmd = fpages > 1 && pmd_mapped(at);
                *sizes
                    .entry((fpages * page_size, pmd, hf & KPF_THP != 0))
                    .or_insert(0) += 1;
            }
        }
        va += (got / 8) as u64 * page_size;
    }
    let mut f = VmaFolios {
        start: v.start,
        end: v.end,
        path: v.path.clone(),
        sizes: sizes
            .into_iter()
            .map(|((bytes, pmd, thp), count)| FolioSize {
                bytes,
                order: (bytes / page_size).trailing_zeros(),
                pmd_mapped: pmd,
                thp,
                count,
            })
            .collect(),
        cont_runs: cont_runs(&pages, page_size, pmd_mapped),
        cont_tlb_saved: 0,
        pmd_tlb_saved: 0,
        cont_tables_saved: 0,
        pmd_pte_tables_unlinked: 0,
    };
    f.sizes.sort_by_key(|s| (s.bytes, s.pmd_mapped));
    f.cont_tlb_saved = f.cont_runs * (CONT_PAGES - 1);
    let pmd: u64 = f
        .sizes
        .iter()
        .filter(|s| s.pmd_mapped)
        .map(|s| s.count)
        .sum();
    f.pmd_pte_tables_unlinked = pmd;
    f.pmd_tlb_saved = f
        .sizes
        .iter()
        .filter(|s| s.pmd_mapped)
        .map(|s| s.count * (s.bytes / page_size - 1))
        .sum();
    Ok(f)
}

/// Aligned runs of [`CONT_PAGES`] PTE-mapped pages, consecutive in `pages`,
/// of one folio, whose frames are contiguous and aligned alike.
fn cont_runs(pages: &[Page], page_size: u64, pmd_mapped: &dyn Fn(u64) -> bool) -> u64 {
    let span = CONT_PAGES * page_size;
    let mut n = 0;
    let mut i = 0;
    while i + CONT_PAGES as usize <= pages.len() {
        let p = pages[i];
        if !p.va.is_multiple_of(span) || !p.pfn.is_multiple_of(CONT_PAGES) || pmd_mapped(p.va) {
            i += 1;
            continue;
        }
        let run = &pages[i..i + CONT_PAGES as usize];
        let ok = run.iter().enumerate().all(|(k, q)| {
            q.va == p.va + k as u64 * page_size && q.pfn == p.pfn + k as u64 && q.head == p.head
        });
        if ok {
            n += 1;
            i += CONT_PAGES as usize;
        } else {
            i += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(va: u64, pfn: u64, n: u64, head: u64) -> Vec<Page> {
        (0..n)
            .map(|k| Page {
                va: va + k * 4096,
                pfn: pfn + k,
                head,
            })
            .collect()
    }

    #[test]
    fn only_aligned_contiguous_runs_of_one_folio_fold() {
        let no = |_: u64| false;
        // Two aligned 64 KiB folios: two runs.
        let mut p = pages(0x10000, 32, 16, 32);
        p.extend(pages(0x20000, 48, 16, 48));
        assert_eq!(cont_runs(&p, 4096, &no), 2);
        // Misaligned frames: none.
        assert_eq!(cont_runs(&pages(0x10000, 33, 16, 33), 4096, &no), 0);
        // Contiguous frames of two folios: none.
        let mut two = pages(0x10000, 32, 8, 32);
        two.extend(pages(0x18000, 40, 8, 40));
        assert_eq!(cont_runs(&two, 4096, &no), 0);
        // A PMD-mapped range is not a contpte candidate.
        assert_eq!(
            cont_runs(&pages(0x200000, 512, 16, 512), 4096, &|_| true),
            0
        );
    }
}
