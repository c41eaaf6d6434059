//! Tables: alignment, units, estimates, wrapping, CSV quoting.

use proptest::prelude::*;
use report::{views, Cell, Column, Table};

#[test]
fn text_left_numbers_right_with_separators() {
    let mut t = Table::new(["counter", "value"]);
    t.push_row([Cell::text("minor_faults"), Cell::int(16384)]);
    t.push_row([Cell::text("ipis"), Cell::int(7)]);
    let expected = "\
counter        value
------------  ------
minor_faults  16,384
ipis               7
";
    assert_eq!(t.render(), expected);
}

#[test]
fn units_title_and_notes() {
    let mut t = Table::with_columns(vec![Column::new("vmpte").unit("kB"), Column::new("what")])
        .with_title("after touch");
    t.push_row([Cell::int(2096), Cell::text("x")]);
    t.push_note("1 run");
    let expected = "\
after touch
vmpte (kB)  what
----------  ----
     2,096  x
1 run
";
    assert_eq!(t.render(), expected);
}

#[test]
fn plus_minus_signs_line_up() {
    let mut t = Table::new(["counter", "mean"]);
    t.push_row([Cell::text("a"), Cell::estimate(105.637, Some(0.0608))]);
    t.push_row([Cell::text("b"), Cell::estimate(16384.0, Some(12.0))]);
    t.push_row([Cell::text("c"), Cell::estimate(5.0, None)]);
    let out = t.render();
    let lines: Vec<&str> = out.lines().collect();
    // Two significant digits of each half-width: 0.061 (3 decimals), 12 (0 decimals).
    assert!(lines[2].ends_with("105.637 ± 0.061"), "{out}");
    // Half-widths are right-aligned too.
    assert!(lines[3].ends_with(" 16,384 ±    12"), "{out}");
    let col = |l: &str| l.find('±');
    assert_eq!(col(lines[2]), col(lines[3]));
    // The estimate without an interval is right-aligned with the means.
    let mean_end = lines[2].find(" ±").unwrap();
    assert_eq!(lines[4].trim_end().len(), mean_end, "{out}");
}

#[test]
fn wrapped_columns_keep_every_line_in_its_column() {
    let mut t = Table::with_columns(vec![
        Column::new("id"),
        Column::new("why").wrap(12),
        Column::new("n"),
    ]);
    t.push_row([
        Cell::text("thp"),
        Cell::text("huge pages change page-table shape"),
        Cell::int(3),
    ]);
    let out = t.render();
    let lines: Vec<&str> = out.lines().collect();
    // The column is as wide as its longest wrapped line ("page-table", 10).
    assert_eq!(lines[2], "thp  huge pages  3");
    // "page-table" is 10 characters and fits; "change page-table" would not.
    assert_eq!(
        &lines[3..],
        ["     change", "     page-table", "     shape"]
    );
}

#[test]
#[should_panic(expected = "row of 3 cells in a table of 2 columns")]
fn too_many_cells_is_a_bug() {
    let mut t = Table::new(["a", "b"]);
    t.push_row([Cell::Empty, Cell::Empty, Cell::Empty]);
}

#[test]
fn short_rows_are_padded() {
    let mut t = Table::new(["a", "b"]);
    t.push_row([Cell::text("x")]);
    assert_eq!(t.rows()[0], vec![Cell::text("x"), Cell::Empty]);
}

#[test]
fn csv_quotes_what_needs_quoting_and_keeps_raw_numbers() {
    let mut t = Table::with_columns(vec![
        Column::new("name"),
        Column::new("faults"),
        Column::new("time").unit("ns"),
    ]);
    t.push_row([
        Cell::text("a,b"),
        Cell::int(16384),
        Cell::estimate(105.637, Some(0.061)),
    ]);
    t.push_row([
        Cell::text("say \"hi\"\nthere"),
        Cell::int(-3),
        Cell::estimate(1.5, None),
    ]);
    let csv = t.to_csv().unwrap();
    let expected = "name,faults,time (ns),time (ns) ci95_half_width\n\
                    \"a,b\",16384,105.637,0.061\n\
                    \"say \"\"hi\"\"\nthere\",-3,1.5,\n";
    assert_eq!(csv, expected);
    // And a CSV reader gets the original text back.
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(&rows[1][0], "say \"hi\"\nthere");
    assert_eq!(&rows[0][0], "a,b");
}

#[test]
fn csv_of_ratios_and_p_values_is_full_precision() {
    let mut t = Table::new(["r", "p"]);
    t.push_row([Cell::ratio(1.0023456), Cell::p_value(1.543e-6)]);
    assert_eq!(t.render().lines().nth(2).unwrap(), "1.002  1.5e-6");
    assert_eq!(t.to_csv().unwrap(), "r,p\n1.0023456,0.000001543\n");
}

#[test]
fn audit_table_wraps_its_explanations() {
    let why = "five-level page tables add a level to every walk and fault; ".repeat(3);
    let rows = [views::AuditRow {
        id: "la57",
        status: "warn",
        value: "on",
        why: &why,
        fix: "boot with no5lvl",
    }];
    let out = views::audit_table(&rows).render();
    assert!(out.lines().count() > 4, "{out}");
    assert!(
        out.lines()
            .all(|l| l.chars().count() <= 4 + 2 + 6 + 2 + 24 + 2 + 44 + 2 + 44),
        "{out}"
    );
}

proptest! {
    #[test]
    fn every_line_is_as_wide_and_numbers_read_back(
        rows in prop::collection::vec(("[a-z_]{1,20}", any::<i64>()), 1..20)
    ) {
        let mut t = Table::new(["counter", "value"]);
        for (name, v) in &rows {
            t.push_row([Cell::text(name.clone()), Cell::int(*v)]);
        }
        let out = t.render();
        let widths: Vec<usize> = out.lines().map(|l| l.chars().count()).collect();
        prop_assert!(widths.iter().all(|w| *w == widths[0]), "{}", out);
        for (line, (_, v)) in out.lines().skip(2).zip(&rows) {
            let n: String = line.rsplit(' ').next().unwrap().chars().filter(|c| *c != ',').collect();
            prop_assert_eq!(n.parse::<i64>().unwrap(), *v);
        }
    }
}

mod units {
    use report::{format_summary, human, quantity_of, Cell, Table, Unit};
    use stats::{compare_means, ratio_of_means, Quantity, Summary};

    #[test]
    fn times_are_scaled_to_three_significant_digits() {
        let ns = |v| human(v, Unit::Nanoseconds);
        assert_eq!(ns(419_147_292.0), "419 ms");
        assert_eq!(ns(830.0), "830 ns");
        assert_eq!(ns(4_200.0), "4.20 us");
        assert_eq!(ns(41_950.0), "42.0 us");
        assert_eq!(ns(999.7), "1.00 us");
        assert_eq!(ns(2.5e9), "2.50 s");
        assert_eq!(ns(0.0), "0 ns");
        assert_eq!(ns(12_345e9), "12,345 s");
    }

    #[test]
    fn sizes_follow_the_counters_unit() {
        assert_eq!(human(2048.0, Unit::Kilobytes), "2.00 MiB");
        assert_eq!(human(110.0 * 1024.0 * 1024.0, Unit::Kilobytes), "110 GiB");
        assert_eq!(human(512.0, Unit::Bytes), "512 B");
        assert_eq!(human(4096.0, Unit::Bytes), "4.00 KiB");
        assert_eq!(Unit::of_counter("vmpte_kb"), Unit::Kilobytes);
        assert_eq!(Unit::of_counter("elapsed_ns"), Unit::Nanoseconds);
        assert_eq!(Unit::of_counter("ipis"), Unit::Count);
        assert_eq!(quantity_of("elapsed_ns"), Quantity::Time);
        assert_eq!(quantity_of("minor_faults"), Quantity::Count);
    }

    #[test]
    fn counts_are_whole_numbers() {
        // "4.33 were contended", "0.00 IPIs" were the defects.
        assert_eq!(human(4.333, Unit::Count), "4");
        assert_eq!(human(0.0, Unit::Count), "0");
        assert_eq!(human(524_802.4, Unit::Count), "524,802");
        assert_eq!(human(99.96, Unit::Percent), "100%");
        assert_eq!(human(12.34, Unit::Percent), "12.3%");
        assert_eq!(human(1.2e-6, Unit::Percent), "<0.001%");
        assert_eq!(human(0.0, Unit::Percent), "0%");
        assert_eq!(human(f64::NAN, Unit::Count), "n/a");
    }

    #[test]
    fn summaries_name_their_interval_and_unit() {
        let s = Summary::of_quantity(&[0.0, 0.0, 0.0, 0.0, 1610.0], Quantity::Count).unwrap();
        let text = format_summary(&s, Unit::Count);
        assert!(text.starts_with("322 (95% CI 0 to "), "{text}");
        assert!(
            text.ends_with(", n = 5, bootstrap percentile, 10,000 resamples)"),
            "{text}"
        );
        let s = Summary::of_quantity(&[524_802.0; 5], Quantity::Count).unwrap();
        assert_eq!(
            format_summary(&s, Unit::Count),
            "524,802 (exact: all 5 runs equal)"
        );
        let s = Summary::of_quantity(&[4.0, 4.0, 5.0], Quantity::Count).unwrap();
        assert_eq!(
            format_summary(&s, Unit::Count),
            "4 (n = 3, too few runs for an interval)"
        );
        let times = [419e6, 420e6, 418e6, 421e6, 419.5e6];
        let s = Summary::of_quantity(&times, Quantity::Time).unwrap();
        let text = format_summary(&s, Unit::Nanoseconds);
        // Mean 419.5 ms, three significant digits.
        assert!(text.starts_with("420 ms (95% CI 41"), "{text}");
        assert!(!text.contains("419,"), "{text}");
    }

    #[test]
    fn cells_with_units_are_human_for_people_and_exact_in_csv() {
        let mut t = Table::new(["counter", "mean", "total"]);
        let s = Summary::of_quantity(&[0.0, 0.0, 0.0, 0.0, 1610.0], Quantity::Count).unwrap();
        t.push_row([
            Cell::text("lock_contended"),
            Cell::from_summary(&s),
            Cell::quantity(419_147_292.0, Unit::Nanoseconds),
        ]);
        let out = t.render();
        let row = out.lines().nth(2).unwrap();
        let ci = s.ci95.unwrap();
        assert!(
            row.contains(&format!("322 (0 to {})", human(ci.high, Unit::Count))),
            "{out}"
        );
        assert!(row.ends_with("419 ms"), "{out}");
        let csv = t.to_csv().unwrap();
        let line = csv.lines().nth(1).unwrap();
        assert!(line.starts_with("lock_contended,322,"), "{csv}");
        assert!(line.ends_with(",419147292"), "{csv}");
    }

    #[test]
    fn ratios_and_p_values_say_when_they_mean_nothing() {
        let zero = ratio_of_means(&[0.0; 5], &[0.0; 5]).unwrap();
        assert_eq!(Cell::from_ratio(&zero).display(), "undefined (0 / 0)");
        let b = [100.0, 102.0, 98.0, 101.0, 99.0];
        let a: Vec<f64> = b.iter().map(|x| x * 1.05).collect();
        let r = Cell::from_ratio(&ratio_of_means(&a, &b).unwrap()).display();
        assert!(r.starts_with("1.05") && r.contains(" ± 0.0"), "{r}");
        let exact = compare_means(&[524_802.0; 5], &[524_803.0; 5]).unwrap();
        assert_eq!(Cell::from_significance(&exact).display(), "n/a: exact");
    }
}
