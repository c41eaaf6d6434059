//! Feeds arbitrary bytes to the lackey importer: no panic; a bad line is
//! an error naming its line, on one line.
//!
//! Run: `cargo +nightly fuzz run import_lackey -- -dict=import_lackey.dict`.

#![no_main]

use import::lackey;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut n = 0u64;
    match lackey::read(&mut &data[..], Path::new("fuzz.txt"), &mut |_| n += 1) {
        Ok(instructions) => {
            let lines = data.split(|&b| b == b'\n').count() as u64;
            assert!(instructions <= lines && n <= 2 * lines);
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            assert!(line.starts_with("fuzz.txt:"), "{line:?}");
        }
    }
});
