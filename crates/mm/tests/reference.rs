//! Property test: random mmap/munmap/mprotect/DONTNEED/faults on private
//! anonymous memory against a per-page reference model of Linux semantics.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use proptest::prelude::*;
use pt::VirtAddr;

const PAGES: u64 = 1024; // 4 MiB: two PTE tables

#[derive(Debug, Clone)]
enum Op {
    Fault(u64, bool),
    DontNeed(u64, u64),
    Munmap(u64, u64),
    Mmap(u64, u64),
    Mprotect(u64, u64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let range = (0..PAGES).prop_flat_map(|p| (Just(p), 1..=(PAGES - p).min(600)));
    prop_oneof![
        4 => (0..PAGES, any::<bool>()).prop_map(|(p, w)| Op::Fault(p, w)),
        1 => range.clone().prop_map(|(p, n)| Op::DontNeed(p, n)),
        1 => range.clone().prop_map(|(p, n)| Op::Munmap(p, n)),
        1 => range.clone().prop_map(|(p, n)| Op::Mmap(p, n)),
        1 => (range, any::<bool>()).prop_map(|((p, n), w)| Op::Mprotect(p, n, w)),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Page {
    Unmapped,
    Mapped { write: bool, content: Content },
}
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Content {
    None,
    Zero,
    Anon,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn model_matches_reference(ops in proptest::collection::vec(op(), 1..40), reclaim in 0..3u8) {
        let reclaim = [Reclaim::Off, Reclaim::On, Reclaim::Eager][reclaim as usize];
        let s = space(MmConfig { reclaim, ..MmConfig::default() });
        let mut ctx = ThreadCtx::new();
        let mut r = vec![Page::Mapped { write: true, content: Content::None }; PAGES as usize];
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, PAGES * 4096)));
        let va = |p: u64| BASE + p * 4096;
        for op in ops {
            match op {
                Op::Fault(p, w) => {
                    let res = s.fault(&mut ctx, va(p), if w { FaultAccess::WRITE } else { FaultAccess::READ });
                    match (&mut r[p as usize], res) {
                        (Page::Unmapped, FaultResult::Segv(SegvCode::MapErr)) => {}
                        (Page::Mapped { write: false, .. }, FaultResult::Segv(SegvCode::AccErr)) if w => {}
                        (Page::Mapped { content, .. }, FaultResult::Handled { deferred, .. }) => {
                            deferred.complete_without_tlb(&s).unwrap();
                            if w { *content = Content::Anon } else if *content == Content::None { *content = Content::Zero }
                        }
                        (st, res) => prop_assert!(false, "fault {p} write {w} in {st:?}: {res:?}"),
                    }
                }
                Op::DontNeed(p, n) => {
                    let hole = (p..p + n).any(|i| r[i as usize] == Page::Unmapped);
                    for i in p..p + n {
                        if let Page::Mapped { content, .. } = &mut r[i as usize] { *content = Content::None }
                    }
                    let res = s.madvise(&mut ctx, va(p), n * 4096, Advice::DontNeed);
                    prop_assert_eq!(res.is_err(), hole);
                    if let Ok(d) = res { d.complete_without_tlb(&s).unwrap() }
                }
                Op::Munmap(p, n) => {
                    for i in p..p + n { r[i as usize] = Page::Unmapped }
                    done(&s, s.munmap(&mut ctx, va(p), n * 4096));
                }
                Op::Mmap(p, n) => {
                    let free = (p..p + n).all(|i| r[i as usize] == Page::Unmapped);
                    let res = s.mmap(&mut ctx, MmapArgs::anon(va(p), n * 4096));
                    prop_assert_eq!(res.is_ok(), free);
                    if let Ok(d) = res {
                        d.complete_without_tlb(&s).unwrap();
                        for i in p..p + n { r[i as usize] = Page::Mapped { write: true, content: Content::None } }
                    }
                }
                Op::Mprotect(p, n, w) => {
                    let mut i = p;
                    while i < p + n {
                        match &mut r[i as usize] {
                            Page::Mapped { write, .. } => *write = w,
                            Page::Unmapped => break,
                        }
                        i += 1;
                    }
                    let res = s.mprotect(&mut ctx, va(p), n * 4096, if w { Prot::RW } else { Prot::R });
                    prop_assert_eq!(res.is_err(), i < p + n);
                    if let Ok(d) = res { d.complete_without_tlb(&s).unwrap() }
                }
            }
            s.take_pending().complete_without_tlb(&s).unwrap();
            let anon = r.iter().filter(|p| matches!(p, Page::Mapped { content: Content::Anon, .. })).count() as i64;
            prop_assert_eq!(s.counters(&[&ctx]).rss_anon_kb, anon * 4);
            for (i, pg) in r.iter().enumerate() {
                let t = s.page_table().translate(VirtAddr::new(va(i as u64))).ok();
                match pg {
                    Page::Unmapped | Page::Mapped { content: Content::None, .. } => prop_assert!(t.is_none(), "page {i} {pg:?}"),
                    Page::Mapped { content: Content::Zero, .. } => prop_assert_eq!(t.map(|t| t.pa.get()), Some(s.zero_page())),
                    Page::Mapped { content: Content::Anon, write } => {
                        let t = t.unwrap();
                        prop_assert!(t.pa.get() != s.zero_page());
                        prop_assert_eq!(t.attrs.perms.write, *write, "page {}", i);
                    }
                }
            }
            if let Err(e) = s.check_invariants() { prop_assert!(false, "{}", e) }
        }
        finish(s, &mut ctx);
    }
}
