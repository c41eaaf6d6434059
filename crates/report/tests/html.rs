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
