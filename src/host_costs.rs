//! The cost file a command that prints predicted time uses when none is
//! named: this host's, from the per-user cache, made the first time by a
//! quick calibration (docs/costs.md, "This host's cost file").
//!
//! In order: `--costs` (or `costs=` in a configuration), then the
//! environment's `PTLAB_COSTS` (a file or a shipped name: for CI and tests,
//! which must not calibrate), then this host's cached file, then a quick
//! calibration into the cache (one line on stderr saying what and why,
//! then the probe families' progress).

use crate::fail::Failure;
use crate::progress::Progress;
use experiment::host_costs::{self, Cached};

/// The environment variable that names the cost file of every command
/// that names none (a path or a shipped name).
pub const ENV: &str = "PTLAB_COSTS";

/// The environment variable that makes the first-run calibration use the
/// test suite's tiny sizes (its figures are too rough to use; only the
/// test of the first run sets it).
const SCALE_ENV: &str = "PTLAB_FIRST_CALIBRATION";

/// The cost file to price with: `named` if given, else `PTLAB_COSTS`, else
/// this host's (calibrated now if the cache has none).
///
/// # Errors
/// A bad `PTLAB_COSTS` (exit 2); no cache folder, or the cache cannot be
/// written (exit 1).
pub fn for_prediction(named: Option<&str>) -> Result<String, Failure> {
    if let Some(n) = named {
        return Ok(n.to_string());
    }
    if let Some(v) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy().into_owned();
        backend::model::load_costs(&v).map_err(|m| Failure::BadInput(format!("{ENV}: {m}")))?;
        return Ok(v);
    }
    match host_costs::find_cached() {
        Cached::Found(p) => Ok(p.display().to_string()),
        Cached::Missing(p) => calibrate(&p, None),
        Cached::Unusable(p, why) => calibrate(&p, Some(&why)),
        Cached::NoFolder => Err(Failure::Error(anyhow::anyhow!(
            "no cache folder for this host's cost file (neither XDG_CACHE_HOME nor HOME is an \
             absolute path): name one with --costs FILE|NAME or {ENV} (shipped: {})",
            timing::shipped_names().join(", ")
        ))),
    }
}

/// Makes `for_prediction(None)` the cost file of every model configuration
/// of this command that names none (`backend::model::set_default_costs`),
/// only when `needed`: a command whose every configuration names its file,
/// or runs on the kernel, calibrates nothing. The configurations stay as
/// the user gave them (their JSON `config` too); the `costs` label says
/// which file priced them.
pub fn install_default(needed: bool) -> Result<(), Failure> {
    if needed {
        let costs = for_prediction(None)?;
        // Once per process: a command installs it once.
        let _ = backend::model::set_default_costs(costs);
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn calibrate(path: &std::path::Path, replacing: Option<&str>) -> Result<String, Failure> {
    use experiment::calibrate::{busy, Event, Scale};
    let key = host::MachineKey::this_host();
    let scale = match std::env::var(SCALE_ENV).as_deref() {
        Ok("test") => Scale::Test,
        _ => Scale::Quick,
    };
    let why = match replacing {
        Some(w) => format!("the cached file cannot be used ({w})"),
        None => "none is cached yet".to_string(),
    };
    eprintln!(
        "ptlab: measuring this host's costs first ({} mode calibration, about a minute), because \
         predicted times are priced with this host's own cost file and {why}; it is kept in {} \
         for the next commands (--costs FILE|NAME or {ENV} names another). This host: {}",
        scale.name(),
        path.display(),
        key.describe()
    );
    let load = busy::HostLoad::sample(busy::WINDOW);
    if let Some(l) = load.as_ref().filter(|l| l.refusal().is_some()) {
        // Measured anyway: the user asked for a prediction, not for a
        // calibration; the file records the load.
        eprintln!(
            "warning: the host is busy ({}; load average {:.2} {:.2} {:.2}): the figures will be \
             slower and noisier than on a quiet host, and the file records the load; `ptlab \
             calibrate --out {}` on a quiet host replaces it",
            l.describe(),
            l.loadavg[0],
            l.loadavg[1],
            l.loadavg[2],
            path.display()
        );
    }
    let mut pb = Progress::new(
        1,
        "calibrate",
        "family",
        "calibrate [{bar:30}] {pos}/{len} probe families, {elapsed} elapsed: {msg}",
    );
    let result = host_costs::calibrate_into(path, scale, load.as_ref(), &mut |e| match e {
        Event::Family { name, index, total } => {
            pb.set_message(name);
            pb.set(index, total);
        }
        Event::Figure { .. } => {}
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
    });
    pb.finish();
    let result = result.map_err(|m| {
        Failure::Error(anyhow::anyhow!(
            "cannot keep this host's cost file: {m}; name one with --costs FILE|NAME or {ENV}"
        ))
    })?;
    eprintln!(
        "ptlab: wrote {} ({} figures, {:.0} s){}",
        path.display(),
        result.file.costs.len(),
        result.elapsed.as_secs_f64(),
        if result.problems.is_empty() {
            String::new()
        } else {
            format!(
                "; not measured, priced with the built-in assumed figures: {}",
                result.problems.join("; ")
            )
        }
    );
    let unstable = crate::cmd::calibrate::unstable_figures(&result.file);
    if !unstable.is_empty() {
        eprintln!(
            "ptlab: {} figures did not hold still (predictions priced with them carry their spread as the interval; `ptlab calibrate --long --out {}` on a quiet host re-takes them): {}",
            unstable.len(),
            path.display(),
            unstable.join("; ")
        );
    }
    Ok(path.display().to_string())
}

#[cfg(not(target_os = "linux"))]
fn calibrate(path: &std::path::Path, _replacing: Option<&str>) -> Result<String, Failure> {
    Err(Failure::Error(anyhow::anyhow!(
        "this host has no cost file ({} does not exist) and calibrate runs on Linux only: name \
         one with --costs FILE|NAME or {ENV} (shipped: {})",
        path.display(),
        timing::shipped_names().join(", ")
    )))
}

/// The label line of the cost file `costs` (`None`: the library's
/// default), for a command's header; `None` if it cannot be read again.
pub fn label_line(costs: Option<&str>) -> Option<String> {
    host_costs::CostsLabel::of(costs).ok().map(|l| l.line())
}
