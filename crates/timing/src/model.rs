//! [`CostModel`]: a cost file resolved once into plain fields, and the
//! linear sums that price what the model did.
//!
//! ## What an event costs
//! - An access: `access.tlb_hit`; plus `tlb.l2_hit` if it missed the L1
//!   TLB and hit the L2; plus, if it walked, `tlb.miss_walk_cached` when
//!   the CPU's [`crate::TableLines`] held the last-level entry's line pair
//!   and `tlb.miss_walk` when not; plus `walk.ref_cached` per memory
//!   reference the walk made (walk-cache hits have already removed
//!   theirs). `walk.ref_memory` is not charged: the line fetched from
//!   memory is inside `tlb.miss_walk`.
//! - A handled fault: the figure of its kind (`fault.*`, the whole fault as
//!   the faulting thread sees it, measured densely; every multi-size THP is
//!   priced as `fault.mthp_64k`; a write to the zero page is
//!   `fault.zero_cow`, a zeroed page and no copy), plus `pt.alloc` per table
//!   page the fault allocated (the virtual executor and the replay add it).
//!   A major fault's figure is its part per fault; the pages its read-ahead
//!   read in are priced apart, `fault.major_page` each
//!   ([`CostModel::pages_read`]), as are the pages a minor fault's
//!   asynchronous read-ahead reads (Linux: mm/filemap.c,
//!   do_sync_mmap_readahead / do_async_mmap_readahead, both allocating,
//!   inserting and submitting every page of the window). A write to a
//!   write-protected page of a shared file mapping is `fault.file_mkwrite`.
//! - A system call: its `*.call` figure, plus its per-page figure times the
//!   pages it zapped (munmap, madvise) or the pages of its range (mprotect),
//!   plus `pt.alloc` / `pt.free` per table page it added or freed, plus
//!   the faults it made populating pages (MAP_POPULATE, mlock,
//!   MADV_POPULATE_*, mprotect of a locked range) priced as faults of the
//!   kind of what they mapped (the virtual executor does this).
//!   A page populated without an exception (anonymous pages that
//!   MAP_POPULATE, mlock or MADV_POPULATE_WRITE map) is priced
//!   `populate.page`, not as a fault; a zero page populated so
//!   (MADV_POPULATE_READ, or MAP_POPULATE of a read-only anonymous
//!   mapping) `populate.zero_page`.
//! - mlock, munlock, mremap: `syscall.call` per call. A new folio a
//!   populate maps into a locked VMA adds `mlock.folio` (mlocked as it is
//!   mapped, munlocked when unmapped; both charged at the populate), and a
//!   zero page a populate-for-write replaces is `populate.zero_cow`, not
//!   `populate.page`.
//! - get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) (the format's `node_of`):
//!   `node_of.call` per call (a present page), plus the fault it made
//!   populating an absent page, priced as a populated page (the zero page:
//!   `populate.zero_page`); the table lock the slow lookup takes (Linux
//!   3.12's follow_page_mask) is held `lock.hold_lookup`.
//! - msync(MS_SYNC): `msync.call` plus `msync.page` per dirty page it
//!   wrote back (Linux: mm/msync.c -> vfs_fsync_range: the pages written
//!   and waited for, the file system's commit; elapsed time, the I/O wait
//!   included); an msync that found nothing dirty, `syscall.call`.
//! - A fork: `fork.call`, plus `fork.page` per present page and
//!   `fork.table` per table page of the parent (copied, then zapped and
//!   freed at the child's exit); the child's faults are priced as faults.
//! - A shootdown: `shootdown.sender` to the CPU that sent it, per flush
//!   request that reached another CPU (calibrate measures it per request:
//!   under KVM's paravirtual flush only some requests become IPIs),
//!   `tlb.flush_local` when it stayed local; `shootdown.receiver` to every
//!   CPU that received one.
//! - A broadcast shootdown (`tlb_flush = invlpgb | rar`, a space with a
//!   global ASID): `invlpgb.instruction` per INVLPGB and `invlpgb.tlbsync`
//!   per flush to its sender, nothing to the other CPUs (the hardware
//!   invalidates without interrupting them); or `rar.sender` per request
//!   and `rar.receiver` to each target CPU.
//! - A lock: held `lock.hold_fault` by a fault and `lock.uncontended` by a
//!   system call, per acquisition; a CPU that had to wait pays
//!   `lock.handoff` on top (the line moving to it), plus
//!   `lock.handoff_waiter` per acquisition already waiting (a ticket lock);
//!   a CPU that takes a free lock another CPU held last pays
//!   `lock.handoff` (its line moves).
//! - Memory bandwidth: the KiB a fault clears or copies (its new page, a
//!   THP's 2 MiB, a COW's copy read and written) take, on a CPU alone, no
//!   longer than the fault's own figure (measured alone, it holds them);
//!   with other CPUs transferring at once they share the machine's
//!   `mem.bandwidth_kib` ([`crate::SharedBandwidth`]), and the fault pays
//!   what its share takes beyond its own figure.
//!
//! - Locks every CPU shares (the zone lock per batch of 63 pages a CPU's
//!   free-page list takes or gives back, `zone.lock_batch`; the LRU lock
//!   per batch of 15 folios added or removed, `lru.lock_batch`; the
//!   mmap_lock's count line, moved per acquisition by another CPU at
//!   `lock.handoff`): a [`crate::SharedLock`] each; a CPU pays only the
//!   wait and the line's hand-off (the holds are inside the figures,
//!   measured by one CPU alone).
//!
//! A file that lacks a name takes the built-in assumed figure for it
//! ([`CostModel::missing`] lists them, so a report can say so).

use crate::assumed;
use crate::ns3::Ns3;
use costs::CostFile;
use mm::{FaultKind, FAULT_KINDS};
use mmu::HitLevel;

/// System calls by how they are priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallKind {
    Mmap = 0,
    Munmap = 1,
    Mprotect = 2,
    Madvise = 3,
    /// mlock, munlock, mremap; an msync that wrote nothing back.
    Other = 4,
    /// msync(MS_SYNC) that wrote dirty pages back.
    Msync = 5,
    /// get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR): one page's node.
    NodeOf = 6,
}

const SYSCALLS: usize = 7;

/// How reports name the shipped reference file of the development
/// machine: the library's default (tests, Python bindings), never the
/// command line's (which prices with this host's own file).
pub const SHIPPED: &str = "costs/xeon-kvm-2026.toml (shipped reference machine: ptlab calibrate --long on a 2-vCPU Intel Xeon KVM guest, 2026-11-27)";

/// How reports name the shipped bare-metal file.
pub const BARE_METAL: &str =
    "costs/bare-metal-2013.toml (shipped: assumed figures for a 2013 bare-metal server, sources named)";

/// The short name of the shipped reference file [`CostModel::shipped`]
/// reads.
pub const SHIPPED_NAME: &str = "xeon-kvm-2026";

/// The shipped cost files by the short names `--costs` takes besides a
/// path, with their text.
const SHIPPED_FILES: [(&str, &str, &str); 2] = [
    (
        SHIPPED_NAME,
        SHIPPED,
        include_str!("../../../costs/xeon-kvm-2026.toml"),
    ),
    (
        "bare-metal-2013",
        BARE_METAL,
        include_str!("../../../costs/bare-metal-2013.toml"),
    ),
];

/// The short names of the shipped cost files.
pub fn shipped_names() -> Vec<&'static str> {
    SHIPPED_FILES.iter().map(|(n, _, _)| *n).collect()
}

/// The shipped cost file `name` names, parsed; `None` for another name.
pub fn shipped_file(name: &str) -> Option<(&'static str, CostFile)> {
    let (_, origin, text) = SHIPPED_FILES.iter().find(|(n, _, _)| *n == name)?;
    let file = CostFile::parse(text, std::path::Path::new(origin))
        .expect("the shipped cost files are valid (tested)");
    Some((origin, file))
}

/// A cost file resolved for the hot path (see the module documentation).
#[derive(Debug, Clone)]
pub struct CostModel {
    /// Where the figures came from, as reports name it (a path, or
    /// "built-in (assumed)").
    pub origin: String,
    /// Catalog names the file lacked, priced with the built-in figure.
    pub missing: Vec<&'static str>,
    /// The machine the file describes, in a few words
    /// (`costs::HostInfo::describe`).
    pub machine: String,
    /// The file's host table: the machine the figures describe.
    pub host: costs::HostInfo,
    pub l1_hit: Ns3,
    pub l2_extra: Ns3,
    pub walk_extra: Ns3,
    /// A walk whose last-level line is cached ([`crate::TableLines`]).
    pub walk_cached: Ns3,
    pub walk_ref: Ns3,
    /// An anonymous write fault on a page its CPU freed just before
    /// (`fault.anon_recycled`; `fault.anon_write` where a file lacks it).
    pub anon_recycled: Ns3,
    /// Per handled fault, by [`FaultKind`].
    pub faults: [Ns3; FAULT_KINDS],
    /// Per page a fault's read-ahead read in (`fault.major_page`).
    pub major_page: Ns3,
    /// Per page read in a PMD-sized folio (`fault.major_pmd_page`).
    pub major_pmd_page: Ns3,
    /// A major fault that read PMD-sized folios (`fault.major_pmd`), in
    /// place of `fault.major`.
    pub major_pmd: Ns3,
    pub pt_alloc: Ns3,
    pub pt_free: Ns3,
    /// An anonymous page a system call populated (no exception).
    pub populate_page: Ns3,
    /// A zero-page mapping a system call populated (MADV_POPULATE_READ,
    /// MAP_POPULATE of a read-only mapping; no exception, no allocation).
    pub populate_zero: Ns3,
    /// A zero page a system call's populate-for-write replaced with a
    /// zeroed page (`populate.zero_cow`; where a file lacks it, derived:
    /// `populate.page + fault.zero_cow - fault.anon_write`).
    pub populate_zero_cow: Ns3,
    /// A new folio a populate mapped into a locked VMA: its mlock and its
    /// later munlock (`mlock.folio`; 0 where a file lacks it, as before
    /// the figure existed).
    pub mlock_folio: Ns3,
    fork_call: Ns3,
    fork_page: Ns3,
    fork_table: Ns3,
    calls: [Ns3; SYSCALLS],
    per_page: [Ns3; SYSCALLS],
    pub shootdown_sender: Ns3,
    pub shootdown_receiver: Ns3,
    pub flush_local: Ns3,
    /// Broadcast invalidation (`invlpgb.*`, `rar.*`): read without listing
    /// them in `missing`, so that a file taken before they existed (every
    /// file so far: no host measures them) reports no gap for an IPI run.
    pub invlpgb: Ns3,
    pub tlbsync: Ns3,
    pub rar_sender: Ns3,
    pub rar_receiver: Ns3,
    pub hold_fault: Ns3,
    pub hold_syscall: Ns3,
    /// What get_user_pages' follow_page holds a page-table lock for over
    /// one present page (`lock.hold_lookup`).
    pub hold_lookup: Ns3,
    pub handoff: Ns3,
    pub handoff_waiter: Ns3,
    /// The machine's memory bandwidth, ns per KiB.
    pub bandwidth_kib: Ns3,

    /// The zone lock's hold per batch of a CPU's free-page list.
    pub zone_batch: Ns3,
    /// The LRU lock's hold per batch of folios.
    pub lru_batch: Ns3,
}

/// The cost file's name for a kind of fault.
fn fault_cost_name(k: FaultKind) -> &'static str {
    match k {
        FaultKind::AnonWrite => "fault.anon_write",
        FaultKind::ZeroRead => "fault.zero_read",
        FaultKind::Cow => "fault.cow",
        FaultKind::FileRead => "fault.file_read",
        FaultKind::Shmem => "fault.shmem",
        FaultKind::Thp => "fault.thp",
        FaultKind::Mthp => "fault.mthp_64k",
        FaultKind::Major => "fault.major",
        FaultKind::Spurious => "fault.spurious",
        FaultKind::ZeroCow => "fault.zero_cow",
        FaultKind::FileMkwrite => "fault.file_mkwrite",
    }
}

impl CostModel {
    /// The model of `file` (named `origin` in reports); names it lacks take
    /// the built-in figures.
    pub fn new(file: &CostFile, origin: &str) -> CostModel {
        let builtin = assumed::assumed();
        let mut missing = Vec::new();
        let mut get = |name: &'static str| -> Ns3 {
            match file.get(name) {
                Some(c) => Ns3::from(c),
                None => {
                    missing.push(name);
                    Ns3::from(builtin.get(name).expect("the built-in file has every name"))
                }
            }
        };
        let quiet = |name: &'static str| -> Ns3 {
            Ns3::from(
                file.get(name)
                    .or_else(|| builtin.get(name))
                    .expect("the built-in file has every name"),
            )
        };
        let mut faults = [Ns3::ZERO; FAULT_KINDS];
        for k in FaultKind::ALL {
            faults[k as usize] = get(fault_cost_name(k));
        }
        let calls = [
            get("mmap.call"),
            get("munmap.call"),
            get("mprotect.call"),
            get("madvise.call"),
            get("syscall.call"),
            get("msync.call"),
            get("node_of.call"),
        ];
        let per_page = [
            Ns3::ZERO,
            get("munmap.page"),
            get("mprotect.page"),
            get("madvise.page"),
            Ns3::ZERO,
            get("msync.page"),
            Ns3::ZERO,
        ];
        // A file without the recycled figure (taken before it existed, or
        // the 2013 machine's) prices every anonymous write fault alike.
        let anon_recycled = file
            .get("fault.anon_recycled")
            .map_or(faults[FaultKind::AnonWrite as usize], Ns3::from);
        // A file taken before the figure existed (or the 2013 machine's):
        // a populated page plus what a zero-page write fault costs beyond a
        // fresh one (wp_page_copy's flush and the old entry's clearing).
        let populate_zero_cow = file.get("populate.zero_cow").map_or_else(
            || {
                // The difference's interval: its ends from the opposite
                // ends of the two figures', clamped at 0.
                let (z, a) = (
                    faults[FaultKind::ZeroCow as usize],
                    faults[FaultKind::AnonWrite as usize],
                );
                let extra = Ns3 {
                    ns: (z.ns - a.ns).max(0.0),
                    lo: (z.lo - a.hi).max(0.0),
                    hi: (z.hi - a.lo).max(0.0),
                };
                get("populate.page") + extra
            },
            Ns3::from,
        );
        let m = CostModel {
            origin: origin.to_string(),
            machine: file.host.describe(),
            host: file.host.clone(),
            populate_zero_cow,
            mlock_folio: file.get("mlock.folio").map_or(Ns3::ZERO, Ns3::from),
            anon_recycled,
            missing: Vec::new(),
            l1_hit: get("access.tlb_hit"),
            l2_extra: get("tlb.l2_hit"),
            walk_extra: get("tlb.miss_walk"),
            walk_cached: get("tlb.miss_walk_cached"),
            walk_ref: get("walk.ref_cached"),
            faults,
            major_page: get("fault.major_page"),
            major_pmd_page: get("fault.major_pmd_page"),
            major_pmd: get("fault.major_pmd"),
            pt_alloc: get("pt.alloc"),
            pt_free: get("pt.free"),
            populate_page: get("populate.page"),
            populate_zero: get("populate.zero_page"),
            fork_call: get("fork.call"),
            fork_page: get("fork.page"),
            fork_table: get("fork.table"),
            calls,
            per_page,
            shootdown_sender: get("shootdown.sender"),
            shootdown_receiver: get("shootdown.receiver"),
            flush_local: get("tlb.flush_local"),
            invlpgb: quiet("invlpgb.instruction"),
            tlbsync: quiet("invlpgb.tlbsync"),
            rar_sender: quiet("rar.sender"),
            rar_receiver: quiet("rar.receiver"),
            hold_fault: get("lock.hold_fault"),
            hold_syscall: get("lock.uncontended"),
            hold_lookup: get("lock.hold_lookup"),
            handoff: get("lock.handoff"),
            handoff_waiter: get("lock.handoff_waiter"),
            bandwidth_kib: get("mem.bandwidth_kib"),
            zone_batch: get("zone.lock_batch"),
            lru_batch: get("lru.lock_batch"),
        };
        CostModel { missing, ..m }
    }

    /// What handing a lock from one CPU to another costs.
    pub fn handoff(&self) -> crate::Handoff {
        crate::Handoff {
            base: self.handoff,
            per_waiter: self.handoff_waiter,
        }
    }

    /// The model of the built-in assumed figures.
    pub fn builtin() -> CostModel {
        CostModel::new(&assumed::assumed(), "built-in (assumed)")
    }

    /// The model of the shipped reference file, `costs/xeon-kvm-2026.toml`
    /// (`ptlab calibrate --long` on the development machine): the
    /// library's default when no cost file is named, so that tests and the
    /// Python bindings price alike on every host. The command line
    /// defaults to this host's own file instead (docs/costs.md). Names it
    /// lacks take the built-in figures.
    pub fn shipped() -> CostModel {
        CostModel::named(SHIPPED_NAME).expect("the reference file is shipped")
    }

    /// A shipped cost file by its short name (`xeon-kvm-2026`,
    /// `bare-metal-2013`), compiled in; `None` for another name.
    pub fn named(name: &str) -> Option<CostModel> {
        let (origin, file) = shipped_file(name)?;
        Some(CostModel::new(&file, origin))
    }

    /// One access whose translation completed at `hit` after a walk of
    /// `walk_refs` references (0 for a clean TLB hit); a walk found its
    /// last-level table line in the caches if `line_cached`
    /// ([`crate::TableLines`]).
    #[inline(always)]
    pub fn access(&self, hit: HitLevel, walk_refs: u32, line_cached: bool) -> Ns3 {
        let mut c = self.l1_hit;
        match hit {
            HitLevel::L1 => {}
            HitLevel::L2 => c += self.l2_extra,
            HitLevel::Walk if line_cached => c += self.walk_cached,
            HitLevel::Walk => c += self.walk_extra,
        }
        if walk_refs != 0 {
            c += self.walk_ref * f64::from(walk_refs);
        }
        c
    }

    /// Handled faults, `counts[k]` of each [`FaultKind`] `k`.
    pub fn faults(&self, counts: &[u64; FAULT_KINDS]) -> Ns3 {
        let mut c = Ns3::ZERO;
        for (n, cost) in counts.iter().zip(&self.faults) {
            if *n != 0 {
                c += *cost * *n as f64;
            }
        }
        c
    }

    /// `pages` pages that faults' read-ahead read in from the backing
    /// store, beyond the faults' own figures: a major fault that read `n`
    /// pages costs `fault.major + n x fault.major_page`.
    pub fn pages_read(&self, pages: u64) -> Ns3 {
        self.major_page * pages as f64
    }

    /// `pages` of those read in PMD-sized folios, priced
    /// `fault.major_pmd_page` each instead of `fault.major_page`: the
    /// fault waits for its whole folio's read (Linux mm/filemap.c,
    /// filemap_fault -> lock_folio_maybe_drop_mmap; the read unlocks the
    /// folio at its last block, folio_end_read), and allocates one folio,
    /// not one per page. `pmd` must not exceed `all`.
    pub fn pages_read_split(&self, all: u64, pmd: u64) -> Ns3 {
        self.pages_read(all - pmd) + self.major_pmd_page * pmd as f64
    }

    /// One system call of `kind` that touched `pages` pages and added
    /// `tables_added` and freed `tables_freed` table pages. For
    /// [`SyscallKind::Msync`], `pages` are the pages it wrote back; one
    /// that wrote none is priced as any other call (`syscall.call`).
    pub fn syscall(
        &self,
        kind: SyscallKind,
        pages: u64,
        tables_added: u64,
        tables_freed: u64,
    ) -> Ns3 {
        let kind = match kind {
            SyscallKind::Msync if pages == 0 => SyscallKind::Other,
            k => k,
        };
        let k = kind as usize;
        self.calls[k]
            + self.per_page[k] * pages as f64
            + self.pt_alloc * tables_added as f64
            + self.pt_free * tables_freed as f64
    }

    /// A fork of a parent with `pages` present pages and `tables` table
    /// pages (the child's own work aside).
    pub fn fork(&self, pages: u64, tables: u64) -> Ns3 {
        self.fork_call + self.fork_page * pages as f64 + self.fork_table * tables as f64
    }

    /// The sender's part of `shootdowns` shootdowns: IPI rounds if it sent
    /// IPIs, local flushes if not.
    pub fn shootdowns_sent(&self, shootdowns: u64, sent_ipis: bool) -> Ns3 {
        let each = if sent_ipis {
            self.shootdown_sender
        } else {
            self.flush_local
        };
        each * shootdowns as f64
    }

    /// The initiator's part of `flushes` broadcast shootdowns that issued
    /// `instructions` INVLPGBs (each flush ending in one TLBSYNC), or, for
    /// RAR, `instructions` requests (Linux 6.15: arch/x86/mm/tlb.c,
    /// `broadcast_tlb_flush`).
    pub fn broadcasts_sent(&self, rar: bool, flushes: u64, instructions: u64) -> Ns3 {
        if rar {
            self.rar_sender * instructions as f64
        } else {
            self.invlpgb * instructions as f64 + self.tlbsync * flushes as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use costs::Cost;

    #[test]
    fn a_file_figure_overrides_the_builtin_and_gaps_are_listed() {
        let mut f = CostFile::new(Default::default());
        f.costs.insert(
            "fault.anon_write".into(),
            Cost::assumed(1234.0, 1000.0, 1500.0, "test"),
        );
        let m = CostModel::new(&f, "t.toml");
        assert_eq!(
            m.faults[FaultKind::AnonWrite as usize],
            Ns3 {
                ns: 1234.0,
                lo: 1000.0,
                hi: 1500.0
            }
        );
        assert!(!m.missing.contains(&"fault.anon_write"));
        let bare = CostModel::named("bare-metal-2013").unwrap();
        assert!(bare.missing.is_empty(), "{:?}", bare.missing);
        assert!(CostModel::named("elsewhere").is_none());
        // The old name of the reference file is not a shipped name: it
        // said "this host" of another machine.
        assert!(CostModel::named("this-host").is_none());
        assert!(bare.machine.contains("bare metal"), "{}", bare.machine);
        assert!(m.missing.contains(&"fault.cow"));
        assert_eq!(m.origin, "t.toml");
        assert!(CostModel::builtin().missing.is_empty());
        // The shipped file parses and prices a write fault as it measured.
        let shipped = CostModel::shipped();
        let text = include_str!("../../../costs/xeon-kvm-2026.toml");
        let file = costs::CostFile::parse(text, std::path::Path::new("x")).unwrap();
        assert_eq!(
            shipped.faults[FaultKind::AnonWrite as usize].ns,
            file.get("fault.anon_write").unwrap().ns
        );
        // Its label names the machine it was measured on.
        assert!(
            shipped
                .machine
                .starts_with("Intel(R) Xeon(R) Processor, 2 CPUs"),
            "{}",
            shipped.machine
        );
        assert_eq!(shipped_names(), [SHIPPED_NAME, "bare-metal-2013"]);
    }

    #[test]
    fn an_access_adds_the_parts_of_where_it_hit() {
        let m = CostModel::builtin();
        assert_eq!(m.access(HitLevel::L1, 0, false), m.l1_hit);
        assert_eq!(m.access(HitLevel::L2, 0, false), m.l1_hit + m.l2_extra);
        assert_eq!(
            m.access(HitLevel::Walk, 3, false).ns,
            m.l1_hit.ns + m.walk_extra.ns + 3.0 * m.walk_ref.ns
        );
        assert_eq!(
            m.access(HitLevel::Walk, 3, true).ns,
            m.l1_hit.ns + m.walk_cached.ns + 3.0 * m.walk_ref.ns
        );
    }

    #[test]
    fn a_major_fault_costs_its_call_plus_each_page_it_read() {
        let mut f = CostFile::new(Default::default());
        f.costs.insert(
            "fault.major".into(),
            Cost::assumed(30_000.0, 20_000.0, 40_000.0, "test"),
        );
        f.costs.insert(
            "fault.major_page".into(),
            Cost::assumed(2_000.0, 1_500.0, 3_000.0, "test"),
        );
        let m = CostModel::new(&f, "t.toml");
        let mut counts = [0; FAULT_KINDS];
        counts[FaultKind::Major as usize] = 1;
        for n in [0u64, 1, 16, 1024] {
            let c = m.faults(&counts) + m.pages_read(n);
            assert_eq!(c.ns, 30_000.0 + 2_000.0 * n as f64);
            assert_eq!(c.lo, 20_000.0 + 1_500.0 * n as f64);
            assert_eq!(c.hi, 40_000.0 + 3_000.0 * n as f64);
        }
        // Two major faults of 16 pages each: twice one of them.
        counts[FaultKind::Major as usize] = 2;
        assert_eq!(
            (m.faults(&counts) + m.pages_read(32)).ns,
            2.0 * (30_000.0 + 16.0 * 2_000.0)
        );
    }

    #[test]
    fn pages_read_in_pmd_folios_cost_their_own_figure() {
        let mut f = CostFile::new(Default::default());
        f.costs.insert(
            "fault.major_page".into(),
            Cost::assumed(1_000.0, 800.0, 1_200.0, "test"),
        );
        f.costs.insert(
            "fault.major_pmd_page".into(),
            Cost::assumed(2_500.0, 2_000.0, 3_000.0, "test"),
        );
        let m = CostModel::new(&f, "t.toml");
        // Two 2 MiB folios: 1024 pages at the PMD figure, none at the other.
        let c = m.pages_read_split(1024, 1024);
        assert_eq!((c.ns, c.lo, c.hi), (2_560_000.0, 2_048_000.0, 3_072_000.0));
        // Mixed: 16 base pages and one 2 MiB folio.
        assert_eq!(
            m.pages_read_split(528, 512).ns,
            16.0 * 1_000.0 + 512.0 * 2_500.0
        );
        // None in PMD folios: the per-page figure alone.
        assert_eq!(m.pages_read_split(64, 0), m.pages_read(64));
    }

    #[test]
    fn an_msync_pays_its_call_and_pages_only_when_it_wrote_some() {
        let m = CostModel::builtin();
        // Nothing dirty: any other call.
        assert_eq!(
            m.syscall(SyscallKind::Msync, 0, 0, 0),
            m.syscall(SyscallKind::Other, 0, 0, 0)
        );
        let one = m.syscall(SyscallKind::Msync, 1, 0, 0).ns;
        let many = m.syscall(SyscallKind::Msync, 101, 0, 0).ns;
        assert_eq!(one, 1_000_000.0 + 5000.0);
        assert_eq!(many - one, 100.0 * 5000.0);
    }

    #[test]
    fn a_syscall_is_linear_in_pages_and_tables() {
        let m = CostModel::builtin();
        let one = m.syscall(SyscallKind::Munmap, 1, 0, 0).ns;
        let ten = m.syscall(SyscallKind::Munmap, 10, 0, 2).ns;
        assert_eq!(ten - one, 9.0 * 50.0 + 2.0 * 200.0);
    }
}
