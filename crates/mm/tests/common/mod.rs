#![allow(dead_code)]
use mm::*;
use std::sync::Arc;

pub const BASE: u64 = 32 << 40;
pub const K: u64 = 1024;
pub const M: u64 = 1 << 20;
pub const G: u64 = 1 << 30;

pub fn geom() -> Arc<pt::Geometry> {
    Arc::new(pt::geometry::preset("x86-64-4l").unwrap())
}

pub fn space(cfg: MmConfig) -> AddressSpace {
    AddressSpace::new(geom(), cfg).unwrap()
}

pub fn done(s: &AddressSpace, r: Result<Deferred, Errno>) {
    r.unwrap().complete_without_tlb(s).unwrap();
}

/// One access as the MMU model would do it: fault until the translation allows it.
pub fn access(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64, write: bool) -> Option<FaultResult> {
    for _ in 0..4 {
        if let Ok(t) = s.page_table().translate(pt::VirtAddr::new(va)) {
            if t.attrs.perms.user && (!write || t.attrs.perms.write) {
                return None;
            }
        }
        let a = if write {
            FaultAccess::WRITE
        } else {
            FaultAccess::READ
        };
        match s.fault(ctx, va, a) {
            FaultResult::Handled { deferred, .. } => deferred.complete_without_tlb(s).unwrap(),
            other => return Some(other),
        }
    }
    panic!("access at {va:#x} never satisfied");
}

pub fn counters(s: &AddressSpace, ctx: &ThreadCtx) -> MmCounters {
    s.counters(&[ctx])
}

/// Checks invariants, exits and checks for leaks.
pub fn finish(s: AddressSpace, ctx: &mut ThreadCtx) {
    s.check_invariants().unwrap();
    s.exit(ctx).unwrap();
    let leaks = s.mem().leaks();
    assert!(leaks.is_empty(), "leaks after exit: {leaks:?}");
}
