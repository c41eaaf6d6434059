//! The placement rule: where every region lands, the same on every backend.
//!
//! Where a mapping lands decides which page-table pages it needs, so the
//! model and the kernel must agree on it. The rule:
//!
//! 1. **Base.** Regions are laid out upwards from
//!    `base(va_bits) = min(32 TiB, 2^(va_bits-1) / 4)`: 32 TiB
//!    (`0x2000_0000_0000`, a quarter of the 128 TiB user half) on 48-bit
//!    spaces and also on larger ones (57-bit), scaled down with the space on
//!    smaller ones (64 GiB on Sv39's 39 bits). The user half of a
//!    `va_bits`-bit space ends at `user_top = 2^(va_bits-1)`; every region
//!    must end at or below it.
//! 2. **Alignment.** A region of 2 MiB or more starts on a 2 MiB boundary,
//!    a smaller one on a 4 KiB boundary.
//! 3. **One address per name.** Each distinct region name (after `{tid}`
//!    expansion) gets one fixed address for the whole run, reserving its
//!    largest size; re-mapping it (in a loop, say) maps it at the same place.
//! 4. **Order.** Regions are placed in the order the checker's walk first
//!    maps them (phase by phase; inside a phase thread by thread in thread
//!    order; each thread in program order; see `check`).
//! 5. **First fit into freed space.** A region goes to the lowest aligned
//!    address at or above the base where it overlaps no *conflicting*
//!    region placed before it and no room of the program (rule 7); if there
//!    is no such address below `user_top`, the same search runs again from
//!    `low(va_bits) = min(4 GiB, base)`. Region A does not conflict with region B when
//!    A's lifetime ends before B's begins in every interleaving: A's final
//!    `munmap` (after which it is never mapped again) happens before B's
//!    first `mmap`, that is, both are in the same thread with the munmap
//!    first, or the munmap is in an earlier phase (before a barrier both
//!    threads pass). A region never wholly unmapped lives to the end. So
//!    space is reused only where the two can never be mapped at once.
//! 6. **`addr`.** A region whose `mmap` gives `addr` is placed there; it must
//!    be 4 KiB aligned, at or above 64 KiB (Linux's default
//!    `vm.mmap_min_addr`), end below `user_top`, and overlap no conflicting
//!    region. Fixed regions are placed before the others, which avoid them.
//!    (An `addr` may lie in the program's room: the kernel backend then
//!    refuses the run if it collides with what is really there.)
//! 7. **Room for the program.** The kernel backend's child is a process
//!    with its own memory, where Linux puts it whatever the workload says:
//!    the executable and its heap at two thirds of the default mmap window
//!    `W = min(user_top, 2^47)` (`ELF_ET_DYN_BASE`, moved by up to 1 TiB by
//!    address-space randomization), the stack, the libraries and the vDSO
//!    just below `W`. So regions without `addr` avoid
//!    `[2W/3, 2W/3 + W/32)` (rounded down to 2 MiB) and `[W - W/16, W)`:
//!    85.3 to 89.3 TiB and 120 to 128 TiB on 48-bit and larger spaces. The
//!    model keeps the same rule so both place every region alike. Above
//!    `W` (5-level spaces) nothing is in the way.
//!
//! The kernel backend maps each region at its address with
//! MAP_FIXED_NOREPLACE; the model maps it there too. Before the first op
//! the kernel backend checks every region against the child's own
//! mappings (/proc/self/maps), which rule 7 keeps clear on Linux's default
//! layout (not under `ulimit -s unlimited`, whose legacy layout puts the
//! libraries at `W/3`).

/// The base on 48-bit and larger address spaces: 32 TiB.
pub const BASE_48: u64 = 0x2000_0000_0000;
/// Alignment of regions of at least this size.
pub const HUGE_ALIGN: u64 = 2 << 20;
/// Lowest address an `addr` may give (Linux's default `vm.mmap_min_addr`).
pub const MIN_ADDR: u64 = 0x1_0000;
/// Address-space widths placement handles.
pub const VA_BITS: std::ops::RangeInclusive<u32> = 32..=64;
/// Where the second search of rule 5 starts (at most).
pub const LOW: u64 = 4 << 30;
/// Linux's default mmap window on 64-bit: addresses above it are used only
/// when asked for (x86-64 5-level, arm64 52-bit).
pub const MAP_WINDOW: u64 = 1 << 47;

/// Where placement starts for a `va_bits`-bit address space.
///
/// # Panics
///
/// If `va_bits` is outside [`VA_BITS`] (the loaders check it first).
pub fn base(va_bits: u32) -> u64 {
    assert!(VA_BITS.contains(&va_bits), "va_bits {va_bits} out of range");
    BASE_48.min(user_top(va_bits) / 4)
}

/// The end of the user half of a `va_bits`-bit address space.
///
/// # Panics
///
/// If `va_bits` is outside [`VA_BITS`].
pub fn user_top(va_bits: u32) -> u64 {
    assert!(VA_BITS.contains(&va_bits), "va_bits {va_bits} out of range");
    1u64 << (va_bits - 1)
}

/// Where the second search of rule 5 starts for a `va_bits`-bit space.
///
/// # Panics
///
/// If `va_bits` is outside [`VA_BITS`].
pub fn low(va_bits: u32) -> u64 {
    LOW.min(base(va_bits))
}

/// The ranges `[start, end)` rule 7 keeps for the program's own memory in a
/// `va_bits`-bit space, lowest first.
///
/// # Panics
///
/// If `va_bits` is outside [`VA_BITS`].
pub fn program_room(va_bits: u32) -> [(u64, u64); 2] {
    let w = user_top(va_bits).min(MAP_WINDOW);
    let exe = (w / 3 * 2) / HUGE_ALIGN * HUGE_ALIGN;
    [(exe, exe + w / 32), (w - w / 16, w)]
}

/// The alignment the rule gives a region of `size` bytes.
pub fn alignment(size: u64) -> u64 {
    if size >= HUGE_ALIGN {
        HUGE_ALIGN
    } else {
        crate::plan::FORMAT_PAGE
    }
}

/// A point of the checker's walk: its position, phase and thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// Position in the walk (strictly increasing).
    pub seq: u64,
    pub phase: u64,
    pub tid: usize,
}

impl Moment {
    /// Whether `self` happens before `other` in every interleaving.
    pub fn happens_before(&self, other: &Moment) -> bool {
        self.seq < other.seq && (self.tid == other.tid || self.phase < other.phase)
    }
}

/// One region to place.
#[derive(Debug, Clone)]
pub struct Request {
    /// The region's name, for messages.
    pub name: String,
    pub size: u64,
    pub fixed: Option<u64>,
    /// Its first mmap.
    pub start: Moment,
    /// Its final munmap, if it ends wholly unmapped.
    pub end: Option<Moment>,
}

impl Request {
    /// Whether the two can be mapped at the same time.
    pub fn conflicts(&self, other: &Request) -> bool {
        let before = |a: &Request, b: &Request| a.end.is_some_and(|e| e.happens_before(&b.start));
        !before(self, other) && !before(other, self)
    }
}

/// Why a region could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceError {
    /// Index of the request.
    pub index: usize,
    pub problem: String,
}

fn overlaps(a: u64, a_size: u64, b: u64, b_size: u64) -> bool {
    a < b.saturating_add(b_size) && b < a.saturating_add(a_size)
}

/// The lowest `align`-aligned address at or above `from` where `size`
/// bytes overlap none of `obstacles` (sorted by start) and end by `top`;
/// `Err` with where the search ended when there is none.
fn first_fit(
    from: u64,
    size: u64,
    align: u64,
    obstacles: &[(u64, u64)],
    top: u64,
) -> Result<u64, u64> {
    let mut at = from;
    for &(start, end) in obstacles {
        let candidate = at.next_multiple_of(align);
        if candidate.saturating_add(size) <= start {
            break;
        }
        at = at.max(end);
    }
    at.checked_next_multiple_of(align)
        .filter(|c| c.checked_add(size).is_some_and(|e| e <= top))
        .ok_or(at)
}

/// Addresses for `requests`, by the rule of the module documentation.
///
/// # Errors
///
/// A fixed address that is misaligned, too low, past the top, or overlaps a
/// conflicting fixed region; a region that does not fit below the top.
///
/// # Panics
///
/// If `va_bits` is outside [`VA_BITS`].
pub fn place(requests: &[Request], va_bits: u32) -> Result<Vec<u64>, PlaceError> {
    place_aligned(requests, va_bits, crate::plan::FORMAT_PAGE)
}

/// As [`place`], every region also aligned to `min_align` (a power of
/// two): for a replay under a geometry whose base page is larger than
/// the 4 KiB the regions were sized in.
///
/// # Errors
/// As [`place`].
///
/// # Panics
/// As [`place`].
pub fn place_aligned(
    requests: &[Request],
    va_bits: u32,
    min_align: u64,
) -> Result<Vec<u64>, PlaceError> {
    let top = user_top(va_bits);
    let mut addr: Vec<Option<u64>> = vec![None; requests.len()];
    let err = |index: usize, problem: String| PlaceError { index, problem };

    for (i, r) in requests.iter().enumerate() {
        let Some(a) = r.fixed else { continue };
        if !a.is_multiple_of(crate::plan::FORMAT_PAGE)
            || a < MIN_ADDR
            || a.checked_add(r.size).is_none_or(|e| e > top)
        {
            return Err(err(
                i,
                format!(
                    "has addr {a:#x}, but a fixed address must be 4 KiB aligned, at least {MIN_ADDR:#x}, and the region must end by {top:#x} (the top of the {va_bits}-bit user space)"
                ),
            ));
        }
        if let Some(j) = (0..i).find(|&j| {
            addr[j].is_some_and(|b| overlaps(a, r.size, b, requests[j].size))
                && r.conflicts(&requests[j])
        }) {
            return Err(err(
                i,
                format!(
                    "has addr {a:#x}, which overlaps region {:?} at {:#x} while both can be mapped",
                    requests[j].name,
                    addr[j].unwrap_or_default()
                ),
            ));
        }
        addr[i] = Some(a);
    }

    let mut order: Vec<usize> = (0..requests.len()).filter(|&i| addr[i].is_none()).collect();
    order.sort_by_key(|&i| requests[i].start.seq);
    let base = base(va_bits);
    for i in order {
        let r = &requests[i];
        let align = alignment(r.size).max(min_align);
        let mut obstacles: Vec<(u64, u64)> = (0..requests.len())
            .filter_map(|j| addr[j].map(|a| (j, a)))
            .filter(|&(j, _)| r.conflicts(&requests[j]))
            .map(|(j, a)| (a, a.saturating_add(requests[j].size)))
            .chain(program_room(va_bits))
            .collect();
        obstacles.sort_unstable();
        let found = first_fit(base, r.size, align, &obstacles, top)
            .or_else(|_| first_fit(low(va_bits), r.size, align, &obstacles, top));
        match found {
            Ok(c) => addr[i] = Some(c),
            Err(_) => {
                return Err(err(
                    i,
                    format!(
                        "does not fit: no gap of {} between the regions that can be mapped with it and the program's own memory (rule 7) below {top:#x}, the top of the {va_bits}-bit user space",
                        crate::units::format_size(r.size)
                    ),
                ))
            }
        }
    }
    Ok(addr
        .into_iter()
        .map(|a| a.expect("every request placed"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(seq: u64, phase: u64, tid: usize) -> Moment {
        Moment { seq, phase, tid }
    }

    #[test]
    fn base_scales_with_the_address_space() {
        assert_eq!(base(48), 32 << 40);
        assert_eq!(base(57), 32 << 40);
        assert_eq!(base(64), 32 << 40);
        assert_eq!(base(47), 16 << 40);
        assert_eq!(base(39), 64 << 30);
        assert_eq!(user_top(39), 256 << 30);
    }

    #[test]
    fn reuse_needs_happens_before() {
        let a_end = m(2, 0, 0);
        assert!(a_end.happens_before(&m(3, 0, 0)));
        assert!(
            !a_end.happens_before(&m(3, 0, 1)),
            "same phase, other thread: concurrent"
        );
        assert!(a_end.happens_before(&m(3, 1, 1)));
        assert!(!a_end.happens_before(&m(1, 0, 0)));
    }

    #[test]
    fn sequential_regions_share_space_concurrent_ones_do_not() {
        let mib = 1 << 20;
        let reqs = [
            Request {
                name: String::new(),
                size: 4 * mib,
                fixed: None,
                start: m(1, 0, 0),
                end: Some(m(2, 0, 0)),
            },
            Request {
                name: String::new(),
                size: 4 * mib,
                fixed: None,
                start: m(3, 0, 0),
                end: None,
            },
            Request {
                name: String::new(),
                size: 4 * mib,
                fixed: None,
                start: m(4, 0, 1),
                end: None,
            },
        ];
        let a = place(&reqs, 48).unwrap();
        assert_eq!(a[0], BASE_48);
        assert_eq!(a[1], BASE_48, "freed by the same thread before: reused");
        assert_eq!(
            a[2],
            BASE_48 + 4 * mib,
            "thread 1 may run while thread 0 holds region 1"
        );
    }

    #[test]
    fn small_regions_pack_and_large_ones_align() {
        let reqs = [
            Request {
                name: String::new(),
                size: 8192,
                fixed: None,
                start: m(1, 0, 0),
                end: None,
            },
            Request {
                name: String::new(),
                size: 2 << 20,
                fixed: None,
                start: m(2, 0, 0),
                end: None,
            },
            Request {
                name: String::new(),
                size: 4096,
                fixed: None,
                start: m(3, 0, 0),
                end: None,
            },
        ];
        let a = place(&reqs, 48).unwrap();
        assert_eq!(a, vec![BASE_48, BASE_48 + (2 << 20), BASE_48 + 8192]);
    }

    #[test]
    fn fixed_addresses_are_checked_and_avoided() {
        let reqs = [
            Request {
                name: String::new(),
                size: 4096,
                fixed: None,
                start: m(1, 0, 0),
                end: None,
            },
            Request {
                name: String::new(),
                size: 4096,
                fixed: Some(BASE_48),
                start: m(2, 0, 0),
                end: None,
            },
        ];
        assert_eq!(place(&reqs, 48).unwrap(), vec![BASE_48 + 4096, BASE_48]);
        let bad = [Request {
            name: String::new(),
            size: 4096,
            fixed: Some(0x1000),
            start: m(1, 0, 0),
            end: None,
        }];
        assert_eq!(place(&bad, 48).unwrap_err().index, 0);
        let clash = [
            Request {
                name: String::new(),
                size: 8192,
                fixed: Some(BASE_48),
                start: m(1, 0, 0),
                end: None,
            },
            Request {
                name: String::new(),
                size: 4096,
                fixed: Some(BASE_48 + 4096),
                start: m(2, 0, 0),
                end: None,
            },
        ];
        assert_eq!(place(&clash, 48).unwrap_err().index, 1);
    }

    fn one(size: u64) -> Request {
        Request {
            name: String::new(),
            size,
            fixed: None,
            start: m(1, 0, 0),
            end: None,
        }
    }

    #[test]
    fn the_program_room_is_where_linux_puts_the_program() {
        let tib = 1u64 << 40;
        // x86-64: ELF_ET_DYN_BASE = 2/3 of the 47-bit window, 0x5555_5555_4aaa
        // rounded; the stack and mmap base just below 128 TiB.
        let [exe, top] = program_room(48);
        assert_eq!(exe.0, 0x5555_5540_0000);
        assert!(exe.0 <= 0x5555_5555_4000 && exe.1 >= 0x5555_5555_4000 + tib);
        assert_eq!(top, (120 * tib, 128 * tib));
        assert_eq!(
            program_room(57),
            program_room(48),
            "same window on 5 levels"
        );
        assert_eq!(program_room(39)[1], (240 << 30, 256 << 30));
    }

    #[test]
    fn a_huge_region_avoids_the_program() {
        let tib = 1u64 << 40;
        // 64 TiB from the base would run through the executable: it goes low.
        assert_eq!(place(&[one(64 * tib)], 48).unwrap(), vec![LOW]);
        // 48 TiB still fits between the base and the executable.
        assert_eq!(place(&[one(48 * tib)], 48).unwrap(), vec![BASE_48]);
        // On 57 bits it goes past the window, above the program altogether.
        assert_eq!(place(&[one(64 * tib)], 57).unwrap(), vec![128 * tib]);
        // The next one after a 50 TiB region skips the executable's room.
        let a = place(&[one(50 * tib), one(10 * tib)], 48).unwrap();
        assert_eq!(a[1], program_room(48)[0].1);
        // Nothing placed overlaps the program's room.
        for size in [tib, 20 * tib, 53 * tib] {
            let a = place(&[one(size), one(size / 2), one(size / 4)], 48).unwrap();
            for (start, len) in a.iter().zip([size, size / 2, size / 4]) {
                for (lo, hi) in program_room(48) {
                    assert!(
                        !overlaps(*start, len, lo, hi - lo),
                        "{size:#x} at {start:#x}"
                    );
                }
            }
        }
        // More than the space below the executable's room holds: refused.
        assert!(place(&[one(86 * tib)], 48).is_err());
    }

    #[test]
    fn too_large_for_the_space() {
        let reqs = [Request {
            name: String::new(),
            size: 1 << 40,
            fixed: None,
            start: m(1, 0, 0),
            end: None,
        }];
        assert!(place(&reqs, 39).is_err());
        assert!(place(&reqs, 48).is_ok());
    }
}
