//! The plan turned into what the child executes: syscall arguments resolved
//! (addresses, flags, protections, advice numbers), mark names as indices, a
//! numbered description of every op for error messages, and the exact number
//! of mark records and latency histograms the child must preallocate.
//!
//! Built in the parent before `fork`, so the child only reads it.

use std::time::Duration;

use workload::plan::{self, Access, Advice, FileState, MapKind, Op, Prot, Workload};

/// Name of the implicit last mark (the format's `end`).
pub(crate) const END_MARK: &str = "end";

/// One executable op. `id` indexes [`Program::op_desc`].
#[derive(Debug)]
pub(crate) struct KOp {
    pub id: u32,
    pub kind: KOpKind,
}

/// An mmap of a region, as the child calls it.
#[derive(Debug)]
pub(crate) struct KMmap {
    pub(crate) region: usize,
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) prot: libc::c_int,
    /// MAP_* flags except the sharing type and MAP_ANONYMOUS.
    pub(crate) extra_flags: libc::c_int,
    pub(crate) kind: MapKind,
    pub(crate) shared: bool,
    pub(crate) file: FileState,
    /// mmap's offset into the region's file.
    pub(crate) file_offset: u64,
    /// A shmem region with `shmem_huge`: the index of its tmpfs mount in
    /// [`Program::tmpfs`] (its file is made there instead of a memfd).
    pub(crate) tmpfs: Option<usize>,
}

#[derive(Debug)]
pub(crate) enum KOpKind {
    Mmap(KMmap),
    Munmap {
        addr: u64,
        len: u64,
    },
    Mprotect {
        addr: u64,
        len: u64,
        prot: libc::c_int,
    },
    Madvise {
        addr: u64,
        len: u64,
        advice: libc::c_int,
    },
    /// mlock, or mlock2(MLOCK_ONFAULT) with `onfault`.
    Mlock {
        addr: u64,
        len: u64,
        onfault: bool,
    },
    Munlock {
        addr: u64,
        len: u64,
    },
    Touch {
        base: u64,
        touch: plan::Touch,
    },
    Sync {
        addr: u64,
        len: u64,
    },
    /// get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) at each access point of
    /// the (sequential read) touch.
    NodeOf {
        base: u64,
        touch: plan::Touch,
    },
    /// mremap; the call must return `expect` (the region's address).
    Mremap {
        addr: u64,
        old_len: u64,
        new_len: u64,
        flags: libc::c_int,
        new_addr: u64,
        expect: u64,
    },
    /// Memory reclaim of the run's own cgroup, which runs the THP
    /// deferred split shrinker (see `super::thp_steps`).
    DeferredSplit,
    /// Waits for khugepaged's next two full scans (see `super::thp_steps`).
    Khugepaged,
    Sleep(Duration),
    Barrier,
    /// Index into [`Program::mark_names`].
    Mark(u32),
    Repeat {
        times: u64,
        body: Vec<KOp>,
    },
    /// A child process running `body` (see `super::fork`); its marks are
    /// named `NAME.LABEL` in [`Program::mark_names`].
    Fork {
        body: Vec<KOp>,
        /// `false`: the thread goes on while the child runs, until a
        /// [`KOpKind::Waitpid`] (or the end of its ops).
        wait: bool,
    },
    /// Waits for the running child (the checker allows one at a time).
    Waitpid,
}

/// Everything the child needs, plus what the parent needs to read its report.
#[derive(Debug)]
pub(crate) struct Program {
    /// Ops per thread, in thread order.
    pub threads: Vec<Vec<KOp>>,
    /// Distinct mark labels; the last one is always [`END_MARK`].
    pub mark_names: Vec<String>,
    /// `op_desc[id]`: "thread 0, op 3.1 (touch \"big\")".
    pub op_desc: Vec<String>,
    /// Region names, addresses and sizes, by region id.
    pub regions: Vec<plan::Region>,
    /// Mark records the run can produce, the implicit `end` included.
    pub mark_records: u64,
    /// Latency histograms the run can attach to marks.
    pub latency_slots: u64,
    /// The workload maps at least one file region.
    pub file_regions: Vec<bool>,
    /// The length of each file region's file: its largest mmap's offset
    /// and size (0 for other regions).
    pub file_bytes: Vec<u64>,
    /// Most mark records one fork's child can produce (0: no fork); the
    /// size of the area a child hands its records back through.
    pub fork_records: u64,
    /// A fork's child is killed past this (the run's own time limit).
    pub fork_timeout: Duration,
    /// The workload has a `deferred_split` step: the run needs a memory
    /// cgroup of its own, whose files `reclaim` names once made.
    pub needs_reclaim: bool,
    pub reclaim: Option<super::thp_steps::ReclaimFiles>,
    /// The longest a `khugepaged` step waits (set by the run when the
    /// workload has one).
    pub khugepaged_limit: Option<Duration>,
    /// The CPUs workload threads are pinned to, thread `i` on
    /// `pin_cpus[i % len]` (empty: not pinned; set by the run from
    /// `KernelOptions::pin_threads`).
    pub pin_cpus: Vec<usize>,
    /// The tmpfs mounts of `shmem_huge` regions (see `super::tmpfs`), their
    /// option strings, and (set by the run) their mount points.
    pub tmpfs: Vec<super::tmpfs::Mount>,
    pub tmpfs_data: Vec<std::ffi::CString>,
    pub tmpfs_paths: Vec<std::ffi::CString>,
    /// The mount of each region's files, by region id.
    tmpfs_of_region: Vec<Option<usize>>,
}

impl Program {
    pub fn build(w: &Workload) -> Program {
        let (tmpfs, tmpfs_of_region) = super::tmpfs::mounts(w);
        let mut b = Builder {
            w,
            tmpfs_of_region: &tmpfs_of_region,
            mark_names: Vec::new(),
            op_desc: Vec::new(),
            fork: None,
        };
        let threads: Vec<Vec<KOp>> = w.threads.iter().map(|t| b.ops(&t.ops, t.tid, "")).collect();
        let end = b.mark_index(END_MARK);
        debug_assert_eq!(end as usize, b.mark_names.len() - 1);

        let mut mark_records: u64 = 1; // the implicit end mark
        let mut latency = false;
        let mut latency_slots: u64 = 0;
        for ops in &threads {
            let c = count(ops, false);
            mark_records = mark_records.saturating_add(c.marks);
            latency_slots = latency_slots.saturating_add(c.latency_marks);
            latency |= c.has_latency;
        }
        if latency {
            latency_slots = latency_slots.saturating_add(1); // the end mark
        }
        let fork_records = threads
            .iter()
            .flat_map(|ops| ops.iter())
            .filter_map(|op| match &op.kind {
                KOpKind::Fork { body, .. } => Some(count(body, false).marks),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let mut file_bytes = vec![0; w.regions.len()];
        w.threads
            .iter()
            .for_each(|t| mark_files(&t.ops, &mut file_bytes));
        let file_regions = file_bytes.iter().map(|&n| n > 0).collect();
        Program {
            threads,
            mark_names: b.mark_names,
            op_desc: b.op_desc,
            regions: w.regions.clone(),
            mark_records,
            latency_slots,
            file_regions,
            file_bytes,
            fork_records,
            fork_timeout: Duration::from_secs(120),
            needs_reclaim: w
                .threads
                .iter()
                .any(|t| has(&t.ops, &|o| matches!(o, Op::DeferredSplit))),
            reclaim: None,
            khugepaged_limit: None,
            pin_cpus: Vec::new(),
            tmpfs_data: tmpfs.iter().map(super::tmpfs::mount_data).collect(),
            tmpfs,
            tmpfs_paths: Vec::new(),
            tmpfs_of_region,
        }
    }

    /// Whether the workload has a `khugepaged` step.
    pub fn has_khugepaged(&self) -> bool {
        fn find(ops: &[KOp]) -> bool {
            ops.iter().any(|op| match &op.kind {
                KOpKind::Khugepaged => true,
                KOpKind::Repeat { body, .. } | KOpKind::Fork { body, .. } => find(body),
                _ => false,
            })
        }
        self.threads.iter().any(|ops| find(ops))
    }

    /// Region name, address and length of the mmap op `id`.
    pub fn mmap_target(&self, id: u32) -> Option<(String, u64, u64)> {
        fn find(ops: &[KOp], id: u32) -> Option<&KOp> {
            ops.iter().find_map(|op| match &op.kind {
                _ if op.id == id => Some(op),
                KOpKind::Repeat { body, .. } | KOpKind::Fork { body, .. } => find(body, id),
                _ => None,
            })
        }
        let op = self.threads.iter().find_map(|ops| find(ops, id))?;
        match op.kind {
            KOpKind::Mmap(KMmap {
                region, addr, len, ..
            }) => Some((self.regions[region].name.clone(), addr, len)),
            _ => None,
        }
    }

    /// The name of a region whose files need a tmpfs mount, if any.
    pub fn tmpfs_region(&self) -> Option<&str> {
        self.tmpfs_of_region
            .iter()
            .position(Option::is_some)
            .map(|r| self.regions[r].name.as_str())
    }

    /// The index of the implicit end mark.
    pub fn end_mark(&self) -> u32 {
        (self.mark_names.len() - 1) as u32
    }
}

/// Whether an op of `ops` (repeat and fork bodies included) is `want`.
fn has(ops: &[Op], want: &dyn Fn(&Op) -> bool) -> bool {
    ops.iter().any(|op| {
        want(op) || matches!(op, Op::Repeat { ops, .. } | Op::Fork { ops, .. } if has(ops, want))
    })
}

struct Builder<'a> {
    w: &'a Workload,
    tmpfs_of_region: &'a [Option<usize>],
    mark_names: Vec<String>,
    op_desc: Vec<String>,
    /// The name of the fork whose ops are being built, if any.
    fork: Option<String>,
}

impl Builder<'_> {
    fn mark_index(&mut self, name: &str) -> u32 {
        // The end mark is appended last by `build`; a user mark cannot be
        // called "end" (the checker refuses it), so indices stay distinct.
        if let Some(i) = self.mark_names.iter().position(|n| n == name) {
            return i as u32;
        }
        self.mark_names.push(name.to_string());
        (self.mark_names.len() - 1) as u32
    }

    fn ops(&mut self, ops: &[Op], tid: usize, prefix: &str) -> Vec<KOp> {
        ops.iter()
            .enumerate()
            .map(|(i, op)| {
                let number = format!("{prefix}{}", i + 1);
                let id = self.op_desc.len() as u32;
                self.op_desc
                    .push(format!("thread {tid}, op {number} ({})", self.describe(op)));
                let kind = self.kind(op, tid, &number);
                KOp { id, kind }
            })
            .collect()
    }

    fn region(&self, id: usize) -> &plan::Region {
        &self.w.regions[id]
    }

    fn span(&self, region: usize, range: &plan::Range) -> (u64, u64) {
        (self.region(region).addr + range.offset, range.len)
    }

    fn kind(&mut self, op: &Op, tid: usize, number: &str) -> KOpKind {
        match op {
            Op::Mmap(m) => self.mmap(m),
            Op::Munmap { region, range } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Munmap { addr, len }
            }
            Op::Mprotect {
                region,
                range,
                prot,
            } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Mprotect {
                    addr,
                    len,
                    prot: prot_bits(*prot),
                }
            }
            Op::Madvise {
                region,
                range,
                advice,
            } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Madvise {
                    addr,
                    len,
                    advice: advice_number(*advice),
                }
            }
            Op::Mlock {
                region,
                range,
                onfault,
            } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Mlock {
                    addr,
                    len,
                    onfault: *onfault,
                }
            }
            Op::Munlock { region, range } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Munlock { addr, len }
            }
            Op::Touch(t) => KOpKind::Touch {
                base: self.region(t.region).addr,
                touch: t.clone(),
            },
            Op::Sync { region, range } => {
                let (addr, len) = self.span(*region, range);
                KOpKind::Sync { addr, len }
            }
            Op::NodeOf(t) => KOpKind::NodeOf {
                base: self.region(t.region).addr,
                touch: t.clone(),
            },
            Op::Mremap(m) => self.mremap(m),
            Op::DeferredSplit => KOpKind::DeferredSplit,
            Op::Khugepaged { .. } => KOpKind::Khugepaged,
            Op::Sleep(d) => KOpKind::Sleep(*d),
            Op::Barrier => KOpKind::Barrier,
            Op::Mark(name) => match &self.fork {
                Some(child) => KOpKind::Mark(self.mark_index(&format!("{child}.{name}"))),
                None => KOpKind::Mark(self.mark_index(name)),
            },
            Op::Repeat { times, ops } => KOpKind::Repeat {
                times: *times,
                body: self.ops(ops, tid, &format!("{number}.")),
            },
            Op::Fork { name, ops, wait } => {
                self.fork = Some(name.clone());
                let body = self.ops(ops, tid, &format!("{number}."));
                self.fork = None;
                KOpKind::Fork { body, wait: *wait }
            }
            Op::Waitpid(_) => KOpKind::Waitpid,
        }
    }

    /// An mmap at its region's fixed address (MAP_FIXED_NOREPLACE), with
    /// the flags the plan asks for.
    fn mmap(&self, m: &plan::Mmap) -> KOpKind {
        let mut extra = libc::MAP_FIXED_NOREPLACE;
        if m.populate {
            extra |= libc::MAP_POPULATE;
        }
        if m.locked {
            extra |= libc::MAP_LOCKED;
        }
        if m.noreserve {
            extra |= libc::MAP_NORESERVE;
        }
        KOpKind::Mmap(KMmap {
            region: m.region,
            addr: self.region(m.region).addr,
            len: m.size,
            prot: prot_bits(m.prot),
            extra_flags: extra,
            kind: m.kind,
            shared: m.shared || m.kind == MapKind::Shmem,
            file: m.file,
            file_offset: m.file_offset,
            tmpfs: self.tmpfs_of_region[m.region].filter(|_| m.shmem_huge.is_some()),
        })
    }

    /// An mremap from its region's address, to another region's when it
    /// moves there (MREMAP_FIXED), and the address it must return.
    fn mremap(&self, m: &plan::Mremap) -> KOpKind {
        let addr = self.region(m.region).addr;
        let new_addr = m.to.map_or(0, |to| self.region(to).addr);
        let mut flags = 0;
        if m.maymove {
            flags |= libc::MREMAP_MAYMOVE;
        }
        if m.to.is_some() {
            flags |= libc::MREMAP_FIXED;
        }
        if m.dontunmap {
            flags |= libc::MREMAP_DONTUNMAP;
        }
        KOpKind::Mremap {
            addr,
            old_len: m.old_size,
            new_len: m.new_size,
            flags,
            new_addr,
            expect: if m.to.is_some() { new_addr } else { addr },
        }
    }

    fn describe(&self, op: &Op) -> String {
        let name = |r: usize| self.region(r).name.as_str();
        match op {
            Op::Mmap(m) => format!("mmap {:?}", name(m.region)),
            Op::Munmap { region, .. } => format!("munmap {:?}", name(*region)),
            Op::Mprotect { region, .. } => format!("mprotect {:?}", name(*region)),
            Op::Madvise { region, advice, .. } => {
                format!("madvise {:?} {advice:?}", name(*region))
            }
            Op::Mlock { region, .. } => format!("mlock {:?}", name(*region)),
            Op::Munlock { region, .. } => format!("munlock {:?}", name(*region)),
            Op::Touch(t) => {
                let access = match t.access {
                    Access::Read => "read",
                    Access::Write => "write",
                };
                format!("touch {:?} {access}", name(t.region))
            }
            Op::Sync { region, .. } => format!("sync {:?}", name(*region)),
            Op::NodeOf(t) => format!("node_of {:?}", name(t.region)),
            Op::Mremap(m) => match m.to {
                Some(to) => format!("mremap {:?} to {:?}", name(m.region), name(to)),
                None => format!("mremap {:?}", name(m.region)),
            },
            Op::DeferredSplit => "deferred_split".to_string(),
            Op::Khugepaged { region, .. } => format!("khugepaged {:?}", name(*region)),
            Op::Sleep(d) => format!("sleep {d:?}"),
            Op::Barrier => "barrier".to_string(),
            Op::Mark(label) => format!("mark {label:?}"),
            Op::Repeat { times, .. } => format!("repeat {times}"),
            Op::Fork { name, .. } => format!("fork {name:?}"),
            Op::Waitpid(name) => format!("waitpid {name:?}"),
        }
    }
}

fn mark_files(ops: &[Op], out: &mut [u64]) {
    for op in ops {
        match op {
            Op::Mmap(m) if m.kind == MapKind::File => {
                let end = m.file_offset + m.size;
                out[m.region] = out[m.region].max(end);
            }
            Op::Repeat { ops, .. } | Op::Fork { ops, .. } => mark_files(ops, out),
            _ => {}
        }
    }
}

pub(crate) fn prot_bits(p: Prot) -> libc::c_int {
    libc::c_int::from(crate::abi::prot_bits(p))
}

pub(crate) fn advice_number(a: Advice) -> libc::c_int {
    libc::c_int::from(a.number())
}

/// What one pass over some ops records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count {
    /// Marks reached.
    marks: u64,
    /// Marks reached with a latency histogram pending (each takes a slot).
    latency_marks: u64,
    /// A latency histogram is pending after the ops.
    pending: bool,
    /// Some latency touch exists in the ops.
    has_latency: bool,
}

/// Counts the marks of `ops` run once, `pending` saying whether a latency
/// histogram is waiting for the next mark when they start.
///
/// A repeat body's first pass may attach the histogram pending before it;
/// every later pass starts from the state the body itself leaves, and that
/// state is the same after each pass once a mark has been reached (it depends
/// only on the ops after the body's last mark), so two passes give the
/// count of all.
fn count(ops: &[KOp], mut pending: bool) -> Count {
    let mut c = Count {
        marks: 0,
        latency_marks: 0,
        pending,
        has_latency: false,
    };
    for op in ops {
        match &op.kind {
            KOpKind::Touch { touch, .. } if touch.latency => {
                pending = true;
                c.has_latency = true;
            }
            KOpKind::Mark(_) => {
                c.marks += 1;
                if pending {
                    c.latency_marks += 1;
                    pending = false;
                }
            }
            KOpKind::Fork { body, .. } => {
                // The child's marks are copied into the parent's records.
                c.marks = c.marks.saturating_add(count(body, false).marks);
            }
            KOpKind::Repeat { times: 0, .. } => {}
            KOpKind::Repeat { times, body } => {
                let first = count(body, pending);
                c.has_latency |= first.has_latency;
                if first.marks == 0 {
                    pending = first.pending;
                } else {
                    let rest = count(body, first.pending);
                    let more = times - 1;
                    c.marks = c
                        .marks
                        .saturating_add(first.marks)
                        .saturating_add(rest.marks.saturating_mul(more));
                    c.latency_marks = c
                        .latency_marks
                        .saturating_add(first.latency_marks)
                        .saturating_add(rest.latency_marks.saturating_mul(more));
                    pending = if more == 0 {
                        first.pending
                    } else {
                        rest.pending
                    };
                }
            }
            _ => {}
        }
    }
    c.pending = pending;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use workload::plan::{Pattern, Range, Touch};

    fn touch(latency: bool) -> KOp {
        KOp {
            id: 0,
            kind: KOpKind::Touch {
                base: 0,
                touch: Touch {
                    region: 0,
                    range: Range {
                        offset: 0,
                        len: 4096,
                    },
                    access: Access::Write,
                    pattern: Pattern::Seq,
                    stride: 4096,
                    count: 1,
                    seed: 1,
                    latency,
                },
            },
        }
    }

    fn mark() -> KOp {
        KOp {
            id: 0,
            kind: KOpKind::Mark(0),
        }
    }

    fn repeat(times: u64, body: Vec<KOp>) -> KOp {
        KOp {
            id: 0,
            kind: KOpKind::Repeat { times, body },
        }
    }

    /// Reference: run the ops literally.
    fn simulate(ops: &[KOp], pending: &mut bool, marks: &mut u64, lat: &mut u64) {
        for op in ops {
            match &op.kind {
                KOpKind::Touch { touch, .. } if touch.latency => *pending = true,
                KOpKind::Mark(_) => {
                    *marks += 1;
                    if *pending {
                        *lat += 1;
                        *pending = false;
                    }
                }
                KOpKind::Repeat { times, body } => {
                    for _ in 0..*times {
                        simulate(body, pending, marks, lat);
                    }
                }
                _ => {}
            }
        }
    }

    fn arb_ops(depth: u32) -> impl Strategy<Value = Vec<KOp>> {
        let leaf = prop_oneof![
            Just(0u8).prop_map(|_| mark()),
            any::<bool>().prop_map(touch),
        ];
        let op = leaf.prop_recursive(depth, 24, 4, |inner| {
            (0u64..4, prop::collection::vec(inner, 0..4)).prop_map(|(t, body)| repeat(t, body))
        });
        prop::collection::vec(op, 0..6)
    }

    proptest! {
        #[test]
        fn count_matches_literal_run(ops in arb_ops(3), pending in any::<bool>()) {
            let c = count(&ops, pending);
            let (mut p, mut m, mut l) = (pending, 0, 0);
            simulate(&ops, &mut p, &mut m, &mut l);
            prop_assert_eq!((c.marks, c.latency_marks, c.pending), (m, l, p));
        }
    }

    #[test]
    fn repeat_with_latency_then_mark() {
        let ops = vec![repeat(5, vec![touch(true), mark()]), mark()];
        let c = count(&ops, false);
        assert_eq!((c.marks, c.latency_marks, c.pending), (6, 5, false));
    }
}
