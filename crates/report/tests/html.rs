//! The HTML page: escaping, self-containment, determinism.

use report::html::{escape, Page};
use report::{Cell, Table};

#[test]
fn escapes_markup_ampersands_and_quotes() {
    assert_eq!(
        escape(r#"<b> & "q" 'x'"#),
        "&lt;b&gt; &amp; &quot;q&quot; &#39;x&#39;"
    );
    let mut p = Page::new("A <title> & more");
    p.section("H2 \"quoted\"")
        .paragraph("x < y && y > z")
        .list(["it's"])
        .preformatted("a<b");
    let html = p.render();
    assert!(html.contains("<title>A &lt;title&gt; &amp; more</title>"));
    assert!(html.contains("<h2>H2 &quot;quoted&quot;</h2>"));
    assert!(html.contains("<p>x &lt; y &amp;&amp; y &gt; z</p>"));
    assert!(html.contains("<li>it&#39;s</li>"));
    assert!(html.contains("<pre>a&lt;b</pre>"));
    assert!(!html.contains("x < y"));
}

#[test]
fn tables_escape_cells_and_align_numbers() {
    let mut t = Table::new(["name", "faults"]).with_title("t & u");
    t.push_row([Cell::text("<script>"), Cell::int(16384)]);
    t.push_note("note \"1\"");
    let mut p = Page::new("p");
    p.section("s").table(&t);
    let html = p.render();
    assert!(html.contains("<caption>t &amp; u</caption>"));
    assert!(html.contains("<td>&lt;script&gt;</td><td class=\"num\">16,384</td>"));
    assert!(html.contains("<p class=\"note\">note &quot;1&quot;</p>"));
    assert!(!html.contains("<script"));
}

#[test]
fn page_is_self_contained() {
    let svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect width=\"1\" height=\"1\"/></svg>\n";
    let mut p = Page::new("study");
    p.paragraph("intro");
    p.section("one").figure(svg, Some("a chart"));
    p.section("two").paragraph("x");
    let html = p.render();
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    assert!(
        !html.contains("<?xml"),
        "the prolog is dropped from inline SVG"
    );
    assert!(html.contains("<figure>\n<svg xmlns="));
    assert!(html.contains("<figcaption>a chart</figcaption>"));
    for bad in ["<script", "<link", "@import", "url(", "src="] {
        assert!(!html.contains(bad), "{bad}");
    }
    // The only absolute URL is the SVG namespace name, which is never fetched.
    assert_eq!(html.matches("http").count(), 1);
    assert!(html.contains("<a href=\"#s1\">one</a>"));
    assert!(html.contains("<section id=\"s2\">"));
}

#[test]
fn rendering_is_deterministic() {
    let build = || {
        let mut p = Page::new("x");
        p.section("a").paragraph("1");
        p.render()
    };
    assert_eq!(build(), build());
}

/// An audit as `ptlab study` tabulates it: a long JSON value, long why and fix.
fn audit() -> Table {
    let mut t = Table::with_columns(vec![
        report::Column::new("id"),
        report::Column::new("status"),
        report::Column::new("value").wrap(24),
        report::Column::new("why it matters").wrap(44),
        report::Column::new("how to change it").wrap(44),
    ]);
    t.push_row([
        Cell::text("split_ptlocks"),
        Cell::text("ok"),
        Cell::text(r#"{"pmd":null,"pte":true,"source":"inferred: 8 possible CPUs, so NR_CPUS >= 4, where Kconfig enables SPLIT_PTE_PTLOCKS"}"#),
        Cell::text("page-table locks split per table let faults in different tables proceed in parallel"),
        Cell::text("rebuild the kernel with CONFIG_SPLIT_PTE_PTLOCKS"),
    ]);
    t
}

#[test]
fn audit_values_are_key_value_lines_not_unbroken_json() {
    let mut p = Page::new("audit");
    p.section("Audit").table(&audit());
    let html = p.render();
    assert!(
        !html.contains("{&quot;pmd&quot;"),
        "raw JSON left in the page"
    );
    assert!(html.contains("<span class=\"kv\">pmd: null</span><span class=\"kv\">pte: true</span>"));
    assert!(
        html.contains("<span class=\"kv\">source: inferred: 8 possible CPUs, so NR_CPUS &gt;= 4")
    );
    // Text that merely starts with a brace stays text.
    let mut t = Table::new(["v"]);
    t.push_row([Cell::text("{not json")]);
    assert!(report::html::table_html(&t).contains("<td>{not json</td>"));
}

#[test]
fn wrapped_tables_fit_the_page_with_fixed_columns() {
    let html = report::html::table_html(&audit());
    assert!(html.starts_with("<div class=\"scroll\"><table class=\"wrap\">"));
    let cols: Vec<&str> = html
        .split("<col style=\"width:")
        .skip(1)
        .map(|s| s.split("\">").next().unwrap())
        .collect();
    assert_eq!(cols.len(), 5, "{cols:?}");
    // Unwrapped columns are as wide as their widest text and padding: "split_ptlocks"
    // is 13 characters, "status" 6.
    assert_eq!(&cols[..2], ["16ch", "9ch"]);
    // Wrapped ones share the rest by their wrap widths, 24 : 44 : 44.
    let shares: Vec<f64> = cols[2..]
        .iter()
        .map(|c| {
            assert!(c.starts_with("calc((100% - 25ch) * "), "{c}");
            c.trim_start_matches("calc((100% - 25ch) * ")
                .trim_end_matches(')')
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        (shares.iter().sum::<f64>() - 1.0).abs() < 0.01,
        "{shares:?}"
    );
    assert!(
        shares[1] > shares[0] && shares[1] == shares[2],
        "{shares:?}"
    );
    let mut p = Page::new("p");
    p.section("s").table(&audit());
    let page = p.render();
    assert!(page.contains("table.wrap{width:100%;table-layout:fixed}"));
    assert!(page.contains("overflow-wrap:anywhere"));
    // A table without wrapped columns keeps its natural layout.
    let plain = report::html::table_html(&Table::new(["a"]));
    assert!(
        plain.starts_with("<div class=\"scroll\"><table>\n"),
        "{plain}"
    );
}

#[test]
fn a_table_wider_than_the_page_scrolls_in_its_box_not_the_page() {
    // Twelve numeric columns do not fit an 800 px window: each table sits in
    // a box that scrolls sideways on its own, so the page keeps its width.
    let mut t = Table::new((0..12).map(|i| format!("column {i}")));
    t.push_row((0..12).map(|i| Cell::text(format!("{},000,000", i + 100))));
    let mut p = Page::new("wide");
    p.section("s").table(&t);
    let page = p.render();
    let boxes = page.matches("<div class=\"scroll\"><table").count();
    assert_eq!(boxes, page.matches("<table").count(), "{page}");
    assert_eq!(page.matches("</table></div>").count(), boxes);
    assert!(page.contains(".scroll{max-width:100%;overflow-x:auto"));
    // Charts shrink to the page.
    assert!(page.contains("figure svg{max-width:100%;height:auto}"));
}
