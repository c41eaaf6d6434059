//! The checked syntax turned into the plan a backend runs.

use super::*;

impl<'a, 'd> Checker<'a, 'd> {
    /// The plan's ops of thread `t`.
    pub(super) fn plan_ops(&self, t: &Thread, ops: &[OpSyn]) -> Vec<Op> {
        ops.iter().map(|op| self.plan_op(t, op)).collect()
    }

    pub(super) fn plan_op(&self, t: &Thread, op: &OpSyn) -> Op {
        let slot = op.id - self.id_base[t.block];
        let region = || self.region_of[t.tid][slot].expect("the op names a region");
        let res = || self.resolved[t.tid][slot].expect("the walk visits every op");
        match &op.verb {
            VerbSyn::Mmap(m) => Op::Mmap(Mmap {
                region: region(),
                size: m.size.v,
                kind: m.kind,
                shared: m.shared,
                prot: m.prot,
                populate: m.populate,
                locked: m.locked,
                noreserve: m.noreserve,
                file: m.file,
                file_offset: m.file_offset,
                shmem_huge: m.shmem_huge,
            }),
            VerbSyn::Munmap(..) => Op::Munmap {
                region: region(),
                range: res().range,
            },
            VerbSyn::Mprotect(_, _, prot) => Op::Mprotect {
                region: region(),
                range: res().range,
                prot: *prot,
            },
            VerbSyn::Madvise(_, _, advice) => Op::Madvise {
                region: region(),
                range: res().range,
                advice: *advice,
            },
            VerbSyn::Mlock(_, _, onfault) => Op::Mlock {
                region: region(),
                range: res().range,
                onfault: *onfault,
            },
            VerbSyn::Munlock(..) => Op::Munlock {
                region: region(),
                range: res().range,
            },
            VerbSyn::Touch(touch) | VerbSyn::NodeOf(touch) => {
                let r = res();
                // node_of walks a range as touch does; it keeps no latency.
                let lookup = matches!(op.verb, VerbSyn::NodeOf(_));
                let t = Touch {
                    region: region(),
                    range: r.range,
                    access: touch.access,
                    pattern: touch.pattern,
                    stride: touch.stride,
                    count: r.count,
                    seed: touch.seed,
                    latency: touch.latency && !lookup,
                };
                if lookup {
                    Op::NodeOf(t)
                } else {
                    Op::Touch(t)
                }
            }
            VerbSyn::Sync(..) => Op::Sync {
                region: region(),
                range: res().range,
            },
            VerbSyn::Khugepaged(..) => Op::Khugepaged {
                region: region(),
                range: res().range,
            },
            VerbSyn::DeferredSplit => Op::DeferredSplit,
            VerbSyn::Sleep(d) => Op::Sleep(*d),
            VerbSyn::Barrier => Op::Barrier,
            VerbSyn::Mark(label) => Op::Mark(label.clone()),
            VerbSyn::Repeat(times, body) => Op::Repeat {
                times: *times,
                ops: self.plan_ops(t, body),
            },
            VerbSyn::Fork(name, body, wait) => Op::Fork {
                name: name.clone(),
                ops: self.plan_ops(t, body),
                wait: *wait,
            },
            VerbSyn::Waitpid(name) => Op::Waitpid(name.clone()),
            VerbSyn::Mremap(m) => Op::Mremap(Mremap {
                region: region(),
                old_size: res().range.len,
                new_size: m.size.v,
                maymove: m.maymove,
                to: self.dest_of[t.tid][slot],
                dontunmap: m.dontunmap.is_some(),
            }),
        }
    }
}
