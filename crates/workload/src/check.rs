//! The checks that need program order, and the building of the plan.
//!
//! # The walk
//!
//! Threads run concurrently, so the checker reasons about *phases*: phase `p`
//! of a thread is what it does between its `p`-th and `(p+1)`-th barrier
//! (phase 0 before the first). Every thread must pass the same number of
//! barriers (else the run would wait forever), so phases line up, and
//! everything any thread does in phase `p` happens before everything any
//! thread does in phase `p + 1`.
//!
//! The checker walks the ops once, phase by phase, and inside a phase thread
//! by thread (thread order), each thread in program order. A `repeat` whose
//! body has barriers is unrolled (each pass is new phases); a `repeat`
//! without barriers is walked `min(N, 2)` times. Two passes see every state
//! the loop can reach: each op *sets* state (mapped or not, protection,
//! locked) on a range to values the op alone decides, so the body's effect
//! `f` on the state is idempotent, and passes 3..N start from `f(f(s)) =
//! f(s)`, the state pass 2 started from.
//!
//! # Rules (each violation is an error before anything runs)
//!
//! - **Mapped before use.** A region is mapped at an op if the walk mapped
//!   it before: earlier in the same thread, or by any thread in an earlier
//!   phase (before a barrier both pass). `mmap` of a region that is still
//!   (even partly) mapped is an error, so a name means one mapping at a time;
//!   re-mapping a region after `munmap` (in a loop, say) is fine.
//! - **One changer per phase.** `mmap`, `munmap`, `mprotect`, `mlock` and
//!   `munlock` change a region's mapping. If a thread does one of them to a
//!   region in a phase, no other thread may use that region in the same
//!   phase: the order would be a race. `touch`, `madvise` and `sync` may
//!   share a region across threads freely. With this rule the state each op
//!   sees is the same in every interleaving, so the walk is exact.
//! - **Ranges.** `offset`/`len` lie inside the mapping as mapped at that
//!   point (`len` defaults to the rest of the mapping from `offset`); ops
//!   other than `munmap` need every page of their range mapped. A default
//!   range must be the same each time the op runs (a loop that re-maps a
//!   region with another size needs explicit `offset`/`len`).
//! - **Access.** A read touch needs a readable range, a write touch a
//!   writable one (else the process would die of SIGSEGV); `populate_read`
//!   and `populate_write` likewise. `dontneed`, `free` and `pageout` refuse
//!   locked memory, `free` needs private anonymous memory, `sync` needs a
//!   file or shmem mapping (as Linux's EINVAL would say).
//! - **Split.** `part = "split"` divides the range into equal slices, one per
//!   thread of the block (in block order); each slice must be a multiple of
//!   4 KiB, and an explicit `count` must divide evenly too (it counts the
//!   accesses of the whole block).
//!
//! - **Fork.** A `fork`'s ops are walked where the fork stands, in the
//!   thread's phase, against the regions as the parent has them; what they
//!   change (a munmap, mprotect, mlock) is the child's alone, so the
//!   regions' state is put back after them. That holds for a child that
//!   runs beside its parent (`wait = false`) too: its address space is a
//!   copy taken at the fork, which nothing the parent does later changes.
//!   What a workload with a fork may hold at all (one thread, no fork in a
//!   repeat, no mmap or barrier in a child, `waitpid` after its fork) is
//!   checked first, in `crate::fork`.
//!
//! Limits keep the check fast: [`MAX_BARRIERS`] barriers per thread,
//! [`MAX_STEPS`] ops walked in all, [`MAX_REGIONS`] distinct regions.

use std::collections::HashMap;

use crate::error::WorkloadError;
use crate::pages::{Attrs, Pages};
use crate::placement::{self, Moment, Request};
use crate::plan::{
    Access, Advice, MapKind, Mmap, Mremap, Op, Prot, Range, Region, RegionId, Thread, Touch,
    Workload, FORMAT_PAGE,
};
use crate::syntax::{self, Doc, OpSyn, RangeSyn, Source, VerbSyn};
use crate::units::format_size;

mod advice;
mod intern;
mod mremap;
mod range;
mod to_plan;

/// Most barriers one thread may pass (loops count every pass).
pub const MAX_BARRIERS: u64 = 100_000;
/// Most ops the checker walks, over all threads (loops with barriers are
/// unrolled, other loops walked twice).
pub const MAX_STEPS: u64 = 2_000_000;
/// Most distinct regions (after `{tid}` expansion).
pub const MAX_REGIONS: usize = 4096;

type Result<T> = std::result::Result<T, WorkloadError>;

/// One op to walk, in the phase it runs in.
#[derive(Clone, Copy)]
struct Ev<'d> {
    op: &'d OpSyn,
    phase: u64,
}

/// What an op resolved to for one thread; must agree on every pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Resolved {
    range: Range,
    count: u64,
}

/// The current mapping of a region.
#[derive(Clone)]
struct Mapping {
    size: u64,
    kind: MapKind,
    shared: bool,
    /// For a mapping of a file or shmem object (shared anonymous memory
    /// included): how many bytes of the object lie from the mapping's
    /// start on (its mmap's size: the object ends where that mapping
    /// ended). Past it an access is SIGBUS, so `mremap` may not grow the
    /// mapping further. `None` for private anonymous memory.
    object_room: Option<u64>,
    /// Where its mmap is written, and by which thread.
    at: usize,
    tid: usize,
    pages: Pages,
}

struct RegionState {
    name: String,
    max_size: u64,
    /// Where the region is first named in the text (for placement errors).
    named_at: usize,
    mapping: Option<Mapping>,
    fixed: Option<(u64, usize)>,
    first_map: Option<Moment>,
    /// The munmap that left the region wholly unmapped, if it is now.
    last_unmap: Option<(Moment, usize)>,
}

/// Who used a region in the current phase.
struct User {
    tid: usize,
    /// Where this thread changed the region's mapping in this phase, if it did.
    changed_at: Option<usize>,
    verb: &'static str,
}

/// Checks `doc` and builds the plan, placing regions for a `va_bits`-bit
/// address space.
///
/// # Errors
///
/// The first broken rule, walking in the order described in the module
/// documentation.
pub(crate) fn check(src: Source<'_>, doc: &Doc, name: String, va_bits: u32) -> Result<Workload> {
    let mut threads = Vec::new();
    for (b, block) in doc.blocks.iter().enumerate() {
        for i in 0..block.count {
            threads.push(Thread {
                tid: threads.len(),
                block: b,
                block_count: block.count,
                index_in_block: i,
                ops: Vec::new(), // filled once the walk has resolved every op
            });
        }
    }
    let mut c = Checker {
        src,
        doc,
        threads: &threads,
        regions: Vec::new(),
        by_name: HashMap::new(),
        region_of: Vec::new(),
        resolved: Vec::new(),
        dest_of: Vec::new(),
        id_base: Vec::new(),
        seq: 0,
    };
    crate::fork::check_forks(src, doc)?;
    crate::fork::check_deferred_split(src, doc)?;
    c.count_barriers()?;
    c.intern()?;
    c.walk()?;
    let addrs = c.place(va_bits)?;
    let regions = c
        .regions
        .iter()
        .zip(addrs)
        .map(|(r, addr)| Region {
            name: r.name.clone(),
            size: r.max_size,
            addr,
        })
        .collect();
    let ops: Vec<Vec<Op>> = threads
        .iter()
        .map(|t| c.plan_ops(t, &doc.blocks[t.block].ops))
        .collect();
    for (t, ops) in threads.iter_mut().zip(ops) {
        t.ops = ops;
    }
    Ok(Workload {
        name,
        description: doc.description.clone(),
        requires: doc.requires.clone(),
        regions,
        threads,
    })
}

struct Checker<'a, 'd> {
    src: Source<'a>,
    doc: &'d Doc,
    threads: &'a [Thread],
    regions: Vec<RegionState>,
    by_name: HashMap<String, RegionId>,
    /// Per thread, per op of its block (indexed by `op.id - id_base`): the region.
    region_of: Vec<Vec<Option<RegionId>>>,
    /// Per thread, per op of its block: the resolved range, once walked.
    resolved: Vec<Vec<Option<Resolved>>>,
    /// Per thread, per op of its block: an `mremap`'s `to` region.
    dest_of: Vec<Vec<Option<RegionId>>>,
    /// Per block: the smallest op id in it (op ids of a block are dense).
    id_base: Vec<usize>,
    seq: u64,
}

/// Number of barriers `ops` pass, or `None` past [`MAX_BARRIERS`].
fn barriers(ops: &[OpSyn]) -> Option<u64> {
    let mut n: u64 = 0;
    for op in ops {
        let k = match &op.verb {
            VerbSyn::Barrier => 1,
            VerbSyn::Repeat(times, body) => barriers(body)?.checked_mul(*times)?,
            _ => 0,
        };
        n = n.checked_add(k).filter(|n| *n <= MAX_BARRIERS)?;
    }
    Some(n)
}

/// How many times the walk goes through a `repeat` of `times` passes over
/// `body`: every pass when the body has barriers, else `min(times, 2)`.
fn passes(times: u64, body: &[OpSyn]) -> u64 {
    if barriers(body) == Some(0) {
        times.min(2)
    } else {
        times
    }
}

/// Ops the walk visits for `ops` (see the module documentation), saturating.
fn steps(ops: &[OpSyn]) -> u64 {
    ops.iter().fold(0u64, |n, op| {
        let k = match &op.verb {
            VerbSyn::Repeat(times, body) => steps(body).saturating_mul(passes(*times, body)),
            VerbSyn::Fork(_, body, _) => steps(body).saturating_add(1),
            _ => 1,
        };
        n.saturating_add(k)
    })
}

/// Every op of a tree, depth first.
fn each_op<'d>(ops: &'d [OpSyn], f: &mut impl FnMut(&'d OpSyn)) {
    for op in ops {
        f(op);
        if let VerbSyn::Repeat(_, body) | VerbSyn::Fork(_, body, _) = &op.verb {
            each_op(body, f);
        }
    }
}

/// The walk's sequence of ops for one thread of a block, with phases.
fn unroll<'d>(ops: &'d [OpSyn], phase: &mut u64, out: &mut Vec<Ev<'d>>) {
    for op in ops {
        match &op.verb {
            VerbSyn::Barrier => *phase += 1,
            VerbSyn::Repeat(times, body) => {
                for _ in 0..passes(*times, body) {
                    unroll(body, phase, out);
                }
            }
            _ => out.push(Ev { op, phase: *phase }),
        }
    }
}

/// Whether the op changes a region's mapping (see "One changer per phase").
fn changes_mapping(v: &VerbSyn) -> bool {
    matches!(
        v,
        VerbSyn::Mmap(_)
            | VerbSyn::Munmap(..)
            | VerbSyn::Mprotect(..)
            | VerbSyn::Mlock(..)
            | VerbSyn::Munlock(..)
            | VerbSyn::Mremap(_)
    )
}

fn kind_name(kind: MapKind, shared: bool) -> &'static str {
    match (kind, shared) {
        (MapKind::Anon, false) => "private anonymous",
        (MapKind::Anon, true) => "shared anonymous",
        (MapKind::File, false) => "private file",
        (MapKind::File, true) => "shared file",
        (MapKind::Shmem, _) => "shmem",
    }
}

impl<'a, 'd> Checker<'a, 'd> {
    /// `in op 2 of thread block 1`, plus the thread when the block has several.
    fn context(&self, t: &Thread, op: &OpSyn) -> String {
        if t.block_count > 1 {
            format!("in {} (thread {})", op.path, t.tid)
        } else {
            format!("in {}", op.path)
        }
    }

    fn region_err(
        &self,
        t: &Thread,
        op: &OpSyn,
        at: usize,
        region: RegionId,
        problem: String,
        hint: &str,
    ) -> WorkloadError {
        WorkloadError::Region {
            at: self.src.loc(at),
            region: self.regions[region].name.clone(),
            problem,
            context: self.context(t, op),
            hint: hint.to_string(),
        }
    }

    fn count_barriers(&self) -> Result<()> {
        let mut first: Option<u64> = None;
        let mut total_steps: u64 = 0;
        for (b, block) in self.doc.blocks.iter().enumerate() {
            let at = self.src.loc(block.at);
            let Some(n) = barriers(&block.ops) else {
                return Err(WorkloadError::Structure {
                    at,
                    problem: format!(
                        "thread block {} passes more than {MAX_BARRIERS} barriers (counting every pass of its repeats)",
                        b + 1
                    ),
                });
            };
            match first {
                None => first = Some(n),
                Some(f) if f != n => {
                    return Err(WorkloadError::Structure {
                        at,
                        problem: format!(
                            "thread block {} passes {n} barriers but thread block 1 passes {f}; every thread must pass the same number of barriers, or the run would wait forever",
                            b + 1
                        ),
                    });
                }
                Some(_) => {}
            }
            total_steps =
                total_steps.saturating_add(steps(&block.ops).saturating_mul(block.count as u64));
            if total_steps > MAX_STEPS {
                return Err(WorkloadError::Structure {
                    at,
                    problem: format!(
                        "checking the workload would walk more than {MAX_STEPS} ops (repeats with barriers are walked pass by pass); use fewer threads or shorter loops with barriers"
                    ),
                });
            }
        }
        Ok(())
    }

    fn walk(&mut self) -> Result<()> {
        let doc = self.doc;
        let mut per_block: Vec<Vec<Ev<'d>>> = Vec::with_capacity(doc.blocks.len());
        let mut phases = 0;
        for block in &doc.blocks {
            let mut phase = 0;
            let mut evs = Vec::new();
            unroll(&block.ops, &mut phase, &mut evs);
            phases = phase;
            per_block.push(evs);
        }
        let mut cursor = vec![0usize; self.threads.len()];
        let mut users: HashMap<RegionId, Vec<User>> = HashMap::new();
        for phase in 0..=phases {
            users.clear();
            for t in self.threads {
                let evs = &per_block[t.block];
                while let Some(ev) = evs.get(cursor[t.tid]).filter(|e| e.phase == phase) {
                    self.step(t, ev.op, phase, &mut users)?;
                    cursor[t.tid] += 1;
                }
            }
        }
        Ok(())
    }

    /// Checks one op of thread `t` against the state and applies it.
    fn step(
        &mut self,
        t: &Thread,
        op: &'d OpSyn,
        phase: u64,
        users: &mut HashMap<RegionId, Vec<User>>,
    ) -> Result<()> {
        if let VerbSyn::Fork(_, body, _) = &op.verb {
            return self.fork_child(t, body, phase, users);
        }
        self.seq += 1;
        let Some(region) = self.region_of[t.tid][op.id - self.id_base[t.block]] else {
            return Ok(()); // sleep, mark: nothing to check
        };
        let now = Moment {
            seq: self.seq,
            phase,
            tid: t.tid,
        };
        self.one_changer(t, op, region, users)?;
        match &op.verb {
            VerbSyn::Mmap(m) => self.mmap(t, op, m, region, now),
            VerbSyn::Munmap(_, range) => {
                let r = self.range(t, op, region, range, false)?;
                let state = &mut self.regions[region];
                let mapping = state
                    .mapping
                    .as_mut()
                    .expect("range() checked it is mapped");
                mapping.pages.remove(r.offset, r.offset + r.len);
                if mapping.pages.is_empty() {
                    state.mapping = None;
                    state.last_unmap = Some((now, op.at));
                }
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::Mprotect(_, range, prot) => {
                let r = self.range(t, op, region, range, true)?;
                self.pages_mut(region)
                    .update(r.offset, r.offset + r.len, |a| Attrs { prot: *prot, ..a });
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::Mlock(_, range, _) | VerbSyn::Munlock(_, range) => {
                let r = self.range(t, op, region, range, true)?;
                // Linux mlock/mlock2 set VM_LOCKED and set or clear
                // VM_LOCKONFAULT by the flag; munlock clears both.
                let (locked, onfault) = match &op.verb {
                    VerbSyn::Mlock(_, _, onfault) => (true, *onfault),
                    _ => (false, false),
                };
                // Linux mlock populates what it locked (__mm_populate, not
                // ignoring errors): GUP cannot fault a PROT_NONE VMA in, so
                // mlock fails with ENOMEM (measured on 6.18), though the
                // range stays locked. MLOCK_ONFAULT populates nothing.
                if locked && !onfault {
                    let m = self.mapping(region);
                    let end = r.offset + r.len;
                    if let Some((at, _)) =
                        m.pages.first_where(r.offset, end, |a| !a.prot.readable())
                    {
                        let problem = format!(
                            "is mapped with prot \"none\" at offset {}, and mlock cannot fault it in (ENOMEM)",
                            format_size(at)
                        );
                        let hint = "; mprotect it first, or use onfault = true";
                        return Err(self.region_err(t, op, op.at, region, problem, hint));
                    }
                }
                self.pages_mut(region)
                    .update(r.offset, r.offset + r.len, |a| Attrs {
                        locked,
                        onfault,
                        ..a
                    });
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::Madvise(_, range, advice) => {
                let r = self.range(t, op, region, range, true)?;
                self.advice_allowed(t, op, region, r, *advice)?;
                let set = advice::vma_flags(*advice);
                if let Some(set) = set {
                    self.pages_mut(region)
                        .update(r.offset, r.offset + r.len, set);
                }
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::Mremap(m) => self.mremap(t, op, region, m, now, users),
            VerbSyn::Sync(_, range) => {
                let r = self.range(t, op, region, range, true)?;
                let m = self.mapping(region);
                if m.kind == MapKind::Anon {
                    let problem = format!(
                        "is a {} mapping; sync (msync) needs kind = \"file\" or \"shmem\"",
                        kind_name(m.kind, m.shared)
                    );
                    return Err(self.region_err(t, op, op.at, region, problem, ""));
                }
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::Touch(touch) | VerbSyn::NodeOf(touch) => self.touch(t, op, touch, region),
            VerbSyn::Khugepaged(_, range) => {
                let r = self.range(t, op, region, range, true)?;
                let m = self.mapping(region);
                if m.kind != MapKind::Anon || m.shared {
                    let problem = format!(
                        "is a {} mapping; khugepaged is modelled only for private anonymous memory",
                        kind_name(m.kind, m.shared)
                    );
                    return Err(self.region_err(t, op, op.at, region, problem, ""));
                }
                self.resolve(t, op, region, r, 0)
            }
            VerbSyn::DeferredSplit
            | VerbSyn::Sleep(_)
            | VerbSyn::Barrier
            | VerbSyn::Mark(_)
            | VerbSyn::Repeat(..)
            | VerbSyn::Fork(..)
            | VerbSyn::Waitpid(_) => Ok(()),
        }
    }

    /// An mmap: its region must be unmapped, and keep one address if it
    /// gives one; the region's state records the mapping.
    fn mmap(
        &mut self,
        t: &Thread,
        op: &OpSyn,
        m: &syntax::MmapSyn,
        region: RegionId,
        now: Moment,
    ) -> Result<()> {
        if let Some(old) = &self.regions[region].mapping {
            let hint = if m.region.has_placeholder() || t.block_count == 1 {
                "; munmap it first, or use another name"
            } else {
                "; munmap it first, or write the name with {tid} to give each thread its own region"
            };
            let problem = format!(
                "is already mapped (by the mmap at {}, thread {})",
                self.src.line_col(old.at),
                old.tid
            );
            return Err(self.region_err(t, op, op.at, region, problem, hint));
        }
        if let Some(addr) = &m.addr {
            match self.regions[region].fixed {
                Some((a, at)) if a != addr.v => {
                    let problem = format!(
                        "gets addr {:#x} here but {a:#x} at {}; a region keeps one address",
                        addr.v,
                        self.src.line_col(at)
                    );
                    return Err(self.region_err(t, op, addr.at, region, problem, ""));
                }
                _ => self.regions[region].fixed = Some((addr.v, addr.at)),
            }
        }
        let r = &mut self.regions[region];
        r.max_size = r.max_size.max(m.size.v);
        r.first_map.get_or_insert(now);
        r.last_unmap = None;
        r.mapping = Some(Mapping {
            size: m.size.v,
            kind: m.kind,
            shared: m.shared,
            object_room: (m.kind != MapKind::Anon || m.shared).then_some(m.size.v),
            at: op.at,
            tid: t.tid,
            pages: Pages::mapped(
                m.size.v,
                Attrs {
                    prot: m.prot,
                    locked: m.locked,
                    onfault: false,
                    thp: None,
                    dontfork: false,
                    wipeonfork: false,
                },
            ),
        });
        Ok(())
    }

    /// A touch or a node lookup: every page of its slice must allow the
    /// access (a read needs a readable prot, a write a writable one).
    fn touch(
        &mut self,
        t: &Thread,
        op: &OpSyn,
        touch: &syntax::TouchSyn,
        region: RegionId,
    ) -> Result<()> {
        let whole = self.range(t, op, region, &touch.range, true)?;
        let (slice, count) = self.split(t, op, whole)?;
        let need = match touch.access {
            Access::Read => Prot::readable as fn(Prot) -> bool,
            Access::Write => Prot::writable,
        };
        if let Some((at, attrs)) =
            self.pages(region)
                .first_where(slice.offset, slice.offset + slice.len, |a| !need(a.prot))
        {
            let lookup = matches!(op.verb, VerbSyn::NodeOf(_));
            let (what, fix) = match touch.access {
                // get_user_pages refuses a VMA without VM_READ.
                Access::Read if lookup => (
                    "get_mempolicy's page lookup",
                    "; mprotect it to a readable prot first",
                ),
                Access::Read => ("a read", "; mprotect it first"),
                Access::Write => (
                    "a write",
                    "; mprotect it to \"rw\" first, or touch with access = \"read\"",
                ),
            };
            let problem = format!(
                "is mapped with prot {:?} at offset {}, so {what} there would {}",
                syntax::prot_name(attrs.prot),
                format_size(at),
                if lookup {
                    "fail (EFAULT)"
                } else {
                    "die of SIGSEGV"
                }
            );
            return Err(self.region_err(t, op, op.at, region, problem, fix));
        }
        self.resolve(t, op, region, slice, count)
    }

    /// Walks a fork's child: its ops see the parent's regions as they are
    /// at the fork, and change only the child's copy (a munmap in the
    /// child leaves the parent's mapping), so the regions' state is put
    /// back after them. `crate::fork` has refused what a child may not do.
    fn fork_child(
        &mut self,
        t: &Thread,
        body: &'d [OpSyn],
        phase: u64,
        users: &mut HashMap<RegionId, Vec<User>>,
    ) -> Result<()> {
        let saved: Vec<_> = self
            .regions
            .iter()
            .map(|r| (r.mapping.clone(), r.last_unmap))
            .collect();
        // Linux: dup_mmap leaves VM_DONTCOPY parts out of the child and
        // clears VM_LOCKED in it.
        for r in &mut self.regions {
            if let Some(m) = &mut r.mapping {
                m.pages.remove_where(|a| a.dontfork);
                m.pages.update(0, m.size, |a| Attrs {
                    locked: false,
                    onfault: false,
                    ..a
                });
                if m.pages.is_empty() {
                    r.mapping = None;
                }
            }
        }
        let mut evs = Vec::new();
        let mut p = phase;
        unroll(body, &mut p, &mut evs);
        for ev in evs {
            self.step(t, ev.op, phase, users)?;
        }
        for (r, (mapping, last_unmap)) in self.regions.iter_mut().zip(saved) {
            r.mapping = mapping;
            r.last_unmap = last_unmap;
        }
        Ok(())
    }

    fn mapping(&self, region: RegionId) -> &Mapping {
        self.regions[region]
            .mapping
            .as_ref()
            .expect("range() checked it is mapped")
    }

    fn pages(&self, region: RegionId) -> &Pages {
        &self.mapping(region).pages
    }

    fn pages_mut(&mut self, region: RegionId) -> &mut Pages {
        &mut self.regions[region]
            .mapping
            .as_mut()
            .expect("range() checked it is mapped")
            .pages
    }

    /// Enforces "one changer per phase" for thread `t` using `region`.
    fn one_changer(
        &self,
        t: &Thread,
        op: &OpSyn,
        region: RegionId,
        users: &mut HashMap<RegionId, Vec<User>>,
    ) -> Result<()> {
        let changes = changes_mapping(&op.verb);
        let list = users.entry(region).or_default();
        for u in list.iter().filter(|u| u.tid != t.tid) {
            if u.changed_at.is_none() && !changes {
                continue;
            }
            let problem = match u.changed_at {
                Some(at) => format!(
                    "is changed by thread {} ({} at {}) and used by thread {} ({}) between the same barriers",
                    u.tid,
                    u.verb,
                    self.src.line_col(at),
                    t.tid,
                    op.verb.name()
                ),
                None => format!(
                    "is used by thread {} ({}) and changed by thread {} ({}) between the same barriers",
                    u.tid,
                    u.verb,
                    t.tid,
                    op.verb.name()
                ),
            };
            let hint = "; give each thread its own region (a name with {tid}), or put a barrier between the two";
            return Err(self.region_err(t, op, op.at, region, problem, hint));
        }
        match list.iter_mut().find(|u| u.tid == t.tid) {
            Some(u) => {
                if changes && u.changed_at.is_none() {
                    u.changed_at = Some(op.at);
                    u.verb = op.verb.name();
                }
            }
            None => list.push(User {
                tid: t.tid,
                changed_at: changes.then_some(op.at),
                verb: op.verb.name(),
            }),
        }
        Ok(())
    }

    /// Records what the op resolved to for this thread; every pass must agree.
    fn resolve(
        &mut self,
        t: &Thread,
        op: &OpSyn,
        region: RegionId,
        range: Range,
        count: u64,
    ) -> Result<()> {
        let slot = &mut self.resolved[t.tid][op.id - self.id_base[t.block]];
        let new = Resolved { range, count };
        match slot {
            None => {
                *slot = Some(new);
                Ok(())
            }
            Some(old) if *old == new => Ok(()),
            Some(old) => {
                let old = *old;
                let problem = format!(
                    "gives this op the range {}+{} on one pass and {}+{} on another (the region was re-mapped with another size)",
                    format_size(old.range.offset),
                    format_size(old.range.len),
                    format_size(range.offset),
                    format_size(range.len)
                );
                Err(self.region_err(
                    t,
                    op,
                    op.at,
                    region,
                    problem,
                    "; give offset and len explicitly",
                ))
            }
        }
    }

    fn place(&self, va_bits: u32) -> Result<Vec<u64>> {
        let requests: Vec<Request> = self
            .regions
            .iter()
            .map(|r| Request {
                name: r.name.clone(),
                size: r.max_size,
                fixed: r.fixed.map(|(a, _)| a),
                start: r
                    .first_map
                    .expect("a region used without mmap fails the walk"),
                end: if r.mapping.is_none() {
                    r.last_unmap.as_ref().map(|(m, _)| *m)
                } else {
                    None
                },
            })
            .collect();
        placement::place(&requests, va_bits).map_err(|e| {
            let r = &self.regions[e.index];
            WorkloadError::Placement {
                at: self.src.loc(r.fixed.map_or(r.named_at, |(_, at)| at)),
                region: r.name.clone(),
                problem: e.problem,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::syntax::RegionName;

    #[test]
    fn region_name_expansion() {
        let n = RegionName("buf{tid}-{tid}".into());
        assert_eq!(n.expand(7), "buf7-7");
        assert!(n.has_placeholder());
    }
}
