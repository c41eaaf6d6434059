//! "Did you mean" for the preset names a user types: geometries and TLBs.
//!
//! The crates that own the presets refuse an unknown name with the list of
//! known ones; this adds the nearest name when there is one close enough to
//! be a typo (`x86-64-4` -> `x86-64-4l`, `zen44` -> `zen4`). A value that
//! names a file (the rule of `pt::geometry::load` and of the model's `tlb`
//! option) is not a preset name and is left to the loader.

use crate::fail::Failure;
use workload::suggest::closest;

/// Whether `value` of `key` names a file rather than a preset.
fn is_file(key: &str, value: &str) -> bool {
    value.ends_with(".toml") || (key.ends_with("geometry") && value.contains('/'))
}

/// The preset names of `key`, if it has presets.
fn presets(key: &str) -> Option<Vec<String>> {
    match key {
        "geometry" => Some(
            pt::geometry::presets()
                .iter()
                .map(|g| g.name().to_string())
                .collect(),
        ),
        "tlb" => Some(
            mmu::config::PRESET_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        ),
        "host-geometry" => Some(
            std::iter::once("none".to_string())
                .chain(pt::geometry::presets().iter().map(|g| g.name().to_string()))
                .collect(),
        ),
        "host-caches" => Some(
            ["on", "off"]
                .iter()
                .chain(mmu::config::PRESET_NAMES)
                .map(|s| s.to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// Refuses a misspelt preset name of `key` with the nearest known one;
/// `origin` prefixes the message (`--config "geometry=x": `). A known
/// name, a file, or a name with no near miss passes (the loader reports
/// the last).
///
/// # Errors
/// [`Failure::BadInput`] saying what was meant.
pub fn check_preset(origin: &str, key: &str, value: &str) -> Result<(), Failure> {
    let Some(known) = presets(key) else {
        return Ok(());
    };
    if is_file(key, value) || known.iter().any(|k| k == value) {
        return Ok(());
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    match closest(value, &names) {
        Some(near) => Err(Failure::BadInput(format!(
            "{origin}key \"{key}\": unknown {} \"{value}\", did you mean \"{near}\"?; known: {}",
            match key {
                "tlb" => "TLB preset",
                "host-geometry" => "geometry",
                "host-caches" => "value",
                _ => key,
            },
            names.join(", ")
        ))),
        None => Ok(()),
    }
}

/// [`check_preset`] for the pairs of an inline `--config` list
/// (`geometry=x86-64-5l,tlb=zen4`); a TOML file is left to its parser.
///
/// # Errors
/// As [`check_preset`].
pub fn check_inline(arg: &str) -> Result<(), Failure> {
    if arg.ends_with(".toml") {
        return Ok(());
    }
    let origin = format!("--config \"{arg}\": ");
    for piece in arg.split(',') {
        if let Some((k, v)) = piece.split_once('=') {
            check_preset(&origin, k.trim(), v.trim())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<(), Failure>) -> String {
        match r {
            Err(Failure::BadInput(m)) => m,
            Err(_) => panic!("not bad input"),
            Ok(()) => String::new(),
        }
    }

    #[test]
    fn near_misses_are_named() {
        let m = message(check_preset("", "geometry", "x86-64-4"));
        assert!(m.contains("did you mean \"x86-64-4l\"?"), "{m}");
        let m = message(check_preset("", "geometry", "riscv-sv93"));
        assert!(m.contains("did you mean \"riscv-sv39\"?"), "{m}");
        let m = message(check_preset("", "tlb", "zen44"));
        assert!(
            m.contains("unknown TLB preset \"zen44\", did you mean \"zen4\"?"),
            "{m}"
        );
        let m = message(check_inline("backend=model,tlb=icelak,cpus=2"));
        assert!(
            m.starts_with("--config \"backend=model,tlb=icelak,cpus=2\": key \"tlb\"")
                && m.contains("did you mean \"icelake\"?"),
            "{m}"
        );
    }

    #[test]
    fn known_names_files_and_far_misses_pass() {
        for (k, v) in [
            ("geometry", "x86-64-5l"),
            ("geometry", "my/geometry"),
            ("geometry", "x86-64-4.toml"),
            ("geometry", "something-else-entirely"),
            ("tlb", "none"),
            ("tlb", "mytlb.toml"),
            ("locking", "globl"),
        ] {
            assert_eq!(message(check_preset("", k, v)), "", "{k}={v}");
        }
        assert_eq!(message(check_inline("geometry=x86-64-4l")), "");
        assert_eq!(message(check_inline("x86-64-4.toml")), "");
    }
}
