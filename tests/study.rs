//! `ptlab study --quick` end to end: the report's structure.

use serde_json::Value;
use std::process::Command;

#[test]
fn quick_study_writes_a_complete_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args(["study", "--quick", "--out"])
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    let study: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("study.json")).unwrap())
            .unwrap();
    let sections = study["sections"].as_array().unwrap();
    let ids: Vec<&str> = sections.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "five-level",
            "riscv-64k",
            "split-pmd",
            "empty-tables",
            "hazards"
        ]
    );
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    for s in sections {
        let title = s["title"].as_str().unwrap();
        assert!(
            html.contains(&report::html::escape(title)),
            "{title} missing from the page"
        );
        for key in ["question", "method", "seed"] {
            assert!(!s[key].as_str().unwrap().is_empty(), "{title}: no {key}");
        }
        let findings = s["findings"].as_array().unwrap();
        assert!(!findings.is_empty(), "{title}: no finding");
        for f in findings {
            let f = f.as_str().unwrap();
            assert!(
                f.chars().any(|c| c.is_ascii_digit()),
                "a finding without a number: {f}"
            );
            assert!(
                summary.contains(&f[..f.len().min(40)]),
                "finding not in the summary: {f}"
            );
        }
        assert!(
            !s["tables"].as_array().unwrap().is_empty(),
            "{title}: no table"
        );
    }
    // Every chart is inline SVG; nothing is loaded from elsewhere.
    let charts: usize = sections
        .iter()
        .map(|s| s["charts"].as_array().unwrap().len())
        .sum();
    assert!(charts >= 6, "{charts} charts");
    assert_eq!(html.matches("<svg").count(), charts);
    // (The SVG namespace is a name, not a load.)
    let loads = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for external in ["<script", "http://", "https://", "<link", "src="] {
        assert!(!loads.contains(external), "the page has {external}");
    }
    // The model's reclaim agrees with this kernel where the study compares them.
    let empty = &sections[3]["figures"]["whole_vmpte_kb"];
    assert_eq!(empty[0], empty[2], "kernel and model VmPTE after touching");
    assert!(study["host"].is_object());
}
