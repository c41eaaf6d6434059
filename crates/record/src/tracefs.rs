//! Where the `exceptions` tracepoints are read from: tracefs, found where it
//! is mounted, or mounted by the recorder when it may (root).
//!
//! tracefs is where the kernel publishes a tracepoint's id and the layout
//! of its raw record, which the recorder needs to open the
//! `exceptions:page_fault_*` events and read each fault's error code (its
//! kind). systemd mounts it at boot at /sys/kernel/tracing; many minimal
//! systems, containers and VMs do not. [`locate`] looks at the usual places
//! (/sys/kernel/tracing, /sys/kernel/debug/tracing, then any tracefs in
//! /proc/self/mounts) and, failing those, mounts it at /sys/kernel/tracing
//! when the process may (CAP_SYS_ADMIN).
//!
//! A tracefs the recorder mounted is left mounted: that is the state
//! systemd gives a machine at boot, other tracers (perf, bpftrace) expect
//! it there, unmounting it could pull it from under another recorder that
//! found it meanwhile, and the next recording then finds it without
//! mounting again. The caller says so on one line.

use std::path::{Path, PathBuf};

/// Where tracefs is mounted at boot, and where the recorder mounts it.
pub const DEFAULT: &str = "/sys/kernel/tracing";
/// Where debugfs automounts it when debugfs is mounted.
pub const UNDER_DEBUGFS: &str = "/sys/kernel/debug/tracing";

/// What the recorder reads fault kinds from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Find tracefs, mounting it if it is nowhere and the process may.
    Auto,
    /// No tracepoints: the software page-fault event, kinds inferred (a
    /// diagnostic: what a host without tracefs records).
    None,
    /// This directory (a tracefs mount).
    At(PathBuf),
}

impl Choice {
    /// The choice `PTLAB_TRACEFS` names: unset or empty is
    /// [`Choice::Auto`], `none` is [`Choice::None`], anything else a
    /// directory.
    pub fn from_env(value: Option<&str>) -> Choice {
        match value {
            None | Some("") => Choice::Auto,
            Some("none") => Choice::None,
            Some(dir) => Choice::At(PathBuf::from(dir)),
        }
    }
}

/// What [`locate`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The tracefs directory whose `events/exceptions` the recorder reads,
    /// or `None`: no tracepoints (then `why` says why).
    pub dir: Option<PathBuf>,
    /// The recorder mounted it there just now.
    pub mounted: bool,
    /// Why there is no directory, in words, for the trace's notes.
    pub why: Option<String>,
}

/// Whether `dir` holds the `exceptions` page-fault tracepoints.
pub fn has_fault_events(dir: &Path) -> bool {
    dir.join("events/exceptions/page_fault_user/id").exists()
}

/// The mount points of every tracefs in a mount table (the text of
/// /proc/self/mounts: device, mount point, type, ...; spaces in a path are
/// written `\040`).
pub fn tracefs_mounts(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "tracefs").then(|| PathBuf::from(unescape(at)))
        })
        .collect()
}

/// A mount table's octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(
                    d.iter()
                        .fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Finds tracefs for `choice` (see the module documentation); mounts it at
/// [`DEFAULT`] when it is nowhere and the process may.
pub fn locate(choice: &Choice) -> Located {
    let found = |dir: PathBuf, mounted| Located {
        dir: Some(dir),
        mounted,
        why: None,
    };
    let none = |why: String| Located {
        dir: None,
        mounted: false,
        why: Some(why),
    };
    match choice {
        Choice::None => return none("PTLAB_TRACEFS=none: tracepoints not used".into()),
        Choice::At(dir) if has_fault_events(dir) => return found(dir.clone(), false),
        Choice::At(dir) => {
            return none(format!(
                "PTLAB_TRACEFS={}: no events/exceptions/page_fault_user there",
                dir.display()
            ))
        }
        Choice::Auto => {}
    }
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut candidates = vec![PathBuf::from(DEFAULT), PathBuf::from(UNDER_DEBUGFS)];
    candidates.extend(tracefs_mounts(&table));
    if let Some(dir) = candidates.into_iter().find(|d| has_fault_events(d)) {
        return found(dir, false);
    }
    if !tracefs_mounts(&table).is_empty() {
        return none(
            "tracefs is mounted but its exceptions events are missing or not readable by this user"
                .into(),
        );
    }
    match mount(Path::new(DEFAULT)) {
        Ok(()) if has_fault_events(Path::new(DEFAULT)) => found(PathBuf::from(DEFAULT), true),
        Ok(()) => none(format!(
            "tracefs mounted at {DEFAULT} has no exceptions page-fault events (a kernel without them)"
        )),
        Err(e) => none(format!(
            "tracefs is not mounted, and mounting it at {DEFAULT} failed ({e}; it needs root)"
        )),
    }
}

/// Mounts tracefs at `at` (an existing, empty directory).
fn mount(at: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if !at.is_dir() {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    }
    let target = std::ffi::CString::new(at.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call; no data argument.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_table_names_every_tracefs_with_its_escapes_undone() {
        let table = "sysfs /sys sysfs rw 0 0\n\
                     tracefs /sys/kernel/tracing tracefs rw,nosuid 0 0\n\
                     nodev /mnt/my\\040trace tracefs rw 0 0\n\
                     debugfs /sys/kernel/debug debugfs rw 0 0\n";
        assert_eq!(
            tracefs_mounts(table),
            vec![
                PathBuf::from("/sys/kernel/tracing"),
                PathBuf::from("/mnt/my trace")
            ]
        );
        assert!(tracefs_mounts("proc /proc proc rw 0 0\n").is_empty());
    }

    #[test]
    fn the_environment_chooses_none_a_directory_or_the_search() {
        assert_eq!(Choice::from_env(None), Choice::Auto);
        assert_eq!(Choice::from_env(Some("")), Choice::Auto);
        assert_eq!(Choice::from_env(Some("none")), Choice::None);
        assert_eq!(
            Choice::from_env(Some("/t")),
            Choice::At(PathBuf::from("/t"))
        );
    }

    #[test]
    fn a_directory_without_the_events_is_no_tracefs() {
        let d = tempfile::tempdir().unwrap();
        let l = locate(&Choice::At(d.path().to_path_buf()));
        assert_eq!(l.dir, None);
        assert!(l.why.unwrap().contains("no events/exceptions"));
        let l = locate(&Choice::None);
        assert_eq!((l.dir, l.mounted), (None, false));
    }
}
