//! The engine's operations against a simple reference: a map from base page
//! to (physical page, permissions).

use proptest::prelude::*;
use pt::geometry::{self, preset};
use pt::table::PtError;
use pt::{Attrs, Entry, Level, PageTable, Perms, PhysAddr, VirtAddr};
use std::collections::BTreeMap;

/// Base of the window the property tests work in: 1 GiB-aligned, canonical
/// in every geometry (even 39-bit ones).
const WINDOW: u64 = 0x40_0000_0000 >> 2; // 64 GiB
/// Physical base for data, 1 TiB.
const PBASE: u64 = 1 << 40;

/// The typed addresses the table layer's primitives and translate take.
fn v(a: u64) -> VirtAddr {
    VirtAddr::new(a)
}
fn p(a: u64) -> PhysAddr {
    PhysAddr::new(a)
}

fn perms_of(code: u8) -> Perms {
    Perms {
        read: true,
        write: code & 1 != 0,
        exec: code & 2 != 0,
        user: true,
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// page index in window, number of leaves, index into the small leaf sizes, perms
    Map(u64, u64, usize, u8),
    Unmap(u64, u64),
    Protect(u64, u64, u8),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..2048, 1u64..4, 0usize..8, 0u8..4).prop_map(|(a, n, k, p)| Op::Map(a, n, k, p)),
        2 => (0u64..2048, 1u64..600).prop_map(|(a, n)| Op::Unmap(a, n)),
        2 => (0u64..2048, 1u64..600, 0u8..4).prop_map(|(a, n, p)| Op::Protect(a, n, p)),
    ]
}

/// Leaf sizes small enough to expand into the reference (at most 64 MiB).
fn small_sizes(g: &geometry::Geometry) -> Vec<u64> {
    g.leaf_sizes()
        .into_iter()
        .filter(|s| *s <= 64 << 20)
        .collect()
}

type Reference = BTreeMap<u64, (u64, Perms)>;

/// Collapses a set of base pages into maximal runs of consecutive virtual
/// and physical pages with equal permissions.
fn runs(pages: impl Iterator<Item = (u64, u64, Perms)>, page: u64) -> Vec<(u64, u64, u64, Perms)> {
    let mut out: Vec<(u64, u64, u64, Perms)> = Vec::new();
    for (va, pa, p) in pages {
        if let Some(last) = out.last_mut() {
            if last.0 + last.2 == va && last.1 + last.2 == pa && last.3 == p {
                last.2 += page;
                continue;
            }
        }
        out.push((va, pa, page, p));
    }
    out
}

fn check_against(pt: &PageTable, reference: &Reference, span: u64) {
    let page = pt.geometry().page_size();
    let mut pages = Vec::new();
    for m in pt.mappings(v(WINDOW), span).unwrap() {
        for off in (0..m.size).step_by(page as usize) {
            pages.push(((m.va + off).get(), (m.pa + off).get(), m.attrs.perms));
        }
    }
    let got = runs(pages.into_iter(), page);
    let want = runs(reference.iter().map(|(v, (p, pr))| (*v, *p, *pr)), page);
    assert_eq!(got, want, "mappings differ from the reference");
}

fn run_sequence(name: &str, ops: &[Op]) {
    let g = preset(name).unwrap();
    let page = g.page_size();
    let sizes = small_sizes(&g);
    let max = *sizes.last().unwrap();
    // The window spans enough pages for every op to stay inside it.
    let span = (2048 * page + 4 * max).next_multiple_of(max) + 4 * max;
    let pt = PageTable::with_new_memory(g).unwrap();
    let mut reference: Reference = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Map(a, n, k, p) => {
                let size = sizes[k % sizes.len()];
                let va = (WINDOW + a * page).next_multiple_of(size);
                let len = n * size;
                // Physical pages mirror virtual ones at an offset, so any
                // alignment the virtual side has the physical side has too.
                let pa = PBASE + (va - WINDOW);
                let attrs = Attrs::new(perms_of(p));
                let overlap = reference.range(va..va + len).next().is_some();
                if !overlap {
                    // Empty tables left by earlier unmaps would stand in the
                    // way of a huge leaf: free them, as an OS would first.
                    pt.free_empty(v(va), len).unwrap().release(&pt).unwrap();
                }
                let r = pt.map(v(va), PhysAddr::new(pa), len, size, attrs);
                if overlap {
                    assert!(matches!(r, Err(PtError::AlreadyMapped { .. })), "{r:?}");
                } else {
                    r.unwrap();
                    for off in (0..len).step_by(page as usize) {
                        reference.insert(va + off, (pa + off, attrs.perms));
                    }
                }
            }
            Op::Unmap(a, n) => {
                let va = WINDOW + a * page;
                let len = n * page;
                let u = pt.unmap(v(va), len).unwrap();
                let removed: u64 = u.pieces.iter().map(|p| p.2).sum();
                let before = reference.len();
                reference.retain(|v, _| *v < va || *v >= va + len);
                assert_eq!(removed, (before - reference.len()) as u64 * page);
                u.flush.done();
            }
            Op::Protect(a, n, p) => {
                let va = WINDOW + a * page;
                let len = n * page;
                pt.protect(v(va), len, perms_of(p)).unwrap().done();
                for (_, v) in reference.range_mut(va..va + len) {
                    v.1 = perms_of(p);
                }
            }
        }
        // Every page the reference knows translates as it says.
        for (va, (pa, perms)) in reference.iter().step_by(97) {
            let t = pt.translate(v(*va + 8)).unwrap();
            assert_eq!(t.pa, p(*pa + 8));
            assert_eq!(t.attrs.perms, *perms);
            assert_eq!(t.reads, pt.geometry().num_levels() - t.level.get());
            // What a replay prefetches is the word the walk read last.
            assert_eq!(pt.last_walk_word(v(*va + 8)), t.entry_pas().last().copied());
        }
    }
    check_against(&pt, &reference, span);
    // Unmap everything and free the empty tables: nothing but the root remains.
    pt.unmap(v(WINDOW), span).unwrap().flush.done();
    let freed = pt.free_empty(v(WINDOW), span).unwrap();
    freed.release(&pt).unwrap();
    assert_eq!(
        pt.mem().live_tables(),
        1,
        "only the root is left:\n{}",
        pt.dump(v(0), u64::MAX).unwrap()
    );
    for l in 0..pt.geometry().root_level() {
        assert_eq!(pt.tables_at(Level::new(l)), 0);
    }
    pt.teardown().unwrap();
    assert!(pt.mem().leaks().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_ops_agree_with_the_reference(
        g in 0usize..geometry::PRESET_NAMES.len(),
        ops in prop::collection::vec(op_strategy(), 1..24),
    ) {
        run_sequence(geometry::PRESET_NAMES[g], &ops);
    }
}

#[test]
fn every_geometry_survives_a_fixed_mixed_sequence() {
    let ops = [
        Op::Map(0, 3, 7, 1),
        Op::Map(700, 2, 1, 0),
        Op::Map(1500, 1, 3, 3),
        Op::Unmap(5, 1),
        Op::Protect(3, 900, 2),
        Op::Unmap(0, 2048),
    ];
    for name in geometry::PRESET_NAMES {
        run_sequence(name, &ops);
    }
}

#[test]
fn one_gib_of_4k_pages_needs_exactly_what_the_hardware_needs() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    pt.map(
        v(1 << 40),
        p(PBASE),
        1 << 30,
        4096,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    assert_eq!(pt.tables_at(Level::PTE), 512, "PTE tables");
    assert_eq!(pt.tables_at(Level::PMD), 1, "PMD tables");
    assert_eq!(pt.tables_at(Level::PUD), 1, "PUD tables");
    assert_eq!(pt.tables_at(Level::PUD.up()), 1, "the root");
    assert_eq!(pt.mem().live_tables(), 515);
    let acc = pt::account::account(&pt).unwrap();
    assert_eq!(acc[3].name, "PTE");
    assert_eq!(acc[3].bytes, 512 * 4096);
    assert_eq!(acc[3].present, 512 * 512);
    assert_eq!(acc[3].occupancy[10], 512, "every PTE table is full");
    assert_eq!(acc[0].present, 1);
}

#[test]
fn the_same_gib_in_2m_leaves_needs_no_pte_tables() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    pt.map(
        v(1 << 40),
        p(PBASE),
        1 << 30,
        2 << 20,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    assert_eq!(pt.tables_at(Level::PTE), 0);
    let t = pt.translate(v((1 << 40) + (3 << 20) + 5)).unwrap();
    assert_eq!(
        (t.pa, t.size, t.level, t.reads),
        (p(PBASE + (3 << 20) + 5), 2 << 20, Level::PMD, 3)
    );
}

#[test]
fn five_levels_read_one_more_entry_than_four() {
    for (name, reads) in [
        ("x86-64-4l", 4),
        ("x86-64-5l", 5),
        ("riscv-sv39", 3),
        ("arm64-64k-48", 3),
    ] {
        let pt = PageTable::with_new_memory(preset(name).unwrap()).unwrap();
        let page = pt.geometry().page_size();
        pt.map(v(WINDOW), p(PBASE), page, page, Attrs::new(Perms::USER_RW))
            .unwrap();
        let t = pt.translate(v(WINDOW)).unwrap();
        assert_eq!(t.reads, reads, "{name}");
        // The first read is in the root table, each next one in a distinct table.
        assert_eq!(t.entry_pas()[0].align_down(page).get(), pt.root());
    }
}

#[test]
fn misaligned_and_unknown_leaves_are_refused() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    let a = Attrs::new(Perms::USER_RW);
    assert!(matches!(
        pt.map(v(WINDOW + 4096), p(PBASE), 2 << 20, 2 << 20, a),
        Err(PtError::Misaligned {
            what: "virtual address",
            ..
        })
    ));
    assert!(matches!(
        pt.map(v(WINDOW), p(PBASE + 4096), 2 << 20, 2 << 20, a),
        Err(PtError::Misaligned {
            what: "physical address",
            ..
        })
    ));
    assert!(matches!(
        pt.map(v(WINDOW), p(PBASE), 64 << 10, 64 << 10, a),
        Err(PtError::BadLeafSize { .. })
    ));
    assert!(matches!(
        pt.map(v(0x8000_0000_0000), p(PBASE), 4096, 4096, a),
        Err(PtError::OutOfRange { .. })
    ));
    assert_eq!(pt.mem().live_tables(), 1, "refusals allocate nothing");
    // A 2 MiB leaf cannot replace a PTE table, even an empty one.
    pt.map(v(WINDOW), p(PBASE), 4096, 4096, a).unwrap();
    pt.unmap(v(WINDOW), 4096).unwrap().flush.done();
    assert!(matches!(
        pt.map(v(WINDOW), p(PBASE), 2 << 20, 2 << 20, a),
        Err(PtError::TableInTheWay {
            level: Level::PMD,
            ..
        })
    ));
    pt.free_empty(v(WINDOW), 2 << 20)
        .unwrap()
        .release(&pt)
        .unwrap();
    pt.map(v(WINDOW), p(PBASE), 2 << 20, 2 << 20, a).unwrap();
    assert_eq!(pt.mem().live_tables(), 3, "root, PUD and PMD tables");
}

#[test]
fn a_napot_run_is_whole_and_breaks_into_pages_when_cut() {
    let pt = PageTable::with_new_memory(preset("riscv-sv39").unwrap()).unwrap();
    let a = Attrs::new(Perms::USER_RW);
    // Runs must be aligned to their 64 KiB.
    assert!(pt
        .map(v(WINDOW + 4096), p(PBASE), 64 << 10, 64 << 10, a)
        .is_err());
    pt.map(v(WINDOW), p(PBASE), 64 << 10, 64 << 10, a).unwrap();
    let t = pt.translate(v(WINDOW + 0x5123)).unwrap();
    assert!(t.contiguous);
    assert_eq!((t.pa, t.size), (p(PBASE + 0x5123), 64 << 10));
    // Every one of the 16 hardware words has the N bit.
    let pte_table = t.entry_pas()[2].align_down(4096);
    for i in 0..16 {
        let w = pt.mem().read((pte_table + i * 8).get());
        assert_eq!(w >> 63, 1, "word {i} is NAPOT");
    }
    // Unmapping one page leaves 15 plain pages.
    pt.unmap(v(WINDOW + 0x3000), 4096).unwrap().flush.done();
    let maps = pt.mappings(v(WINDOW), 64 << 10).unwrap();
    assert_eq!(maps.len(), 15);
    assert!(maps.iter().all(|m| !m.contiguous && m.size == 4096));
    assert_eq!(
        pt.translate(v(WINDOW + 0x5123)).unwrap().pa,
        p(PBASE + 0x5123)
    );
}

#[test]
fn riscv_64k_pages_are_16_hardware_words_and_tables_are_64k() {
    let pt = PageTable::with_new_memory(preset("riscv-sv39-64k").unwrap()).unwrap();
    let a = Attrs::new(Perms::USER_RW);
    pt.map(v(WINDOW), p(PBASE), 64 << 10, 64 << 10, a).unwrap();
    let t = pt.translate(v(WINDOW + 0x7008)).unwrap();
    assert_eq!(t.pa, p(PBASE + 0x7008));
    assert_eq!(t.size, 64 << 10);
    assert_eq!(t.reads, 3);
    // The hardware word read for page 7 is the 8th word of the group.
    let group = pt.entry_pa(
        t.entry_pas()[2].align_down(0x10000).table(),
        Level::PTE,
        v(WINDOW),
    );
    assert_eq!(t.entry_pas()[2], group + 7 * 8);
    assert_eq!(pt.mem().live_tables(), 3);
    let acc = pt::account::account(&pt).unwrap();
    assert!(
        acc.iter().all(|l| l.bytes == 64 << 10),
        "every table page is 64 KiB"
    );
}

#[test]
fn partial_unmap_of_a_huge_leaf_splits_it() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    let a = Attrs::new(Perms::USER_RW);
    pt.map(v(WINDOW), p(PBASE), 1 << 30, 1 << 30, a).unwrap();
    let u = pt.unmap(v(WINDOW + (2 << 20) + 4096), 4096).unwrap();
    assert_eq!(
        u.pieces,
        vec![(WINDOW + (2 << 20) + 4096, PBASE + (2 << 20) + 4096, 4096)]
    );
    // 1G -> 512 x 2M, then the second 2M -> 512 x 4K.
    assert_eq!(pt.tables_at(Level::PMD), 1);
    assert_eq!(pt.tables_at(Level::PTE), 1);
    assert_eq!(pt.translate(v(WINDOW + (2 << 20))).unwrap().size, 4096);
    assert_eq!(pt.translate(v(WINDOW + (4 << 20))).unwrap().size, 2 << 20);
    assert!(matches!(
        pt.translate(v(WINDOW + (2 << 20) + 4096)),
        Err(PtError::NotMapped {
            level: Level::PTE,
            ..
        })
    ));
}

#[test]
fn protect_keeps_accessed_and_dirty() {
    let pt = PageTable::with_new_memory(preset("arm64-4k-48").unwrap()).unwrap();
    let mut a = Attrs::new(Perms::USER_RW);
    a.accessed = true;
    a.dirty = true;
    pt.map(v(WINDOW), p(PBASE), 4096, 4096, a).unwrap();
    pt.protect(v(WINDOW), 4096, Perms::USER_R).unwrap().done();
    let t = pt.translate(v(WINDOW)).unwrap();
    assert_eq!(t.attrs.perms, Perms::USER_R);
    assert!(t.attrs.accessed);
}

#[test]
fn freeing_tables_waits_for_release() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    pt.map(v(WINDOW), p(PBASE), 4096, 4096, Attrs::new(Perms::USER_RW))
        .unwrap();
    pt.unmap(v(WINDOW), 4096).unwrap().flush.done();
    let freed = pt.free_empty(v(WINDOW), 1 << 30).unwrap();
    assert_eq!(freed.tables.len(), 3, "PTE, PMD and PUD tables");
    assert_eq!(pt.mem().live_tables(), 4, "unlinked, not yet freed");
    assert!(matches!(
        pt.read_entry(pt.root_table(), pt.root_level(), v(WINDOW)),
        Ok(Entry::Invalid)
    ));
    freed.release(&pt).unwrap();
    assert_eq!(pt.mem().live_tables(), 1);
}

#[test]
fn dump_groups_runs() {
    let pt = PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap();
    pt.map(
        v(WINDOW),
        p(PBASE),
        64 << 10,
        4096,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    let d = pt.dump(v(WINDOW), 1 << 21).unwrap();
    let leaf_lines: Vec<_> = d
        .lines()
        .filter(|l| l.contains("->") && l.contains("PTE rw"))
        .collect();
    assert_eq!(leaf_lines.len(), 1, "{d}");
    assert!(d.contains("(16 of 512 present)"), "{d}");
}

#[test]
fn regression_contiguous_run_cut_then_huge_map() {
    run_sequence(
        "arm64-4k-48",
        &[
            Op::Map(993, 2, 1, 0),
            Op::Unmap(697, 343),
            Op::Map(1, 1, 2, 0),
        ],
    );
}

/// A leaf written from a template (`leaf_bits` + `write_leaf`) is the word
/// `write_entry` writes for the same leaf, with the same present count, on
/// every geometry that has single-word entries, at every leaf level.
#[test]
fn templated_leaves_are_the_words_write_entry_writes() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut checked = 0;
    for g in geometry::presets() {
        let a = PageTable::with_new_memory(g.clone()).unwrap();
        let b = PageTable::with_new_memory(g.clone()).unwrap();
        let (ta, tb) = (
            a.alloc_table(Level::PTE).unwrap(),
            b.alloc_table(Level::PTE).unwrap(),
        );
        for level in (0..g.num_levels()).filter(|&l| g.is_leaf_level(l)) {
            let lv = Level::new(level);
            for i in 0..200u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let attrs = Attrs {
                    perms: perms_of((x & 7) as u8),
                    global: x & 8 != 0,
                    accessed: x & 16 != 0,
                    dirty: x & 32 != 0,
                    mem_type: pt::MemType::Normal,
                };
                let size = g.entry_size(level);
                let pa = ((x >> 12) << 12) & ((1u64 << g.oa_bits()) - 1) & !(size - 1);
                let va = (i % 64) * size;
                let Some(bits) = a.leaf_bits(lv, &attrs) else {
                    continue;
                };
                a.set_leaf_bits(ta, lv, v(va), bits, p(pa));
                let e = Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                };
                b.set_entry(tb, lv, v(va), &e);
                let (wa, wb) = (
                    a.mem().read(a.entry_pa(ta, lv, v(va)).get()),
                    b.mem().read(b.entry_pa(tb, lv, v(va)).get()),
                );
                assert_eq!(wa, wb, "{} level {level} {e:?}", g.name());
                checked += 1;
            }
            let count = |p: &PageTable, t| p.present_entries(t);
            assert_eq!(count(&a, ta), count(&b, tb), "{}", g.name());
        }
    }
    assert!(checked > 1000, "only {checked} leaves compared");
}
