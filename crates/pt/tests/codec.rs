//! The entry codecs: bit-exact vectors written from the manuals, every
//! architectural reservation, round trips of the neutral view for every
//! preset geometry and level, software-page groups, and A/D updates.
//!
//! Expected words are computed by hand from the bit positions the manuals
//! give (the arithmetic is in the comments), never taken from the codec.

use proptest::prelude::*;
use pt::entry::{
    decode, encode, encode_group_word, mark_accessed, Attrs, DecodeError, Entry, MemType, Perms,
};
use pt::geometry::{from_toml, preset, presets, Arch, Geometry};

fn geom(name: &str) -> Geometry {
    preset(name).unwrap()
}

/// The next of a xorshift64 sequence in `x` (the word-generation loops'
/// cheap deterministic stream).
fn xorshift(x: &mut u64) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
}

fn perms(read: bool, write: bool, exec: bool, user: bool) -> Perms {
    Perms {
        read,
        write,
        exec,
        user,
    }
}

fn attrs(p: Perms, global: bool, accessed: bool, dirty: bool, mem_type: MemType) -> Attrs {
    Attrs {
        perms: p,
        global,
        accessed,
        dirty,
        mem_type,
    }
}

fn leaf(pa: u64, attrs: Attrs) -> Entry {
    Entry::Leaf {
        pa,
        attrs,
        contiguous: false,
    }
}

fn contig_leaf(pa: u64, attrs: Attrs) -> Entry {
    Entry::Leaf {
        pa,
        attrs,
        contiguous: true,
    }
}

/// Both directions: `e` encodes to `raw` and `raw` decodes to `e`.
#[track_caller]
fn vector(g: &Geometry, level: usize, e: Entry, raw: u64) {
    assert_eq!(
        encode(g, level, &e),
        raw,
        "{} level {level}: encode({e:?}) = {:#018x}, expected {raw:#018x}",
        g.name(),
        encode(g, level, &e)
    );
    assert_eq!(
        decode(g, level, raw),
        Ok(e),
        "{} level {level}: decode({raw:#018x})",
        g.name()
    );
}

#[track_caller]
fn reserved(g: &Geometry, level: usize, raw: u64) {
    let r = decode(g, level, raw);
    assert!(
        matches!(r, Err(DecodeError::Reserved { .. })),
        "{} level {level}: {raw:#018x} should be reserved, decoded to {r:?}",
        g.name()
    );
}

#[track_caller]
fn misaligned(g: &Geometry, level: usize, raw: u64) {
    assert_eq!(
        decode(g, level, raw),
        Err(DecodeError::Misaligned { raw, level }),
        "{} level {level}: {raw:#018x}",
        g.name()
    );
}

// ---------------------------------------------------------------- x86-64

#[test]
fn x86_known_words() {
    let g = geom("x86-64-4l");
    // 4 KiB user RW page at 0x1234000, A and D, executable:
    // P(0x1) | RW(0x2) | US(0x4) | A(0x20) | D(0x40) = 0x67.
    let urw = attrs(
        perms(true, true, true, true),
        false,
        true,
        true,
        MemType::Normal,
    );
    vector(&g, 0, leaf(0x1234000, urw), 0x0000_0000_0123_4067);
    // Linux's _PAGE_TABLE = P|RW|US|A|D = 0x67 on a table at 0x5000, at every
    // level above the PTE level.
    for level in 1..=3 {
        vector(&g, level, Entry::Table { pa: 0x5000 }, 0x5067);
    }
    // 2 MiB kernel RW global NX page at 1 GiB, A and D:
    // P|RW = 0x3, A|D = 0x60, PS = 0x80, G = 0x100 -> 0x1e3; XD = bit 63.
    let krw = attrs(
        perms(true, true, false, false),
        true,
        true,
        true,
        MemType::Normal,
    );
    vector(&g, 1, leaf(0x4000_0000, krw), 0x8000_0000_4000_01e3);
    // 1 GiB user read-only executable page at 512 GiB, A only:
    // P(1) | US(4) | A(0x20) | PS(0x80) = 0xa5.
    let urx = attrs(
        perms(true, false, true, true),
        false,
        true,
        false,
        MemType::Normal,
    );
    vector(&g, 2, leaf(0x80_0000_0000, urx), 0x0000_0080_0000_00a5);
    // Device (UC): P|RW|PWT(8)|PCD(0x10)|A|D = 0x7b, NX.
    let dev = attrs(
        perms(true, true, false, false),
        false,
        true,
        true,
        MemType::Device,
    );
    vector(&g, 0, leaf(0xfee0_0000, dev), 0x8000_0000_fee0_007b);
    // NonCacheable (UC-): PCD alone, 0x73.
    let nc = Attrs {
        mem_type: MemType::NonCacheable,
        ..dev
    };
    vector(&g, 0, leaf(0xfee0_0000, nc), 0x8000_0000_fee0_0073);
    // The highest 4 KiB frame of a 52-bit physical space: bits 51:12 all set.
    vector(
        &g,
        0,
        leaf(0x000f_ffff_ffff_f000, urw),
        0x000f_ffff_ffff_f067,
    );
    // Not present, whatever else is set.
    assert_eq!(decode(&g, 0, 0xffff_ffff_ffff_fffe), Ok(Entry::Invalid));
    assert_eq!(decode(&g, 3, 0), Ok(Entry::Invalid));
    assert_eq!(encode(&g, 2, &Entry::Invalid), 0);
}

#[test]
fn x86_reservations() {
    let g4 = geom("x86-64-4l");
    // PS in a PML4E (the root of 4-level paging) is reserved.
    reserved(&g4, 3, 0x4000_0083);
    // 5-level: PS in a PML5E or PML4E.
    let g5 = geom("x86-64-5l");
    reserved(&g5, 4, 0x4000_0083);
    reserved(&g5, 3, 0x4000_0083);
    // ...while the same word is a 1 GiB page in a PDPTE.
    assert!(decode(&g5, 2, 0x4000_0083).unwrap().is_leaf());
    // 2 MiB page with bit 13 set (bits 20:13 reserved).
    misaligned(&g4, 1, 0x4000_2083);
    // 1 GiB page with bit 21 set (bits 29:13 reserved).
    misaligned(&g4, 2, 0x4020_0083);
    // PAT bit of a 2 MiB page (bit 12) and of a 4 KiB page (bit 7).
    reserved(&g4, 1, 0x4000_1083);
    reserved(&g4, 0, 0x0123_4083);
    // PWT without PCD (PAT entry 1).
    reserved(&g4, 0, 0x0123_400b);
    // Bits above MAXPHYADDR, with a 40-bit physical address space.
    let g40 = from_toml(
        "x86-40.toml",
        "name = \"x86-40\"\narch = \"x86-64\"\npage_shift = 12\noa_bits = 40\n\
         [[level]]\nname = \"PGD\"\nbits = 9\n[[level]]\nname = \"PMD\"\nbits = 9\nleaf = true\n\
         [[level]]\nname = \"PTE\"\nbits = 9\nleaf = true\n",
    )
    .unwrap();
    reserved(&g40, 0, (1 << 45) | 0x1000 | 0x67);
    reserved(&g40, 2, (1 << 40) | 0x1000 | 0x67);
    assert!(decode(&g40, 0, (1 << 39) | 0x67).is_ok());
}

// ---------------------------------------------------------------- RISC-V

#[test]
fn riscv_known_words() {
    let g = geom("riscv-sv39");
    // Leaf R W X U A D at PPN 0x80000: V(1)|R(2)|W(4)|X(8)|U(0x10)|A(0x40)|D(0x80)
    // = 0xdf, PPN at bit 10: 0x80000 << 10 = 0x2000_0000.
    let all = attrs(
        perms(true, true, true, true),
        false,
        true,
        true,
        MemType::Normal,
    );
    for level in 0..=2 {
        // 0x8000_0000 is aligned to 4 KiB, 2 MiB and 1 GiB.
        vector(&g, level, leaf(0x8000_0000, all), (0x80000 << 10) | 0xdf);
    }
    // Pointer to the table at 0x8000_1000: V alone, PPN 0x80001 << 10 = 0x2000_0400.
    vector(&g, 1, Entry::Table { pa: 0x8000_1000 }, 0x2000_0401);
    vector(&g, 2, Entry::Table { pa: 0x8000_1000 }, 0x2000_0401);
    // Svnapot (spec table "page table entry encodings when PTE.N=1": level 0,
    // pte.ppn[0] = x xxxx 1000 is a 64 KiB range). Run at 0x8001_0000: PPN
    // 0x80010, low four bits replaced by 1000 -> 0x80018 << 10 = 0x2000_6000;
    // flags V|R|W|U|A|D = 0xd7; N = bit 63.
    let urw = attrs(
        perms(true, true, false, true),
        false,
        true,
        true,
        MemType::Normal,
    );
    let napot = 0x8000_0000_2000_60d7;
    vector(&g, 0, contig_leaf(0x8001_0000, urw), napot);
    // Every page of the run encodes the same word.
    for k in 0..16u64 {
        assert_eq!(
            encode(&g, 0, &contig_leaf(0x8001_0000 + k * 4096, urw)),
            napot
        );
    }
    // Svpbmt: R|V|A|D = 0xc3, NC = 1 << 61, IO = 2 << 61.
    let ro = attrs(
        perms(true, false, false, false),
        false,
        true,
        true,
        MemType::Normal,
    );
    let nc = Attrs {
        mem_type: MemType::NonCacheable,
        ..ro
    };
    let io = Attrs {
        mem_type: MemType::Device,
        ..ro
    };
    vector(&g, 0, leaf(0x8000_0000, ro), 0x2000_00c3);
    vector(&g, 0, leaf(0x8000_0000, nc), 0x2000_0000_2000_00c3);
    vector(&g, 0, leaf(0x8000_0000, io), 0x4000_0000_2000_00c3);
    // Execute-only global kernel page: V|X(8)|G(0x20)|A(0x40) = 0x69.
    let xo = attrs(
        perms(false, false, true, false),
        true,
        true,
        false,
        MemType::Normal,
    );
    vector(&g, 0, leaf(0x8000_0000, xo), 0x2000_0069);
    // Sv57's widest physical address: PPN bits 53:10 all set (56-bit PA).
    let g57 = geom("riscv-sv57");
    vector(
        &g57,
        0,
        leaf(0x00ff_ffff_ffff_f000, ro),
        0x003f_ffff_ffff_fcc3,
    );
    assert_eq!(decode(&g, 0, 0xffff_ffff_ffff_fffe), Ok(Entry::Invalid));
}

#[test]
fn riscv_reservations() {
    let g = geom("riscv-sv39");
    // W without R: -W- and -WX.
    reserved(&g, 0, 0x2000_0005);
    reserved(&g, 0, 0x2000_000d);
    reserved(&g, 1, 0x2000_00c5);
    // N above level 0 (the NAPOT word of riscv_known_words, read at level 1).
    reserved(&g, 1, 0x8000_0000_2000_60d7);
    // N with PPN[3:0] other than 1000: x100 (a 128 KiB size, reserved), 0000, xxx1.
    reserved(&g, 0, 0x8000_0000_2000_50d7);
    reserved(&g, 0, 0x8000_0000_2000_40d7);
    reserved(&g, 0, 0x8000_0000_2000_44d7);
    // N on a pointer PTE.
    reserved(&g, 1, 0x8000_0000_2000_0401);
    // Misaligned superpages: a 2 MiB leaf at PPN 0x80001, a 1 GiB leaf at
    // PPN 0x80200 (2 MiB- but not 1 GiB-aligned). V|R|W|X|A|D = 0xcf.
    misaligned(&g, 1, (0x80001 << 10) | 0xcf);
    misaligned(&g, 2, (0x80200 << 10) | 0xcf);
    // ...the same PPNs are fine one level down.
    assert!(decode(&g, 0, (0x80001 << 10) | 0xcf).is_ok());
    assert!(decode(&g, 1, (0x80200 << 10) | 0xcf).is_ok());
    // PBMT = 3.
    reserved(&g, 0, 0x6000_0000_2000_00c3);
    // Reserved bits 60:54.
    reserved(&g, 0, (1 << 54) | 0x2000_00c3);
    reserved(&g, 0, (1 << 60) | 0x2000_00c3);
    reserved(&g, 1, (1 << 57) | 0x2000_0401);
    // Pointer PTEs with A, D, U or PBMT set.
    reserved(&g, 1, 0x2000_0441);
    reserved(&g, 1, 0x2000_0481);
    reserved(&g, 1, 0x2000_0411);
    reserved(&g, 1, 0x2000_0000_2000_0401);
    // G is allowed on a pointer.
    assert_eq!(
        decode(&g, 1, 0x2000_0421),
        Ok(Entry::Table { pa: 0x8000_1000 })
    );
    // A pointer at the last level.
    reserved(&g, 0, 0x2000_0401);
}

#[test]
fn riscv_64k_groups_map_consecutive_hardware_entries() {
    let g = geom("riscv-sv39-64k");
    let hw = geom("riscv-sv39");
    assert_eq!(g.hw_words_per_entry(), 16);
    let urw = attrs(
        perms(true, true, false, true),
        false,
        true,
        true,
        MemType::Normal,
    );

    // A 64 KiB page: all 16 words are the NAPOT PTE of its base
    // (same arithmetic as riscv_known_words).
    let page = leaf(0x8001_0000, urw);
    for j in 0..16 {
        let w = encode_group_word(&g, 0, &page, j);
        assert_eq!(w, 0x8000_0000_2000_60d7, "word {j}");
        assert_eq!(decode(&g, 0, w), Ok(page));
        // The hardware (plain Sv39) reads it as a member of a 64 KiB run.
        assert_eq!(decode(&hw, 0, w), Ok(contig_leaf(0x8001_0000, urw)));
    }

    // A 32 MiB leaf at PMD: word j is a 2 MiB superpage at base + j * 2 MiB.
    // Base 0x8200_0000 -> PPN 0x82000; word j PPN = 0x82000 + j * 0x200.
    // Flags V|R|W|U|A|D = 0xd7.
    let big = leaf(0x8200_0000, urw);
    for j in 0..16u64 {
        let w = encode_group_word(&g, 1, &big, j);
        assert_eq!(w, ((0x82000 + j * 0x200) << 10) | 0xd7, "word {j}");
        assert_eq!(decode(&g, 1, w), Ok(big));
        assert_eq!(decode(&hw, 1, w), Ok(leaf(0x8200_0000 + (j << 21), urw)));
    }
    assert_eq!(encode_group_word(&g, 1, &big, 15), 0x20f8_00d7);

    // A 16 GiB leaf at PGD: word j is a 1 GiB superpage at base + j GiB.
    let huge = leaf(0x4_0000_0000, urw);
    for j in 0..16u64 {
        let w = encode_group_word(&g, 2, &huge, j);
        assert_eq!(w, ((0x40_0000 + j * 0x4_0000) << 10) | 0xd7, "word {j}");
        assert_eq!(decode(&g, 2, w), Ok(huge));
        assert_eq!(decode(&hw, 2, w), Ok(leaf(0x4_0000_0000 + (j << 30), urw)));
    }

    // A table entry: word j points to the j-th 4 KiB hardware table of the
    // 64 KiB table page at 0x9000_0000, PPN 0x90000 + j.
    let table = Entry::Table { pa: 0x9000_0000 };
    for level in 1..=2 {
        for j in 0..16u64 {
            let w = encode_group_word(&g, level, &table, j);
            assert_eq!(w, ((0x90000 + j) << 10) | 1, "level {level} word {j}");
            assert_eq!(decode(&g, level, w), Ok(table));
            assert_eq!(
                decode(&hw, level, w),
                Ok(Entry::Table {
                    pa: 0x9000_0000 + j * 4096
                })
            );
        }
    }
    assert_eq!(encode_group_word(&g, 1, &table, 15), 0x2400_3c01);
    // encode is word 0.
    assert_eq!(encode(&g, 1, &table), 0x2400_0001);
}

// ---------------------------------------------------------------- ARM64

#[test]
fn arm64_known_words() {
    let g = geom("arm64-4k-48");
    // 4K page descriptor at 0x4000_0000, AF, inner shareable, AP = 01 (EL1
    // and EL0 read-write), nG, UXN | PXN, AttrIndx 0:
    //   bits[1:0] = 11                  0x003
    //   AP[2:1] = 01 -> bit 6           0x040
    //   SH = 11 -> bits 9:8             0x300
    //   AF -> bit 10                    0x400
    //   nG -> bit 11                    0x800   low bits: 0xf43
    //   OA 0x4000_0000 in bits 47:12
    //   PXN bit 53 = 0x0020_0000_0000_0000, UXN bit 54 = 0x0040_0000_0000_0000
    //   total 0x0060_0000_4000_0f43
    let word = 0x0060_0000_4000_0f43;
    let udirty = attrs(
        perms(true, true, false, true),
        false,
        true,
        true,
        MemType::Normal,
    );
    // AP[2] = 0 without DBM: writable, and so dirty.
    assert_eq!(decode(&g, 0, word), Ok(leaf(0x4000_0000, udirty)));
    // ptlab writes a writable page with DBM (bit 51, 0x0008_0000_0000_0000).
    vector(&g, 0, leaf(0x4000_0000, udirty), 0x0068_0000_4000_0f43);
    // Writable-clean: AP = 11 (0xc0 instead of 0x40) with DBM.
    let uclean = Attrs {
        dirty: false,
        ..udirty
    };
    vector(&g, 0, leaf(0x4000_0000, uclean), 0x0068_0000_4000_0fc3);
    // Read-only clean: AP = 11, no DBM.
    let uro = Attrs {
        perms: perms(true, false, false, true),
        ..uclean
    };
    vector(&g, 0, leaf(0x4000_0000, uro), 0x0060_0000_4000_0fc3);
    // Read-only dirty: Linux's software PTE_DIRTY, bit 55 (0x0080_...).
    let urod = Attrs { dirty: true, ..uro };
    vector(&g, 0, leaf(0x4000_0000, urod), 0x00e0_0000_4000_0fc3);
    // User executable: UXN clear, PXN still set.
    let urx = Attrs {
        perms: perms(true, false, true, true),
        ..uro
    };
    vector(&g, 0, leaf(0x4000_0000, urx), 0x0020_0000_4000_0fc3);
    // User execute-only (Linux's PAGE_EXECONLY): AP = 10 (EL0 no data
    // access, read-only) 0x80, UXN clear, PXN set:
    // 0x3 | 0x80 | SH 0x300 | AF 0x400 | nG 0x800 = 0xf83, PXN = 0x0020_...
    let uxo = Attrs {
        perms: perms(false, false, true, true),
        ..uro
    };
    vector(&g, 0, leaf(0x4000_0000, uxo), 0x0020_0000_4000_0f83);
    // The same word with UXN set is a kernel read-only page (kernel pages
    // always have UXN).
    let kro = Attrs {
        perms: perms(true, false, false, false),
        ..uro
    };
    vector(&g, 0, leaf(0x4000_0000, kro), 0x0060_0000_4000_0f83);
    // Table descriptor: next-level address | 0b11.
    for level in 1..=3 {
        vector(&g, level, Entry::Table { pa: 0x4000_1000 }, 0x4000_1003);
    }
    // 2 MiB block at L2 (level 1), kernel RW executable, global, dirty:
    // bits[1:0] = 01, AP = 00, SH 0x300, AF 0x400 -> 0x701; DBM bit 51;
    // kernel page: UXN (bit 54) set, PXN clear -> 0x0048_0000_4020_0701.
    let kx = attrs(
        perms(true, true, true, false),
        true,
        true,
        true,
        MemType::Normal,
    );
    vector(&g, 1, leaf(0x4020_0000, kx), 0x0048_0000_4020_0701);
    // Non-cacheable (AttrIndx 1 -> 0x4) contiguous kernel RO page, not accessed:
    // 0x3 | 0x4 | AP=10 (0x80) | SH 0x300 -> 0x387; nG clear (global);
    // Contiguous bit 52 + PXN + UXN = 0x0070_0000_0000_0000.
    let knc = attrs(
        perms(true, false, false, false),
        true,
        false,
        false,
        MemType::NonCacheable,
    );
    vector(&g, 0, contig_leaf(0x4000_5000, knc), 0x0070_0000_4000_5387);
    // Device (AttrIndx 2 -> 0x8): 0x3 | 0x8 | 0x80 | 0x300 | AF -> 0x78b.
    let kdev = attrs(
        perms(true, false, false, false),
        true,
        true,
        false,
        MemType::Device,
    );
    vector(&g, 0, leaf(0x4000_5000, kdev), 0x0060_0000_4000_578b);
    assert_eq!(decode(&g, 0, 0), Ok(Entry::Invalid));
    assert_eq!(decode(&g, 1, 0xffff_ffff_ffff_fffe), Ok(Entry::Invalid));

    // 16K granule: a page at 0x4000 (OA bits 47:14), user RX:
    // 0x3 | AP=11 (0xc0) | SH 0x300 | AF 0x400 | nG 0x800 = 0xfc3; PXN bit 53.
    let g16 = geom("arm64-16k-48");
    vector(&g16, 0, leaf(0x4000, urx), 0x0020_0000_0000_4fc3);

    // 64K granule with 52-bit OA: a table at 0x000f_0000_0001_0000 keeps
    // OA[51:48] = 0xf in bits 15:12 (0xf000) and OA bit 16 in place (0x1_0000).
    let g52 = geom("arm64-64k-52");
    vector(
        &g52,
        1,
        Entry::Table {
            pa: 0x000f_0000_0001_0000,
        },
        0x1_f003,
    );
    // A 4 TiB block at L1 (level 2) at 0x000a_0400_0000_0000:
    // OA[51:48] = 0xa -> 0xa000; OA bit 42 in place -> 0x0400_0000_0000;
    // bits[1:0] = 01 | Device 0x8 | AP = 10 (0x80) | SH 0x300 | AF 0x400 = 0x789;
    // kernel no-exec: PXN | UXN.
    vector(
        &g52,
        2,
        leaf(0x000a_0400_0000_0000, kdev),
        0x0060_0400_0000_a789,
    );
}

#[test]
fn arm64_reservations() {
    let g = geom("arm64-4k-48");
    // bits[1:0] = 01 at L3.
    reserved(&g, 0, 0x4000_0f41);
    // A block at L0 of the 4K granule.
    reserved(&g, 3, 0x0000_0080_0000_0701);
    // A block at L1 of the 16K granule (needs FEAT_LPA2).
    reserved(&geom("arm64-16k-48"), 2, 0x4000_0701);
    // SH = 01: 0x3 | SH 0x100 | AF 0x400.
    reserved(&g, 0, 0x4000_0503);
    // AttrIndx 5 (0x14) is outside ptlab's MAIR.
    reserved(&g, 0, 0x4000_0717);
    // A 2 MiB block whose OA has bit 12 set.
    misaligned(&g, 1, 0x4000_1701);
    // A 1 GiB block whose OA has bit 21 set.
    misaligned(&g, 2, 0x4020_0701);
    // RES0 bit 48 (no 52-bit OA with the 4K granule here), in a page and a table.
    reserved(&g, 0, 0x0001_0000_4000_0703);
    reserved(&g, 1, 0x0001_0000_4000_0003);
    // 16K granule: bits 13:12 are RES0.
    reserved(&geom("arm64-16k-48"), 0, 0x5703);
    // 64K granule: bits 15:12 are RES0 with a 48-bit OA, OA[51:48] with 52.
    reserved(&geom("arm64-64k-48"), 0, 0x1_1703);
    // 0x703 = page, AP = 00 (kernel RW, so dirty), SH 11, AF, global;
    // UXN (bit 54) set and PXN clear: an executable kernel page.
    let krwx = attrs(
        perms(true, true, true, false),
        true,
        true,
        true,
        MemType::Normal,
    );
    assert_eq!(
        decode(&geom("arm64-64k-52"), 0, 0x0040_0000_0001_1703),
        Ok(leaf(0x0001_0000_0001_0000, krwx))
    );
}

// ---------------------------------------------------------------- A/D updates

#[test]
fn mark_accessed_sets_exactly_the_documented_bits() {
    // x86: A = bit 5, D = bit 6.
    let g = geom("x86-64-4l");
    let raw = 0x0000_0000_0123_4007; // P|RW|US, neither A nor D
    assert_eq!(mark_accessed(&g, 0, raw, false) ^ raw, 0x20);
    assert_eq!(mark_accessed(&g, 0, raw, true) ^ raw, 0x60);
    assert_eq!(mark_accessed(&g, 0, raw | 0x60, true), raw | 0x60);

    // RISC-V: A = bit 6, D = bit 7.
    let g = geom("riscv-sv39");
    let raw = 0x2000_0017; // V|R|W|U
    assert_eq!(mark_accessed(&g, 0, raw, false) ^ raw, 0x40);
    assert_eq!(mark_accessed(&g, 0, raw, true) ^ raw, 0xc0);
    let napot = 0x8000_0000_2000_6017;
    assert_eq!(mark_accessed(&g, 0, napot, true), napot | 0xc0);

    // ARM: AF = bit 10; a write to a DBM page clears AP[2] (bit 7).
    let g = geom("arm64-4k-48");
    let clean = 0x0068_0000_4000_0bc3; // writable-clean (AP = 11, DBM), AF clear
    assert_eq!(mark_accessed(&g, 0, clean, false) ^ clean, 0x400);
    assert_eq!(mark_accessed(&g, 0, clean, true), 0x0068_0000_4000_0f43);
    let ro = 0x0060_0000_4000_0bc3; // read-only: no DBM
    assert_eq!(mark_accessed(&g, 0, ro, true) ^ ro, 0x400);
    assert_eq!(
        mark_accessed(&g, 1, 0x0048_0000_4020_0301, true),
        0x0048_0000_4020_0701
    );
}

// ---------------------------------------------------------------- properties

/// The attributes an architecture can represent on a leaf.
fn legal(arch: Arch, mut a: Attrs) -> Attrs {
    let p = a.perms;
    let ok = match arch {
        // x86 present pages are always readable.
        Arch::X86_64 => p.read,
        // RISC-V: a leaf needs R or X, and W needs R.
        Arch::RiscV => p.read || (p.exec && !p.write),
        // ARM stage 1: readable, except the EL0 execute-only page
        // (AP[1] = 0 with UXN = 0).
        Arch::Arm64 => p.read || (p.user && p.exec && !p.write),
    };
    if !ok {
        a.perms.read = true;
    }
    a
}

fn any_attrs() -> impl Strategy<Value = Attrs> {
    (any::<[bool; 7]>(), 0..3u8).prop_map(|(b, m)| Attrs {
        perms: perms(b[0], b[1], b[2], b[3]),
        global: b[4],
        accessed: b[5],
        dirty: b[6],
        mem_type: [MemType::Normal, MemType::NonCacheable, MemType::Device][m as usize],
    })
}

/// Every entry kind legal at `level` of `g`, from a random address and attributes.
fn legal_entries(g: &Geometry, level: usize, addr: u64, a: Attrs) -> Vec<Entry> {
    let below_oa = addr & ((1u64 << g.oa_bits()) - 1);
    let spec = g.level(level);
    let mut v = vec![Entry::Invalid];
    if level > 0 {
        v.push(Entry::Table {
            pa: below_oa & !(g.table_bytes() - 1),
        });
    }
    if spec.leaf {
        let a = legal(g.arch(), a);
        v.push(leaf(below_oa & !(g.entry_size(level) - 1), a));
        if spec.contig != 0 {
            // ARM entries of a run keep their own address; a NAPOT PTE holds
            // the run's base.
            let align = match g.arch() {
                Arch::RiscV => g.entry_size(level) * u64::from(spec.contig),
                _ => g.entry_size(level),
            };
            v.push(contig_leaf(below_oa & !(align - 1), a));
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// decode(encode(e)) == e for every preset, level, legal entry kind and
    /// every word of a software-page group.
    #[test]
    fn round_trip_every_preset_and_level(addr in any::<u64>(), a in any_attrs()) {
        for g in presets() {
            for level in 0..g.num_levels() {
                for e in legal_entries(&g, level, addr, a) {
                    for j in 0..g.hw_words_per_entry() {
                        let w = encode_group_word(&g, level, &e, j);
                        prop_assert_eq!(
                            decode(&g, level, w), Ok(e),
                            "{} level {} word {} = {:#018x}", g.name(), level, j, w
                        );
                    }
                    prop_assert_eq!(encode(&g, level, &e), encode_group_word(&g, level, &e, 0));
                }
            }
        }
    }

    /// Each codec's `representable` agrees with the manuals' rules above.
    #[test]
    fn representable_matches_the_manuals(a in any_attrs()) {
        prop_assert_eq!(pt::entry::x86::representable(&a), legal(Arch::X86_64, a) == a);
        prop_assert_eq!(pt::entry::riscv::representable(&a), legal(Arch::RiscV, a) == a);
        prop_assert_eq!(pt::entry::arm64::representable(&a), legal(Arch::Arm64, a) == a);
    }

    /// Any page of a 64 KiB Svnapot run encodes the run: decode gives its base.
    #[test]
    fn napot_member_decodes_to_run_base(addr in any::<u64>(), a in any_attrs()) {
        let g = geom("riscv-sv48");
        let pa = addr & ((1u64 << 56) - 1) & !0xfff;
        let a = legal(Arch::RiscV, a);
        let w = encode(&g, 0, &contig_leaf(pa, a));
        prop_assert_eq!(decode(&g, 0, w), Ok(contig_leaf(pa & !0xffff, a)));
        // N set and PPN[3:0] = 1000.
        prop_assert_eq!(w >> 63, 1);
        prop_assert_eq!((w >> 10) & 0xf, 0b1000);
    }

    /// A hardware access turns a clean, unaccessed leaf into an accessed one,
    /// dirty exactly when the access writes; nothing else changes.
    #[test]
    fn mark_accessed_is_an_access(addr in any::<u64>(), a in any_attrs(), write in any::<bool>()) {
        for g in presets() {
            for level in (0..g.num_levels()).filter(|&l| g.level(l).leaf) {
                let mut a = legal(g.arch(), a);
                a.accessed = false;
                a.dirty = false;
                // The walker only writes through writable leaves.
                let write = write && a.perms.write;
                let pa = addr & ((1u64 << g.oa_bits()) - 1) & !(g.entry_size(level) - 1);
                let raw = encode(&g, level, &leaf(pa, a));
                let after = mark_accessed(&g, level, raw, write);
                let want = Attrs { accessed: true, dirty: write, ..a };
                prop_assert_eq!(decode(&g, level, after), Ok(leaf(pa, want)), "{} level {}", g.name(), level);
                // Marking is idempotent.
                prop_assert_eq!(mark_accessed(&g, level, after, write), after);
            }
        }
    }
}

/// The walk's fast path agrees with the full decoder on every word of
/// every preset: random words and real table words alike.
#[test]
fn table_pa_agrees_with_decode() {
    use pt::entry::{decode, table_pa};
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for g in pt::geometry::presets() {
        for level in 0..g.num_levels() {
            for i in 0..20_000u64 {
                xorshift(&mut x);
                // Mix fully random words with table-like ones.
                let raw = match i % 4 {
                    0 => x,
                    1 => (x & 0x0000_ffff_ffff_f000) | 0x67,
                    2 => (x & 0x003f_ffff_ffff_fc00) | 1,
                    _ => (x & 0x0000_ffff_ffff_f000) | 3,
                };
                let want = match decode(&g, level, raw) {
                    Ok(pt::Entry::Table { pa }) => Some(pa),
                    _ => None,
                };
                assert_eq!(
                    table_pa(&g, level, raw),
                    want,
                    "{} level {level} {raw:#x}",
                    g.name()
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Where a level's `LeafFields` accept a word, the full decoder reads the
    /// same leaf from it: plain, readable, normal memory, with the write,
    /// user, accessed and dirty bits and the output address the fields name.
    /// Checked on encoded leaves of every preset (the fields must accept
    /// those of normal memory) with random bits flipped (they must never
    /// accept a word the decoder reads otherwise).
    #[test]
    fn leaf_fields_read_what_decode_reads(
        addr in any::<u64>(), a in any_attrs(), flips in any::<[u64; 4]>(),
    ) {
        for g in presets() {
            for level in 0..g.num_levels() {
                let Some(f) = pt::entry::leaf_fields(&g, level) else {
                    prop_assert!(g.arch() == Arch::Arm64 || !g.level(level).leaf);
                    continue;
                };
                let size = g.entry_size(level);
                let pa = addr & ((1u64 << g.oa_bits()) - 1) & !(size - 1);
                let a = legal(g.arch(), a);
                let word = encode(&g, level, &leaf(pa, a));
                let plain = a.mem_type == MemType::Normal && a.perms.read;
                prop_assert_eq!(
                    word & f.mask == f.value, plain,
                    "{} level {} {:#018x}", g.name(), level, word
                );
                // A single bit, a few bits, many bits flipped.
                let sparse = flips[1] & flips[2] & flips[3];
                for raw in [word, word ^ (1 << (flips[0] % 64)), word ^ sparse, word ^ flips[1]] {
                    if raw & f.mask != f.value {
                        continue;
                    }
                    let Ok(Entry::Leaf { pa, attrs, contiguous }) = decode(&g, level, raw) else {
                        return Err(TestCaseError::fail(format!(
                            "{} level {level} {raw:#018x}: fields accept a non-leaf", g.name()
                        )));
                    };
                    let got = (
                        ((raw & f.addr) << f.addr_shift) & !(size - 1),
                        raw & f.write != 0,
                        raw & f.user != 0,
                        raw & f.accessed != 0,
                        raw & f.dirty != 0,
                    );
                    let want = (pa, attrs.perms.write, attrs.perms.user, attrs.accessed, attrs.dirty);
                    prop_assert_eq!(got, want, "{} level {} {:#018x}", g.name(), level, raw);
                    prop_assert!(!contiguous && attrs.perms.read && attrs.mem_type == MemType::Normal);
                }
            }
        }
    }
}

/// The walk's table fields accept exactly the words `table_pa` accepts and
/// find the same next table, on every level of every preset.
#[test]
fn table_fields_agree_with_table_pa() {
    use pt::entry::{table_fields, table_pa};
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for g in presets() {
        for level in 0..g.num_levels() {
            let f = table_fields(&g, level);
            let mut accepted = 0;
            for i in 0..20_000u64 {
                xorshift(&mut x);
                // Random words, and words that pass the test with random
                // address and flag bits.
                let raw = match i % 2 {
                    0 => x,
                    _ => (x & !f.mask) | f.value,
                };
                let want = table_pa(&g, level, raw);
                let got = (raw & f.mask == f.value).then(|| f.next_table(raw));
                assert_eq!(got, want, "{} level {level} {raw:#018x}", g.name());
                accepted += usize::from(got.is_some());
            }
            assert_eq!(accepted > 0, level > 0, "{} level {level}", g.name());
        }
    }
}
