//! A log2 latency histogram drawn as text, the way bcc's funclatency prints it:
//! one line per power-of-two bucket with its range, its count and a bar of up to 40
//! stars scaled to the fullest bucket, then the average, total and count.
//!
//! Bucket `i` of a `LatencyHistogram` holds `[2^i, 2^(i+1))`, bucket 0 also 0, so the
//! lines read `0 -> 1`, `2 -> 3`, `4 -> 7`, … up to the last non-empty bucket.

use stats::log2_bucket_bounds;
use workload::result::LatencyHistogram;

/// Width of the bar of the fullest bucket, in stars.
pub const BAR_WIDTH: usize = 40;

/// The histogram as funclatency prints it, with `unit` naming the values (funclatency
/// says `"nsecs"`), followed by a line with the percentiles and maximum. An empty
/// histogram gives a single line saying so.
pub fn render_log2(hist: &LatencyHistogram, unit: &str) -> String {
    // A u64 needs 64 buckets; anything beyond cannot hold a value.
    let usable = &hist.buckets[..hist.buckets.len().min(stats::LOG2_BUCKETS)];
    let Some(last) = usable.iter().rposition(|&c| c > 0) else {
        return format!("no {unit} recorded\n");
    };
    let buckets = &hist.buckets[..=last];
    let top = buckets.iter().copied().max().unwrap_or(0);
    // funclatency's columns are 10 wide for values and 8 for counts; widen them only
    // when a number would not fit, so that the usual output is identical.
    let vw = log2_bucket_bounds(last).1.to_string().len().max(10);
    let cw = top.to_string().len().max(8);
    let mut out = String::new();
    // The header's " : " and "distribution" stand above the rows' " : " and bars.
    out.push_str(&format!(
        "     {unit:<w$} : count{}distribution\n",
        " ".repeat(cw - 3),
        w = 2 * vw + 4 - 5,
    ));
    for (i, &count) in buckets.iter().enumerate() {
        let (low, high) = log2_bucket_bounds(i);
        let stars = (count as u128 * BAR_WIDTH as u128 / top as u128) as usize;
        out.push_str(&format!(
            "{low:>vw$} -> {high:<vw$} : {count:<cw$} |{}{}|\n",
            "*".repeat(stars),
            " ".repeat(BAR_WIDTH - stars),
        ));
    }
    // funclatency's average is an integer division, as here.
    if let Some(avg) = hist.sum_ns.checked_div(hist.count) {
        out.push_str(&format!(
            "\navg = {avg} {unit}, total: {} {unit}, count: {}\n",
            hist.sum_ns, hist.count
        ));
        out.push_str(&format!(
            "p50 = {} {unit}, p99 = {} {unit}, p99.9 = {} {unit}, max = {} {unit}\n",
            hist.p50_ns, hist.p99_ns, hist.p999_ns, hist.max_ns
        ));
    }
    out
}
