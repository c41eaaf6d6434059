//! TLB hits and misses, walk references, walk caches, page sizes.

mod common;
use common::*;

use mmu::{HitLevel, MmuConfig};
use proptest::prelude::*;
use pt::{PhysAddr, VirtAddr};
use std::collections::HashMap;

fn page(n: u64) -> u64 {
    BASE + n * 4096
}

/// Runs a sequence of page numbers as reads; returns (hits, misses).
fn run(cfg: MmuConfig, seq: &[u64]) -> (u64, u64, u64) {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 128, rw());
    let m = mmu(cfg, &pt, 1);
    let mut cpu = m.attach(0, 1);
    for &p in seq {
        let a = cpu.access(&pt, page(p) + 8, false, true).unwrap();
        assert_eq!(a.pa, DATA + p * 4096 + 8);
    }
    let s = cpu.stats();
    assert_eq!(s.accesses, s.tlb_hits + s.tlb_misses);
    (s.tlb_hits, s.tlb_misses, s.walk_refs)
}

// Pages 0, 2, 4 fall in set 0 of a 2-set TLB, pages 1 and 3 in set 1.
const SEQ: [u64; 12] = [0, 2, 0, 4, 2, 4, 1, 3, 1, 0, 4, 2];

#[test]
fn a_known_sequence_on_a_4_entry_2_way_lru_tlb() {
    // Traced by hand, set 0 holds two of {0, 2, 4}; "@t" is last use:
    //  t1  0 miss {0@1}          t7  1 miss  set 1 {1@7}
    //  t2  2 miss {0@1 2@2}      t8  3 miss  set 1 {1@7 3@8}
    //  t3  0 hit  {0@3 2@2}      t9  1 hit   set 1 {1@9 3@8}
    //  t4  4 miss, evicts 2      t10 0 miss, evicts 2@5 {0@10 4@6}
    //  t5  2 miss, evicts 0@3    t11 4 hit   {0@10 4@11}
    //  t6  4 hit  {2@5 4@6}      t12 2 miss, evicts 0@10
    // 4 hits, 8 misses; each miss walks the 4 levels: 32 references.
    let cfg = config(vec![array("t", 4, 2, &["4KiB"])], vec![], vec![]);
    assert_eq!(run(cfg, &SEQ), (4, 8, 32));
}

#[test]
fn the_same_sequence_on_a_fully_associative_tlb() {
    // 4 ways, one set: 0 m, 2 m, 0 h, 4 m, 2 h, 4 h, 1 m {0 2 4 1},
    // 3 m evicts 0@3, 1 h, 0 m evicts 2@5, 4 h, 2 m evicts 3@8: 5 hits.
    let cfg = config(vec![array("t", 4, 4, &["4KiB"])], vec![], vec![]);
    assert_eq!(run(cfg, &SEQ), (5, 7, 28));
}

#[test]
fn second_level_hits_refill_the_first() {
    // L1: 2 entries; L2: 4 entries. A B C miss; A: L1 miss, L2 hit (refills
    // L1, evicting B); B: L2 hit (evicting C from L1); A: L1 hit.
    let cfg = config(
        vec![array("l1", 2, 2, &["4KiB"])],
        vec![array("l2", 4, 4, &["4KiB"])],
        vec![],
    );
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 8, rw());
    let m = mmu(cfg, &pt, 1);
    let mut cpu = m.attach(0, 1);
    let levels: Vec<HitLevel> = [0, 1, 2, 0, 1, 0]
        .iter()
        .map(|&p| cpu.access(&pt, page(p), false, true).unwrap().hit)
        .collect();
    use HitLevel::*;
    assert_eq!(levels, vec![Walk, Walk, Walk, L2, L2, L1]);
    let s = cpu.stats();
    assert_eq!(
        (s.l1_hits, s.l1_misses, s.l2_hits, s.l2_misses),
        (1, 5, 2, 3)
    );
    assert_eq!(s.l2_hits_by_size[12], 2);
    assert_eq!(s.misses_by_size[12], 3);
}

/// References of cold walks, then of walks whose upper levels are cached.
fn refs_for(geom: &str) -> (u32, u32) {
    let pt = table(geom);
    map4k(&pt, BASE, 2, rw());
    let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    let cold = cpu.access(&pt, page(0), false, true).unwrap();
    assert_eq!(cold.hit, HitLevel::Walk);
    // Another 4 KiB page in the same 2 MiB: a TLB miss, a PDE-cache hit.
    let warm = cpu.access(&pt, page(1), false, true).unwrap();
    assert_eq!(warm.hit, HitLevel::Walk);
    assert_eq!(
        cpu.stats().pwc_hits[1],
        1,
        "the PDE cache served the second walk"
    );
    (cold.walk_refs, warm.walk_refs)
}

#[test]
fn five_levels_read_one_more_entry_cold_and_the_same_once_cached() {
    let (cold4, warm4) = refs_for("x86-64-4l");
    let (cold5, warm5) = refs_for("x86-64-5l");
    assert_eq!((cold4, cold5), (4, 5));
    assert_eq!(cold5, cold4 + 1);
    assert_eq!((warm4, warm5), (1, 1));
}

#[test]
fn walk_caches_skip_exactly_the_levels_they_cover() {
    // Only a PDPTE cache (level 2) on 4-level: a warm walk reads PDE and PTE.
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 1, rw());
    map4k(&pt, BASE + (2 << 20), 1, rw());
    let m = mmu(config(vec![], vec![], vec![pwc(2, 4, 4)]), &pt, 1);
    let mut cpu = m.attach(0, 1);
    assert_eq!(cpu.access(&pt, BASE, false, true).unwrap().walk_refs, 4);
    assert_eq!(
        cpu.access(&pt, BASE + (2 << 20), false, true)
            .unwrap()
            .walk_refs,
        2
    );
    assert_eq!(cpu.stats().pwc_hits[2], 1);
    assert_eq!(cpu.pwc_occupancy(2), 1);
    // No TLB: the same page walks again.
    assert_eq!(cpu.access(&pt, BASE, false, true).unwrap().walk_refs, 2);
    assert_eq!(cpu.stats().walk_refs_hist[2], 2);
}

#[test]
fn huge_pages_fill_their_own_arrays_and_shorter_walks() {
    let pt = table("x86-64-4l");
    pt.map(
        VirtAddr::new(BASE),
        PhysAddr::new(DATA),
        2 << 20,
        2 << 20,
        rw(),
    )
    .unwrap();
    pt.map(
        VirtAddr::new(BASE + (1 << 30)),
        PhysAddr::new(DATA + (1 << 30)),
        1 << 30,
        1 << 30,
        rw(),
    )
    .unwrap();
    let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    let a = cpu.access(&pt, BASE + 0x1234, true, true).unwrap();
    assert_eq!(
        (a.walk_refs, a.page_size, a.pa),
        (3, 2 << 20, DATA + 0x1234)
    );
    let b = cpu.access(&pt, BASE + 0x1f_f000, false, true).unwrap();
    assert_eq!((b.hit, b.pa), (HitLevel::L1, DATA + 0x1f_f000));
    // The PML4E cache has the PGD entry from the first walk: only the PUD
    // entry (the 1 GiB leaf) is read.
    let g = cpu
        .access(&pt, BASE + (1 << 30) + 12345, false, true)
        .unwrap();
    assert_eq!((g.walk_refs, g.page_size), (1, 1 << 30));
    assert_eq!(cpu.stats().pwc_hits[3], 1);
    assert_eq!(cpu.stats().misses_by_size[21], 1);
    assert_eq!(cpu.stats().misses_by_size[30], 1);
    assert_eq!(cpu.stats().l1_hits_by_size[21], 1);
}

#[test]
fn amd_l2_smashes_1g_pages_into_2m_entries() {
    let pt = table("x86-64-4l");
    pt.map(
        VirtAddr::new(BASE),
        PhysAddr::new(DATA),
        1 << 30,
        1 << 30,
        rw(),
    )
    .unwrap();
    let cfg = config(
        vec![array("l1", 2, 2, &["4KiB", "2MiB", "1GiB"])],
        vec![array("l2", 16, 4, &["4KiB", "2MiB"])],
        vec![],
    );
    let m = mmu(cfg, &pt, 1);
    let mut cpu = m.attach(0, 1);
    cpu.access(&pt, BASE, false, true).unwrap();
    // Push the 1 GiB entry out of the 2-entry L1 with two other pages.
    pt.map(
        VirtAddr::new(BASE + (1 << 30)),
        PhysAddr::new(DATA + (1 << 30)),
        2 * 4096,
        4096,
        rw(),
    )
    .unwrap();
    cpu.access(&pt, BASE + (1 << 30), false, true).unwrap();
    cpu.access(&pt, BASE + (1 << 30) + 4096, false, true)
        .unwrap();
    // Same 2 MiB piece: an L2 hit; another 2 MiB piece of the 1 GiB page: a walk.
    let same = cpu.access(&pt, BASE + 0x10_0000, false, true).unwrap();
    assert_eq!((same.hit, same.page_size), (HitLevel::L2, 2 << 20));
    let other = cpu.access(&pt, BASE + (4 << 20), false, true).unwrap();
    assert_eq!(other.hit, HitLevel::Walk);
}

#[test]
fn riscv_napot_fills_64k_entries_only_where_the_tlb_has_them() {
    for (geom, with_64k, refs) in [
        ("riscv-sv39-64k", true, 3),
        ("riscv-sv39-64k", false, 3),
        ("riscv-sv48", true, 4),
    ] {
        let pt = table(geom);
        pt.map(
            VirtAddr::new(BASE >> 8),
            PhysAddr::new(DATA),
            64 << 10,
            64 << 10,
            rw(),
        )
        .unwrap();
        let sizes: &[&str] = if with_64k {
            &["4KiB", "64KiB"]
        } else {
            &["4KiB"]
        };
        let m = mmu(
            config(vec![array("l1", 8, 8, sizes)], vec![], vec![]),
            &pt,
            1,
        );
        let mut cpu = m.attach(0, 1);
        let va = (BASE >> 8) + 0x5008;
        let a = cpu.access(&pt, va, false, true).unwrap();
        assert_eq!(a.pa, DATA + 0x5008, "{geom}");
        assert_eq!(a.walk_refs, refs, "{geom}");
        let want = if with_64k { 64 << 10 } else { 4096 };
        assert_eq!(a.page_size, want, "{geom} with_64k={with_64k}");
        let other = cpu.access(&pt, (BASE >> 8) + 0xf000, false, true).unwrap();
        let want = if with_64k {
            HitLevel::L1
        } else {
            HitLevel::Walk
        };
        assert_eq!(other.hit, want, "{geom} with_64k={with_64k}");
    }
}

#[test]
fn no_tlb_walks_every_time() {
    let pt = table("x86-64-5l");
    map4k(&pt, BASE, 1, rw());
    let m = mmu(MmuConfig::preset("none").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    for _ in 0..3 {
        assert_eq!(cpu.access(&pt, BASE, false, true).unwrap().walk_refs, 5);
    }
    let s = cpu.stats();
    assert_eq!(
        (s.tlb_hits, s.tlb_misses, s.walks, s.walk_refs),
        (0, 3, 3, 15)
    );
    assert_eq!(s.pwc_misses, 0, "no walk cache: nothing to miss");
}

#[test]
fn asids_keep_address_spaces_apart() {
    let a = table("x86-64-4l");
    let b = PageTable_with_same_memory(&a);
    map4k(&a, BASE, 1, rw());
    b.map(
        VirtAddr::new(BASE),
        PhysAddr::new(DATA + (1 << 30)),
        4096,
        4096,
        rw(),
    )
    .unwrap();
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &a, 1);
    let mut cpu = m.attach(0, 1);
    assert_eq!(cpu.access(&a, BASE, false, true).unwrap().pa, DATA);
    cpu.switch_to(2);
    let x = cpu.access(&b, BASE, false, true).unwrap();
    assert_eq!((x.hit, x.pa), (HitLevel::Walk, DATA + (1 << 30)));
    cpu.switch_to(1);
    let y = cpu.access(&a, BASE, false, true).unwrap();
    assert_eq!(
        (y.hit, y.pa),
        (HitLevel::L1, DATA),
        "ASID 1's entry survived the switch"
    );
}

#[allow(non_snake_case)]
fn PageTable_with_same_memory(a: &pt::PageTable) -> pt::PageTable {
    pt::PageTable::new(a.geometry_arc().clone(), a.mem_arc().clone()).unwrap()
}

#[test]
fn faults_name_their_level_and_invalid_configs_are_refused() {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 1, ro());
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    let e = cpu.access(&pt, BASE + (1 << 30), false, true).unwrap_err();
    assert_eq!(
        e,
        mmu::Fault::NotPresent {
            va: BASE + (1 << 30),
            level: 2
        }
    );
    let e = cpu.access(&pt, 1 << 47, false, true).unwrap_err();
    assert_eq!(e, mmu::Fault::NonCanonical { va: 1 << 47 });
    cpu.access(&pt, BASE, false, true).unwrap();
    let e = cpu.access(&pt, BASE, true, true).unwrap_err();
    assert!(
        matches!(e, mmu::Fault::Permission { write: true, .. }),
        "{e}"
    );
    assert_eq!(
        cpu.tlb_occupancy(),
        (0, 0),
        "a page fault drops the TLB entries"
    );
    let s = cpu.stats();
    assert_eq!(
        (
            s.faults_not_present,
            s.faults_noncanonical,
            s.faults_permission
        ),
        (1, 1, 1)
    );

    let bad = config(vec![array("t", 48, 5, &["4KiB"])], vec![], vec![]);
    assert!(matches!(
        mmu::Mmu::new(bad, pt.geometry(), 1),
        Err(mmu::ConfigError::WaysNotDividing { .. })
    ));
    let zero = config(vec![array("t", 4, 8, &["4KiB"])], vec![], vec![]);
    assert!(matches!(
        mmu::Mmu::new(zero, pt.geometry(), 1),
        Err(mmu::ConfigError::ZeroSets { .. })
    ));
}

/// A reference set-associative LRU TLB: a map per set from page to last use.
fn reference(entries: usize, ways: usize, seq: &[u64]) -> (u64, u64) {
    let sets = entries / ways;
    let mut s: Vec<HashMap<u64, u64>> = vec![HashMap::new(); sets];
    let (mut hits, mut misses) = (0, 0);
    for (t, &p) in seq.iter().enumerate() {
        let set = &mut s[(p as usize) % sets];
        if set.contains_key(&p) {
            hits += 1;
        } else {
            misses += 1;
            if set.len() == ways {
                let (&lru, _) = set.iter().min_by_key(|(_, &u)| u).unwrap();
                set.remove(&lru);
            }
        }
        set.insert(p, t as u64);
    }
    (hits, misses)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn lru_tlbs_agree_with_a_reference_model(
        shape in prop::sample::select(vec![(4usize, 2usize), (8, 8), (16, 4), (8, 1), (16, 16), (32, 16), (64, 4), (128, 128)]),
        seq in prop::collection::vec(0u64..24, 1..200),
    ) {
        let (entries, ways) = shape;
        let cfg = config(vec![array("t", entries as u32, ways as u32, &["4KiB"])], vec![], vec![]);
        let (h, m, _) = run(cfg, &seq);
        prop_assert_eq!((h, m), reference(entries, ways, &seq));
    }

    /// The same for wide arrays and more pages than the first level's hit
    /// cache holds (16 pages): runs of hits there defer their LRU updates,
    /// which must leave the very order (so the very victims) that updating
    /// at every hit leaves.
    #[test]
    fn wide_lru_tlbs_agree_with_a_reference_model(
        shape in prop::sample::select(vec![(72usize, 72usize), (96, 24), (48, 48), (64, 16)]),
        seq in prop::collection::vec(0u64..120, 1..600),
    ) {
        let (entries, ways) = shape;
        let cfg = config(vec![array("t", entries as u32, ways as u32, &["4KiB"])], vec![], vec![]);
        let (h, m, _) = run(cfg, &seq);
        prop_assert_eq!((h, m), reference(entries, ways, &seq));
    }

    /// Whatever the TLB holds, after each change and its shootdown every
    /// access agrees with the page table.
    #[test]
    fn translations_always_agree_with_the_table(
        preset in prop::sample::select(vec!["zen4", "icelake", "none"]),
        ops in prop::collection::vec((0u8..5, 0u64..48), 1..300),
    ) {
        let pt = table("x86-64-4l");
        map4k(&pt, BASE, 48, rw());
        // A 2 MiB page next to them, accessed too.
        pt.map(VirtAddr::new(BASE + (2 << 20)), PhysAddr::new(DATA + (2 << 20)), 2 << 20, 2 << 20, rw()).unwrap();
        let m = mmu(MmuConfig::preset(preset).unwrap(), &pt, 1);
        let mut cpu = m.attach(0, 1);
        let mut frame = 1u64 << 20;
        for (op, p) in ops {
            let va = page(p);
            match op {
                0 | 1 => {
                    let huge = BASE + (2 << 20) + p * 4096 * 7;
                    for (a, write) in [(va, op == 1), (huge, op == 1)] {
                        let got = cpu.access(&pt, a, write, true);
                        match pt.translate(VirtAddr::new(a)) {
                            Ok(t) if write && !t.attrs.perms.write => prop_assert!(got.is_err()),
                            Ok(t) => prop_assert_eq!(got.unwrap().pa, t.pa.get()),
                            Err(_) => prop_assert!(got.is_err()),
                        }
                    }
                }
                2 => {
                    if let Ok(un) = pt.unmap(VirtAddr::new(va), 4096) {
                        m.shootdown(&mut cpu, 1, &un.flush, mmu::FlushKind::Leaves);
                        un.flush.done();
                    }
                }
                3 => {
                    if pt.translate(VirtAddr::new(va)).is_err() {
                        frame += 1;
                        pt.map(VirtAddr::new(va), PhysAddr::new(DATA + frame * 4096), 4096, 4096, rw()).unwrap();
                    }
                }
                _ => {
                    let f = pt.protect(VirtAddr::new(va), 4096, pt::Perms::USER_R).unwrap();
                    m.shootdown(&mut cpu, 1, &f, mmu::FlushKind::Leaves);
                    f.done();
                }
            }
        }
        let s = cpu.stats();
        prop_assert_eq!(s.accesses, s.tlb_hits + s.tlb_misses);
    }
}
