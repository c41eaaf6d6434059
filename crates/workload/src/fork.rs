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
    let mut names: Vec<(&str, usize)> = Vec::new();
    for block in &doc.blocks {
        for op in &block.ops {
            match &op.verb {
                VerbSyn::Fork(name, body) => {
                    if threads > 1 {
                        return Err(structure(
                            src,
                            op,
                            format!(
                                "fork {name:?} in a workload of {threads} threads; fork needs a workload of one thread"
                            ),
                        ));
                    }
                    if let Some((_, at)) = names.iter().find(|(n, _)| n == name) {
                        return Err(structure(
                            src,
                            op,
                            format!(
                                "a second child named {name:?} (the first is at {}); give each fork its own name",
                                src.line_col(*at)
                            ),
                        ));
                    }
                    names.push((name, op.at));
                    child_ops(src, name, body)?;
                }
                VerbSyn::Repeat(_, body) => no_fork_in_repeat(src, body)?,
                _ => {}
            }
        }
    }
    Ok(())
}

fn no_fork_in_repeat(src: Source<'_>, ops: &[OpSyn]) -> Result<()> {
    for op in ops {
        match &op.verb {
            VerbSyn::Fork(name, _) => {
                return Err(structure(
                    src,
                    op,
                    format!("fork {name:?} inside a repeat; a fork may only be a top-level op of its thread"),
                ))
            }
            VerbSyn::Repeat(_, body) => no_fork_in_repeat(src, body)?,
            _ => {}
        }
    }
    Ok(())
}

fn child_ops(src: Source<'_>, name: &str, ops: &[OpSyn]) -> Result<()> {
    for op in ops {
        let refused = match &op.verb {
            VerbSyn::Mmap(_) => Some("mmap (map the region before the fork)"),
            VerbSyn::Barrier => Some("barrier (the child has one thread)"),
            VerbSyn::Fork(..) => Some("fork (a child cannot fork again)"),
            VerbSyn::Touch(t) if t.latency => Some("a latency touch"),
            VerbSyn::NodeOf(_) => Some("node_of (run it in the parent)"),
            VerbSyn::Repeat(_, body) => {
                child_ops(src, name, body)?;
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
        if let VerbSyn::Repeat(_, body) | VerbSyn::Fork(_, body) = &op.verb {
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
