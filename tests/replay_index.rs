//! `ptlab replay` of a trace whose index (format version 2) is cut or
//! corrupt: exit status 2 and one line naming the byte offset; a version-1
//! trace of the same records replays with the same counters.

use std::path::Path;
use std::process::{Command, Output};
use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceWriter};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn write(path: &Path, version: u16) {
    let header = Header {
        source: "test".into(),
        page_size: 4096,
        va_bits: 48,
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &header)
        .unwrap()
        .with_version(version);
    w.push(&Record::Map(MapEvent {
        id: 0,
        size: 1 << 22,
        native: 0x7f00_0000_0000,
        kind: RegionKind::Anon,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags::default(),
        name: String::new(),
    }))
    .unwrap();
    for i in 0..3000u64 {
        w.push_access(0, (i * 4096 * 5 + i) % (1 << 22), i % 3 == 0)
            .unwrap();
    }
    w.finish().unwrap();
}

fn counters_of(out: &Output) -> Vec<serde_json::Value> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut c = m["counters"].clone();
            c.as_object_mut().unwrap().remove("model_wall_ns");
            c
        })
        .collect()
}

#[test]
fn a_cut_or_corrupt_index_exits_2_with_its_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (v1, v2) = (dir.path().join("v1.ptl"), dir.path().join("v2.ptl"));
    write(&v1, 1);
    write(&v2, trace::VERSION);
    let a = counters_of(&ptlab(&["replay", v1.to_str().unwrap(), "--json"]));
    let b = counters_of(&ptlab(&["replay", v2.to_str().unwrap(), "--json"]));
    assert_eq!(a, b);

    let bytes = std::fs::read(&v2).unwrap();
    let at = trace::read_index(&v2).unwrap().unwrap().at;
    let bad = dir.path().join("bad.ptl");
    // Cut inside the index, and a byte of its zstd frame flipped.
    let cut = bytes.len() - 30;
    std::fs::write(&bad, &bytes[..cut]).unwrap();
    let r = ptlab(&["replay", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("byte {cut}")) && err.contains("cut short"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let mut flipped = bytes.clone();
    flipped[at as usize + 20] ^= 0x40;
    std::fs::write(&bad, &flipped).unwrap();
    let r = ptlab(&["replay", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("byte {}", at + 16)) && err.contains("index"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
