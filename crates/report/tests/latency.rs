//! The funclatency rendering against the seed's own output.

use report::latency::render_log2;
use workload::result::LatencyHistogram;

#[test]
fn reproduces_the_seeds_four_level_histogram() {
    // Bucket counts, total and count as printed in the 5-level seed (4-level run).
    let h = LatencyHistogram {
        buckets: vec![
            0, 0, 0, 0, 0, 0, 0, 82, 95337189, 84564013, 17892326, 785823, 29906, 25789, 1784, 0,
            1, 2,
        ],
        count: 198690342,
        sum_ns: 125302193687,
        p50_ns: 536,
        p99_ns: 1500,
        p999_ns: 3000,
        max_ns: 200000,
    };
    // Copied from the seed, byte for byte.
    let expected = "     nsecs               : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 0        |                                        |
        64 -> 127        : 0        |                                        |
       128 -> 255        : 82       |                                        |
       256 -> 511        : 95337189 |****************************************|
       512 -> 1023       : 84564013 |***********************************     |
      1024 -> 2047       : 17892326 |*******                                 |
      2048 -> 4095       : 785823   |                                        |
      4096 -> 8191       : 29906    |                                        |
      8192 -> 16383      : 25789    |                                        |
     16384 -> 32767      : 1784     |                                        |
     32768 -> 65535      : 0        |                                        |
     65536 -> 131071     : 1        |                                        |
    131072 -> 262143     : 2        |                                        |

avg = 630 nsecs, total: 125302193687 nsecs, count: 198690342
";
    let out = render_log2(&h, "nsecs");
    assert!(out.starts_with(expected), "{out}");
    assert!(out
        .ends_with("p50 = 536 nsecs, p99 = 1500 nsecs, p99.9 = 3000 nsecs, max = 200000 nsecs\n"));
}

#[test]
fn wide_counts_widen_the_column_and_keep_bars_aligned() {
    let h = LatencyHistogram {
        buckets: vec![5, 12345678901],
        count: 12345678906,
        sum_ns: 12345678906,
        ..Default::default()
    };
    let out = render_log2(&h, "nsecs");
    let bars: Vec<usize> = out
        .lines()
        .take(3)
        .map(|l| l.find('|').unwrap_or(usize::MAX))
        .collect();
    // The header's "distribution" starts where the bars' first '|' + 1 is.
    let header = out.lines().next().unwrap();
    assert_eq!(header.find("distribution").unwrap(), bars[1] + 1, "{out}");
    assert_eq!(bars[1], bars[2]);
}

#[test]
fn an_empty_histogram_says_so() {
    assert_eq!(
        render_log2(&LatencyHistogram::default(), "nsecs"),
        "no nsecs recorded\n"
    );
}
