//! `ptlab import` as a user meets it: a real valgrind lackey run and a
//! generated ChampSim trace imported and replayed; bad input refused with
//! exit status 2 and its place (file:line, byte offset).

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn bad_input(args: &[&str], needle: &str) {
    let out = ptlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

fn replay_accesses(trace: &Path) -> (i64, i64) {
    let r = ptlab(&["replay", trace.to_str().unwrap(), "--json"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    let c = &v["marks"].as_array().unwrap().last().unwrap()["counters"];
    (
        c["accesses"].as_i64().unwrap(),
        c["minor_faults"].as_i64().unwrap(),
    )
}

fn only(dir: &Path, names: &[&str]) {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, names, "files in {}", dir.display());
}

#[test]
fn a_real_lackey_run_imports_with_every_access_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lackey.txt");
    let r = Command::new("valgrind")
        .args([
            "--tool=lackey",
            "--trace-mem=yes",
            &format!("--log-file={}", log.display()),
            "true",
        ])
        .output();
    let Ok(r) = r else {
        panic!("valgrind is needed for this test (apt-get install valgrind)");
    };
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // The test's own count of the log's accesses: L and S one, M two.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut want = 0i64;
    for l in text.lines() {
        if l.starts_with(" L ") || l.starts_with(" S ") {
            want += 1;
        } else if l.starts_with(" M ") {
            want += 2;
        }
    }
    assert!(want > 10_000, "{want}");
    let out = dir.path().join("true.ptl");
    let r = ptlab(&[
        "import",
        "lackey",
        log.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains(&format!("{want} accesses")), "{err}");
    let (accesses, faults) = replay_accesses(&out);
    assert!(accesses >= want);
    assert!(faults > 0);

    // A bad line: file:line.
    let bad = dir.path().join("bad.txt");
    let mut lines: Vec<&str> = text.lines().take(40).collect();
    lines.push(" L zz12,4");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    bad_input(
        &["import", "lackey", bad.to_str().unwrap()],
        &format!("{}:41: address", bad.display()),
    );
    only(dir.path(), &["bad.txt", "lackey.txt", "true.ptl"]);
}

/// One ChampSim input_instr record.
fn record(ip: u64, loads: &[u64], stores: &[u64]) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in stores.iter().enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().enumerate() {
        r[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    r
}

fn xz(path: &Path, bytes: &[u8]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = xz2::write::XzEncoder::new(f, 1);
    z.write_all(bytes).unwrap();
    z.finish().unwrap();
}

#[test]
fn a_generated_champsim_trace_imports_with_regions_by_gaps() {
    let dir = tempfile::tempdir().unwrap();
    // Three areas far apart: a 64-page array, a stack, a heap 1 GiB away;
    // inside each, gaps under 2 MiB.
    let (array, stack, heap) = (
        0x40_0000u64,
        0x7ff0_0000_0000u64,
        0x4000_0000u64 + 0x40_0000,
    );
    let mut bytes = Vec::new();
    let (mut loads, mut stores) = (0i64, 0i64);
    for i in 0..5000u64 {
        let a = array + (i * 4096 * 7) % (64 * 4096);
        let s = stack - 8 * (i % 300);
        let h = heap + (i % 3) * (1 << 20);
        let rec = match i % 3 {
            0 => record(0x401000 + i, &[a, s], &[h]),
            1 => record(0x401000 + i, &[h], &[]),
            _ => record(0x401000 + i, &[], &[s, a]),
        };
        loads += rec[32..]
            .chunks(8)
            .filter(|c| c.iter().any(|&b| b != 0))
            .count() as i64;
        stores += rec[16..32]
            .chunks(8)
            .filter(|c| c.iter().any(|&b| b != 0))
            .count() as i64;
        bytes.extend_from_slice(&rec);
    }
    let input = dir.path().join("gen.champsimtrace.xz");
    xz(&input, &bytes);
    let out = dir.path().join("gen.ptl");
    let r = ptlab(&[
        "import",
        "champsim",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains(&format!("({loads} loads, {stores} stores), 3 regions")),
        "{err}"
    );
    let (accesses, faults) = replay_accesses(&out);
    assert!(accesses >= loads + stores);
    // At least one fault per touched page: 64 array pages, the stack's 2
    // (2,400 bytes below a page boundary), the heap's 3.
    assert!(faults >= 64 + 2 + 3, "{faults}");

    // Cut inside the 5,000th record: the offset where that record starts.
    let cut = dir.path().join("cut.xz");
    xz(&cut, &bytes[..bytes.len() - 10]);
    bad_input(
        &["import", "champsim", cut.to_str().unwrap()],
        &format!("byte {}: the records end inside a record", 4999 * 64),
    );
    // Not xz at all, whatever its name: read as uncompressed records, of
    // which it holds less than one.
    let junk = dir.path().join("junk.xz");
    std::fs::write(&junk, b"this is not xz").unwrap();
    bad_input(
        &["import", "champsim", junk.to_str().unwrap()],
        "byte 0: the records end inside a record (14 of 64 bytes)",
    );
    // xz that breaks in the middle: where, in the compressed file.
    let broken = dir.path().join("broken.xz");
    xz(&broken, &bytes);
    let mut z = std::fs::read(&broken).unwrap();
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 32] {
        *b ^= 0xA5;
    }
    std::fs::write(&broken, z).unwrap();
    bad_input(
        &["import", "champsim", broken.to_str().unwrap()],
        "not a valid xz stream",
    );
    bad_input(
        &[
            "import",
            "champsim",
            dir.path().join("missing.xz").to_str().unwrap(),
        ],
        "missing.xz",
    );
    only(
        dir.path(),
        &[
            "broken.xz",
            "cut.xz",
            "gen.champsimtrace.xz",
            "gen.ptl",
            "junk.xz",
        ],
    );
}

/// The replay's end counters of `trace` (JSON).
fn end_counters(trace: &Path) -> Value {
    let r = ptlab(&["replay", trace.to_str().unwrap(), "--json"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    v["marks"].as_array().unwrap().last().unwrap()["counters"].clone()
}

#[test]
fn gzip_bzip2_and_uncompressed_traces_import_as_xz_does_told_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for i in 0..20_000u64 {
        let a = 0x7f00_0000_0000 + (i * 4096 * 13) % (512 << 20);
        bytes.extend_from_slice(&record(
            0x401000 + i,
            &[a, 0x7ffd_0000_0000 - 8 * (i % 64)],
            &[a],
        ));
    }
    // Each form under a name that says nothing (or the wrong thing).
    let forms: [(&str, &str, Vec<u8>); 4] = [
        ("a.trace", "xz", {
            let mut z = xz2::write::XzEncoder::new(Vec::new(), 1);
            z.write_all(&bytes).unwrap();
            z.finish().unwrap()
        }),
        ("b.xz", "gzip", {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(&bytes).unwrap();
            z.finish().unwrap()
        }),
        ("c.gz", "bzip2", {
            let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            z.write_all(&bytes).unwrap();
            z.finish().unwrap()
        }),
        ("d.bz2", "uncompressed", bytes.clone()),
    ];
    let mut ends = Vec::new();
    for (name, kind, data) in forms {
        let input = dir.path().join(name);
        std::fs::write(&input, data).unwrap();
        let out = dir.path().join(format!("{name}.ptl"));
        let r = ptlab(&[
            "import",
            "champsim",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!("({kind})"))
                && err.contains("20000 instructions, 60000 accesses (40000 loads, 20000 stores)"),
            "{name}: {err}"
        );
        ends.push(end_counters(&out));
    }
    for e in &ends[1..] {
        assert_eq!(e["accesses"], ends[0]["accesses"]);
        assert_eq!(e["minor_faults"], ends[0]["minor_faults"]);
        assert_eq!(e["tlb_misses"], ends[0]["tlb_misses"]);
    }
    // A corrupt gzip stream: where it fails in the compressed file.
    let mut gz = {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&bytes).unwrap();
        z.finish().unwrap()
    };
    let mid = gz.len() / 2;
    for b in &mut gz[mid..mid + 64] {
        *b ^= 0x5A;
    }
    let bad = dir.path().join("bad.gz");
    std::fs::write(&bad, gz).unwrap();
    bad_input(
        &["import", "champsim", bad.to_str().unwrap()],
        "not a valid gzip stream",
    );
}

#[test]
fn a_cloudsuite_trace_imports_with_its_four_destinations() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for i in 0..3000u64 {
        // 96-byte cloudsuite_instr: destinations at 24, sources at 56.
        let mut r = [0u8; 96];
        r[..8].copy_from_slice(&(0x401000 + i).to_le_bytes());
        let base = 0x5555_0000_0000u64 + (i % 50) * 4096;
        for d in 0..4u64 {
            let o = 24 + 8 * d as usize;
            r[o..o + 8].copy_from_slice(&(base + 8 * d).to_le_bytes());
        }
        let o = 56;
        r[o..o + 8].copy_from_slice(&(base + 64).to_le_bytes());
        r[88..90].copy_from_slice(&[0xff, 0xff]);
        bytes.extend_from_slice(&r);
    }
    let input = dir.path().join("cs.trace.gz");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&bytes).unwrap();
    std::fs::write(&input, z.finish().unwrap()).unwrap();
    let out = dir.path().join("cs.ptl");
    let r = ptlab(&[
        "import",
        "champsim",
        "--cloudsuite",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        // Two regions: the data's and the code's (the ips, fetched).
        err.contains("3000 instructions, 15000 accesses (3000 loads, 12000 stores), 2 regions"),
        "{err}"
    );
    // Read as 64-byte records it is 4,500 of them: not what was written.
    let r = ptlab(&[
        "import",
        "champsim",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("4500 instructions"), "{err}");
}
