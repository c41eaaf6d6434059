//! One self-contained HTML page: headings, paragraphs, tables, inline SVG charts and
//! preformatted text, with a small inline stylesheet and nothing external (no scripts,
//! no web fonts, no links to other hosts), so the page opens offline and anywhere.
//!
//! Invariants:
//! - All text is escaped ([`escape`]): `&`, `<`, `>`, `"` and `'`, in content and in
//!   attributes alike. Only SVG handed to [`Section::figure`] is inserted as markup,
//!   so it must come from a trusted producer (this crate's [`crate::chart`]).
//! - Output is deterministic: the same page gives the same bytes.
//! - A table with wrapped columns ([`crate::Column::wrap`]) is laid out at the
//!   page's width with fixed column widths in proportion to their wrap widths, and
//!   its cells break anywhere a long word would overflow, so that every column
//!   (an audit's "why" and "fix" too) stays on screen at 1,280 px.
//! - A text cell holding a JSON object (an audit value) is shown as one
//!   `key: value` line per member, not as one unbroken line of JSON.

use crate::table::{Align, Cell, Table};

/// `text` with the five HTML-significant characters replaced by references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A piece of a section.
#[derive(Debug, Clone, PartialEq)]
enum Block {
    Paragraph(String),
    Answer(String),
    Figure {
        svg: String,
        caption: Option<String>,
    },
    Table(Table),
    Pre(String),
    List(Vec<String>),
}

/// A section: a heading and its blocks, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    heading: String,
    blocks: Vec<Block>,
}

impl Section {
    /// An empty section.
    pub fn new(heading: impl Into<String>) -> Section {
        Section {
            heading: heading.into(),
            blocks: Vec::new(),
        }
    }

    /// Adds a paragraph of plain text (escaped).
    pub fn paragraph(&mut self, text: impl Into<String>) -> &mut Section {
        self.blocks.push(Block::Paragraph(text.into()));
        self
    }

    /// Adds a paragraph set apart as the section's answer (escaped).
    pub fn answer(&mut self, text: impl Into<String>) -> &mut Section {
        self.blocks.push(Block::Answer(text.into()));
        self
    }

    /// Adds an SVG chart inline, with an optional caption (escaped). An XML
    /// declaration or doctype before the `<svg` element is dropped, since inline SVG
    /// must not carry one. The SVG itself is trusted markup (see the module docs).
    pub fn figure(&mut self, svg: &str, caption: Option<&str>) -> &mut Section {
        let start = svg.find("<svg").unwrap_or(0);
        self.blocks.push(Block::Figure {
            svg: svg[start..].trim_end().to_string(),
            caption: caption.map(str::to_string),
        });
        self
    }

    /// Adds a table (its title becomes the caption, its notes follow it).
    pub fn table(&mut self, table: &Table) -> &mut Section {
        self.blocks.push(Block::Table(table.clone()));
        self
    }

    /// Adds preformatted text (escaped), e.g. a funclatency histogram.
    pub fn preformatted(&mut self, text: impl Into<String>) -> &mut Section {
        self.blocks.push(Block::Pre(text.into()));
        self
    }

    /// Adds a bulleted list of plain-text items.
    pub fn list<I, S>(&mut self, items: I) -> &mut Section
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.blocks
            .push(Block::List(items.into_iter().map(Into::into).collect()));
        self
    }
}

/// A page: a title, introductory paragraphs, sections.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    title: String,
    intro: Vec<String>,
    sections: Vec<Section>,
}

/// Text keeps a readable 60rem column; tables and charts may use the page's
/// 76rem (a dozen numeric columns fit at 1,280 px), and a table wider than
/// the window scrolls in its own box ([`table_html`]), so the page itself
/// never scrolls sideways (checked in headless Chromium at 1,280 and 800 px).
const STYLE: &str =
    "body{font-family:system-ui,sans-serif;max-width:76rem;margin:2rem auto;padding:0 1rem;\
color:#222;line-height:1.45}body>p,section>p,section>ul,h1,h2,nav{max-width:60rem}\
h1{font-size:1.8rem}h2{font-size:1.35rem;margin-top:2.2rem;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:1rem 0;font-variant-numeric:tabular-nums;font-size:.8rem}\
caption{text-align:left;font-weight:bold;padding-bottom:.3rem}\
th,td{padding:.2rem .4rem;border-bottom:1px solid #ddd;vertical-align:top}\
th{text-align:left;background:#f4f4f4}.num{text-align:right;white-space:nowrap}\
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.9rem;color:#555}\
pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;font-size:.85rem}\
.note{font-size:.9rem;color:#555}nav ol{columns:2}\
table.wrap{width:100%;table-layout:fixed}table.wrap td,table.wrap th{overflow-wrap:anywhere}\
.kv{display:block;font-family:ui-monospace,monospace;font-size:.85rem}\
.answer{border-left:4px solid #0072B2;background:#eef5fb;padding:.5rem .8rem;font-weight:600}\
.ci{display:block;font-size:.72rem;color:#555}th.num{white-space:normal}\
.scroll{max-width:100%;overflow-x:auto;margin:1rem 0}.scroll>table{margin:0}\
p,li,figcaption,caption{overflow-wrap:break-word}";

impl Page {
    /// An empty page.
    pub fn new(title: impl Into<String>) -> Page {
        Page {
            title: title.into(),
            intro: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// A paragraph under the page title, before the sections.
    pub fn paragraph(&mut self, text: impl Into<String>) -> &mut Page {
        self.intro.push(text.into());
        self
    }

    /// Starts a new section and returns it to be filled.
    pub fn section(&mut self, heading: impl Into<String>) -> &mut Section {
        self.sections.push(Section::new(heading));
        self.sections.last_mut().expect("just pushed")
    }

    /// Appends a section built elsewhere.
    pub fn push_section(&mut self, section: Section) -> &mut Page {
        self.sections.push(section);
        self
    }

    /// The page as HTML5. With two sections or more, a table of contents links to
    /// them (links inside the page only).
    pub fn render(&self) -> String {
        let mut o = String::new();
        o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        o.push_str(&format!(
            "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
            escape(&self.title)
        ));
        o.push_str(&format!("<h1>{}</h1>\n", escape(&self.title)));
        for p in &self.intro {
            o.push_str(&format!("<p>{}</p>\n", escape(p)));
        }
        if self.sections.len() >= 2 {
            o.push_str("<nav><ol>\n");
            for (i, s) in self.sections.iter().enumerate() {
                o.push_str(&format!(
                    "<li><a href=\"#s{}\">{}</a></li>\n",
                    i + 1,
                    escape(&s.heading)
                ));
            }
            o.push_str("</ol></nav>\n");
        }
        for (i, s) in self.sections.iter().enumerate() {
            o.push_str(&format!(
                "<section id=\"s{}\">\n<h2>{}</h2>\n",
                i + 1,
                escape(&s.heading)
            ));
            for b in &s.blocks {
                render_block(&mut o, b);
            }
            o.push_str("</section>\n");
        }
        o.push_str("</body>\n</html>\n");
        o
    }
}

fn render_block(o: &mut String, b: &Block) {
    match b {
        Block::Paragraph(t) => o.push_str(&format!("<p>{}</p>\n", escape(t))),
        Block::Answer(t) => o.push_str(&format!("<p class=\"answer\">{}</p>\n", escape(t))),
        Block::Figure { svg, caption } => {
            o.push_str("<figure>\n");
            o.push_str(svg);
            o.push('\n');
            if let Some(c) = caption {
                o.push_str(&format!("<figcaption>{}</figcaption>\n", escape(c)));
            }
            o.push_str("</figure>\n");
        }
        Block::Table(t) => o.push_str(&table_html(t)),
        Block::Pre(t) => o.push_str(&format!(
            "<pre>{}</pre>\n",
            escape(t.trim_end_matches('\n'))
        )),
        Block::List(items) => {
            o.push_str("<ul>\n");
            for i in items {
                o.push_str(&format!("<li>{}</li>\n", escape(i)));
            }
            o.push_str("</ul>\n");
        }
    }
}

/// A [`Table`] as an HTML table: numeric columns carry `class="num"` (right-aligned),
/// the title is the caption, notes follow as paragraphs.
pub fn table_html(t: &Table) -> String {
    let wrapped = t.columns().iter().any(|c| c.max_width.is_some());
    // The scrolling box keeps a table wider than the page (many numeric
    // columns on a narrow window) from widening the page itself: the page
    // never scrolls sideways, the table scrolls within its box.
    let mut o = String::from(if wrapped {
        "<div class=\"scroll\"><table class=\"wrap\">\n"
    } else {
        "<div class=\"scroll\"><table>\n"
    });
    if let Some(title) = t.title() {
        o.push_str(&format!("<caption>{}</caption>\n", escape(title)));
    }
    if wrapped {
        o.push_str(&colgroup(t));
    }
    let class = |c: usize| match t.alignment(c) {
        Align::Right => " class=\"num\"",
        Align::Left => "",
    };
    o.push_str("<thead><tr>");
    for (c, col) in t.columns().iter().enumerate() {
        o.push_str(&format!("<th{}>{}</th>", class(c), escape(&col.title())));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for row in t.rows() {
        o.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            let html = match t.alignment(c) {
                Align::Right => number_html(cell),
                Align::Left => cell_html(cell),
            };
            o.push_str(&format!("<td{}>{}</td>", class(c), html));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table></div>\n");
    for n in t.notes() {
        o.push_str(&format!("<p class=\"note\">{}</p>\n", escape(n)));
    }
    o
}

/// Column widths: an unwrapped column as wide as its widest cell or its header's
/// longest word (at most 24 characters) plus its padding, in `ch`; the wrapped
/// columns share the rest of the table's width in proportion to their wrap widths.
fn colgroup(t: &Table) -> String {
    let fixed: Vec<Option<usize>> = t
        .columns()
        .iter()
        .enumerate()
        .map(|(c, col)| {
            col.max_width.is_none().then(|| {
                let widest = t
                    .rows()
                    .iter()
                    .map(|r| r[c].display().chars().count())
                    .max()
                    .unwrap_or(0);
                let word = col
                    .title()
                    .split_whitespace()
                    .map(|w| w.chars().count())
                    .max()
                    .unwrap_or(0);
                widest.max(word).clamp(3, 24) + 3
            })
        })
        .collect();
    let fixed_ch: usize = fixed.iter().flatten().sum();
    let wrap_total: usize = t.columns().iter().filter_map(|c| c.max_width).sum();
    let mut o = String::from("<colgroup>");
    for (col, f) in t.columns().iter().zip(&fixed) {
        match (f, col.max_width) {
            (Some(ch), _) => o.push_str(&format!("<col style=\"width:{ch}ch\">")),
            (None, Some(w)) => o.push_str(&format!(
                "<col style=\"width:calc((100% - {fixed_ch}ch) * {:.3})\">",
                w as f64 / wrap_total.max(1) as f64
            )),
            (None, None) => o.push_str("<col>"),
        }
    }
    o.push_str("</colgroup>\n");
    o
}

/// A number's cell: a figure with its interval after it in brackets
/// (`88.5 ms [87.4 ms to 89.6 ms]`) on two lines, the interval below and
/// smaller, each line unbroken; anything else as [`cell_html`].
fn number_html(cell: &Cell) -> String {
    let text = cell.display();
    match text.split_once(" [") {
        Some((value, interval)) if interval.ends_with(']') => format!(
            "{}<span class=\"ci\">[{}</span>",
            escape(value),
            escape(interval)
        ),
        _ => cell_html(cell),
    }
}

/// A cell's text escaped; a JSON object as `key: value` lines.
fn cell_html(cell: &Cell) -> String {
    let text = cell.display();
    match json_lines(&text) {
        Some(lines) => lines
            .iter()
            .map(|l| format!("<span class=\"kv\">{}</span>", escape(l)))
            .collect(),
        None => escape(&text),
    }
}

/// The members of a JSON object as `key: value` lines (strings unquoted), `None`
/// when `text` is not a JSON object.
fn json_lines(text: &str) -> Option<Vec<String>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let serde_json::Value::Object(map) = serde_json::from_str(text).ok()? else {
        return None;
    };
    Some(
        map.iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}: {s}"),
                v => format!("{k}: {v}"),
            })
            .collect(),
    )
}
