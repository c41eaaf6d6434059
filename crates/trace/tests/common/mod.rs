//! What the trace crate's test files share.

use trace::TraceError;

/// Every cut of `bytes` short of its end is refused by `read` with a format
/// error at or before the cut, saying the file is cut short (or, before its
/// magic is whole, that it is no ptlab trace).
pub fn assert_every_cut_refused<T: std::fmt::Debug>(
    bytes: &[u8],
    read: impl Fn(&[u8]) -> Result<T, TraceError>,
) {
    for cut in 0..bytes.len() {
        match read(&bytes[..cut]) {
            Err(TraceError::Format { offset, what, .. }) => {
                assert!(offset <= cut as u64, "cut {cut}: offset {offset}");
                assert!(
                    what.contains("cut short") || what.contains("not a ptlab trace"),
                    "cut {cut}: {what}"
                );
            }
            other => panic!("cut at {cut} of {}: {other:?}", bytes.len()),
        }
    }
}
