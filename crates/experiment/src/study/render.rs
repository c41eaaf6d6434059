//! The study as a self-contained HTML page (charts inline as SVG) and as a
//! terminal summary with one finding per question.

use super::{Study, TableData};
use report::html::Page;
use report::{Column, Table};

fn to_table(t: &TableData) -> Table {
    let mut table = Table::with_columns(
        t.headers
            .iter()
            .map(|h| Column::new(h.clone()).wrap(48))
            .collect(),
    )
    .with_title(t.title.clone());
    for r in &t.rows {
        table.push_row(r.iter().map(|c| report::Cell::text(c.clone())));
    }
    table
}

/// The page: one section per question with its question, method, the
/// seed's figure, our findings, tables and charts.
pub fn html(study: &Study) -> String {
    let mut page = Page::new("ptlab study: what page tables cost on this machine");
    let h = &study.host;
    page.paragraph(format!(
        "Host: {} ({} CPUs), Linux {}, {}-bit virtual addresses, THP {}, {}. {} runs in {:.0} s{}.",
        h.cpu_model.as_deref().unwrap_or("unknown CPU"),
        h.cpus.map_or("?".into(), |c| c.to_string()),
        h.kernel_release.as_deref().unwrap_or("?"),
        h.va_bits.map_or("?".into(), |v| v.to_string()),
        h.thp_enabled.as_deref().unwrap_or("unknown"),
        if h.hypervisor.present == Some(true) {
            "under a hypervisor (every TLB miss is a two-dimensional walk)"
        } else {
            "bare metal"
        },
        study.runs,
        study.elapsed_s,
        if study.quick { " (--quick)" } else { "" }
    ));
    for line in header_lines(study) {
        page.paragraph(line);
    }
    for s in &study.sections {
        let sec = page.section(s.title.clone());
        sec.paragraph(format!("Question. {}", s.question));
        sec.paragraph(format!("Method. {}", s.method));
        sec.paragraph(format!("The seed's figure. {}", s.seed));
        sec.list(s.findings.iter().map(|f| format!("Finding: {f}")));
        for c in &s.charts {
            sec.figure(&c.svg, Some(&c.caption));
        }
        for t in &s.tables {
            sec.table(&to_table(t));
        }
        if !s.notes.is_empty() {
            sec.list(s.notes.iter().map(|n| format!("Note: {n}")));
        }
    }
    page.render()
}

/// The report's header beyond the host: which machine every cost file
/// describes (the model's predicted times are that machine's), the host's
/// load, and the warning when the kernel's figures were taken busy.
fn header_lines(study: &Study) -> Vec<String> {
    let mut lines: Vec<String> = study
        .costs
        .iter()
        .map(|c| format!("Predicted times priced with {}.", c.line()))
        .collect();
    lines.push(study.load.line());
    if let Some(w) = &study.load.warning {
        lines.push(format!("Warning: {w}."));
    }
    lines
}

/// The terminal summary: the header's cost files and load, then one block
/// per question, its findings indented.
pub fn summary(study: &Study) -> String {
    let mut out = String::new();
    for line in header_lines(study) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    for (i, s) in study.sections.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", i + 1, s.title));
        for f in &s.findings {
            out.push_str(&format!("   - {f}\n"));
        }
        for n in &s.notes {
            out.push_str(&format!("   (note: {n})\n"));
        }
    }
    out
}
