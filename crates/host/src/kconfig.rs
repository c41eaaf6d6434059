//! The running kernel's build configuration, from /proc/config.gz (needs
//! CONFIG_IKCONFIG_PROC) or /boot/config-RELEASE (distributions ship it).

use std::collections::BTreeMap;
use std::io::Read;

/// `CONFIG_*` options as written in the config file. An option written as
/// `# CONFIG_X is not set` is stored as `"n"`; an option missing from the file
/// is absent (it does not exist for this kernel version or architecture).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelConfig {
    /// Where it was read from.
    pub source: String,
    pub options: BTreeMap<String, String>,
}

impl KernelConfig {
    /// The running kernel's configuration, or `None` if neither file is
    /// readable.
    pub fn read() -> Option<KernelConfig> {
        if let Some(text) = read_gz("/proc/config.gz") {
            return Some(KernelConfig::parse("/proc/config.gz", &text));
        }
        let release = crate::procfs::read_line("/proc/sys/kernel/osrelease")?;
        let path = format!("/boot/config-{release}");
        let text = crate::procfs::read_string(&path)?;
        Some(KernelConfig::parse(&path, &text))
    }

    /// Parses the text of a kernel config file.
    pub fn parse(source: &str, text: &str) -> KernelConfig {
        let mut options = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# ") {
                if let Some(name) = rest.strip_suffix(" is not set") {
                    if name.starts_with("CONFIG_") {
                        options.insert(name.to_string(), "n".to_string());
                    }
                }
            } else if let Some((name, value)) = line.split_once('=') {
                if name.starts_with("CONFIG_") {
                    options.insert(name.to_string(), value.trim_matches('"').to_string());
                }
            }
        }
        KernelConfig {
            source: source.to_string(),
            options,
        }
    }

    /// The value of an option (`"y"`, `"m"`, `"n"`, a number, a string).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// `Some(true)` for `y`/`m`, `Some(false)` for not set, `None` if the
    /// option is absent from this configuration.
    pub fn enabled(&self, name: &str) -> Option<bool> {
        self.get(name).map(|v| v == "y" || v == "m")
    }

    /// A numeric option (e.g. `CONFIG_PGTABLE_LEVELS`).
    pub fn number(&self, name: &str) -> Option<u64> {
        self.get(name)?.parse().ok()
    }
}

fn read_gz(path: &str) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_set_unset_and_numbers() {
        let c = KernelConfig::parse(
            "test",
            "#\n# Automatically generated\nCONFIG_PGTABLE_LEVELS=5\nCONFIG_PT_RECLAIM=y\n# CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS is not set\nCONFIG_LOCALVERSION=\"-x\"\n",
        );
        assert_eq!(c.number("CONFIG_PGTABLE_LEVELS"), Some(5));
        assert_eq!(c.enabled("CONFIG_PT_RECLAIM"), Some(true));
        assert_eq!(c.enabled("CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS"), Some(false));
        assert_eq!(c.enabled("CONFIG_NOPE"), None);
        assert_eq!(c.get("CONFIG_LOCALVERSION"), Some("-x"));
    }
}
