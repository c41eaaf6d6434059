//! The hardware page walk over the engine's tables: what a TLB miss does.
//!
//! The walk reads one hardware word per level by physical address
//! ([`pt::PageTable::hw_entry_pa`], [`pt::PhysMem::read`]), decodes it with
//! the architecture's codec and follows table pointers down to a leaf. Every
//! word read is one memory reference. A walk cache hit lets it start below
//! the levels the cache covers.
//!
//! ## Accessed and dirty bits, per architecture
//!
//! - **x86-64**: "whenever the processor uses a paging-structure entry as
//!   part of linear-address translation, it sets the accessed flag in that
//!   entry" (Intel SDM vol. 3A §4.8): A on every level walked (Linux writes
//!   table entries with A already set, `_PAGE_TABLE`, so this rarely writes),
//!   D on the leaf on a write.
//! - **RISC-V** (Svadu): A, and D on a write, in the leaf PTE only; A, D and
//!   U of a non-leaf PTE are reserved (privileged spec, "Sv39" §: "For
//!   non-leaf PTEs, the D, A, and U bits are reserved").
//! - **ARM64** (FEAT_HAFDBS): the access flag, and dirty state by clearing
//!   AP[2] of a DBM page, in the leaf descriptor only (hardware AF in table
//!   descriptors needs FEAT_HAFT, not modeled).
//!
//! The update is an atomic compare-and-swap of the word, as the hardware's
//! locked update is; if the word changed since it was read (the OS edited
//! it), the level is read again.
//!
//! ## Translation sizes
//!
//! The TLB caches what the *hardware* sees: a contiguous (ARM) or NAPOT
//! (RISC-V) run as one translation of the run's size; under a software page
//! larger than the hardware page (`riscv-sv39-64k`) each hardware word is its
//! own translation (a 64 KiB NAPOT word at the leaf level, a superpage of
//! `2^hw_shift(level)` bytes above it).

use pt::entry::{self, DecodeError, Entry};
use pt::geometry::MAX_LEVELS;
use pt::{Arch, Geometry, PageTable};
use thiserror::Error;

use crate::pwc::Pwc;
use crate::tlb::flags;

/// Why an access cannot complete: the exception the hardware would raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Fault {
    /// The walk met an entry that is not present at `level` (0 = leaf level).
    #[error("{va:#x}: not present at level {level}")]
    NotPresent { va: u64, level: usize },
    /// The translation does not allow this access. The TLB entries for `va`
    /// have been invalidated, as a page fault does (SDM §4.10.4.1).
    #[error("{va:#x}: {kind} access not permitted", kind = access_kind(*write, *user))]
    Permission { va: u64, write: bool, user: bool },
    /// An entry with a reserved encoding at `level`.
    #[error("{va:#x}: reserved entry at level {level}: {error}")]
    Reserved {
        va: u64,
        level: usize,
        error: DecodeError,
    },
    /// `va` is outside the geometry's canonical address space.
    #[error("{va:#x} is not a canonical address")]
    NonCanonical { va: u64 },
}

fn access_kind(write: bool, user: bool) -> &'static str {
    match (user, write) {
        (true, true) => "user write",
        (true, false) => "user read",
        (false, true) => "supervisor write",
        (false, false) => "supervisor read",
    }
}

/// What the MMU needs from a geometry, computed once.
#[derive(Debug, Clone)]
pub(crate) struct GeomInfo {
    pub arch: Arch,
    pub root: usize,
    pub va_bits: u32,
    pub hw_page_shift: u32,
    /// Software page shift minus hardware page shift (0 unless the geometry
    /// has a software page larger than the hardware page).
    pub sub: u32,
    /// Lowest VA bit the hardware table of each level indexes.
    pub hw_shift: [u32; MAX_LEVELS],
    /// Index mask of each level's hardware word inside a (software) table
    /// page: `entry_pa = table + ((va >> hw_shift) & hw_mask) * 8`, as
    /// [`PageTable::hw_entry_pa`] computes it.
    pub hw_mask: [u64; MAX_LEVELS],
    /// Whether the hardware sets A in table entries it walks through.
    pub table_accessed: bool,
}

impl GeomInfo {
    pub(crate) fn new(g: &Geometry) -> GeomInfo {
        let mut hw_shift = [0; MAX_LEVELS];
        let mut hw_mask = [0; MAX_LEVELS];
        let sub = g.page_shift() - g.hw_page_shift();
        for l in 0..g.num_levels() {
            hw_shift[l] = g.hw_shift(l);
            hw_mask[l] = (1u64 << (g.level(l).bits + sub)) - 1;
        }
        GeomInfo {
            arch: g.arch(),
            root: g.root_level(),
            va_bits: g.va_bits(),
            hw_page_shift: g.hw_page_shift(),
            sub,
            hw_shift,
            hw_mask,
            table_accessed: matches!(g.arch(), Arch::X86_64),
        }
    }

    #[inline]
    pub(crate) fn is_canonical(&self, va: u64) -> bool {
        let s = 64 - self.va_bits;
        (((va << s) as i64) >> s) as u64 == va
    }

    pub(crate) fn hw_shifts(&self) -> &[u32] {
        &self.hw_shift[..=self.root]
    }

    /// The address of the hardware word for `va` in the table at `table` of
    /// `level` (the same as [`PageTable::hw_entry_pa`], without going back
    /// to the geometry).
    #[inline(always)]
    pub(crate) fn entry_pa(&self, table: u64, level: usize, va: u64) -> u64 {
        table + ((va >> self.hw_shift[level]) & self.hw_mask[level]) * 8
    }
}

/// The result of a successful walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Physical address of the accessed byte.
    pub pa: u64,
    /// log2 of the translation the hardware would cache.
    pub size_shift: u32,
    /// `tlb::flags` bits.
    pub flags: u8,
}

/// What one walk did, beside its result.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WalkCount {
    /// Words read.
    pub refs: u32,
    /// Accessed/dirty updates written.
    pub ad_writes: u32,
    /// The walk-cache level that hit, if one did.
    pub pwc_hit: Option<usize>,
}

/// `tlb::flags` bits an access needs: READ, or WRITE and DIRTY (a write to a
/// page not yet dirty must go back to the page table), and USER from user mode.
#[inline]
pub(crate) fn needed_flags(write: bool, user: bool) -> u8 {
    let rw = if write {
        flags::WRITE | flags::DIRTY
    } else {
        flags::READ
    };
    rw | if user { flags::USER } else { 0 }
}

/// Whether an entry with `f` permits the access (dirty state aside).
#[inline]
pub(crate) fn permits(f: u8, write: bool, user: bool) -> bool {
    let need = needed_flags(write, user) & !flags::DIRTY;
    f & need == need
}

/// The hardware's translation size for a leaf read at `level` (see the
/// module docs).
fn leaf_shift(g: &Geometry, gi: &GeomInfo, level: usize, raw: u64, contiguous: bool) -> u32 {
    let l = g.level(level);
    if contiguous {
        return l.shift + l.contig.trailing_zeros();
    }
    if gi.sub == 0 {
        return l.shift;
    }
    // Software page: the word is one hardware translation.
    if gi.arch == Arch::RiscV && level == 0 && raw & entry::riscv::N != 0 {
        return entry::riscv::NAPOT_64K_BYTES.trailing_zeros();
    }
    gi.hw_shift[level]
}

/// `raw` with A set if this architecture sets A in table entries and it is
/// clear (x86 only: see the module docs).
#[inline]
fn table_accessed(gi: &GeomInfo, raw: u64) -> Option<u64> {
    if gi.table_accessed && raw & entry::x86::A == 0 {
        Some(entry::x86::mark_accessed(raw, false))
    } else {
        None
    }
}

/// Walks `pt` for `va` as the hardware does, starting below the walk cache's
/// deepest hit, filling the walk cache with the pointers it reads, setting A
/// and D as the architecture does. `before_read(pa)` is called before each
/// word is read (a nested walk translates the table address there).
///
/// # Errors
/// The [`Fault`] the access raises; `count` still says what the walk read.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn walk_with<F>(
    pt: &PageTable,
    gi: &GeomInfo,
    mut pwc: Option<&mut Pwc>,
    asid: u16,
    va: u64,
    write: bool,
    user: bool,
    count: &mut WalkCount,
    mut before_read: F,
) -> Result<Leaf, Fault>
where
    F: FnMut(u64) -> Result<(), Fault>,
{
    if !gi.is_canonical(va) {
        return Err(Fault::NonCanonical { va });
    }
    let g = pt.geometry();
    let mem = pt.mem();
    let (mut level, mut table) = match pwc.as_deref_mut().and_then(|p| p.lookup(va, asid)) {
        Some((l, t)) => {
            count.pwc_hit = Some(l);
            (l - 1, t)
        }
        None => (gi.root, pt.root()),
    };
    loop {
        let epa = gi.entry_pa(table, level, va);
        debug_assert_eq!(epa, pt.hw_entry_pa(table, level, va));
        before_read(epa)?;
        let raw = mem.read_walk(epa);
        count.refs += 1;
        // The common step first: a table entry, tested without decoding;
        // anything else ends the walk (or, rarely, makes it read again).
        let next =
            match entry::table_pa(g, level, raw).filter(|_| table_accessed(gi, raw).is_none()) {
                Some(pa) => pa,
                None => match last_step(pt, gi, level, epa, raw, va, write, user, count)? {
                    Step::Leaf(leaf) => return Ok(leaf),
                    Step::Again => continue,
                    Step::Table(pa) => pa,
                },
            };
        if let Some(p) = pwc.as_deref_mut() {
            p.fill(level, va, asid, next);
        }
        table = next;
        level -= 1;
    }
}

/// What the walk does after a word that is not a plain table entry.
enum Step {
    Leaf(Leaf),
    /// The word changed under a compare-and-swap: read it again.
    Again,
    /// A table entry after all (its accessed bit set here).
    Table(u64),
}

/// The walk's step for a word `raw` at `level` (read from `epa`) that is not
/// a table entry with its accessed bit set: a leaf (permissions, A/D bits),
/// a fault, or a table whose accessed bit this walk sets. Out of line: a
/// walk comes here once, at its end.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn last_step(
    pt: &PageTable,
    gi: &GeomInfo,
    level: usize,
    epa: u64,
    raw: u64,
    va: u64,
    write: bool,
    user: bool,
    count: &mut WalkCount,
) -> Result<Step, Fault> {
    let g = pt.geometry();
    let mem = pt.mem();
    match entry::decode(g, level, raw) {
        Err(error) => Err(Fault::Reserved { va, level, error }),
        Ok(Entry::Invalid) => Err(Fault::NotPresent { va, level }),
        Ok(Entry::Table { pa }) => {
            if let Some(new) = table_accessed(gi, raw) {
                if mem.compare_exchange(epa, raw, new).is_err() {
                    return Ok(Step::Again);
                }
                count.ad_writes += 1;
            }
            Ok(Step::Table(pa))
        }
        Ok(Entry::Leaf {
            pa,
            attrs,
            contiguous,
        }) => {
            let p = attrs.perms;
            let f = bit(p.read, flags::READ)
                | bit(p.write, flags::WRITE)
                | bit(p.user, flags::USER)
                | bit(attrs.dirty || write, flags::DIRTY);
            if !permits(f, write, user) {
                return Err(Fault::Permission { va, write, user });
            }
            let new = entry::mark_accessed(g, level, raw, write);
            if new != raw {
                if mem.compare_exchange(epa, raw, new).is_err() {
                    return Ok(Step::Again);
                }
                count.ad_writes += 1;
            }
            let l = g.level(level);
            let sw_size = if contiguous {
                l.entry_size() * u64::from(l.contig)
            } else {
                l.entry_size()
            };
            Ok(Step::Leaf(Leaf {
                pa: entry::leaf_output(pa, sw_size, va),
                size_shift: leaf_shift(g, gi, level, raw, contiguous),
                flags: f,
            }))
        }
    }
}

#[inline]
fn bit(on: bool, b: u8) -> u8 {
    if on {
        b
    } else {
        0
    }
}

/// [`walk_with`] without a hook: a native walk.
///
/// # Errors
/// As [`walk_with`].
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn walk(
    pt: &PageTable,
    gi: &GeomInfo,
    pwc: Option<&mut Pwc>,
    asid: u16,
    va: u64,
    write: bool,
    user: bool,
    count: &mut WalkCount,
) -> Result<Leaf, Fault> {
    walk_with(pt, gi, pwc, asid, va, write, user, count, |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_addresses_match_the_engine_for_every_preset() {
        for g in pt::geometry::presets() {
            let gi = GeomInfo::new(&g);
            let pt = PageTable::with_new_memory(g.clone()).unwrap();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let va = x & ((1u64 << (g.va_bits() - 1)) - 1);
                for level in 0..g.num_levels() {
                    let t = 1u64 << 32;
                    assert_eq!(
                        gi.entry_pa(t, level, va),
                        pt.hw_entry_pa(t, level, va),
                        "{} level {level} va {va:#x}",
                        g.name()
                    );
                }
            }
        }
    }
}
