//! The TCG plugin: shipped as source (`plugin/` in this crate), built with
//! rustc on first use into the user's cache, keyed by the source, QEMU's
//! version and rustc's version, so a new ptlab, QEMU or compiler builds a
//! fresh one and an unchanged setup reuses it.
//!
//! ## Invariants
//! 1. A cached plugin is complete: it is built in a directory of its own
//!    and renamed into place; a failed build leaves nothing behind.

use crate::QtraceError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The plugin's sources, as (file name, text).
pub const SOURCES: [(&str, &str); 2] = [
    ("ptlab_plugin.rs", include_str!("../plugin/ptlab_plugin.rs")),
    (
        "qemu_plugin_api.rs",
        include_str!("../plugin/qemu_plugin_api.rs"),
    ),
];

/// FNV-1a, 64 bits: a hash whose value never changes between builds of
/// ptlab (the cache key must not depend on std's hasher).
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The first line a program prints for `--version`.
fn version_line(program: &Path) -> Result<String, QtraceError> {
    let out = Command::new(program)
        .arg("--version")
        .output()
        .map_err(|e| QtraceError::Setup(format!("{}: {e}", program.display())))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// The cache directory: `$PTLAB_CACHE_DIR`, else `$XDG_CACHE_HOME/ptlab`,
/// else `~/.cache/ptlab`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PTLAB_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("ptlab");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("ptlab")
}

/// The plugin for `qemu`, built now if the cache does not hold it.
///
/// # Errors
/// [`QtraceError::Setup`] if rustc is missing or the build fails.
pub fn ensure(qemu: &Path) -> Result<PathBuf, QtraceError> {
    let rustc = std::env::var_os("RUSTC").map_or_else(|| PathBuf::from("rustc"), PathBuf::from);
    let qv = version_line(qemu)?;
    let rv = version_line(&rustc).map_err(|e| {
        QtraceError::Setup(format!(
            "the QEMU plugin is built with rustc on first use: {e}"
        ))
    })?;
    let mut h = 0xcbf2_9ce4_8422_2325;
    for (name, text) in SOURCES {
        h = fnv(h, name.as_bytes());
        h = fnv(h, text.as_bytes());
    }
    h = fnv(h, qv.as_bytes());
    h = fnv(h, rv.as_bytes());
    let dir = cache_dir();
    let so = dir.join(format!("trace-plugin-{h:016x}.so"));
    if so.is_file() {
        return Ok(so);
    }
    let setup = |what: &str, e: &dyn std::fmt::Display| {
        QtraceError::Setup(format!("building the QEMU plugin ({what}): {e}"))
    };
    std::fs::create_dir_all(&dir).map_err(|e| setup(&dir.display().to_string(), &e))?;
    let build = dir.join(format!("build-{h:016x}-{}", std::process::id()));
    let result = (|| {
        std::fs::create_dir_all(&build).map_err(|e| setup("a build directory", &e))?;
        for (name, text) in SOURCES {
            std::fs::write(build.join(name), text).map_err(|e| setup(name, &e))?;
        }
        let out = Command::new(&rustc)
            .current_dir(&build)
            .args([
                "--edition",
                "2021",
                "--crate-type",
                "cdylib",
                "--crate-name",
                "ptlab_trace_plugin",
                "-C",
                "opt-level=3",
                "-C",
                "panic=abort",
                "-C",
                "target-cpu=native",
                "-o",
                "plugin.so",
                "ptlab_plugin.rs",
            ])
            .output()
            .map_err(|e| setup("rustc", &e))?;
        if !out.status.success() {
            return Err(setup("rustc failed", &String::from_utf8_lossy(&out.stderr)));
        }
        std::fs::rename(build.join("plugin.so"), &so).map_err(|e| setup("install", &e))
    })();
    let _ = std::fs::remove_dir_all(&build);
    result.map(|()| so)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_hash_is_fnv_1a() {
        // FNV-1a's published test vectors.
        assert_eq!(fnv(0xcbf2_9ce4_8422_2325, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(0xcbf2_9ce4_8422_2325, b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
