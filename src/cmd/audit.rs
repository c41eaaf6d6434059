//! `ptlab audit`: this host's virtual-memory latency hazards.

use super::print_json;
use crate::fail::CmdResult;
use crate::out::out;
use std::process::ExitCode;

pub fn run(json: bool, fast: bool) -> CmdResult {
    let opts = if fast {
        host::AuditOptions {
            tlb_sample: std::time::Duration::from_millis(100),
            experiments: false,
        }
    } else {
        host::AuditOptions::default()
    };
    let audit = host::audit_with(&opts);
    if json {
        return print_json(&audit);
    }
    let values: Vec<String> = audit.items.iter().map(|i| value_text(&i.value)).collect();
    let statuses: Vec<String> = audit
        .items
        .iter()
        .map(|i| {
            serde_json::to_value(i.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    let rows: Vec<report::views::AuditRow> = audit
        .items
        .iter()
        .zip(&values)
        .zip(&statuses)
        .map(|((i, v), s)| report::views::AuditRow {
            id: &i.id,
            status: s,
            value: v,
            why: &i.why,
            fix: &i.fix,
        })
        .collect();
    out!("{}", report::views::audit_table(&rows).render())?;
    Ok(ExitCode::SUCCESS)
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "unavailable".into(),
        other => other.to_string(),
    }
}
