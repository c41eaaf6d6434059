//! /proc/cpuinfo: the processor's model name and feature flags.

/// What ptlab needs from /proc/cpuinfo (first processor only: the flags that
/// matter here are the same on every CPU).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuInfo {
    pub model: Option<String>,
    /// The `flags` line split into words (x86; empty elsewhere).
    pub flags: Vec<String>,
    /// Count of `processor` entries.
    pub processors: usize,
}

impl CpuInfo {
    /// Reads /proc/cpuinfo; `None` if unreadable.
    pub fn read() -> Option<CpuInfo> {
        crate::procfs::read_string("/proc/cpuinfo").map(|text| CpuInfo::parse(&text))
    }

    /// Parses the text of /proc/cpuinfo.
    pub fn parse(text: &str) -> CpuInfo {
        let mut info = CpuInfo::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "processor" => info.processors += 1,
                // x86 says "model name"; some other architectures "Model" or
                // "cpu model".
                "model name" | "Model" | "cpu model" if info.model.is_none() => {
                    info.model = Some(value.to_string());
                }
                "flags" if info.flags.is_empty() => {
                    info.flags = value.split_whitespace().map(str::to_string).collect();
                }
                _ => {}
            }
        }
        info
    }

    /// Whether the first CPU lists `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// CPUs online now (sysconf), `None` if the call fails.
pub fn online_cpus() -> Option<usize> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as usize)
}

/// The base page size (sysconf), `None` if the call fails.
pub fn page_size() -> Option<u64> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (n > 0).then_some(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_model_flags_and_count() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu la57 hypervisor\n\nprocessor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n";
        let c = CpuInfo::parse(text);
        assert_eq!(c.processors, 2);
        assert_eq!(c.model.as_deref(), Some("AMD EPYC"));
        assert!(c.has_flag("la57"));
        assert!(c.has_flag("hypervisor"));
        assert!(!c.has_flag("la5"));
    }
}
