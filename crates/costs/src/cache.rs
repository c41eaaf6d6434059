//! Where each user's cost files of the hosts they ran ptlab on are kept:
//! `$XDG_CACHE_HOME/ptlab/costs/<key>.toml`, or `~/.cache/ptlab/costs/`
//! when `XDG_CACHE_HOME` is unset or not an absolute path (the XDG base
//! directory rule). `<key>` is the host's machine key (`host::MachineKey`'s
//! id), so each host (CPU, kernel, hypervisor, THP, page size) has its own.

use std::path::{Path, PathBuf};

/// The cache folder of cost files, from `XDG_CACHE_HOME` and `HOME`;
/// `None` when neither gives an absolute path.
pub fn dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("XDG_CACHE_HOME").as_deref().map(Path::new),
        std::env::var_os("HOME").as_deref().map(Path::new),
    )
}

/// [`dir`] from the two variables' values.
pub fn dir_from(xdg_cache_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let base = match xdg_cache_home {
        Some(x) if x.is_absolute() => x.to_path_buf(),
        _ => home.filter(|h| h.is_absolute())?.join(".cache"),
    };
    Some(base.join("ptlab").join("costs"))
}

/// The cached cost file of the machine whose key is `key`.
pub fn path_for(key: &str) -> Option<PathBuf> {
    Some(dir()?.join(format!("{key}.toml")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_cache_home_wins_when_absolute() {
        let d = dir_from(Some(Path::new("/c")), Some(Path::new("/home/u")));
        assert_eq!(d, Some(PathBuf::from("/c/ptlab/costs")));
        // A relative XDG_CACHE_HOME is ignored (the XDG rule).
        let d = dir_from(Some(Path::new("rel")), Some(Path::new("/home/u")));
        assert_eq!(d, Some(PathBuf::from("/home/u/.cache/ptlab/costs")));
        assert_eq!(dir_from(None, None), None);
        assert_eq!(dir_from(None, Some(Path::new("rel"))), None);
    }
}
