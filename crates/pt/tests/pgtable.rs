//! The table layer's primitives, one by one: what each writes, what it
//! refuses, and the per-table and per-level counts it keeps.

use pt::geometry::preset;
use pt::{Attrs, Entry, LeafRun, Level, PageTable, Perms, PhysAddr, TableAddr, VirtAddr};
use std::sync::Arc;

const VA: VirtAddr = VirtAddr::new(0x10_0000_0000);
const PA: PhysAddr = PhysAddr::new(1 << 40);

fn tree(name: &str) -> PageTable {
    PageTable::with_new_memory(preset(name).unwrap()).unwrap()
}

fn rw() -> Attrs {
    Attrs::new(Perms::USER_RW)
}

/// The PMD table for `VA`, mapping a page there first if nothing is.
fn pmd_table(pt: &PageTable) -> TableAddr {
    if pt.translate(VA).is_err() {
        let page = pt.geometry().page_size();
        pt.map(VA, PA, page, page, rw()).unwrap();
    }
    let mut t = pt.root_table();
    let mut level = pt.root_level();
    while level > Level::PMD {
        t = pt.next_table(t, level, VA).unwrap();
        level = level.down();
    }
    t
}

#[test]
fn set_ptes_writes_a_run_of_leaves_and_counts_them() {
    let pt = tree("x86-64-4l");
    let t = pt.alloc_table(Level::PTE).unwrap();
    let run = LeafRun {
        va: VA,
        pa: PA,
        nr: 5,
        attrs: rw(),
        contiguous: false,
    };
    pt.set_ptes(t, Level::PTE, run);
    assert_eq!(pt.present_entries(t), 5);
    for i in 0..5 {
        let e = pt.read_entry(t, Level::PTE, VA + i * 4096).unwrap();
        assert_eq!(
            e,
            Entry::Leaf {
                pa: (PA + i * 4096).get(),
                attrs: rw(),
                contiguous: false
            }
        );
    }
    assert!(pt.is_none(t, Level::PTE, VA + 5 * 4096));
    let old = pt.ptep_get_and_clear(t, Level::PTE, VA + 4096).unwrap();
    assert!(matches!(old, Entry::Leaf { pa, .. } if pa == (PA + 4096).get()));
    assert!(pt.is_none(t, Level::PTE, VA + 4096));
    assert_eq!(pt.present_entries(t), 4);
    for i in [0, 2, 3, 4] {
        pt.pte_clear(t, Level::PTE, VA + i * 4096);
    }
    assert_eq!(pt.present_entries(t), 0);
    pt.free_table(t).unwrap();
}

#[test]
fn install_table_fills_only_an_empty_entry_and_counts_the_table() {
    let pt = tree("x86-64-4l");
    let pmd = pmd_table(&pt);
    let before = pt.tables_at(Level::PTE);
    let other = VA + (2 << 20);
    let child = pt.alloc_table(Level::PTE).unwrap();
    assert!(pt.install_table(pmd, Level::PMD, other, child));
    assert_eq!(pt.next_table(pmd, Level::PMD, other), Some(child));
    assert_eq!(pt.tables_at(Level::PTE), before + 1);
    // The entry is taken now: a second table is refused and stays ours.
    let second = pt.alloc_table(Level::PTE).unwrap();
    assert!(!pt.install_table(pmd, Level::PMD, other, second));
    assert_eq!(pt.next_table(pmd, Level::PMD, other), Some(child));
    assert_eq!(pt.tables_at(Level::PTE), before + 1);
    pt.free_table(second).unwrap();
    assert_eq!(pt.unlink_table(pmd, Level::PMD, other), Some(child));
    assert!(pt.is_none(pmd, Level::PMD, other));
    assert_eq!(pt.unlink_table(pmd, Level::PMD, other), None);
}

#[test]
fn racing_alloc_install_leaves_one_table_and_frees_the_rest() {
    let pt = Arc::new(tree("x86-64-4l"));
    let pmd = pmd_table(&pt);
    let other = VA + (4 << 20);
    let live = pt.mem().live_tables();
    let before = pt.tables_at(Level::PTE);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let pt = pt.clone();
            std::thread::spawn(move || {
                pt.alloc_install(pmd, Level::PMD, other, || pt.ptlock_ptr(pmd).lock())
                    .unwrap();
                pt.next_table(pmd, Level::PMD, other).unwrap()
            })
        })
        .collect();
    let seen: Vec<TableAddr> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(seen.iter().all(|t| *t == seen[0]), "{seen:?}");
    assert_eq!(pt.mem().live_tables(), live + 1, "the losers freed theirs");
    assert_eq!(pt.tables_at(Level::PTE), before + 1);
}

#[test]
fn split_huge_leaf_maps_the_same_pages_below_or_one_page_everywhere() {
    for each in [None, Some((PA + (64 << 20), Attrs::new(Perms::USER_R)))] {
        let pt = tree("x86-64-4l");
        let huge = 2u64 << 20;
        let va = VA + (8 << 20);
        pt.map(va, PA + huge, huge, huge, rw()).unwrap();
        let pmd = pmd_table(&pt);
        let before = pt.tables_at(Level::PTE);
        let child = pt.alloc_table(Level::PTE).unwrap();
        assert!(pt
            .split_huge_leaf(pmd, Level::PMD, va + 0x5000, child, each)
            .unwrap());
        assert_eq!(pt.next_table(pmd, Level::PMD, va), Some(child));
        assert_eq!(pt.tables_at(Level::PTE), before + 1);
        assert_eq!(pt.present_entries(child), 512);
        for i in [0u64, 1, 77, 511] {
            let t = pt.translate(va + i * 4096 + 8).unwrap();
            assert_eq!(t.size, 4096);
            match each {
                None => {
                    assert_eq!(t.pa, PA + huge + i * 4096 + 8);
                    assert_eq!(t.attrs, rw());
                }
                Some((one, a)) => {
                    assert_eq!(t.pa, one + 8);
                    assert_eq!(t.attrs, a);
                }
            }
        }
        // Not a leaf any more: nothing to split.
        let spare = pt.alloc_table(Level::PTE).unwrap();
        assert!(!pt
            .split_huge_leaf(pmd, Level::PMD, va, spare, each)
            .unwrap());
        pt.free_table(spare).unwrap();
    }
}

#[test]
fn contpte_try_unfold_keeps_every_page_of_a_napot_or_contiguous_run() {
    for name in ["riscv-sv39", "arm64-4k-48"] {
        let pt = tree(name);
        let n = pt.contig_entries(Level::PTE);
        assert!(n > 1, "{name} has runs");
        let run = n * 4096;
        pt.map(VA, PA, 2 * run, run, rw()).unwrap();
        let pmd = pmd_table(&pt);
        let t = pt.next_table(pmd, Level::PMD, VA).unwrap();
        // A run-aligned address is already a boundary: nothing changes.
        pt.contpte_try_unfold(t, Level::PTE, VA + run).unwrap();
        assert!(pt.translate(VA).unwrap().contiguous);
        pt.contpte_try_unfold(t, Level::PTE, VA + 3 * 4096).unwrap();
        for i in 0..n {
            let tr = pt.translate(VA + i * 4096).unwrap();
            assert_eq!(tr.pa, PA + i * 4096, "{name} page {i}");
            assert!(!tr.contiguous && tr.size == 4096, "{name} page {i}");
        }
        let second = pt.translate(VA + run + 4096).unwrap();
        assert!(second.contiguous, "{name}: the next run is untouched");
        assert_eq!(second.pa, PA + run + 4096);
        assert_eq!(pt.present_entries(t), 2 * n as u32);
    }
}

#[test]
fn can_fold_wants_whole_aligned_runs_where_the_geometry_has_them() {
    let arm = tree("arm64-4k-48");
    let run = 16 * 4096;
    assert!(arm.can_fold(Level::PTE, VirtAddr::new(0x20_0000), run));
    assert!(arm.can_fold(Level::PTE, VirtAddr::new(0x20_0000), 2 * run));
    assert!(!arm.can_fold(Level::PTE, VirtAddr::new(0x20_0000 + 4096), run));
    assert!(!arm.can_fold(Level::PTE, VirtAddr::new(0x20_0000), run + 4096));
    assert!(!arm.can_fold(Level::PTE, VirtAddr::new(0x20_0000), 4096));
    let x86 = tree("x86-64-4l");
    assert!(!x86.can_fold(Level::PTE, VirtAddr::new(0x20_0000), run));
}

/// `tables_total` (what the pricing reads after every event) is the sum of
/// the per-level counts over the geometry's levels, on every preset, as
/// tables come and go: mappings spread over several upper tables, then
/// unmapped and their tables freed.
#[test]
fn tables_total_is_the_sum_over_the_levels() {
    for g in pt::geometry::presets() {
        let pt = PageTable::with_new_memory(g.clone()).unwrap();
        let sum = |pt: &PageTable| {
            pt.root_level()
                .down_to_pte()
                .map(|l| pt.tables_at(l))
                .sum::<u64>()
        };
        assert_eq!(pt.tables_total(), sum(&pt), "{}", g.name());
        let page = g.page_size();
        let step = g.leaf_sizes().into_iter().max().unwrap().max(1 << 30);
        for k in 0..6u64 {
            let va = VirtAddr::new((k + 1) * step + k * 7 * page);
            pt.map(va, PhysAddr::new(PA.get() + k * page), page, page, rw())
                .unwrap();
            assert_eq!(pt.tables_total(), sum(&pt), "{} after {k}", g.name());
        }
        assert!(pt.tables_total() > 1);
        pt.unmap(VirtAddr::new(step), 6 * step)
            .unwrap()
            .flush
            .done();
        pt.free_empty(VirtAddr::new(step), 6 * step)
            .unwrap()
            .release(&pt)
            .unwrap();
        assert_eq!(pt.tables_total(), sum(&pt), "{} freed", g.name());
        assert_eq!(pt.tables_total(), 1, "{}: the root alone", g.name());
    }
}
