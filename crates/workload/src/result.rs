//! What a run produces, whatever the backend: the counters at every mark.
//!
//! Counter names are those of the `counters` registry (documented in
//! `docs/format.md`, "Counters and marks"); every value is the difference
//! from the moment just before the
//! first operation.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counters compared by `ptlab validate` (the registry's compared ones).
pub const COMPARED: &[&str] = counters::COMPARED;

/// Process-wide counters at one moment. Plain counters by name; `pt_pages`
/// (the model's table pages per level name) serializes as a nested object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    #[serde(flatten)]
    pub values: BTreeMap<String, i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pt_pages: BTreeMap<String, i64>,
}

impl Counters {
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).copied()
    }
    pub fn set(&mut self, name: &str, value: i64) {
        self.values.insert(name.to_string(), value);
    }
    /// `self - base`, counter by counter (a counter missing in `base` counts as 0).
    pub fn since(&self, base: &Counters) -> Counters {
        let diff = |a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>| {
            a.iter()
                .map(|(k, v)| (k.clone(), v - b.get(k).copied().unwrap_or(0)))
                .collect()
        };
        Counters {
            values: diff(&self.values, &base.values),
            pt_pages: diff(&self.pt_pages, &base.pt_pages),
        }
    }
}

/// A per-access latency histogram: `buckets[i]` counts accesses that took
/// `[2^i, 2^(i+1))` nanoseconds (bucket 0 also holds 0 ns), like funclatency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// The counters recorded at one mark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub name: String,
    pub counters: Counters,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyHistogram>,
}

/// One run of one workload on one backend: its marks in the order they were
/// reached, the implicit `end` mark last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub marks: Vec<Mark>,
}
