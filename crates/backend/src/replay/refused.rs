//! Recorded faults the model refuses: counted and named, never a stop.
//!
//! A `Fault` record is a page fault the kernel took for the native program,
//! which then went on (or died of it; the trace ends there either way). When
//! the model refuses it (SIGSEGV: the region's protection, as the recorded
//! calls left it, forbids the access), one of two things happened:
//!
//! - the recording got the fault's kind wrong: without the `exceptions`
//!   tracepoints the recorder infers read or write (docs/trace.md), and a
//!   trace made before that inference recorded every fault as a write, so
//!   a read of a read-only library page came out as a write into it;
//! - the program itself faulted on purpose or by accident and survived it
//!   (a guard page it probes, a garbage collector's write barrier on a
//!   protected page, a SIGSEGV handler), which the kernel answered with a
//!   signal, not a page.
//!
//! Neither is a reason to stop the replay: the native program ran past it.
//! So the replay counts it, keeps the first few to name, and goes on: a
//! refused write whose kind the recording guessed is replayed as the read
//! it most likely was (a page the program could read, as the kernel mapped
//! it); anything else is skipped (the kernel mapped nothing for it either).
//! An `Access` record the model refuses still stops the replay: accesses
//! come from a tracer or a workload that claims the program made them, and
//! a refused one means the trace does not describe a run.

use trace::Header;

/// How many refused faults a replay names.
pub const NAMED: usize = 5;

/// One refused recorded fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedFault {
    /// The record's index in the trace (from 0).
    pub index: u64,
    pub region: u32,
    pub offset: u64,
    pub write: bool,
    /// Why the model refused it (the SIGSEGV's code).
    pub why: String,
    /// Replayed as a read instead (see the module documentation).
    pub as_read: bool,
}

/// The recorded faults a replay refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refused {
    /// Every refused fault.
    pub count: u64,
    /// Of those, replayed as reads.
    pub as_reads: u64,
    /// The first [`NAMED`].
    pub first: Vec<RefusedFault>,
}

impl Refused {
    pub(crate) fn add(&mut self, f: RefusedFault) {
        self.count += 1;
        self.as_reads += u64::from(f.as_read);
        if self.first.len() < NAMED {
            self.first.push(f);
        }
    }

    /// One line for the user, or `None` when nothing was refused.
    pub fn describe(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let named: Vec<String> = self
            .first
            .iter()
            .map(|f| {
                format!(
                    "record {} ({} at offset {:#x} of region {}: {}{})",
                    f.index,
                    if f.write { "write" } else { "read" },
                    f.offset,
                    f.region,
                    f.why,
                    if f.as_read {
                        ", replayed as a read"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        Some(format!(
            "{} recorded fault(s) the model refused (SIGSEGV) and the native program went past: {} replayed as reads (the recording inferred or did not know their kind), {} skipped; the replay went on; first: {}",
            self.count,
            self.as_reads,
            self.count - self.as_reads,
            named.join(", ")
        ))
    }
}

/// Whether the recorder inferred (or did not know) the kind of some of the
/// trace's faults: `observed.faults_inferred` above 0, or the note a trace
/// recorded before the inference carries ("fault kinds unknown ...", every
/// fault recorded as a write).
pub fn kinds_inferred(h: &Header) -> bool {
    h.observed.get("faults_inferred").is_some_and(|&n| n > 0)
        || h.notes.iter().any(|n| n.starts_with("fault kinds unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(index: u64, as_read: bool) -> RefusedFault {
        RefusedFault {
            index,
            region: 3,
            offset: 0x2000,
            write: true,
            why: "AccErr".into(),
            as_read,
        }
    }

    #[test]
    fn counts_every_refusal_and_names_the_first_few() {
        let mut r = Refused::default();
        assert_eq!(r.describe(), None);
        for i in 0..8 {
            r.add(fault(i, i % 2 == 0));
        }
        assert_eq!((r.count, r.as_reads, r.first.len()), (8, 4, NAMED));
        let line = r.describe().unwrap();
        assert!(line.starts_with("8 recorded fault(s)"), "{line}");
        assert!(line.contains("4 replayed as reads") && line.contains("4 skipped"));
        assert!(line.contains("record 4 (write") && !line.contains("record 5 ("));
    }

    #[test]
    fn inferred_kinds_are_read_from_the_header() {
        let mut h = Header {
            source: "record".into(),
            command: vec![],
            page_size: 4096,
            va_bits: 48,
            notes: vec![],
            observed: Default::default(),
        };
        assert!(!kinds_inferred(&h));
        h.observed.insert("faults_inferred".into(), 0);
        assert!(!kinds_inferred(&h));
        h.observed.insert("faults_inferred".into(), 12);
        assert!(kinds_inferred(&h));
        h.observed.clear();
        h.notes.push(
            "fault kinds unknown (no access ...): every recorded fault replays as a write".into(),
        );
        assert!(kinds_inferred(&h));
    }
}
