//! `ptlab calibrate`: measures this host's costs and writes a cost file.
//! Each figure is printed as soon as it is measured; progress goes to
//! stderr.

use crate::cli::CalibrateArgs;
use crate::fail::{CmdResult, Failure};
use crate::out::outln;
use crate::progress::Progress;
use experiment::calibrate::busy::{self, HostLoad};
use experiment::calibrate::costs::{catalog, Cost};
use experiment::calibrate::{self, Event, Scale};
use std::path::Path;
use std::process::ExitCode;

/// Widest method text in the table; the file has it whole.
const METHOD_WIDTH: usize = 72;

pub fn run(args: CalibrateArgs) -> CmdResult {
    check_out(&args.out)?;
    let only = only_families(&args)?;
    let load = host_load(&args)?;
    let scale = if args.test_scale {
        Scale::Test
    } else if args.long {
        Scale::Long
    } else {
        Scale::Quick
    };
    outln!(
        "{:<20} {:>12} {:>25} {:>3}  method",
        "name",
        "figure",
        "95% interval",
        "n"
    )?;
    let mut pb = Progress::new(
        1,
        "calibrate",
        "family",
        "calibrate [{bar:30}] {pos}/{len} probe families, {elapsed} elapsed: {msg}",
    );
    let mut printed: Result<(), Failure> = Ok(());
    let result = calibrate::calibrate_families(
        scale,
        only.as_ref().map(|(f, _)| &f[..]),
        &mut |e| match e {
            Event::Family { name, index, total } => {
                pb.set_message(name);
                pb.set(index, total);
            }
            Event::Figure { name, cost } => {
                if printed.is_ok() {
                    printed = outln!("{}", row(name, cost));
                }
            }
            Event::Problem { message } => eprintln!("warning: {message}"),
            Event::Drift {
                family,
                message,
                retake,
            } => eprintln!(
                "warning: the host moved while {family} ran ({message}); {}",
                if retake {
                    "measuring it again"
                } else {
                    "its figures are marked unstable"
                }
            ),
        },
    );
    pb.finish();
    printed?;
    let mut result = result;
    if let (Some(l), Some(d)) = (&load, result.file.host.description.as_mut()) {
        d.push_str("; ");
        d.push_str(&l.describe());
    }
    if let Some((families, whole)) = only {
        merge_into_whole(&mut result, &families, whole, scale, load.as_ref());
    }
    result
        .file
        .save(&args.out)
        .map_err(|e| Failure::Error(anyhow::Error::new(e)))?;
    outln!(
        "\nWrote {} ({} figures, {} mode, {:.0} s)",
        args.out.display(),
        result.file.costs.len(),
        scale.name(),
        result.elapsed.as_secs_f64()
    )?;
    let unstable = unstable_figures(&result.file);
    if !unstable.is_empty() {
        outln!(
            "Unstable ({} of {}; predictions priced with them carry their rounds' spread as the interval): {}",
            unstable.len(),
            result.file.costs.len(),
            unstable.join("; ")
        )?;
    }
    if result.problems.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::Error(anyhow::anyhow!(
            "not every figure could be measured ({}); {} is incomplete",
            result.problems.join("; "),
            args.out.display()
        )))
    }
}

/// The host's load (given by --load-reading or sampled); a busy host is
/// refused unless --allow-busy.
fn host_load(args: &CalibrateArgs) -> Result<Option<HostLoad>, Failure> {
    let load =
        match &args.load_reading {
            Some(json) => Some(serde_json::from_str::<HostLoad>(json).map_err(|e| {
                Failure::BadInput(format!("--load-reading: not a load reading: {e}"))
            })?),
            None => HostLoad::sample(busy::WINDOW),
        };
    if let Some(why) = load.as_ref().and_then(HostLoad::refusal) {
        if !args.allow_busy {
            return Err(Failure::BadInput(why));
        }
        eprintln!("warning: measuring anyway (--allow-busy): {why}");
    }
    Ok(load)
}

/// With --only: the families' figures replace theirs in the whole file; its
/// host table says which were re-taken, when, and at what load.
fn merge_into_whole(
    result: &mut calibrate::Calibration,
    families: &[&str],
    mut whole: calibrate::costs::CostFile,
    scale: Scale,
    load: Option<&HostLoad>,
) {
    let names: Vec<String> = result.file.costs.keys().cloned().collect();
    whole.costs.append(&mut result.file.costs);
    let when = result.file.host.taken.clone().unwrap_or_default();
    let d = whole.host.description.get_or_insert_with(String::new);
    d.push_str(&format!(
        "; re-taken alone ({} mode, `ptlab calibrate --only {}`) at {when}: {}",
        scale.name(),
        families
            .iter()
            .map(|n| n.replace(' ', "-"))
            .collect::<Vec<_>>()
            .join(" --only "),
        names.join(", ")
    ));
    if let Some(l) = load {
        d.push_str(&format!(" ({})", l.describe()));
    }
    result.file = whole;
}

/// The families `--only` names and the cost file their figures go into
/// (`--out`, which must exist); `None` without `--only`.
fn only_families(
    args: &CalibrateArgs,
) -> Result<Option<(Vec<&'static str>, calibrate::costs::CostFile)>, Failure> {
    if args.only.is_empty() {
        return Ok(None);
    }
    let mut families = Vec::new();
    for name in &args.only {
        let Some(f) = calibrate::family_named(name) else {
            return Err(Failure::BadInput(format!(
                "--only {name}: no such probe family (families: {})",
                calibrate::family_names()
                    .iter()
                    .map(|n| n.replace(' ', "-"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        families.push(f);
    }
    let whole = calibrate::costs::CostFile::load(&args.out)
        .map_err(|e| Failure::BadInput(format!("--only writes into an existing cost file: {e}")))?;
    Ok(Some((families, whole)))
}

/// Refuses an output path whose folder does not exist, before a minute of
/// measuring.
fn check_out(out: &Path) -> Result<(), Failure> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => Err(Failure::BadInput(format!(
            "cannot write the cost file {}: the folder {} does not exist",
            out.display(),
            dir.display()
        ))),
        _ if out.is_dir() => Err(Failure::BadInput(format!(
            "cannot write the cost file {}: it is a folder",
            out.display()
        ))),
        _ => Ok(()),
    }
}

/// The figures `file` marks unstable, each with why: its interval's
/// relative half-width and its rounds' spread, and what moved on the host.
pub fn unstable_figures(file: &calibrate::costs::CostFile) -> Vec<String> {
    file.costs
        .iter()
        .filter_map(|(name, c)| {
            let s = c.stability.as_ref().filter(|s| s.unstable)?;
            let mut why = format!(
                "{name} (interval +-{:.0}%, spread {:.0}% over {} rounds",
                s.rel_halfwidth * 100.0,
                s.rel_spread * 100.0,
                s.rounds
            );
            if !s.drift.is_empty() {
                why.push_str(&format!("; {}", s.drift));
            }
            why.push(')');
            Some(why)
        })
        .collect()
}

/// One table row: name, figure with its unit, interval, n, method.
fn row(name: &str, c: &Cost) -> String {
    let unit = catalog::lookup(name).map_or("ns", |e| short_unit(e.per));
    let mut method = if c.is_unstable() {
        format!("UNSTABLE; {}", c.method)
    } else {
        c.method.clone()
    };
    if method.chars().count() > METHOD_WIDTH {
        method = method.chars().take(METHOD_WIDTH - 1).collect::<String>() + "…";
    }
    format!(
        "{name:<20} {:>12} {:>25} {:>3}  {method}",
        format!("{} {unit}", num(c.ns)),
        format!("{} to {}", num(c.lo), num(c.hi)),
        c.n
    )
}

fn short_unit(per: catalog::Per) -> &'static str {
    match per {
        catalog::Per::Event => "ns",
        catalog::Per::Page => "ns/page",
        catalog::Per::Table => "ns/table",
        catalog::Per::KiB => "ns/KiB",
    }
}

/// Three significant figures, no exponent: 0.512, 12.3, 1,650, 184,000.
fn num(x: f64) -> String {
    if x >= 1000.0 {
        let r = x.round() as u64;
        let digits = r.to_string().len();
        let keep = 10u64.pow(digits.saturating_sub(3) as u32);
        group((r + keep / 2) / keep * keep)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `n` with a comma every three digits.
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_three_significant_digits() {
        assert_eq!(num(0.5123), "0.51");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(123.4), "123");
        assert_eq!(num(1649.6), "1,650");
        assert_eq!(num(183_912.0), "184,000");
    }
}
