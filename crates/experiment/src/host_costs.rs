//! This host's cost file, and which machine any cost file describes.
//!
//! - [`CostsLabel`]: what every figure priced with a cost file carries (the
//!   terminal's header line, the study's report, the JSON of run and
//!   compare): the file, the machine its host table describes, and whether
//!   that machine is this host (the file's machine key against this
//!   host's, `host::MachineKey`), with the fields that differ.
//! - [`find_cached`]: this host's own file in the per-user cache
//!   (`costs::cache`), used by the command line when no cost file is
//!   named; a file there whose key is another machine's is not used.
//! - [`calibrate_into`]: the first run's quick calibration, written to the
//!   cache.
//!
//! Invariant: a cost file of another machine is used only when named
//! (`--costs`, `costs=`, `PTLAB_COSTS`), and its label then says it is
//! another machine's.

use serde::Serialize;
use std::path::{Path, PathBuf};
use timing::CostModel;

/// The cost file a result was priced with, and the machine it describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CostsLabel {
    /// The file as reports name it (a path, or a shipped file's name and
    /// what it is).
    pub file: String,
    /// The machine its host table describes (`costs::HostInfo::describe`).
    pub machine: String,
    /// Whether that machine is this host: the file records this host's
    /// machine key (CPU, kernel, hypervisor, THP, page size).
    pub this_host: bool,
    /// How it differs from this host, one phrase per field the file
    /// records differently (empty for this host's file).
    pub differs: Vec<String>,
}

impl CostsLabel {
    /// The label of `costs` (a path or a shipped name, as `--costs` takes
    /// it; `None` for the process's default: `backend::model::default_costs`
    /// if set, else the shipped reference file).
    ///
    /// # Errors
    /// The file cannot be read (the costs crate's message).
    pub fn of(costs: Option<&str>) -> Result<CostsLabel, String> {
        let model = match costs.or(backend::model::default_costs()) {
            Some(c) => backend::model::load_costs(c)?,
            None => CostModel::shipped(),
        };
        Ok(CostsLabel::of_model(&model, &host::MachineKey::this_host()))
    }

    /// The label of `model`, compared with the machine `this` (this host).
    pub fn of_model(model: &CostModel, this: &host::MachineKey) -> CostsLabel {
        let this_host = model.host.fingerprint.as_deref() == Some(this.id().as_str());
        let differs = if this_host {
            Vec::new()
        } else {
            differences(model, this)
        };
        CostsLabel {
            file: model.origin.clone(),
            machine: model.machine.clone(),
            this_host,
            differs,
        }
    }

    /// One line: the file, its machine, and whether it is this host.
    pub fn line(&self) -> String {
        if self.this_host {
            format!("costs: {}, this host's ({})", self.file, self.machine)
        } else {
            format!(
                "costs: {}, ANOTHER MACHINE's figures ({}); not this host: {}",
                self.file,
                self.machine,
                self.differs.join("; ")
            )
        }
    }
}

/// What a file's host table says differently from `this`. A file without a
/// machine key (the shipped ones, files of older builds) is compared on the
/// fields it records; when they all agree, it still is not known to be
/// this host's.
fn differences(model: &CostModel, this: &host::MachineKey) -> Vec<String> {
    let h = &model.host;
    let mut out = Vec::new();
    let mut compare = |what: &str, theirs: Option<String>, ours: &str| match theirs {
        Some(t) if t != ours => out.push(format!("{what} {t} (this host: {ours})")),
        _ => {}
    };
    compare("CPU", h.cpu_model.clone(), &this.cpu_model);
    compare("kernel", h.kernel_release.clone(), &this.kernel_release);
    compare("hypervisor", h.hypervisor.clone(), &this.hypervisor);
    compare(
        "page size",
        h.page_size.map(|p| p.to_string()),
        &this.page_size.to_string(),
    );
    match &h.thp {
        // A full record (calibrate's): every policy; an older one may give
        // the `enabled` policy alone.
        Some(t) if t.contains("defrag=") => compare("THP", Some(t.clone()), &this.thp),
        Some(t) => {
            let ours = this.thp.split(' ').next().unwrap_or_default();
            compare("THP", Some(t.clone()), ours);
        }
        None => {}
    }
    if out.is_empty() {
        out.push(match &h.fingerprint {
            Some(k) => format!("machine key {k} (this host: {})", this.id()),
            None => "the file records no machine key to match".into(),
        });
    }
    out
}

/// What the per-user cache holds for this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cached {
    /// This host's file, usable.
    Found(PathBuf),
    /// None yet: a calibration would write it at this path.
    Missing(PathBuf),
    /// A file at this host's path that cannot be used (another machine's
    /// key, or unreadable): why; a calibration replaces it.
    Unusable(PathBuf, String),
    /// No cache folder (neither XDG_CACHE_HOME nor HOME is absolute).
    NoFolder,
}

/// This host's cost file in the per-user cache, if there is a usable one.
pub fn find_cached() -> Cached {
    let Some(path) = backend::model::this_host_costs_path() else {
        return Cached::NoFolder;
    };
    if !path.exists() {
        return Cached::Missing(path);
    }
    let key = host::MachineKey::this_host().id();
    match costs::CostFile::load(&path) {
        Ok(f) if f.host.fingerprint.as_deref() == Some(key.as_str()) => Cached::Found(path),
        Ok(f) => {
            let why = format!(
                "it records machine key {} (this host: {key})",
                f.host.fingerprint.as_deref().unwrap_or("none")
            );
            Cached::Unusable(path, why)
        }
        Err(e) => Cached::Unusable(path, e.to_string()),
    }
}

/// Measures this host's costs at `scale` and writes them to `path` (its
/// folder made if needed; written to a temporary name in the same folder,
/// then renamed, so a reader never sees half a file and an interrupted
/// calibration leaves no file behind under the real name). `load`, the
/// host's load at the start, goes into the file's description.
///
/// # Errors
/// The folder or the file cannot be written.
#[cfg(target_os = "linux")]
pub fn calibrate_into(
    path: &Path,
    scale: crate::calibrate::Scale,
    load: Option<&crate::calibrate::busy::HostLoad>,
    on_event: &mut dyn FnMut(crate::calibrate::Event),
) -> Result<crate::calibrate::Calibration, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut result = crate::calibrate::calibrate(scale, on_event);
    let d = result.file.host.description.get_or_insert_with(String::new);
    d.push_str("; made by the first command that needed this host's costs (the cache of ptlab)");
    if let Some(l) = load {
        d.push_str("; ");
        d.push_str(&l.describe());
    }
    let tmp = dir.join(format!(
        ".{}.partial-{}",
        path.file_name()
            .map_or_else(|| "costs".into(), |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    result.file.save(&tmp).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other_host() -> host::MachineKey {
        host::MachineKey {
            cpu_model: "AMD EPYC 7B13 64-Core Processor".into(),
            kernel_release: "6.18.44-fc-v769".into(),
            hypervisor: "KVM".into(),
            thp: "enabled=madvise defrag=madvise shmem=never".into(),
            page_size: 4096,
        }
    }

    #[test]
    fn the_reference_file_is_labelled_as_its_machine_not_this_host() {
        let l = CostsLabel::of_model(&CostModel::shipped(), &other_host());
        assert!(!l.this_host);
        assert_eq!(l.file, timing::SHIPPED);
        assert!(
            l.machine.starts_with("Intel(R) Xeon(R) Processor"),
            "{}",
            l.machine
        );
        // The CPU differs; the kernel, hypervisor, page size and THP
        // policy it records are the same as this made-up host's.
        assert_eq!(
            l.differs,
            vec!["CPU Intel(R) Xeon(R) Processor (this host: AMD EPYC 7B13 64-Core Processor)"]
        );
        assert!(l.line().contains("ANOTHER MACHINE"), "{}", l.line());
        assert!(l.line().contains("Intel(R) Xeon(R)"), "{}", l.line());
    }

    #[test]
    fn a_file_with_this_hosts_key_is_this_hosts() {
        let this = other_host();
        let mut f = costs::CostFile::new(costs::HostInfo {
            cpu_model: Some(this.cpu_model.clone()),
            fingerprint: Some(this.id()),
            ..Default::default()
        });
        f.costs.insert(
            "fault.anon_write".into(),
            costs::Cost::assumed(1.0, 1.0, 1.0, "test"),
        );
        let l = CostsLabel::of_model(&CostModel::new(&f, "mine.toml"), &this);
        assert!(l.this_host && l.differs.is_empty(), "{l:?}");
        assert!(l.line().contains("this host's"), "{}", l.line());
        // The same fields under another key (another THP setting, say):
        // not this host's, and the label says which key.
        let other = host::MachineKey {
            thp: "enabled=always defrag=madvise shmem=never".into(),
            ..this.clone()
        };
        let l = CostsLabel::of_model(&CostModel::new(&f, "mine.toml"), &other);
        assert!(!l.this_host);
        assert_eq!(l.differs.len(), 1);
        assert!(l.differs[0].starts_with("machine key"), "{:?}", l.differs);
    }
}
