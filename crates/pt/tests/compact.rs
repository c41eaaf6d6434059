//! Compact PTE tables against full table pages: two trees of the same
//! geometry, one in a memory with compact tables and one without, take the
//! same operations; every translation, every hardware word a walk reads,
//! the mappings listed, the tables per level and the present counts must
//! be the same (only the tables' own addresses differ).

use proptest::prelude::*;
use pt::geometry::preset;
use pt::mem::{PhysMem, COMPACT_INLINE, COMPACT_PAIRS, COMPACT_ZONE_BASE};
use pt::{Attrs, Level, PageTable, Perms, PhysAddr, VirtAddr};
use std::sync::Arc;

const WINDOW: u64 = 1 << 34;
const PBASE: u64 = 1 << 40;

#[derive(Debug, Clone)]
enum Op {
    /// first page, pages, leaf size index, writable
    Map(u64, u64, usize, bool),
    Unmap(u64, u64),
    Protect(u64, u64, bool),
    FreeEmpty(u64, u64),
    /// a hardware access-flag update on a page (compare-and-swap)
    Touch(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        5 => (0u64..3000, 1u64..24, 0usize..3, any::<bool>()).prop_map(|(a, n, k, w)| Op::Map(a, n, k, w)),
        2 => (0u64..3000, 1u64..700).prop_map(|(a, n)| Op::Unmap(a, n)),
        1 => (0u64..3000, 1u64..700, any::<bool>()).prop_map(|(a, n, w)| Op::Protect(a, n, w)),
        1 => (0u64..3000, 1u64..1500).prop_map(|(a, n)| Op::FreeEmpty(a, n)),
        2 => (0u64..3000).prop_map(Op::Touch),
    ];
    prop::collection::vec(op, 1..60)
}

fn trees(name: &str) -> [PageTable; 2] {
    let g = Arc::new(preset(name).unwrap());
    [true, false].map(|compact| {
        let mem = Arc::new(PhysMem::with_compact(g.page_shift(), compact));
        assert_eq!(mem.has_compact(), compact);
        PageTable::new(g.clone(), mem).unwrap()
    })
}

fn apply(pt: &PageTable, op: &Op) -> String {
    let g = pt.geometry();
    let page = g.page_size();
    let sizes: Vec<u64> = g
        .leaf_sizes()
        .into_iter()
        .filter(|s| *s <= 2 << 20)
        .collect();
    let perms = |w: bool| Perms {
        read: true,
        write: w,
        exec: false,
        user: true,
    };
    let va = |a: u64| VirtAddr::new(WINDOW + a * page);
    match *op {
        Op::Map(a, n, k, w) => {
            let size = sizes[k % sizes.len()];
            let at = (WINDOW + a * page).next_multiple_of(size);
            let pa = PhysAddr::new(PBASE + (at - WINDOW));
            let r = pt.map(VirtAddr::new(at), pa, n * size, size, Attrs::new(perms(w)));
            format!("{r:?}")
        }
        Op::Unmap(a, n) => format!(
            "{:?}",
            pt.unmap(va(a), n * page).map(|u| u.flush.is_empty())
        ),
        Op::Protect(a, n, w) => format!("{:?}", pt.protect(va(a), n * page, perms(w)).is_ok()),
        Op::FreeEmpty(a, n) => {
            let freed = pt.free_empty(va(a), n * page).unwrap();
            format!("{:?}", freed.release(pt))
        }
        Op::Touch(a) => match pt.translate(va(a)) {
            Ok(t) => {
                let leaf = *t.entry_pas().last().unwrap();
                let old = pt.mem().read(leaf.get());
                let new = old | 1 << 5; // x86's A bit, a software bit elsewhere
                format!("{:?}", pt.mem().compare_exchange(leaf.get(), old, new))
            }
            Err(e) => format!("{e}"),
        },
    }
}

fn same(a: &PageTable, b: &PageTable) {
    let page = a.geometry().page_size();
    let span = 4000 * page;
    assert_eq!(
        a.mappings(VirtAddr::new(WINDOW), span).unwrap(),
        b.mappings(VirtAddr::new(WINDOW), span).unwrap()
    );
    for l in 0..a.geometry().levels().len() {
        assert_eq!(a.tables_at(Level::new(l)), b.tables_at(Level::new(l)));
    }
    assert_eq!(a.mem().live_tables(), b.mem().live_tables());
    for i in 0..4000 {
        let v = VirtAddr::new(WINDOW + i * page);
        match (a.translate(v), b.translate(v)) {
            (Ok(x), Ok(y)) => {
                assert_eq!(
                    (x.pa, x.size, x.level, x.attrs),
                    (y.pa, y.size, y.level, y.attrs)
                );
                let wa: Vec<u64> = x
                    .entry_pas()
                    .iter()
                    .map(|p| a.mem().read_walk(p.get()))
                    .collect();
                let wb: Vec<u64> = y
                    .entry_pas()
                    .iter()
                    .map(|p| b.mem().read_walk(p.get()))
                    .collect();
                // Table entries hold the next table's address, which differs;
                // the leaf word is the same.
                assert_eq!(wa.last(), wb.last(), "{v:?}");
                // The walk's per-level reads give the same words.
                for (pt, t, w) in [(a, &x, &wa), (b, &y, &wb)] {
                    let pas = t.entry_pas();
                    for (i, p) in pas.iter().enumerate() {
                        let r = if i + 1 == pas.len() && t.level.is_pte() {
                            pt.mem().read_walk_pte(p.get())
                        } else {
                            pt.mem().read_walk_upper(p.get())
                        };
                        assert_eq!(r, w[i], "{v:?} word {i}");
                    }
                }
                let leaf_table = |pt: &PageTable, t: &pt::Translation| {
                    let epa = t.entry_pas().last().unwrap().get();
                    epa & !(pt.geometry().page_size() - 1)
                };
                if x.level.is_pte() {
                    let (ta, tb) = (leaf_table(a, &x), leaf_table(b, &y));
                    assert!(ta >= COMPACT_ZONE_BASE && tb < COMPACT_ZONE_BASE);
                    assert_eq!(
                        a.present_entries(pt::TableAddr::new(ta)),
                        b.present_entries(pt::TableAddr::new(tb))
                    );
                    for w in 0..page / 8 {
                        assert_eq!(a.mem().read(ta + w * 8), b.mem().read(tb + w * 8));
                    }
                }
            }
            (x, y) => assert_eq!(x.map(|_| ()), y.map(|_| ())),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn compact_tables_behave_as_full_pages(ops in ops()) {
        for name in ["x86-64-4l", "arm64-4k-48", "riscv-sv39"] {
            let [a, b] = trees(name);
            for op in &ops {
                assert_eq!(apply(&a, op), apply(&b, op), "{name} {op:?}");
            }
            same(&a, &b);
            a.teardown().unwrap();
            b.teardown().unwrap();
            assert!(a.mem().leaks().is_empty() && b.mem().leaks().is_empty());
        }
    }
}

/// A table with few entries stays compact (no pool page), one past its
/// inline pairs takes an overflow block (still no page), one past those is
/// promoted once, and a freed promoted table's page and block are reused
/// zeroed.
#[test]
fn promotion_takes_a_pool_page_only_past_the_pairs() {
    let [a, _] = trees("x86-64-4l");
    let page = 4096;
    let map = |i: u64| {
        let va = VirtAddr::new(WINDOW + i * page);
        a.map(
            va,
            PhysAddr::new(PBASE + i * page),
            page,
            page,
            Attrs::new(Perms::USER_RW),
        )
        .unwrap();
    };
    // One entry in each of 100 PTE tables: no host page for any of them.
    for t in 0..100 {
        map(t * 512);
    }
    assert_eq!(a.mem().compact_pool_bytes(), 0);
    assert_eq!(a.mem().compact_overflow_bytes(), 0);
    // The first table past its inline pairs: an overflow block, no page.
    for i in 1..=COMPACT_INLINE as u64 {
        map(i);
    }
    let block = a.mem().compact_overflow_bytes();
    assert!(block > 0 && block < page / 8, "{block} bytes");
    assert_eq!(a.mem().compact_pool_bytes(), 0);
    // Past every pair: one pool page; the block stays with the table.
    for i in COMPACT_INLINE as u64 + 1..=COMPACT_PAIRS as u64 {
        map(i);
    }
    assert_eq!(a.mem().compact_pool_bytes(), page);
    assert_eq!(a.mem().compact_overflow_bytes(), block);
    for i in 0..=COMPACT_PAIRS as u64 {
        assert_eq!(
            a.translate(VirtAddr::new(WINDOW + i * page)).unwrap().pa,
            PhysAddr::new(PBASE + i * page)
        );
    }
    a.unmap(VirtAddr::new(WINDOW), 512 * page)
        .unwrap()
        .flush
        .done();
    a.free_empty(VirtAddr::new(WINDOW), 512 * page)
        .unwrap()
        .release(&a)
        .unwrap();
    // Refill another table: the freed page and block come back zeroed.
    for i in 0..=COMPACT_PAIRS as u64 {
        map(100 * 512 + i);
    }
    assert_eq!(a.mem().compact_pool_bytes(), page, "reused, no new page");
    assert_eq!(
        a.mem().compact_overflow_bytes(),
        block,
        "reused, no new block"
    );
    for i in COMPACT_PAIRS as u64 + 1..512 {
        assert!(a
            .translate(VirtAddr::new(WINDOW + (100 * 512 + i) * page))
            .is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `skip_empty` never skips a present entry, and skips every empty
    /// entry before the next stored one in a compact table.
    #[test]
    fn skip_empty_skips_only_empty_entries(
        pages in prop::collection::btree_set(0u64..511, 0..12),
        cleared in prop::collection::vec(any::<bool>(), 12),
        from in 0u64..512,
        to in 1u64..=512,
    ) {
        let [a, b] = trees("x86-64-4l");
        let page = 4096;
        // Page 511 stays mapped: the table is found through it.
        for t in [&a, &b] {
            let va = VirtAddr::new(WINDOW + 511 * page);
            t.map(va, PhysAddr::new(PBASE + 511 * page), page, page, Attrs::new(Perms::USER_RW)).unwrap();
        }
        for (k, &i) in pages.iter().enumerate() {
            for t in [&a, &b] {
                let va = VirtAddr::new(WINDOW + i * page);
                t.map(va, PhysAddr::new(PBASE + i * page), page, page, Attrs::new(Perms::USER_RW)).unwrap();
                if cleared[k] {
                    t.unmap(va, page).unwrap().flush.done();
                }
            }
        }
        let present: Vec<u64> = pages
            .iter()
            .zip(&cleared)
            .filter(|(_, c)| !**c)
            .map(|(i, _)| *i)
            .chain([511])
            .collect();
        let (from, to) = (from.min(to - 1), to);
        for t in [&a, &b] {
            let tr = t.translate(VirtAddr::new(WINDOW + 511 * page)).unwrap();
            let table = pt::TableAddr::new(tr.entry_pas().last().unwrap().get() & !(page - 1));
            let got = t.skip_empty(
                table,
                Level::PTE,
                VirtAddr::new(WINDOW + from * page),
                VirtAddr::new(WINDOW + to * page),
            );
            let next = present.iter().find(|&&i| i >= from && i < to);
            let want = next.map_or(to, |&i| i);
            let got = (got.get() - WINDOW) / page;
            if t.mem().has_compact() && pages.len() < COMPACT_PAIRS {
                prop_assert_eq!(got, want);
            } else {
                prop_assert!(got <= want);
            }
        }
    }
}
