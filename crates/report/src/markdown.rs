//! Markdown export of a [`Table`]: a GitHub-flavoured pipe table with the same
//! text people see in the terminal (human units, intervals), the title as a
//! heading and the notes as a paragraph under it. Numbers align right.
//!
//! Invariant: a cell never breaks the table: `|` is escaped and line breaks
//! become spaces.

use crate::table::{Align, Table};

impl Table {
    /// The table as Markdown (see the module documentation).
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if let Some(t) = self.title() {
            out.push_str(&format!("### {}\n\n", escape(t)));
        }
        let headers: Vec<String> = self.columns().iter().map(|c| escape(&c.title())).collect();
        out.push_str(&row(&headers));
        let rule: Vec<String> = (0..self.columns().len())
            .map(|c| match self.alignment(c) {
                Align::Right => "---:".to_string(),
                Align::Left => "---".to_string(),
            })
            .collect();
        out.push_str(&row(&rule));
        for r in self.rows() {
            let cells: Vec<String> = r.iter().map(|c| escape(&c.display())).collect();
            out.push_str(&row(&cells));
        }
        for n in self.notes() {
            out.push_str(&format!("\n{}\n", escape(n)));
        }
        out
    }
}

fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// `s` safe inside a table cell.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use crate::{Cell, Table};

    #[test]
    fn a_table_as_markdown() {
        let mut t = Table::new(["counter", "value"]).with_title("at mark \"end\"");
        t.push_row([Cell::text("a|b"), Cell::int(16384)]);
        t.push_note("3 runs");
        assert_eq!(
            t.to_markdown(),
            "### at mark \"end\"\n\n| counter | value |\n| --- | ---: |\n| a\\|b | 16,384 |\n\n3 runs\n"
        );
    }
}
