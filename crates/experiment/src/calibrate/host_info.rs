//! The `[host]` table of a calibrated file: which machine the figures
//! describe, and when they were taken.

use std::time::{SystemTime, UNIX_EPOCH};

use costs::HostInfo;

use super::Scale;

/// This host, as /proc, /sys and CPUID tell.
pub fn read(scale: Scale) -> HostInfo {
    let fp = host::Fingerprint::read();
    let key = host::MachineKey::of(&fp);
    HostInfo {
        kernel_release: fp.kernel_release.clone(),
        cpu_model: fp.cpu_model.clone(),
        cpus: fp.cpus,
        hypervisor: Some(key.hypervisor.clone()),
        thp: Some(key.thp.clone()),
        page_size: fp.page_size,
        fingerprint: Some(key.id()),
        taken: Some(rfc3339_utc(SystemTime::now())),
        mode: Some(scale.name().to_string()),
        description: Some(format!(
            "ptlab calibrate ({} mode); load average at the end {}; THP enabled = {}, page size = {} bytes",
            scale.name(),
            load_average().unwrap_or_else(|| "unknown".into()),
            fp.thp_enabled.as_deref().unwrap_or("unknown"),
            fp.page_size
                .map_or_else(|| "unknown".to_string(), |p| p.to_string()),
        )),
    }
}

/// The 1, 5 and 15 minute load averages (/proc/loadavg): figures taken
/// while other processes compete for the CPUs are slower and noisier.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let parts: Vec<&str> = text.split_whitespace().take(3).collect();
    (parts.len() == 3).then(|| parts.join(" "))
}

/// `t` as "YYYY-MM-DDTHH:MM:SSZ".
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (the usual
/// era-of-400-years conversion).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_formatted_in_utc() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2024-02-29 12:34:56 UTC: a leap day.
        let t = UNIX_EPOCH + Duration::from_secs(1_709_210_096);
        assert_eq!(rfc3339_utc(t), "2024-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_761_599);
        assert_eq!(rfc3339_utc(t), "2026-12-31T23:59:59Z");
    }
}
