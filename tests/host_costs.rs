//! ptlab as on another machine: an empty cost cache (the first command
//! that prints predicted time calibrates this host, at the test suite's
//! tiny scale, and the next one reuses the file), and a cost file of a
//! different machine (used only when named, and labelled as that
//! machine's in the terminal, the JSON and the study's report). Every
//! cache is a temporary folder, removed at the end.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `ptlab args` with `cache` as XDG_CACHE_HOME, no PTLAB_COSTS, and the
/// first-run calibration at the test scale.
fn ptlab_with_cache(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env_remove("PTLAB_COSTS")
        .env("XDG_CACHE_HOME", cache)
        .env("PTLAB_FIRST_CALIBRATION", "test")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// This host's file in `cache`, where the command line keeps it.
fn this_hosts_file(cache: &Path) -> std::path::PathBuf {
    cache
        .join("ptlab/costs")
        .join(format!("{}.toml", host::MachineKey::this_host().id()))
}

/// The shipped reference file rewritten as another machine's: its CPU and
/// machine key changed.
fn other_machines_file(dir: &Path) -> std::path::PathBuf {
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("costs/xeon-kvm-2026.toml"),
    )
    .unwrap();
    let other = shipped
        .replacen(
            "cpu_model = \"Intel(R) Xeon(R) Processor\"",
            "cpu_model = \"Elsewhere CPU 9000\"\nfingerprint = \"elsewhere-cpu-9000-0123456789abcdef\"",
            1,
        )
        .replacen("cpus = 2", "cpus = 64", 1);
    assert_ne!(other, shipped);
    let p = dir.join("elsewhere.toml");
    std::fs::write(&p, other).unwrap();
    p
}

#[test]
fn an_empty_cache_is_filled_by_the_first_prediction_and_reused() {
    let cache = tempfile::tempdir().unwrap();
    let file = this_hosts_file(cache.path());
    assert!(!file.exists());
    // The first command that predicts time measures this host first.
    let first = ptlab_with_cache(cache.path(), &["run", "prefault"]);
    let (out, err) = (text(&first.stdout), text(&first.stderr));
    assert!(first.status.success(), "{err}");
    assert!(
        err.contains("measuring this host's costs first") && err.contains("none is cached yet"),
        "{err}"
    );
    assert!(file.exists(), "no cost file at {}", file.display());
    let f = costs::CostFile::load(&file).unwrap();
    assert_eq!(
        f.host.fingerprint.as_deref(),
        Some(host::MachineKey::this_host().id().as_str())
    );
    assert_eq!(f.host.mode.as_deref(), Some("test"));
    assert!(!f.costs.is_empty());
    // Every measured figure says how still it held (rounds, interval,
    // spread), and a ratio is never negative.
    for (name, c) in &f.costs {
        if c.provenance == costs::Provenance::Measured {
            let st = c
                .stability
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: no stability"));
            assert!(
                st.rounds > 0 && st.rel_halfwidth >= 0.0 && st.rel_spread >= 0.0,
                "{name}: {st:?}"
            );
        }
    }
    // The terminal says the figures are this host's, and where they are.
    let header = format!("costs: {}, this host's (", file.display());
    assert!(out.contains(&header), "{out}");
    assert!(
        out.contains("predicted") && out.contains(&file.display().to_string()),
        "{out}"
    );
    // The second command reuses the file: nothing measured, nothing
    // rewritten.
    let written = std::fs::metadata(&file).unwrap().modified().unwrap();
    let second = ptlab_with_cache(cache.path(), &["run", "prefault", "--json"]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(
        !text(&second.stderr).contains("measuring"),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        written
    );
    let v: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(v["costs"]["this_host"], Value::Bool(true));
    assert_eq!(
        v["costs"]["file"],
        Value::String(file.display().to_string())
    );
    // `this-host` names the same file.
    let named = ptlab_with_cache(cache.path(), &["run", "prefault", "--costs", "this-host"]);
    assert!(named.status.success(), "{}", text(&named.stderr));
    assert!(
        text(&named.stdout).contains(&header),
        "{}",
        text(&named.stdout)
    );
    // A file at this host's place that records another machine's key is
    // not used: it is measured again.
    let theirs = other_machines_file(cache.path());
    std::fs::copy(&theirs, &file).unwrap();
    let again = ptlab_with_cache(cache.path(), &["run", "prefault"]);
    let err = text(&again.stderr);
    assert!(again.status.success(), "{err}");
    assert!(
        err.contains("the cached file cannot be used")
            && err.contains("elsewhere-cpu-9000-0123456789abcdef"),
        "{err}"
    );
    assert!(!text(&again.stdout).contains("Elsewhere CPU 9000"));
    let f = costs::CostFile::load(&file).unwrap();
    assert_ne!(f.host.cpu_model.as_deref(), Some("Elsewhere CPU 9000"));
}

#[test]
fn another_machines_file_is_used_only_when_named_and_says_whose_it_is() {
    let cache = tempfile::tempdir().unwrap();
    // This host's file is in the cache (the reference file re-labelled as
    // this host's, so nothing is measured), beside another machine's.
    let mine = this_hosts_file(cache.path());
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("costs/xeon-kvm-2026.toml"),
    )
    .unwrap();
    let key = host::MachineKey::this_host().id();
    std::fs::write(
        &mine,
        shipped.replacen("[host]\n", &format!("[host]\nfingerprint = \"{key}\"\n"), 1),
    )
    .unwrap();
    let theirs = other_machines_file(cache.path().join("ptlab/costs").as_path());
    // Not named: this host's file, never the other one.
    let default = ptlab_with_cache(cache.path(), &["run", "prefault"]);
    let out = text(&default.stdout);
    assert!(default.status.success(), "{}", text(&default.stderr));
    assert!(!text(&default.stderr).contains("measuring"));
    assert!(out.contains("this host's"), "{out}");
    assert!(!out.contains("Elsewhere"), "{out}");
    // Named: used, and every label says it is another machine's.
    let path = theirs.to_str().unwrap();
    let run = ptlab_with_cache(cache.path(), &["run", "prefault", "--costs", path]);
    let out = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        out.contains(&format!(
            "costs: {path}, ANOTHER MACHINE's figures (Elsewhere CPU 9000, 64 CPUs"
        )),
        "{out}"
    );
    assert!(
        out.contains("not this host: CPU Elsewhere CPU 9000 (this host: "),
        "{out}"
    );
    let compare = ptlab_with_cache(
        cache.path(),
        &[
            "compare",
            "prefault",
            "--config",
            "geometry=x86-64-4l",
            "--config",
            "geometry=x86-64-5l",
            "--costs",
            path,
            "--json",
        ],
    );
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    let v: Value = serde_json::from_slice(&compare.stdout).unwrap();
    for c in v["configs"].as_array().unwrap() {
        assert_eq!(c["costs"]["this_host"], Value::Bool(false));
        assert!(c["costs"]["machine"]
            .as_str()
            .unwrap()
            .starts_with("Elsewhere CPU 9000, 64 CPUs"));
        // Its figures price the run: the prediction is there.
        let marks = c["marks"].as_array().unwrap();
        let end = &marks.last().unwrap()["counters"];
        assert!(end["predicted_ns"].as_u64().unwrap() > 0, "{end}");
    }
    // The study's report and JSON name the machine of the file too.
    let dir = tempfile::tempdir().unwrap();
    let study = ptlab_with_cache(
        cache.path(),
        &[
            "study",
            "--quick",
            "--only",
            "riscv-64k",
            "--costs",
            path,
            "--out",
            dir.path().to_str().unwrap(),
        ],
    );
    assert!(study.status.success(), "{}", text(&study.stderr));
    let summary = text(&study.stdout);
    assert!(summary.contains("ANOTHER MACHINE"), "{summary}");
    let sj: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("study.json")).unwrap())
            .unwrap();
    assert_eq!(sj["costs"][0]["this_host"], Value::Bool(false));
    assert_eq!(sj["costs"][0]["file"], Value::String(path.into()));
    assert!(sj["load"]["busy_limit_cpus"].as_f64().unwrap() > 0.0);
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(
        html.contains("Elsewhere CPU 9000"),
        "the report names the machine"
    );
}

#[test]
fn this_host_without_a_cached_file_is_a_clear_error() {
    let cache = tempfile::tempdir().unwrap();
    let out = ptlab_with_cache(cache.path(), &["run", "prefault", "--costs", "this-host"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("this host has no cost file yet") && err.contains("xeon-kvm-2026"),
        "{err}"
    );
    // A name that is neither a file nor shipped lists the shipped names.
    let out = ptlab_with_cache(cache.path(), &["run", "prefault", "--costs", "xeon-kvm"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("not a shipped cost file's name (shipped: xeon-kvm-2026, bare-metal-2013"),
        "{err}"
    );
    // A kernel run prices nothing: it measures no costs either, and says
    // the load it was timed under.
    let out = ptlab_with_cache(
        cache.path(),
        &["run", "prefault", "--backend", "kernel", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("costs").is_none(), "{v}");
    for when in ["before", "after"] {
        let avg = v["load"][when]["avg"].as_array().unwrap();
        assert_eq!(avg.len(), 3);
        assert!(avg.iter().all(|a| a.as_f64().unwrap() >= 0.0));
    }
    // It says how its threads were placed: by the scheduler unless asked.
    assert_eq!(v["pin_threads"], false, "{v}");
    let out = ptlab_with_cache(
        cache.path(),
        &["run", "prefault", "--backend", "kernel", "--pin-threads"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains("kernel threads: pinned, thread i on the i-th CPU"),
        "{table}"
    );
    // Nothing was measured for any of them.
    assert!(!cache.path().join("ptlab").exists());
}
