//! The rules of `fork` that need no program order (the walk of a child's
//! ops is in `check`): what a workload with a fork may contain.
//!
//! - A fork only in a workload of one thread (a multithreaded fork would
//!   copy one thread into the child, and what the others do meanwhile is
//!   a race the format does not describe).
//! - A fork only at the top level of the thread's ops (not inside a
//!   `repeat`: each child reports its marks once, under its own name).
//! - Inside a fork: no `mmap` (the child maps nothing its parent does not
//!   know of), no `barrier`, no fork, no `latency` touch.
//! - Child names are unique in the workload.
//! - `waitpid = NAME` only at the top level, after the fork NAME, which
//!   has `wait = false`, once; one child at a time (no fork while a
//!   `wait = false` child has not been waited for), and while it runs
//!   neither process runs `deferred_split` or `khugepaged`.

use crate::error::WorkloadError;
use crate::plan::{FileState, MapKind};
use crate::syntax::{Doc, OpSyn, Source, VerbSyn};

type Result<T> = std::result::Result<T, WorkloadError>;

/// Checks the rules of the module documentation.
///
/// # Errors
/// The first fork that breaks one, at its place in the text.
pub(crate) fn check_forks(src: Source<'_>, doc: &Doc) -> Result<()> {
    let threads: usize = doc.blocks.iter().map(|b| b.count).sum();
    let mut forks = Forks::default();
    for block in &doc.blocks {
        for op in &block.ops {
            match &op.verb {
                VerbSyn::Fork(name, body, wait) => {
                    if threads > 1 {
                        return Err(structure(
                            src,
                            op,
                            format!(
                                "fork {name:?} in a workload of {threads} threads; fork needs a workload of one thread"
                            ),
                        ));
                    }
                    if let Some(f) = forks.named(name) {
                        return Err(structure(
                            src,
                            op,
                            format!(
                                "a second child named {name:?} (the first is at {}); give each fork its own name",
                                src.line_col(f.at)
                            ),
                        ));
                    }
                    if let Some(r) = forks.running() {
                        return Err(structure(
                            src,
                            op,
                            format!(
                                "fork {name:?} while child {:?} (forked with wait = false at {}) still runs; one child at a time: add {{ waitpid = {:?} }} before this fork",
                                r.name,
                                src.line_col(r.at),
                                r.name
                            ),
                        ));
                    }
                    child_ops(src, name, body, *wait)?;
                    forks.list.push(ForkAt {
                        name,
                        at: op.at,
                        wait: *wait,
                        waited: None,
                    });
                }
                VerbSyn::Waitpid(name) => forks.waitpid(src, doc, op, name)?,
                VerbSyn::Repeat(_, body) => {
                    no_fork_in_repeat(src, body)?;
                    if let Some(r) = forks.running() {
                        not_while_running(src, body, r)?;
                    }
                }
                VerbSyn::DeferredSplit | VerbSyn::Khugepaged(..) => {
                    if let Some(r) = forks.running() {
                        not_while_running(src, std::slice::from_ref(op), r)?;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The forks of the one thread so far, in program order.
#[derive(Default)]
struct Forks<'d> {
    list: Vec<ForkAt<'d>>,
}

struct ForkAt<'d> {
    name: &'d str,
    at: usize,
    wait: bool,
    /// Where its `waitpid` is, once seen.
    waited: Option<usize>,
}

impl<'d> Forks<'d> {
    fn named(&self, name: &str) -> Option<&ForkAt<'d>> {
        self.list.iter().find(|f| f.name == name)
    }

    /// The child forked with `wait = false` and not waited for yet.
    fn running(&self) -> Option<&ForkAt<'d>> {
        self.list.iter().find(|f| !f.wait && f.waited.is_none())
    }

    /// A top-level `waitpid = name`: of a `wait = false` fork before it,
    /// once.
    fn waitpid(&mut self, src: Source<'_>, doc: &Doc, op: &OpSyn, name: &str) -> Result<()> {
        let Some(f) = self.list.iter_mut().find(|f| f.name == name) else {
            let later = doc
                .blocks
                .iter()
                .flat_map(|b| &b.ops)
                .find(|o| matches!(&o.verb, VerbSyn::Fork(n, ..) if n == name));
            let problem = match later {
                Some(fork) => format!(
                    "waitpid {name:?} before its fork (at {}); wait for a child after forking it",
                    src.line_col(fork.at)
                ),
                None => format!(
                    "waitpid {name:?} names no child; it needs the name of a fork with wait = false before it"
                ),
            };
            return Err(structure(src, op, problem));
        };
        if f.wait {
            return Err(structure(
                src,
                op,
                format!(
                    "waitpid {name:?}, but fork {name:?} (at {}) waits for its child itself; give that fork wait = false",
                    src.line_col(f.at)
                ),
            ));
        }
        if let Some(first) = f.waited {
            return Err(structure(
                src,
                op,
                format!(
                    "a second waitpid {name:?} (the first is at {}); a child is waited for once",
                    src.line_col(first)
                ),
            ));
        }
        f.waited = Some(op.at);
        Ok(())
    }
}

/// While a child forked with `wait = false` runs, the parent may not run
/// the steps that act on every process of the workload's cgroup or on the
/// whole system (`deferred_split`, `khugepaged`): on the kernel they would
/// act on the child too, at a point of its run the scheduler chooses.
fn not_while_running(src: Source<'_>, ops: &[OpSyn], r: &ForkAt<'_>) -> Result<()> {
    let mut bad = None;
    each(ops, &mut |op| {
        if matches!(op.verb, VerbSyn::DeferredSplit | VerbSyn::Khugepaged(..)) {
            bad.get_or_insert(op);
        }
    });
    match bad {
        Some(op) => Err(structure(
            src,
            op,
            format!(
                "{} while child {:?} (forked with wait = false at {}) runs: on the kernel it would act on the child too; add {{ waitpid = {:?} }} before it",
                op.verb.name(),
                r.name,
                src.line_col(r.at),
                r.name
            ),
        )),
        None => Ok(()),
    }
}

fn no_fork_in_repeat(src: Source<'_>, ops: &[OpSyn]) -> Result<()> {
    for op in ops {
        match &op.verb {
            VerbSyn::Fork(name, ..) => {
                return Err(structure(
                    src,
                    op,
                    format!("fork {name:?} inside a repeat; a fork may only be a top-level op of its thread"),
                ))
            }
            VerbSyn::Waitpid(name) => {
                return Err(structure(
                    src,
                    op,
                    format!("waitpid {name:?} inside a repeat; a waitpid may only be a top-level op of its thread"),
                ))
            }
            VerbSyn::Repeat(_, body) => no_fork_in_repeat(src, body)?,
            _ => {}
        }
    }
    Ok(())
}

fn child_ops(src: Source<'_>, name: &str, ops: &[OpSyn], wait: bool) -> Result<()> {
    for op in ops {
        let refused = match &op.verb {
            VerbSyn::Waitpid(_) => Some("waitpid (the child has no child)"),
            VerbSyn::DeferredSplit | VerbSyn::Khugepaged(..) if !wait => {
                Some("a step that acts on the parent too (deferred_split, khugepaged) while the parent runs")
            }
            VerbSyn::Mmap(_) => Some("mmap (map the region before the fork)"),
            VerbSyn::Barrier => Some("barrier (the child has one thread)"),
            VerbSyn::Fork(..) => Some("fork (a child cannot fork again)"),
            VerbSyn::Touch(t) if t.latency => Some("a latency touch"),
            VerbSyn::NodeOf(_) => Some("node_of (run it in the parent)"),
            VerbSyn::Repeat(_, body) => {
                child_ops(src, name, body, wait)?;
                None
            }
            _ => None,
        };
        if let Some(what) = refused {
            return Err(structure(
                src,
                op,
                format!("{what} inside fork {name:?} is not supported"),
            ));
        }
    }
    Ok(())
}

/// `deferred_split` runs memory reclaim of the workload's own cgroup on
/// the kernel, which also drops the page cache of files the workload read
/// in: refused in a workload that maps a cold file (a cached one is read
/// in before the workload runs, outside its cgroup).
pub(crate) fn check_deferred_split(src: Source<'_>, doc: &Doc) -> Result<()> {
    let mut split = None;
    let mut cold = None;
    for block in &doc.blocks {
        each(&block.ops, &mut |op| match &op.verb {
            VerbSyn::DeferredSplit => {
                split.get_or_insert(op);
            }
            VerbSyn::Mmap(m) if m.kind == MapKind::File && m.file == FileState::Cold => {
                cold.get_or_insert(op);
            }
            _ => {}
        });
    }
    if let (Some(op), Some(file)) = (split, cold) {
        return Err(structure(
            src,
            op,
            format!(
                "deferred_split in a workload that maps a cold file (at {}): the kernel's reclaim would drop its page cache too",
                src.line_col(file.at)
            ),
        ));
    }
    Ok(())
}

fn each<'d>(ops: &'d [OpSyn], f: &mut impl FnMut(&'d OpSyn)) {
    for op in ops {
        f(op);
        if let VerbSyn::Repeat(_, body) | VerbSyn::Fork(_, body, _) = &op.verb {
            each(body, f);
        }
    }
}

fn structure(src: Source<'_>, op: &OpSyn, problem: String) -> WorkloadError {
    WorkloadError::Structure {
        at: src.loc(op.at),
        problem: format!("{problem} (in {})", op.path),
    }
}
