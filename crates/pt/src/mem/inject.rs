//! Fault injection: the allocator may be told to fail, so that
//! out-of-memory paths can be tested.
//!
//! ## Invariants
//!
//! - With no rule installed the check is one relaxed load of a flag (no
//!   lock, no shared counter) on every allocation.
//! - A rule sees the allocations counted from 0 since it was installed,
//!   across all kinds; installing or removing one resets the count.

use super::{lock, AllocKind, PhysMem};
use crate::sync::Ordering;

/// A rule deciding whether the n-th allocation (counted from 0 across all
/// kinds, since the rule was installed) of `kind` fails.
pub type FaultInjection = Box<dyn Fn(AllocKind, u64) -> bool + Send + Sync>;

impl PhysMem {
    /// Installs (or with `None` removes) a rule that makes chosen
    /// allocations fail. The rule's allocation count starts at 0.
    pub fn set_fault_injection(&self, rule: Option<FaultInjection>) {
        let mut g = lock(&self.inject);
        self.allocations.store(0, Ordering::Relaxed);
        self.inject_on.store(rule.is_some(), Ordering::Release);
        *g = rule;
    }

    #[inline]
    pub(super) fn injected_failure(&self, kind: AllocKind) -> bool {
        // The fast path: no rule, no lock and no shared counter.
        if !self.inject_on.load(Ordering::Acquire) {
            return false;
        }
        let g = lock(&self.inject);
        let n = self.allocations.fetch_add(1, Ordering::Relaxed);
        match &*g {
            Some(rule) => rule(kind, n),
            None => false,
        }
    }
}
