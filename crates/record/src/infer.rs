//! A fault's kind (read or write) when the kernel did not say: without the
//! `exceptions` tracepoints the recorder has the software page-fault
//! event, which gives the address only. The kind is inferred from what
//! the recorder can see, strongest evidence first:
//!
//! 1. **Protection.** A fault in a mapping without write permission (as
//!    the trace's own Map and Protect records left it, the view the replay
//!    has) is a read: a write there would have been refused with SIGSEGV.
//! 2. **The page's state** (/proc/PID/pagemap, read when the sample is
//!    drained, within milliseconds of the fault): a private file page
//!    still the file's (not copied on write), or a private anonymous page
//!    still the shared zero page (its frame number, which the kernel shows
//!    only to CAP_SYS_ADMIN), was not written: a read. A page already
//!    copied or allocated was written, by this fault or a later one.
//! 3. **A later fault of the same page** in the same drained batch (no
//!    memory call between them): the kernel faults on a page twice only
//!    when the first fault mapped it for reading (the zero page, the file's
//!    page, a write-notify mapping) and the second is the write. So the
//!    earlier one is a read.
//! 4. **By default, a write**: a writable page with no evidence either way
//!    (a shared mapping, whose pages look alike read or written; a page
//!    gone from the page table before it was drained). A write maps what a
//!    read would and more, so the replay of a wrong guess takes a fault of
//!    the same page, not fewer, and it is never refused.
//!
//! The counts of each rule go into the summary and the trace's header
//! (docs/trace.md), so a reader knows how much of the trace is inferred.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use trace::{MapFlags, Prot, Record, RegionId, RegionKind};

const PAGE_SHIFT: u32 = 12;
/// pagemap: the page is present.
const PM_PRESENT: u64 = 1 << 63;
/// pagemap: a file page or shared anonymous memory.
const PM_FILE: u64 = 1 << 61;
/// pagemap: the frame number (present pages).
const PM_PFN: u64 = (1 << 55) - 1;
/// Frames of a 2 MiB huge zero page.
const HUGE_FRAMES: u64 = 512;

/// How many faults each rule decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Reads: in a mapping without write permission.
    pub read_by_protection: u64,
    /// Reads: the page still the file's or the zero page.
    pub read_by_page_state: u64,
    /// Reads: the page faulted again later (the write).
    pub read_by_later_fault: u64,
    /// Writes: the page was copied or allocated.
    pub write_by_page_state: u64,
    /// Writes: no evidence (rule 4).
    pub write_by_default: u64,
}

impl Counts {
    pub fn reads(&self) -> u64 {
        self.read_by_protection + self.read_by_page_state + self.read_by_later_fault
    }

    pub fn writes(&self) -> u64 {
        self.write_by_page_state + self.write_by_default
    }

    pub fn total(&self) -> u64 {
        self.reads() + self.writes()
    }
}

/// What page state tells about a region's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Private anonymous memory (anon, heap, stack): the zero page until
    /// written.
    PrivateAnon,
    /// A private file mapping: the file's page until written.
    PrivateFile,
    /// Shared memory or anything else: no evidence.
    Opaque,
}

/// A region's protection as the trace's records left it.
#[derive(Debug, Clone)]
struct RegionProt {
    whole: Prot,
    class: Class,
    /// Ranges an mprotect changed: start offset -> (end, prot).
    ranges: BTreeMap<u64, (u64, Prot)>,
}

impl RegionProt {
    fn at(&self, offset: u64) -> Prot {
        match self.ranges.range(..=offset).next_back() {
            Some((_, &(end, p))) if offset < end => p,
            _ => self.whole,
        }
    }

    fn protect(&mut self, start: u64, end: u64, prot: Prot) {
        let hit: Vec<(u64, (u64, Prot))> = self
            .ranges
            .range(..end)
            .filter(|(_, &(e, _))| e > start)
            .map(|(&s, &v)| (s, v))
            .collect();
        for (s, (e, p)) in hit {
            self.ranges.remove(&s);
            if s < start {
                self.ranges.insert(s, (start, p));
            }
            if e > end {
                self.ranges.insert(end, (e, p));
            }
        }
        self.ranges.insert(start, (end, prot));
    }
}

/// The inference's state: every region's protection (fed every record the
/// recorder writes), the program's pagemap, the zero pages' frames.
#[derive(Debug, Default)]
pub struct Inference {
    regions: HashMap<RegionId, RegionProt>,
    pagemap: Option<File>,
    /// The zero page's frame and the huge zero page's first frame, when
    /// frame numbers are visible.
    zero: Option<(u64, Option<u64>)>,
    pub counts: Counts,
}

impl Inference {
    /// Ready to infer: the zero pages' frames probed in this process.
    pub fn new() -> Inference {
        Inference {
            zero: zero_frames(),
            ..Inference::default()
        }
    }

    /// The program's pagemap, opened after its exec (pagemap follows the
    /// address space of the moment it is opened).
    pub fn attach(&mut self, pid: i32) {
        self.pagemap = File::open(format!("/proc/{pid}/pagemap")).ok();
    }

    /// Keeps track of the protection a record gives (every record written
    /// passes here, in order).
    pub fn observe(&mut self, r: &Record) {
        match r {
            Record::Map(m) => {
                let shared = m.flags.has(MapFlags::SHARED) || m.kind == RegionKind::Shmem;
                let class = match m.kind {
                    _ if shared => Class::Opaque,
                    RegionKind::File => Class::PrivateFile,
                    RegionKind::Anon | RegionKind::Heap | RegionKind::Stack => Class::PrivateAnon,
                    _ => Class::Opaque,
                };
                self.regions.insert(
                    m.id,
                    RegionProt {
                        whole: m.prot,
                        class,
                        ranges: BTreeMap::new(),
                    },
                );
            }
            Record::Protect {
                id,
                offset,
                len,
                prot,
            } => {
                if let Some(rp) = self.regions.get_mut(id) {
                    rp.protect(*offset, offset.saturating_add(*len), *prot);
                }
            }
            // A moved region replays as fresh read-write anonymous memory.
            Record::Move { id, new_id, .. } => {
                self.regions.remove(id);
                self.regions.insert(
                    *new_id,
                    RegionProt {
                        whole: Prot(Prot::READ | Prot::WRITE),
                        class: Class::PrivateAnon,
                        ranges: BTreeMap::new(),
                    },
                );
            }
            _ => {}
        }
    }

    /// The kind of a fault at native `va`, offset `offset` of region `id`;
    /// `faults_again`: the same page faults again later in this batch.
    pub fn kind(&mut self, id: RegionId, offset: u64, va: u64, faults_again: bool) -> bool {
        let Some(rp) = self.regions.get(&id) else {
            self.counts.write_by_default += 1;
            return true;
        };
        if !rp.at(offset).writable() {
            self.counts.read_by_protection += 1;
            return false;
        }
        let written = self.written(rp.class, va);
        match written {
            Some(false) => {
                self.counts.read_by_page_state += 1;
                false
            }
            _ if faults_again => {
                self.counts.read_by_later_fault += 1;
                false
            }
            Some(true) => {
                self.counts.write_by_page_state += 1;
                true
            }
            None => {
                self.counts.write_by_default += 1;
                true
            }
        }
    }

    /// Whether the page at `va` has been written, as far as its pagemap
    /// entry tells (`None`: it does not).
    fn written(&self, class: Class, va: u64) -> Option<bool> {
        let pm = self.pagemap.as_ref()?;
        let mut b = [0u8; 8];
        pm.read_exact_at(&mut b, (va >> PAGE_SHIFT) * 8).ok()?;
        page_written(class, u64::from_ne_bytes(b), self.zero)
    }
}

/// What one pagemap entry says of a page of a region of `class` (see the
/// module documentation, rule 2).
fn page_written(class: Class, entry: u64, zero: Option<(u64, Option<u64>)>) -> Option<bool> {
    if entry & PM_PRESENT == 0 {
        return None;
    }
    match class {
        Class::PrivateFile => Some(entry & PM_FILE == 0),
        Class::PrivateAnon => {
            let (small, huge) = zero?;
            let pfn = entry & PM_PFN;
            let is_zero = pfn == small || huge.is_some_and(|h| (h..h + HUGE_FRAMES).contains(&pfn));
            Some(!is_zero)
        }
        Class::Opaque => None,
    }
}

/// The frames of the zero page and of the huge zero page, as this
/// process's own pagemap shows them after reading fresh anonymous memory;
/// `None` when frames are hidden (no CAP_SYS_ADMIN: they read as 0).
fn zero_frames() -> Option<(u64, Option<u64>)> {
    let pm = File::open("/proc/self/pagemap").ok()?;
    let frame = |va: usize| -> Option<u64> {
        let mut b = [0u8; 8];
        pm.read_exact_at(&mut b, (va as u64 >> PAGE_SHIFT) * 8)
            .ok()?;
        let e = u64::from_ne_bytes(b);
        (e & PM_PRESENT != 0 && e & PM_PFN != 0).then_some(e & PM_PFN)
    };
    let small = probe(4096, false, &frame)?;
    let huge = probe(4 << 20, true, &frame).filter(|&h| h != small);
    Some((small, huge))
}

/// Reads one byte of a fresh private anonymous mapping of `len` bytes (at
/// its first 2 MiB boundary, with MADV_HUGEPAGE, if `huge`) and returns
/// the frame `frame` finds there.
fn probe(len: usize, huge: bool, frame: &dyn Fn(usize) -> Option<u64>) -> Option<u64> {
    // SAFETY: a fresh private anonymous mapping, checked below, used only
    // here and unmapped before returning.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let at = if huge {
        (p as usize).next_multiple_of(2 << 20)
    } else {
        p as usize
    };
    if huge {
        // SAFETY: advice on a 2 MiB range inside the mapping above (4 MiB
        // long, so the aligned 2 MiB fits).
        unsafe { libc::madvise(at as *mut libc::c_void, 2 << 20, libc::MADV_HUGEPAGE) };
    }
    // SAFETY: `at` is inside the mapping, readable; a volatile read so the
    // fault that maps the zero page happens.
    unsafe { std::ptr::read_volatile(at as *const u8) };
    let f = frame(at);
    // SAFETY: unmapping the mapping made above, not used after this.
    unsafe { libc::munmap(p, len) };
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::MapEvent;

    fn map(id: RegionId, kind: RegionKind, prot: u8, shared: bool) -> Record {
        Record::Map(MapEvent {
            id,
            size: 1 << 20,
            native: 0,
            kind,
            prot: Prot(prot),
            flags: if shared {
                MapFlags(MapFlags::SHARED)
            } else {
                MapFlags::default()
            },
            name: String::new(),
        })
    }

    const RW: u8 = Prot::READ | Prot::WRITE;

    #[test]
    fn a_fault_where_writing_is_not_allowed_is_a_read() {
        let mut inf = Inference::default();
        inf.observe(&map(0, RegionKind::File, Prot::READ | Prot::EXEC, false));
        inf.observe(&map(1, RegionKind::Anon, RW, false));
        inf.observe(&Record::Protect {
            id: 1,
            offset: 0x2000,
            len: 0x2000,
            prot: Prot(Prot::READ),
        });
        assert!(!inf.kind(0, 0x1000, 0, false));
        assert!(!inf.kind(1, 0x3fff, 0, false));
        // Outside the protected range: writable, no page state (no
        // pagemap), no later fault: a write by default.
        assert!(inf.kind(1, 0x4000, 0, false));
        assert!(inf.kind(1, 0x1fff, 0, false));
        // A later fault of the page makes it a read.
        assert!(!inf.kind(1, 0x5000, 0, true));
        assert_eq!(
            inf.counts,
            Counts {
                read_by_protection: 2,
                read_by_later_fault: 1,
                write_by_default: 2,
                ..Counts::default()
            }
        );
        assert_eq!((inf.counts.reads(), inf.counts.total()), (3, 5));
    }

    #[test]
    fn mprotect_ranges_split_and_overwrite() {
        let mut rp = RegionProt {
            whole: Prot(RW),
            class: Class::PrivateAnon,
            ranges: BTreeMap::new(),
        };
        rp.protect(0x0000, 0x4000, Prot(Prot::READ));
        rp.protect(0x1000, 0x2000, Prot(RW));
        rp.protect(0x3000, 0x6000, Prot(0));
        let at = |o| rp.at(o).0;
        assert_eq!(
            [
                at(0x0),
                at(0x1000),
                at(0x2000),
                at(0x3000),
                at(0x5fff),
                at(0x6000)
            ],
            [Prot::READ, RW, Prot::READ, 0, 0, RW]
        );
    }

    #[test]
    fn page_state_tells_written_pages_from_untouched_ones() {
        let present = PM_PRESENT;
        let zero = Some((77, Some(1024)));
        // A private file page: still the file's (read) or copied (written).
        assert_eq!(
            page_written(Class::PrivateFile, present | PM_FILE | 5, zero),
            Some(false)
        );
        assert_eq!(
            page_written(Class::PrivateFile, present | 5, zero),
            Some(true)
        );
        // Anonymous: the zero page, a frame of the huge zero page, or not.
        assert_eq!(
            page_written(Class::PrivateAnon, present | 77, zero),
            Some(false)
        );
        assert_eq!(
            page_written(Class::PrivateAnon, present | 1030, zero),
            Some(false)
        );
        assert_eq!(
            page_written(Class::PrivateAnon, present | 2000, zero),
            Some(true)
        );
        // Frames hidden, not present, or shared: no evidence.
        assert_eq!(page_written(Class::PrivateAnon, present | 2000, None), None);
        assert_eq!(page_written(Class::PrivateFile, PM_FILE, zero), None);
        assert_eq!(page_written(Class::Opaque, present | PM_FILE, zero), None);
    }

    #[test]
    fn the_zero_page_is_found_where_frames_are_visible() {
        // Root sees frame numbers; another user sees none (then `None`).
        // SAFETY: geteuid has no memory effects.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let (small, huge) = zero_frames().expect("root sees frames");
        assert_ne!(small, 0);
        assert_ne!(huge, Some(small));
    }
}
