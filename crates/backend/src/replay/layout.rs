//! Where a replay puts each region of a trace: at the program's own
//! addresses when they fit the modeled geometry ("native"), else by the
//! workload format's placement rule ("placed"), so that a trace recorded on
//! a 48-bit x86-64 replays under Sv39's 39 bits.

use pt::Geometry;
use trace::regions::Scan;
use workload::placement::{self, Moment, Request};

/// How addresses are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayoutMode {
    /// Native when every region has a native address that fits, else placed.
    #[default]
    Auto,
    Native,
    Placed,
}

/// The chosen layout: an address per region id (`u64::MAX`: no region).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub native: bool,
    pub addr: Vec<u64>,
}

/// The smallest page `geometry` maps: regions are aligned to it and sized
/// in it.
pub fn base_page(geometry: &Geometry) -> u64 {
    geometry.leaf_sizes().into_iter().min().unwrap_or(4096)
}

/// Whether every region of `scan` has a native address that fits below
/// the user top of a `va_bits` space, aligned to its base `page`.
fn native_fits(scan: &Scan, va_bits: u32, page: u64) -> bool {
    let top = placement::user_top(va_bits);
    scan.regions.values().all(|r| {
        r.native != 0
            && r.native.is_multiple_of(page)
            && r.native.checked_add(r.max_size).is_some_and(|e| e <= top)
    })
}

/// The layout of `scan` on `geometry` in `mode`.
///
/// # Errors
/// Native asked for but impossible, or a region the placement rule cannot
/// place: the message says which.
pub fn choose(scan: &Scan, geometry: &Geometry, mode: LayoutMode) -> Result<Layout, String> {
    let va_bits = geometry.va_bits();
    let page = base_page(geometry);
    let len = scan
        .regions
        .keys()
        .next_back()
        .map_or(0, |&id| id as usize + 1);
    let mut addr = vec![u64::MAX; len];
    let native = match mode {
        LayoutMode::Native => {
            if !native_fits(scan, va_bits, page) {
                return Err(format!(
                    "the trace's native addresses do not fit a {va_bits}-bit address space \
                     with {} pages (or some are unknown); use the placed layout",
                    pt::geometry::human_size(page)
                ));
            }
            true
        }
        LayoutMode::Placed => false,
        LayoutMode::Auto => native_fits(scan, va_bits, page),
    };
    if native {
        for r in scan.regions.values() {
            addr[r.id as usize] = r.native;
        }
        return Ok(Layout { native, addr });
    }
    // A trace is one sequence: a region that ended before another began
    // never overlaps it in time, whatever threads they came from.
    let moment = |seq: u64, tid: u32| Moment {
        seq,
        phase: seq,
        tid: tid as usize,
    };
    let reqs: Vec<Request> = scan
        .regions
        .values()
        .map(|r| Request {
            name: if r.name.is_empty() {
                format!("region {}", r.id)
            } else {
                format!("region {} ({})", r.id, r.name)
            },
            size: r.max_size.max(page).next_multiple_of(page),
            fixed: None,
            start: moment(r.born, r.tid),
            end: r.died.map(|d| moment(d, r.tid)),
        })
        .collect();
    let placed = placement::place_aligned(&reqs, va_bits, page)
        .map_err(|e| format!("{}: {}", reqs[e.index].name, e.problem))?;
    for (r, a) in scan.regions.values().zip(placed) {
        addr[r.id as usize] = a;
    }
    Ok(Layout { native, addr })
}
