//! `trace`: ptlab's trace format. A trace holds what a program did to its
//! address space (mmap, munmap, mprotect, madvise, mlock, brk, mremap), its
//! memory accesses or the page faults the kernel saw, and the thread each
//! came from, in order. Regions are named by identity and size, not by
//! address, so that a replay can lay them out under any geometry; the
//! program's own addresses are kept beside them when known.
//!
//! - [`record`]: the records.
//! - [`varint`]: the integer encoding.
//! - [`codec`]: records to bytes and back, inside one chunk.
//! - [`file`]: the file: header, zstd-compressed chunks, end marker;
//!   [`TraceWriter`] and the streaming [`TraceReader`].
//! - [`le`]: the little-endian fields of the file's fixed-size heads.
//! - [`regions`]: a first pass that collects every region's lifetime and
//!   largest size, for placement.
//!
//! ## Invariants
//! 1. A region id is introduced by exactly one `Map` or `Move` record and
//!    used only after it; an id is never reused within a trace.
//! 2. Every offset a record gives lies inside its region's size at that
//!    point of the trace (checked by [`regions::scan`]).
//! 3. A reader holds at most one chunk ([`file::MAX_CHUNK_RAW`] bytes of
//!    records) in memory, whatever the trace's length ([`file::Prefetch`],
//!    reading ahead on its own thread, at most its depth plus two).
//! 4. A version-2 trace's index ([`file::read_index`]) is what
//!    [`regions::scan`] finds in its records; a replay checks it as it
//!    goes (crate `backend`).

pub mod codec;
pub mod file;
pub mod le;
pub mod record;
pub mod regions;
pub mod varint;

pub use file::{
    read_index, rewrite_header, Header, Index, TraceError, TraceReader, TraceWriter, VERSION,
};
pub use record::{MapEvent, MapFlags, Prot, Record, RegionId, RegionKind};
