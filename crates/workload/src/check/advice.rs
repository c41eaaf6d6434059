//! What Linux refuses of an advice, read from the vocabulary (crates/advice).

use super::*;
use ::advice::{Needs, NeedsProt};

/// The smallest PMD entry's reach over the geometries (x86-64, RISC-V and
/// ARM64 with 4 KiB pages).
const SMALLEST_PMD: u64 = 2 << 20;

/// The change an advice makes to the VMA flags the checker tracks (what
/// `mremap` and `fork` need to know), if it makes one.
pub(super) fn vma_flags(advice: Advice) -> Option<fn(Attrs) -> Attrs> {
    Some(match advice {
        Advice::HugePage => |a| Attrs {
            thp: Some(true),
            ..a
        },
        Advice::NoHugePage => |a| Attrs {
            thp: Some(false),
            ..a
        },
        Advice::DontFork => |a| Attrs {
            dontfork: true,
            ..a
        },
        Advice::DoFork => |a| Attrs {
            dontfork: false,
            ..a
        },
        Advice::WipeOnFork => |a| Attrs {
            wipeonfork: true,
            ..a
        },
        Advice::KeepOnFork => |a| Attrs {
            wipeonfork: false,
            ..a
        },
        _ => return None,
    })
}

impl<'a, 'd> Checker<'a, 'd> {
    pub(super) fn advice_allowed(
        &self,
        t: &Thread,
        op: &OpSyn,
        region: RegionId,
        r: Range,
        advice: Advice,
    ) -> Result<()> {
        let m = self.mapping(region);
        let name = advice.name();
        let end = r.offset + r.len;
        if advice.refuses_locked() {
            if let Some((at, _)) = m.pages.first_where(r.offset, end, |a| a.locked) {
                let problem = format!(
                    "is locked at offset {}, and Linux refuses advice {name:?} on locked memory (EINVAL)",
                    format_size(at)
                );
                return Err(self.region_err(t, op, op.at, region, problem, "; munlock it first"));
            }
        }
        // thp_vma_allowable_order outside a fault: a VMA that holds no whole
        // aligned PMD range takes no THP, and MADV_COLLAPSE fails with
        // EINVAL. 2 MiB is the smallest PMD of every geometry, so a
        // shorter mapping fails under all of them; a longer one is left to
        // the run (its placement and the geometry decide).
        if advice == Advice::Collapse && m.size < SMALLEST_PMD {
            let problem = format!(
                "is {} long, and advice \"collapse\" needs a mapping that holds a whole aligned 2MiB range (EINVAL)",
                format_size(m.size)
            );
            return Err(self.region_err(t, op, op.at, region, problem, ""));
        }
        let refusal = match advice.needs() {
            Needs::Any => None,
            Needs::PrivateAnon if m.kind == MapKind::Anon && !m.shared => None,
            Needs::PrivateAnon => Some("private anonymous memory (EINVAL)"),
            Needs::ModelledAnon if m.kind == MapKind::Anon && !m.shared => None,
            // Linux takes it; the model does not have it.
            Needs::ModelledAnon => Some("private anonymous memory in the model (not modelled)"),
            // MAP_SHARED | MAP_ANONYMOUS is shmem too.
            Needs::AnonShmem if m.kind == MapKind::Shmem || m.kind == MapKind::Anon => None,
            Needs::AnonShmem => Some(
                "private anonymous memory and shmem (EINVAL on a regular file: Linux 6.18 collapses a file's page cache only when built with CONFIG_READ_ONLY_THP_FOR_FS)",
            ),
            // MAP_SHARED | MAP_ANONYMOUS is shmem too.
            Needs::SharedObject if m.shared || m.kind == MapKind::Shmem => None,
            Needs::SharedObject => {
                Some("shared file or shmem mappings (EINVAL; EACCES on a private file mapping)")
            }
        };
        if let Some(only) = refusal {
            let problem = format!(
                "is a {} mapping, and advice {name:?} applies only to {only}",
                kind_name(m.kind, m.shared)
            );
            return Err(self.region_err(t, op, op.at, region, problem, ""));
        }
        let need: Option<fn(Prot) -> bool> = match advice.needs_prot() {
            NeedsProt::Read => Some(Prot::readable),
            NeedsProt::Write => Some(Prot::writable),
            NeedsProt::Nothing => None,
        };
        if let Some(need) = need {
            if let Some((at, a)) = m.pages.first_where(r.offset, end, |a| !need(a.prot)) {
                let problem = format!(
                    "is mapped with prot {:?} at offset {}, so advice {name:?} would fail (EFAULT)",
                    syntax::prot_name(a.prot),
                    format_size(at)
                );
                return Err(self.region_err(t, op, op.at, region, problem, ""));
            }
        }
        Ok(())
    }
}
