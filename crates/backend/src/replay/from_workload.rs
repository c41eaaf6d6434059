//! A one-thread workload as a trace: the same events in the same order,
//! each region at the workload's own address. Replaying it gives the same
//! counters as running the workload, which is how the replay is tested,
//! and it makes traces of any shape for benchmarks.

use crate::touch::touch_offsets;
use trace::{MapEvent, MapFlags, Prot, Record, RegionKind};
use workload::plan::{self, Op, Workload};

/// The records of `w`'s thread, or why it cannot be one trace: more than
/// one thread (their interleaving is not fixed), a region mapped twice, or
/// an operation a trace has no record for (sleep, barrier, msync, fork, mremap).
pub fn records(w: &Workload) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    for_each_record(w, &mut |r| {
        out.push(r);
        Ok(())
    })?;
    Ok(out)
}

/// As [`records`], each record handed to `sink` as it is made (a long
/// workload's trace never held in memory); the first error stops it.
pub fn for_each_record(
    w: &Workload,
    sink: &mut dyn FnMut(Record) -> Result<(), String>,
) -> Result<(), String> {
    let [thread] = w.threads.as_slice() else {
        return Err(format!(
            "a workload of {} threads has no single order of events",
            w.threads.len()
        ));
    };
    let mut mapped = vec![false; w.regions.len()];
    emit(w, &thread.ops, &mut mapped, sink)
}

fn emit(
    w: &Workload,
    ops: &[Op],
    mapped: &mut [bool],
    out: &mut dyn FnMut(Record) -> Result<(), String>,
) -> Result<(), String> {
    for op in ops {
        match op {
            Op::Mmap(m) if m.file_offset != 0 => {
                return Err(format!(
                    "region \"{}\" maps its file from an offset: a trace has no record for it",
                    w.regions[m.region].name
                ));
            }
            Op::Mlock { onfault: true, .. } => {
                return Err("mlock with onfault: a trace has no record for it".to_string());
            }
            Op::Mmap(m) if m.shmem_huge.is_some() => {
                return Err(format!(
                    "region \"{}\" is a shmem mapping with shmem_huge: a trace has no record of a tmpfs mount's huge= option",
                    w.regions[m.region].name
                ));
            }
            Op::Mmap(m) => {
                if std::mem::replace(&mut mapped[m.region], true) {
                    return Err(format!(
                        "region \"{}\" is mapped twice: a trace region lives once",
                        w.regions[m.region].name
                    ));
                }
                out(Record::Map(map_event(w, m)))?;
            }
            Op::Munmap { region, range } => out(Record::Unmap {
                id: *region as u32,
                offset: range.offset,
                len: range.len,
            })?,
            Op::Mprotect {
                region,
                range,
                prot: p,
            } => out(Record::Protect {
                id: *region as u32,
                offset: range.offset,
                len: range.len,
                prot: prot(*p),
            })?,
            Op::Madvise {
                region,
                range,
                advice,
            } => out(Record::Advise {
                id: *region as u32,
                offset: range.offset,
                len: range.len,
                advice: advice.number(),
            })?,
            Op::Mlock { region, range, .. } => out(Record::Lock {
                id: *region as u32,
                offset: range.offset,
                len: range.len,
            })?,
            Op::Munlock { region, range } => out(Record::Unlock {
                id: *region as u32,
                offset: range.offset,
                len: range.len,
            })?,
            Op::Touch(t) => {
                let write = t.access == plan::Access::Write;
                for offset in touch_offsets(t) {
                    out(Record::Access {
                        id: t.region as u32,
                        offset,
                        write,
                    })?;
                }
            }
            Op::Mark(name) => out(Record::Mark { name: name.clone() })?,
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    emit(w, ops, mapped, out)?;
                }
            }
            Op::Sync { .. }
            | Op::NodeOf(_)
            | Op::Sleep(_)
            | Op::Barrier
            | Op::Mremap(_)
            | Op::DeferredSplit
            | Op::Khugepaged { .. } => {
                return Err(format!("{op:?}: a trace has no record for it"));
            }
            Op::Fork { name, .. } | Op::Waitpid(name) => {
                return Err(format!(
                    "fork {name:?}: a trace holds one address space (a child has its own)"
                ));
            }
        }
    }
    Ok(())
}

/// The trace's record of mapping `m`.
fn map_event(w: &Workload, m: &plan::Mmap) -> MapEvent {
    let mut flags = 0;
    if m.shared || m.kind == plan::MapKind::Shmem {
        flags |= MapFlags::SHARED;
    }
    if m.noreserve {
        flags |= MapFlags::NORESERVE;
    }
    if m.populate {
        flags |= MapFlags::POPULATE;
    }
    if m.locked {
        flags |= MapFlags::LOCKED;
    }
    MapEvent {
        id: m.region as u32,
        size: m.size,
        native: w.regions[m.region].addr,
        kind: match m.kind {
            plan::MapKind::Anon => RegionKind::Anon,
            plan::MapKind::File => RegionKind::File,
            plan::MapKind::Shmem => RegionKind::Shmem,
        },
        prot: prot(m.prot),
        flags: MapFlags(flags),
        name: w.regions[m.region].name.clone(),
    }
}

fn prot(p: plan::Prot) -> Prot {
    Prot(crate::abi::prot_bits(p))
}
