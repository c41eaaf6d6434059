//! The study as a self-contained HTML page (charts inline as SVG) and as a
//! terminal summary with one finding per question.

use super::{Study, TableCell, TableData};
use report::html::Page;
use report::{Align, Column, Table};

/// Text longer than this in a column wraps (an audit's "why" and "fix").
const WRAP: usize = 48;

/// A study table for the page: a column of figures right-aligned and kept
/// on one line (a number never breaks mid-figure), a column of long text
/// wrapped.
fn to_table(t: &TableData) -> Table {
    let columns = t
        .headers
        .iter()
        .enumerate()
        .map(|(c, h)| {
            let cells = || t.rows.iter().filter_map(|r| r.get(c));
            let col = Column::new(h.clone());
            if cells().all(|x| matches!(x, TableCell::Figure(_))) && cells().next().is_some() {
                col.align(Align::Right)
            } else if cells().any(|x| x.text().chars().count() > WRAP) {
                col.wrap(WRAP)
            } else {
                col
            }
        })
        .collect();
    let mut table = Table::with_columns(columns).with_title(t.title.clone());
    for r in &t.rows {
        table.push_row(r.iter().map(|c| report::Cell::text(c.text())));
    }
    table
}

/// The page: one section per question with its question, method, the
/// seed's figure, our findings, tables and charts.
pub fn html(study: &Study) -> String {
    let mut page = Page::new("ptlab study: what page tables cost on this machine");
    let h = &study.host;
    page.paragraph(format!(
        "Host: {} ({} CPUs), Linux {}, {}-bit virtual addresses, THP {}, {}. {} measured runs \
         and {} warm-up runs in {:.0} s{}.",
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
        study.warmup_runs,
        study.elapsed_s,
        if study.quick { " (--quick)" } else { "" }
    ));
    for line in header_lines(study) {
        page.paragraph(line);
    }
    for s in &study.sections {
        let sec = page.section(s.title.clone());
        sec.paragraph(format!("Question. {}", s.question));
        sec.answer(format!("{VERDICT}{}", s.verdict.text));
        if !s.findings.is_empty() {
            sec.paragraph("Evidence.");
            sec.list(s.findings.iter().cloned());
        }
        for c in &s.charts {
            sec.figure(&c.svg, Some(&c.caption));
        }
        for t in &s.tables {
            sec.table(&to_table(t));
        }
        sec.paragraph(format!("Method. {}", s.method));
        sec.paragraph(format!("The seed's figure. {}", s.seed));
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

/// What the verdict's paragraph starts with.
pub const VERDICT: &str = "Answer for this host. ";

/// The terminal summary: the header's cost files and load, then one block
/// per question, its verdict (the evidence is in the page).
pub fn summary(study: &Study) -> String {
    let mut out = String::new();
    for line in header_lines(study) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    for (i, s) in study.sections.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", i + 1, s.title));
        out.push_str(&format!("   {}\n", s.verdict.text));
        for n in &s.notes {
            out.push_str(&format!("   (note: {n})\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::figure::{FigUnit, Figure};
    use super::super::{run_selected, StudyOptions};
    use super::*;
    use report::html::escape;
    use serde_json::Value;

    /// A figure of study.json: a number (or null) with its unit, whose
    /// text is that number written in that unit, with its interval.
    fn check_figure(where_: &str, j: &Value) -> Figure {
        let f: Figure = serde_json::from_value(j.clone())
            .unwrap_or_else(|e| panic!("{where_}: not a figure ({e}): {j}"));
        let v = f.value.unwrap_or(f64::NAN);
        let mut want = Figure::new(v, f.unit);
        if let (Some(lo), Some(hi)) = (f.low, f.high) {
            want = want.with_interval(lo, hi);
        }
        assert_eq!(f.text, want.text, "{where_}: {j}");
        f
    }

    #[test]
    fn every_figure_in_the_page_is_the_same_named_figure_of_study_json() {
        let opts = StudyOptions {
            quick: true,
            production: false,
            trace: None,
        };
        let only = ["riscv-64k".to_string(), "multi-fault".to_string()];
        let study = run_selected(opts, None, &only, &mut |_, _| {}).expect("the model runs");
        let page = html(&study);
        let json = serde_json::to_value(&study).unwrap();
        assert_eq!(study.sections.len(), 2);
        for (i, s) in study.sections.iter().enumerate() {
            let js = &json["sections"][i];
            // The verdict opens the section (after its question), at most 60
            // words, with a time or a percent for this host.
            let para = format!(
                "<p class=\"answer\">{}</p>",
                escape(&format!("{VERDICT}{}", s.verdict.text))
            );
            let h2 = page
                .find(&format!("<h2>{}</h2>", escape(&s.title)))
                .unwrap();
            let at = page[h2..].find(&para).map(|p| h2 + p);
            let evidence = page[h2..].find("<p>Evidence.</p>").map(|p| h2 + p);
            assert!(at.is_some(), "{}: no verdict paragraph", s.id);
            assert!(at < evidence, "{}: the verdict comes first", s.id);
            assert!(s.verdict.words() <= 60, "{}: {}", s.id, s.verdict.text);
            assert!(
                s.verdict.figures.values().any(|f| f.value.is_some()
                    && matches!(f.unit, FigUnit::Ns | FigUnit::Percent | FigUnit::Share)),
                "{}: no time or percent in {:?}",
                s.id,
                s.verdict.figures
            );
            assert_eq!(js["verdict"]["text"], s.verdict.text.as_str());
            for (name, f) in &s.verdict.figures {
                let jf = &js["verdict"]["figures"][name];
                let back = check_figure(&format!("{} verdict {name}", s.id), jf);
                assert_eq!(&back, f, "{} {name}", s.id);
                assert!(
                    para.contains(&escape(&f.text)),
                    "{} {name}: {} not in {para}",
                    s.id,
                    f.text
                );
            }
            // Every numeric cell of every table: a figure in study.json,
            // the same text in a right-aligned, unbroken cell of the page.
            let mut figures = 0;
            for (t, table) in js["tables"].as_array().unwrap().iter().enumerate() {
                for (r, row) in table["rows"].as_array().unwrap().iter().enumerate() {
                    for (c, cell) in row.as_array().unwrap().iter().enumerate() {
                        if cell.is_string() {
                            continue;
                        }
                        let f = check_figure(&format!("{} table {t} [{r}][{c}]", s.id), cell);
                        // The interval, if any, on its own line below.
                        let td = match f.text.split_once(" [") {
                            Some((v, i)) => format!(
                                "<td class=\"num\">{}<span class=\"ci\">[{}</span></td>",
                                escape(v),
                                escape(i)
                            ),
                            None => format!("<td class=\"num\">{}</td>", escape(&f.text)),
                        };
                        assert!(
                            page.contains(&td),
                            "{} table {t}: {td} not in the page",
                            s.id
                        );
                        figures += 1;
                    }
                }
            }
            assert!(figures > 0, "{}: its tables hold figures", s.id);
        }
        // Numbers never wrap mid-figure.
        assert!(page.contains(".num{text-align:right;white-space:nowrap}"));
    }
}
