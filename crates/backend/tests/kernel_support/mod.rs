//! Builds `plan::Workload` values directly (no parser), for the kernel
//! backend's tests. Regions are placed like the placement rule does: upwards
//! from 32 TiB, 2 MiB-aligned when 2 MiB or larger.

#![allow(dead_code)] // each test binary uses a different part

use std::time::Duration;

use workload::plan::*;
use workload::result::{Mark, Run};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const PAGE: u64 = 4 * KIB;
pub const BASE: u64 = 32 << 40;

#[derive(Default)]
pub struct Builder {
    regions: Vec<Region>,
    next: u64,
    threads: Vec<Vec<Op>>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            next: BASE,
            ..Default::default()
        }
    }

    /// A region placed after the previous ones.
    pub fn region(&mut self, name: &str, size: u64) -> RegionId {
        let align = if size >= 2 * MIB { 2 * MIB } else { PAGE };
        let addr = self.next.next_multiple_of(align);
        self.next = addr + size;
        self.region_at(name, size, addr)
    }

    pub fn region_at(&mut self, name: &str, size: u64, addr: u64) -> RegionId {
        self.regions.push(Region {
            name: name.to_string(),
            size,
            addr,
        });
        self.regions.len() - 1
    }

    pub fn size(&self, r: RegionId) -> u64 {
        self.regions[r].size
    }

    pub fn thread(&mut self, ops: Vec<Op>) -> &mut Self {
        self.threads.push(ops);
        self
    }

    pub fn build(&self) -> Workload {
        let n = self.threads.len();
        Workload {
            name: "test".into(),
            description: String::new(),
            requires: Vec::new(),
            regions: self.regions.clone(),
            threads: self
                .threads
                .iter()
                .enumerate()
                .map(|(tid, ops)| Thread {
                    tid,
                    block: 0,
                    block_count: n,
                    index_in_block: tid,
                    ops: ops.clone(),
                })
                .collect(),
        }
    }
}

pub fn mmap(region: RegionId, size: u64, kind: MapKind) -> Op {
    Op::Mmap(Mmap {
        region,
        size,
        kind,
        shared: false,
        prot: Prot::Rw,
        populate: false,
        locked: false,
        noreserve: false,
        file: FileState::Cached,
        file_offset: 0,
        shmem_huge: None,
    })
}

pub fn anon(region: RegionId, size: u64) -> Op {
    mmap(region, size, MapKind::Anon)
}

pub fn with(op: Op, f: impl FnOnce(&mut Mmap)) -> Op {
    match op {
        Op::Mmap(mut m) => {
            f(&mut m);
            Op::Mmap(m)
        }
        other => other,
    }
}

pub fn all(len: u64) -> Range {
    Range { offset: 0, len }
}

/// One access per `stride` over `range`, in order.
pub fn touch(region: RegionId, range: Range, access: Access, stride: u64) -> Op {
    Op::Touch(Touch {
        region,
        range,
        access,
        pattern: Pattern::Seq,
        stride,
        count: range.len.div_ceil(stride),
        seed: 1,
        latency: false,
    })
}

pub fn madvise(region: RegionId, range: Range, advice: Advice) -> Op {
    Op::Madvise {
        region,
        range,
        advice,
    }
}

pub fn mark(name: &str) -> Op {
    Op::Mark(name.to_string())
}

pub fn sleep(d: Duration) -> Op {
    Op::Sleep(d)
}

pub fn get<'a>(run: &'a Run, name: &str) -> &'a Mark {
    run.marks
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no mark {name:?} in {run:?}"))
}

/// Counter `c` at mark `to` minus at mark `from`.
pub fn delta(run: &Run, from: &str, to: &str, c: &str) -> i64 {
    let at = |m: &str| {
        get(run, m)
            .counters
            .get(c)
            .unwrap_or_else(|| panic!("no counter {c} at {m}"))
    };
    at(to) - at(from)
}

pub fn counter(run: &Run, mark: &str, c: &str) -> i64 {
    get(run, mark)
        .counters
        .get(c)
        .unwrap_or_else(|| panic!("no counter {c} at {mark}"))
}

/// A directory for one test's temporary files, empty and private, removed
/// with what it holds when dropped (the suite leaves nothing in /tmp).
pub fn scratch_dir(test: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("ptlab-test-{test}-"))
        .tempdir()
        .unwrap()
}

pub fn is_empty_dir(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}
