//! The hardware page walk over the engine's tables: what a TLB miss does.
//!
//! The walk reads one hardware word per level by physical address
//! ([`pt::PageTable::hw_entry_pa`], [`pt::PhysMem::read`]), decodes it with
//! the architecture's codec and follows table pointers down to a leaf. Every
//! word read is one memory reference. A walk cache hit lets it start below
//! the levels the cache covers.
//!
//! The common words skip the codec: a table entry is tested and its address
//! taken through the level's [`pt::entry::TableFields`], a leaf that needs no
//! A/D update through its [`pt::entry::LeafFields`]; both are checked against
//! the codec by tests (here and in `pt`). Everything else, faults and A/D
//! updates included, goes through the codec's decode.
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
//!   AP\[2\] of a DBM page, in the leaf descriptor only (hardware AF in table
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

use pt::entry::{self, DecodeError, Entry, LeafFields, TableFields};
use pt::geometry::MAX_LEVELS;
use pt::{Geometry, Level, PageTable, PhysAddr, TableAddr, VirtAddr};
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
    /// The bit the hardware sets in table entries it walks through, 0 if
    /// none ([`pt::entry::Architecture::table_accessed_bit`]).
    pub table_accessed: u64,
    /// Whether invalidating one page drops every walk-cache entry of the
    /// address space ([`pt::entry::Architecture::page_invalidation_flushes_walk_caches`]).
    pub page_invalidation_flushes_pwc: bool,
    /// The geometry's architecture, for the rules asked off the hot path
    /// (the NAPOT leaf of a software-page geometry).
    architecture: &'static dyn pt::entry::Architecture,
    /// Per level, how to read a common leaf without decoding it.
    leaf: [FastLeaf; MAX_LEVELS],
    /// Per level, the table-entry test and address fields; where the
    /// hardware sets A in table entries (x86) the test also asks for it, so
    /// that a table entry whose A the walk must set fails it and takes
    /// [`last_step`].
    table: [TableFields; MAX_LEVELS],
}

/// A level's common leaf (see [`pt::entry::LeafFields`]) as the walk reads
/// it: one test and a few bit moves instead of the codec's decode, for a
/// leaf whose accessed (and, on a write, dirty) bit is already set, which
/// needs no update. Any other word takes [`last_step`].
#[derive(Debug, Clone, Copy)]
struct FastLeaf {
    fields: LeafFields,
    /// `entry_size - 1` of the level: the output address's offset bits.
    offset: u64,
    /// log2 of the translation the TLB caches for such a leaf.
    tlb_shift: u32,
}

impl FastLeaf {
    /// A test no word passes: bit 0 is in the value, not in the mask.
    const NONE: FastLeaf = FastLeaf {
        fields: LeafFields {
            mask: 0,
            value: 1,
            addr: 0,
            addr_shift: 0,
            write: 0,
            user: 0,
            accessed: 0,
            dirty: 0,
        },
        offset: 0,
        tlb_shift: 0,
    };
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
        let architecture = g.architecture();
        let mut gi = GeomInfo {
            root: g.root_level(),
            va_bits: g.va_bits(),
            hw_page_shift: g.hw_page_shift(),
            sub,
            hw_shift,
            hw_mask,
            table_accessed: architecture.table_accessed_bit(),
            page_invalidation_flushes_pwc: architecture.page_invalidation_flushes_walk_caches(),
            architecture,
            leaf: [FastLeaf::NONE; MAX_LEVELS],
            table: [TableFields::NONE; MAX_LEVELS],
        };
        let accessed = gi.table_accessed;
        for l in 0..g.num_levels() {
            let mut t = entry::table_fields(g, l);
            t.mask |= accessed;
            t.value |= accessed;
            gi.table[l] = t;
            if let Some(fields) = entry::leaf_fields(g, l) {
                gi.leaf[l] = FastLeaf {
                    fields,
                    offset: g.entry_size(l) - 1,
                    // Any word the fields accept has this shape.
                    tlb_shift: leaf_shift(g, &gi, l, fields.value, false),
                };
            }
        }
        gi
    }

    /// The leaf that `raw`, read at `level` for `va`, gives an access, if
    /// it is a common leaf (see [`FastLeaf`]) that permits the access and
    /// needs no accessed or dirty update. `None` says nothing about the
    /// word: [`last_step`] decides.
    #[inline(always)]
    fn fast_leaf(
        &self,
        level: usize,
        raw: u64,
        va: VirtAddr,
        write: bool,
        user: bool,
    ) -> Option<Leaf> {
        let l = &self.leaf[level];
        let f = &l.fields;
        let set = f.accessed | if write { f.dirty } else { 0 };
        if raw & (f.mask | set) != f.value | set {
            return None;
        }
        let flags = flags::READ
            | bit(raw & f.write != 0, flags::WRITE)
            | bit(raw & f.user != 0, flags::USER)
            | bit(raw & f.dirty != 0, flags::DIRTY);
        if !permits(flags, write, user) {
            return None;
        }
        let base = ((raw & f.addr) << f.addr_shift) & !l.offset;
        Some(Leaf {
            pa: PhysAddr::new(base | va.offset_in(l.offset + 1)),
            size_shift: l.tlb_shift,
            flags,
        })
    }

    #[inline]
    pub(crate) fn is_canonical(&self, va: VirtAddr) -> bool {
        let s = 64 - self.va_bits;
        let va = va.get();
        (((va << s) as i64) >> s) as u64 == va
    }

    pub(crate) fn hw_shifts(&self) -> &[u32] {
        &self.hw_shift[..=self.root]
    }

    /// The address of the hardware word for `va` in the table at `table` of
    /// `level` (the same as [`PageTable::hw_entry_pa`], without going back
    /// to the geometry). The level is a number here: it indexes this
    /// structure's per-level arrays, and the walk steps it down without the
    /// check [`Level::down`] makes.
    #[inline(always)]
    pub(crate) fn entry_pa(&self, table: TableAddr, level: usize, va: VirtAddr) -> PhysAddr {
        table.phys() + ((va.get() >> self.hw_shift[level]) & self.hw_mask[level]) * 8
    }
}

/// The result of a successful walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Physical address of the accessed byte.
    pub pa: PhysAddr,
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
    // Software page: the word is one hardware translation (a NAPOT word
    // one of its run's size).
    gi.architecture
        .napot_leaf_shift(level, raw)
        .unwrap_or(gi.hw_shift[level])
}

/// `raw` with A set if this architecture sets A in table entries and it is
/// clear (x86 only: see the module docs).
#[inline]
fn table_accessed(gi: &GeomInfo, raw: u64) -> Option<u64> {
    (raw & gi.table_accessed != gi.table_accessed).then_some(raw | gi.table_accessed)
}

/// Walks `pt` for `va` as the hardware does, starting below the walk cache's
/// deepest hit, filling the walk cache with the pointers it reads, setting A
/// and D as the architecture does. `before_read(pa)` is called before each
/// word is read (a nested walk translates the table address there).
///
/// The walk's level is a number (0 = leaf), not a [`Level`]: it indexes
/// [`GeomInfo`]'s arrays and steps down once per table without the check
/// [`Level::down`] would add to every step.
///
/// # Errors
/// The [`Fault`] the access raises; `count` still says what the walk read.
#[inline]
pub(crate) fn walk_with<F>(
    pt: &PageTable,
    gi: &GeomInfo,
    mut pwc: Option<&mut Pwc>,
    asid: u16,
    req: Request,
    count: &mut WalkCount,
    mut before_read: F,
) -> Result<Leaf, Fault>
where
    F: FnMut(PhysAddr) -> Result<(), Fault>,
{
    let Request { va, write, user } = req;
    if !gi.is_canonical(va) {
        return Err(Fault::NonCanonical { va: va.get() });
    }
    let mem = pt.mem();
    let (mut level, mut table) = match pwc.as_deref_mut().and_then(|p| p.lookup(va, asid)) {
        Some((l, t)) => {
            count.pwc_hit = Some(l);
            (l - 1, t)
        }
        None => (gi.root, pt.root_table()),
    };
    // Counted here and added to `count` once: the loop keeps them in registers.
    let (mut refs, mut ad_writes) = (0, 0);
    let result = 'walk: {
        // The levels above the leaf: their tables are never compact, so
        // their words are read without the compact test (`read_walk_upper`),
        // which the leaf step below makes alone.
        while level > 0 {
            let epa = gi.entry_pa(table, level, va);
            debug_assert_eq!(epa, pt.hw_entry_pa(table, Level::new(level), va));
            if let Err(f) = before_read(epa) {
                break 'walk Err(f);
            }
            let raw = mem.read_walk_upper(epa.get());
            refs += 1;
            // The common steps first, tested without decoding: a table
            // entry, then a leaf that needs no A/D update; anything else
            // ends the walk (or, rarely, makes it read again) in `last_step`.
            let t = &gi.table[level];
            let next = if raw & t.mask == t.value {
                TableAddr::new(t.next_table(raw))
            } else {
                // A huge leaf, a fault or an A update: out of line, so that
                // the table steps keep their registers.
                match upper_step(pt, gi, level, epa, raw, req) {
                    Err(f) => break 'walk Err(f),
                    Ok((step, wrote)) => {
                        ad_writes += u32::from(wrote);
                        match step {
                            Step::Leaf(leaf) => break 'walk Ok(leaf),
                            Step::Again => continue,
                            Step::Table(pa) => pa,
                        }
                    }
                }
            };
            if let Some(p) = pwc.as_deref_mut() {
                p.fill(level, va, asid, next);
            }
            table = next;
            level -= 1;
        }
        // The leaf level: its tables hold no table entries (their table
        // test is one no word passes), so only the leaf tests remain.
        loop {
            let epa = gi.entry_pa(table, 0, va);
            debug_assert_eq!(epa, pt.hw_entry_pa(table, Level::new(0), va));
            if let Err(f) = before_read(epa) {
                break 'walk Err(f);
            }
            let raw = mem.read_walk_pte(epa.get());
            refs += 1;
            if let Some(leaf) = gi.fast_leaf(0, raw, va, write, user) {
                break 'walk Ok(leaf);
            }
            match last_step(pt, gi, 0, epa, raw, req) {
                Err(f) => break 'walk Err(f),
                Ok((step, wrote)) => {
                    ad_writes += u32::from(wrote);
                    match step {
                        Step::Leaf(leaf) => break 'walk Ok(leaf),
                        Step::Again => continue,
                        Step::Table(_) => unreachable!("a table entry at the leaf level"),
                    }
                }
            }
        }
    };
    count.refs += refs;
    count.ad_writes += ad_writes;
    result
}

/// The walk's step for a word `raw` above the leaf level that is not a
/// table entry with its accessed bit set: a common huge leaf through its
/// fields, anything else through [`last_step`].
#[inline(never)]
fn upper_step(
    pt: &PageTable,
    gi: &GeomInfo,
    level: usize,
    epa: PhysAddr,
    raw: u64,
    req: Request,
) -> Result<(Step, bool), Fault> {
    let Request { va, write, user } = req;
    if let Some(leaf) = gi.fast_leaf(level, raw, va, write, user) {
        return Ok((Step::Leaf(leaf), false));
    }
    last_step(pt, gi, level, epa, raw, req)
}

/// The access a walk serves: its address, whether it writes, and whether
/// it runs in user mode. The permission and A/D checks of every step read
/// all three, so they travel together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    pub va: VirtAddr,
    pub write: bool,
    pub user: bool,
}

impl Request {
    pub(crate) fn new(va: VirtAddr, write: bool, user: bool) -> Request {
        Request { va, write, user }
    }
}

/// What the walk does after a word that is not a plain table entry.
enum Step {
    Leaf(Leaf),
    /// The word changed under a compare-and-swap: read it again.
    Again,
    /// A table entry after all (its accessed bit set here).
    Table(TableAddr),
}

/// The walk's step for a word `raw` at `level` (read from `epa`) that is not
/// a table entry with its accessed bit set: a leaf (permissions, A/D bits),
/// a fault, or a table whose accessed bit this walk sets, and whether it
/// wrote an accessed or dirty bit. Out of line: a walk comes here once, at
/// its end.
#[inline(never)]
fn last_step(
    pt: &PageTable,
    gi: &GeomInfo,
    level: usize,
    epa: PhysAddr,
    raw: u64,
    req: Request,
) -> Result<(Step, bool), Fault> {
    let Request { va, write, user } = req;
    let g = pt.geometry();
    let mem = pt.mem();
    let epa = epa.get();
    match entry::decode(g, level, raw) {
        Err(error) => Err(Fault::Reserved {
            va: va.get(),
            level,
            error,
        }),
        Ok(Entry::Invalid | Entry::Swap { .. }) => Err(Fault::NotPresent {
            va: va.get(),
            level,
        }),
        Ok(Entry::Table { pa }) => match table_accessed(gi, raw) {
            Some(new) if mem.compare_exchange(epa, raw, new).is_err() => Ok((Step::Again, false)),
            Some(_) => Ok((Step::Table(TableAddr::new(pa)), true)),
            None => Ok((Step::Table(TableAddr::new(pa)), false)),
        },
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
                return Err(Fault::Permission {
                    va: va.get(),
                    write,
                    user,
                });
            }
            let new = entry::mark_accessed(g, level, raw, write);
            let wrote = new != raw;
            if wrote && mem.compare_exchange(epa, raw, new).is_err() {
                return Ok((Step::Again, false));
            }
            let l = g.level(level);
            let sw_size = if contiguous {
                l.entry_size() * u64::from(l.contig)
            } else {
                l.entry_size()
            };
            let leaf = Leaf {
                pa: PhysAddr::new(entry::leaf_output(pa, sw_size, va.get())),
                size_shift: leaf_shift(g, gi, level, raw, contiguous),
                flags: f,
            };
            Ok((Step::Leaf(leaf), wrote))
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
#[inline]
pub(crate) fn walk(
    pt: &PageTable,
    gi: &GeomInfo,
    pwc: Option<&mut Pwc>,
    asid: u16,
    req: Request,
    count: &mut WalkCount,
) -> Result<Leaf, Fault> {
    walk_with(pt, gi, pwc, asid, req, count, |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt::{Attrs, MemType, Perms};

    /// The walk with its common-leaf shortcut gives what the walk without it
    /// (every leaf through `last_step`) gives: the same leaf, fault,
    /// references and A/D writes, and leaves the same words behind. Two
    /// identical tables per preset, leaves of every size and of varied
    /// permissions, A/D state and memory type, walked by the same random
    /// reads and writes from user and supervisor mode.
    #[test]
    fn the_leaf_shortcut_changes_nothing() {
        for g in pt::geometry::presets() {
            let fast = GeomInfo::new(&g);
            let mut slow = fast.clone();
            slow.leaf = [FastLeaf::NONE; MAX_LEVELS];
            let tables = [0, 1].map(|_| PageTable::with_new_memory(g.clone()).unwrap());
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut vas = Vec::new();
            let leaf_levels: Vec<usize> =
                (0..g.num_levels()).filter(|&l| g.level(l).leaf).collect();
            for k in 0..24u64 {
                let level = leaf_levels[k as usize % leaf_levels.len()];
                let size = g.entry_size(level);
                let va = (k + 1) * (size * 8).max(1 << 30);
                let r = next();
                let mut a = Attrs::new(Perms {
                    read: true,
                    write: r & 1 != 0,
                    exec: r & 2 != 0,
                    user: r & 4 != 0,
                });
                a.accessed = r & 8 != 0;
                a.dirty = r & 16 != 0;
                a.mem_type = [MemType::Normal, MemType::NonCacheable, MemType::Normal]
                    [(r >> 5) as usize % 3];
                let pa = k * size.max(1 << 30);
                if tables.iter().all(|t| {
                    t.map(VirtAddr::new(va), PhysAddr::new(pa), size, size, a)
                        .is_ok()
                }) {
                    vas.push((va, size));
                }
            }
            assert!(vas.len() >= 8, "{}: {} mappings", g.name(), vas.len());
            for _ in 0..2_000 {
                let r = next();
                let (base, size) = vas[r as usize % vas.len()];
                // Sometimes past the mapping: a not-present fault.
                let va = base + (r >> 8) % (size + size / 4);
                let (write, user) = (r & (1 << 40) != 0, r & (1 << 41) != 0);
                let mut counts = [WalkCount::default(); 2];
                let infos = [&fast, &slow];
                let results: Vec<_> = (0..2)
                    .map(|i| {
                        walk(
                            &tables[i],
                            infos[i],
                            None,
                            1,
                            Request::new(VirtAddr::new(va), write, user),
                            &mut counts[i],
                        )
                    })
                    .collect();
                assert_eq!(
                    results[0],
                    results[1],
                    "{} {va:#x} w{write} u{user}",
                    g.name()
                );
                assert_eq!(counts[0].refs, counts[1].refs);
                assert_eq!(counts[0].ad_writes, counts[1].ad_writes);
            }
            for &(va, size) in &vas {
                let t = tables
                    .each_ref()
                    .map(|t| t.translate(VirtAddr::new(va + size / 2)).unwrap());
                assert_eq!(t[0].attrs, t[1].attrs, "{} {va:#x}", g.name());
            }
        }
    }

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
                    let (t, va) = (TableAddr::new(1u64 << 32), VirtAddr::new(va));
                    assert_eq!(
                        gi.entry_pa(t, level, va),
                        pt.hw_entry_pa(t, Level::new(level), va),
                        "{} level {level} va {va:#x}",
                        g.name()
                    );
                }
            }
        }
    }
}
