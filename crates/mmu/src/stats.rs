//! Statistics of the MMU model, per CPU, merged with `+=`.
//!
//! Counters are plain integers in the CPU's own state (no atomics, no
//! sharing): a mark merges them. [`MmuStats::to_counters`] names them as the
//! workload format's marks do (`accesses`, `walks`, `walk_refs`, `tlb_hits`,
//! `tlb_misses`, `pwc_hits`, `ipis`, ...), then the breakdowns.
//!
//! ## Invariants (after all CPUs' stats are merged and every mailbox drained)
//!
//! - `accesses == tlb_hits + tlb_misses`, `tlb_hits == l1_hits + l2_hits`.
//! - `walks >= tlb_misses - faults_noncanonical`: every miss walks, and a
//!   write hit on a clean page walks again to set D (`dirty_assists`).
//! - `walk_refs` is the sum over the histogram of refs times walks.
//! - `ipis == ipis_received`: every posted IPI is applied by its target.
//! - Nested: `walk_refs == guest_walk_refs + host_walk_refs`; with neither
//!   host cache a completed walk of a `g`-level guest over an `h`-level host
//!   reads `(g + 1)(h + 1) - 1` entries.

use std::ops::AddAssign;

use pt::geometry::MAX_LEVELS;

/// Buckets of the walk-reference histogram; the last holds everything above.
pub const HIST_LEN: usize = 40;

/// Page sizes (log2) with a named breakdown, in the order of the counters' size
/// families; the rest count as "other".
pub const SIZE_SHIFTS: [u32; 7] = [12, 14, 16, 21, 25, 29, 30];

const L1_HITS: [&str; 8] = counters::TLB_L1_HITS_BY_SIZE;
const L2_HITS: [&str; 8] = counters::TLB_L2_HITS_BY_SIZE;
const MISSES: [&str; 8] = counters::TLB_MISSES_BY_SIZE;

const HIST_NAMES: [&str; HIST_LEN] = counters::WALKS_WITH_REFS;

const PWC_NAMES: [&str; MAX_LEVELS] = counters::PWC_HITS_BY_LEVEL;

/// The statistics of one CPU (or, merged, of a machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmuStats {
    /// Translations requested.
    pub accesses: u64,
    /// Accesses that hit some TLB level.
    pub tlb_hits: u64,
    /// Accesses that missed every TLB level and walked (or faulted).
    pub tlb_misses: u64,
    pub l1_hits: u64,
    pub l1_misses: u64,
    pub l2_hits: u64,
    pub l2_misses: u64,
    /// Hits per log2 of the hit entry's size.
    pub l1_hits_by_size: [u64; 64],
    pub l2_hits_by_size: [u64; 64],
    /// Misses per log2 of the size of the translation the walk found.
    pub misses_by_size: [u64; 64],
    /// Hardware walks (misses, and dirty-bit assists).
    pub walks: u64,
    /// Memory references made by walks (words read).
    pub walk_refs: u64,
    /// Walks by their reference count; the last bucket holds the rest.
    pub walk_refs_hist: [u64; HIST_LEN],
    /// Walk-cache hits by the level of the cached entry (1 = PDE cache).
    pub pwc_hits: [u64; MAX_LEVELS],
    /// Walks that found nothing in the walk caches.
    pub pwc_misses: u64,
    /// Write hits on a clean page that walked to set the dirty bit.
    pub dirty_assists: u64,
    /// Accessed/dirty bits written into page-table entries.
    pub ad_writes: u64,
    pub faults_not_present: u64,
    pub faults_permission: u64,
    pub faults_reserved: u64,
    pub faults_noncanonical: u64,
    /// Shootdowns this CPU initiated.
    pub shootdowns: u64,
    /// IPIs this CPU sent.
    pub ipis: u64,
    /// IPIs this CPU received and handled.
    pub ipis_received: u64,
    /// Remote flushes this CPU initiated that were deferred to a target
    /// that was not running (paravirtual flush: no IPI sent).
    pub deferred_flushes: u64,
    /// Shootdowns this CPU initiated that reached the other CPUs by
    /// broadcast (INVLPGB or RAR) instead of IPIs.
    pub broadcast_flushes: u64,
    /// INVLPGB instructions (or RAR requests) those broadcasts issued.
    pub broadcast_instructions: u64,
    /// Invalidations that flushed a whole address space.
    pub full_flushes: u64,
    /// Single-page invalidations (INVLPG / TLBI VA / SFENCE.VMA va).
    pub page_invalidations: u64,
    /// TLB entries removed by invalidations.
    pub flushed_entries: u64,
    /// Walk-cache entries removed by invalidations.
    pub pwc_flushed: u64,
    /// Whether the walks were nested (the MMU has a host): the counters of
    /// the second dimension below are reported only then.
    pub nested: bool,
    /// Nested walks: guest entries read (part of `walk_refs`).
    pub guest_walk_refs: u64,
    /// Nested walks: host entries read, over every host walk (the rest of
    /// `walk_refs`).
    pub host_walk_refs: u64,
    /// Guest-physical translations found in the nested TLB.
    pub nested_tlb_hits: u64,
    /// Guest-physical translations that missed it and walked the host.
    pub nested_tlb_misses: u64,
    /// Host walks that started below a host walk-cache hit.
    pub host_pwc_hits: u64,
    /// Host walks that found no host mapping: EPT violations (nested page
    /// faults) the modeled hypervisor handled; the access restarted.
    pub ept_violations: u64,
    /// Instruction fetches found in the instruction TLB's first level. The
    /// fetches are counted here only, not in `accesses` and the TLB
    /// counters above (those are the data side's); their walks are in
    /// `walks` and `walk_refs`.
    pub itlb_hits: u64,
    /// Instruction fetches that missed the instruction TLB's first level.
    pub itlb_misses: u64,
    /// Of those, found in the second level (the shared STLB, or the L2
    /// ITLB where the processor has one).
    pub itlb_l2_hits: u64,
    /// Of those, missed the second level too and walked: the STLB misses
    /// from code.
    pub itlb_l2_misses: u64,
}

impl Default for MmuStats {
    fn default() -> MmuStats {
        MmuStats {
            accesses: 0,
            tlb_hits: 0,
            tlb_misses: 0,
            l1_hits: 0,
            l1_misses: 0,
            l2_hits: 0,
            l2_misses: 0,
            l1_hits_by_size: [0; 64],
            l2_hits_by_size: [0; 64],
            misses_by_size: [0; 64],
            walks: 0,
            walk_refs: 0,
            walk_refs_hist: [0; HIST_LEN],
            pwc_hits: [0; MAX_LEVELS],
            pwc_misses: 0,
            dirty_assists: 0,
            ad_writes: 0,
            faults_not_present: 0,
            faults_permission: 0,
            faults_reserved: 0,
            faults_noncanonical: 0,
            shootdowns: 0,
            ipis: 0,
            ipis_received: 0,
            deferred_flushes: 0,
            broadcast_flushes: 0,
            broadcast_instructions: 0,
            full_flushes: 0,
            page_invalidations: 0,
            flushed_entries: 0,
            pwc_flushed: 0,
            nested: false,
            guest_walk_refs: 0,
            host_walk_refs: 0,
            nested_tlb_hits: 0,
            nested_tlb_misses: 0,
            host_pwc_hits: 0,
            ept_violations: 0,
            itlb_hits: 0,
            itlb_misses: 0,
            itlb_l2_hits: 0,
            itlb_l2_misses: 0,
        }
    }
}

fn add_arr<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl AddAssign<&MmuStats> for MmuStats {
    fn add_assign(&mut self, o: &MmuStats) {
        self.accesses += o.accesses;
        self.tlb_hits += o.tlb_hits;
        self.tlb_misses += o.tlb_misses;
        self.l1_hits += o.l1_hits;
        self.l1_misses += o.l1_misses;
        self.l2_hits += o.l2_hits;
        self.l2_misses += o.l2_misses;
        add_arr(&mut self.l1_hits_by_size, &o.l1_hits_by_size);
        add_arr(&mut self.l2_hits_by_size, &o.l2_hits_by_size);
        add_arr(&mut self.misses_by_size, &o.misses_by_size);
        self.walks += o.walks;
        self.walk_refs += o.walk_refs;
        add_arr(&mut self.walk_refs_hist, &o.walk_refs_hist);
        add_arr(&mut self.pwc_hits, &o.pwc_hits);
        self.pwc_misses += o.pwc_misses;
        self.dirty_assists += o.dirty_assists;
        self.ad_writes += o.ad_writes;
        self.faults_not_present += o.faults_not_present;
        self.faults_permission += o.faults_permission;
        self.faults_reserved += o.faults_reserved;
        self.faults_noncanonical += o.faults_noncanonical;
        self.shootdowns += o.shootdowns;
        self.ipis += o.ipis;
        self.ipis_received += o.ipis_received;
        self.full_flushes += o.full_flushes;
        self.page_invalidations += o.page_invalidations;
        self.flushed_entries += o.flushed_entries;
        self.pwc_flushed += o.pwc_flushed;
        self.deferred_flushes += o.deferred_flushes;
        self.broadcast_flushes += o.broadcast_flushes;
        self.broadcast_instructions += o.broadcast_instructions;
        self.nested |= o.nested;
        self.guest_walk_refs += o.guest_walk_refs;
        self.itlb_hits += o.itlb_hits;
        self.itlb_misses += o.itlb_misses;
        self.itlb_l2_hits += o.itlb_l2_hits;
        self.itlb_l2_misses += o.itlb_l2_misses;
        self.host_walk_refs += o.host_walk_refs;
        self.nested_tlb_hits += o.nested_tlb_hits;
        self.nested_tlb_misses += o.nested_tlb_misses;
        self.host_pwc_hits += o.host_pwc_hits;
        self.ept_violations += o.ept_violations;
    }
}

impl AddAssign for MmuStats {
    fn add_assign(&mut self, o: MmuStats) {
        *self += &o;
    }
}

/// Sums a per-size array into the named size classes.
fn by_class(a: &[u64; 64]) -> [u64; 8] {
    let mut out = [0; 8];
    for (shift, &n) in a.iter().enumerate() {
        let i = SIZE_SHIFTS
            .iter()
            .position(|&s| s as usize == shift)
            .unwrap_or(SIZE_SHIFTS.len());
        out[i] += n;
    }
    out
}

fn c(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl MmuStats {
    /// Total walk-cache hits over all levels.
    pub fn pwc_hits_total(&self) -> u64 {
        self.pwc_hits.iter().sum()
    }

    /// Mean references per walk (0 when nothing walked).
    pub fn mean_walk_refs(&self) -> f64 {
        if self.walks == 0 {
            0.0
        } else {
            self.walk_refs as f64 / self.walks as f64
        }
    }

    /// Records one walk of `refs` references.
    #[inline]
    pub(crate) fn record_walk(&mut self, refs: u32) {
        self.walks += 1;
        self.walk_refs += u64::from(refs);
        self.walk_refs_hist[(refs as usize).min(HIST_LEN - 1)] += 1;
    }

    /// The counters under the names marks use: first the totals every mark
    /// carries (`accesses`, `walks`, `walk_refs`, `tlb_hits`, `tlb_misses`,
    /// `pwc_hits`, `ipis`, `shootdowns`, `flushed_entries`), then the
    /// breakdowns (per TLB level and page size, per walk-cache level, faults,
    /// A/D updates). The walk-reference histogram appears as
    /// `walks_with_N_refs` for its non-empty buckets only.
    pub fn to_counters(&self) -> Vec<(&'static str, i64)> {
        let mut v = vec![
            (counters::ACCESSES.name, c(self.accesses)),
            (counters::WALKS.name, c(self.walks)),
            (counters::WALK_REFS.name, c(self.walk_refs)),
            (counters::TLB_HITS.name, c(self.tlb_hits)),
            (counters::TLB_MISSES.name, c(self.tlb_misses)),
            (counters::PWC_HITS.name, c(self.pwc_hits_total())),
            (counters::IPIS.name, c(self.ipis)),
            (counters::SHOOTDOWNS.name, c(self.shootdowns)),
            (counters::FLUSHED_ENTRIES.name, c(self.flushed_entries)),
            (counters::TLB_L1_HITS.name, c(self.l1_hits)),
            (counters::TLB_L1_MISSES.name, c(self.l1_misses)),
            (counters::TLB_L2_HITS.name, c(self.l2_hits)),
            (counters::TLB_L2_MISSES.name, c(self.l2_misses)),
            (counters::PWC_MISSES.name, c(self.pwc_misses)),
            (counters::DIRTY_ASSISTS.name, c(self.dirty_assists)),
            (counters::AD_WRITES.name, c(self.ad_writes)),
            (
                counters::FAULTS_NOT_PRESENT.name,
                c(self.faults_not_present),
            ),
            (counters::FAULTS_PERMISSION.name, c(self.faults_permission)),
            (counters::FAULTS_RESERVED.name, c(self.faults_reserved)),
            (
                counters::FAULTS_NONCANONICAL.name,
                c(self.faults_noncanonical),
            ),
            (counters::IPIS_RECEIVED.name, c(self.ipis_received)),
            (counters::DEFERRED_FLUSHES.name, c(self.deferred_flushes)),
            (counters::FULL_FLUSHES.name, c(self.full_flushes)),
            (
                counters::PAGE_INVALIDATIONS.name,
                c(self.page_invalidations),
            ),
            (counters::PWC_FLUSHED.name, c(self.pwc_flushed)),
        ];
        // Only a machine with broadcast invalidation counts them: the
        // counters of an IPI machine stay as they were.
        if self.broadcast_flushes > 0 {
            v.extend([
                (counters::BROADCAST_FLUSHES.name, c(self.broadcast_flushes)),
                (
                    counters::BROADCAST_INSTRUCTIONS.name,
                    c(self.broadcast_instructions),
                ),
            ]);
        }
        // Only a run that fetched instructions (a trace with them) counts
        // them: every other run's counters stay as they were.
        if self.itlb_hits + self.itlb_misses > 0 {
            v.extend([
                (counters::ITLB_HITS.name, c(self.itlb_hits)),
                (counters::ITLB_MISSES.name, c(self.itlb_misses)),
                (counters::ITLB_L2_HITS.name, c(self.itlb_l2_hits)),
                (counters::ITLB_L2_MISSES.name, c(self.itlb_l2_misses)),
            ]);
        }
        if self.nested {
            v.extend([
                (counters::GUEST_WALK_REFS.name, c(self.guest_walk_refs)),
                (counters::HOST_WALK_REFS.name, c(self.host_walk_refs)),
                (counters::NESTED_TLB_HITS.name, c(self.nested_tlb_hits)),
                (counters::NESTED_TLB_MISSES.name, c(self.nested_tlb_misses)),
                (counters::HOST_PWC_HITS.name, c(self.host_pwc_hits)),
                (counters::EPT_VIOLATIONS.name, c(self.ept_violations)),
            ]);
        }
        for (names, arr) in [
            (&L1_HITS, &self.l1_hits_by_size),
            (&L2_HITS, &self.l2_hits_by_size),
            (&MISSES, &self.misses_by_size),
        ] {
            for (name, n) in names.iter().zip(by_class(arr)) {
                v.push((name, c(n)));
            }
        }
        for (l, &n) in self.pwc_hits.iter().enumerate().skip(1) {
            v.push((PWC_NAMES[l], c(n)));
        }
        for (i, &n) in self.walk_refs_hist.iter().enumerate() {
            if n != 0 {
                v.push((HIST_NAMES[i], c(n)));
            }
        }
        v
    }
}

/// The statistics a CPU reports from those it counts: on the hit path only
/// the per-size hit counts are kept; the totals follow from them
/// (`accesses = hits + misses`, and so on).
pub(crate) fn finish(raw: &MmuStats, has_l2: bool) -> MmuStats {
    let mut s = raw.clone();
    s.l1_hits = s.l1_hits_by_size.iter().sum();
    s.l2_hits = s.l2_hits_by_size.iter().sum();
    s.tlb_hits = s.l1_hits + s.l2_hits;
    s.accesses = s.tlb_hits + s.tlb_misses;
    s.l1_misses = s.accesses - s.l1_hits;
    s.l2_misses = if has_l2 { s.l1_misses - s.l2_hits } else { 0 };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_every_field_and_names_are_unique() {
        let mut a = MmuStats {
            accesses: 3,
            ..MmuStats::default()
        };
        a.l1_hits_by_size[12] = 2;
        a.misses_by_size[30] = 1;
        a.record_walk(4);
        a.pwc_hits[1] = 5;
        let mut b = a.clone();
        b.record_walk(24);
        b += &a;
        assert_eq!(b.accesses, 6);
        assert_eq!(b.walks, 3);
        assert_eq!(b.walk_refs, 32);
        assert_eq!(b.walk_refs_hist[4], 2);
        assert_eq!(b.walk_refs_hist[24], 1);
        let m: std::collections::HashMap<_, _> = b.to_counters().into_iter().collect();
        assert_eq!(m["tlb_l1_hits_4k"], 4);
        assert_eq!(m["tlb_misses_1g"], 2);
        assert_eq!(m["pwc_hits"], 10);
        assert_eq!(m["pwc_hits_level1"], 10);
        assert_eq!(m["walks_with_24_refs"], 1);
        assert_eq!(b.mean_walk_refs(), 32.0 / 3.0);
        let names: Vec<_> = b.to_counters().iter().map(|x| x.0).collect();
        let mut dedup = names.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(dedup.len(), names.len(), "counter names are unique");
        for k in [
            "accesses",
            "walks",
            "walk_refs",
            "tlb_hits",
            "tlb_misses",
            "pwc_hits",
            "ipis",
        ] {
            assert!(m.contains_key(k), "{k}");
        }
    }
}
