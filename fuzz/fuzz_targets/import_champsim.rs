//! Feeds arbitrary bytes to the ChampSim importer as decompressed records
//! (standard and CloudSuite layouts) and to the region inference: no
//! panic; a cut record is an error with its byte offset on one line;
//! every record is one fetch and its accesses.
//!
//! Run: `cargo +nightly fuzz run import_champsim`.

#![no_main]

use import::{champsim, infer::PageSet, Access};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    for layout in [champsim::STANDARD, champsim::CLOUDSUITE] {
        let mut pages = PageSet::default();
        let mut n = 0u64;
        let r = champsim::read(
            &mut &data[..],
            layout,
            Path::new("fuzz"),
            &mut |a: Access| {
                pages.insert(a.addr / 4096);
                n += 1;
            },
        );
        match r {
            Ok(records) => {
                assert_eq!(records, (data.len() / layout.size) as u64);
                // Each record: its fetch, then at most its loads and stores.
                assert!(n >= records && n <= records * (1 + layout.loads.1 + layout.stores.1) as u64);
                let regions = pages.regions();
                for w in regions.windows(2) {
                    assert!(w[0].1 <= w[1].0);
                }
            }
            Err(e) => {
                let line = e.to_string();
                assert!(!line.contains('\n'), "{line:?}");
                assert_ne!(data.len() % layout.size, 0);
            }
        }
    }
});
