//! Feeds arbitrary text to the cost-file parser and its checks: no panic;
//! every error on one line; an accepted file writes out and parses back
//! to the same figures.
//!
//! Run: `cargo +nightly fuzz run parse_costs -- -dict=parse_costs.dict`
//! (seed it with copies of `../costs/*.toml` in `corpus/parse_costs/`, not
//! with `../costs` itself: libFuzzer writes new inputs into its corpus).

#![no_main]

use costs::CostFile;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.toml");
    match CostFile::parse(text, path) {
        Ok(f) => {
            if let Err(e) = f.validate(path) {
                let line = e.to_string();
                assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
                return;
            }
            let again = CostFile::parse(&f.to_toml(), path).expect("a written cost file parses");
            assert_eq!(again.to_toml(), f.to_toml());
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
        }
    }
});
