//! The workloads shipped inside the binary, and the validation suite.
//!
//! Built-ins (`builtin/*.toml`) reproduce the benchmarks of the seeds; each
//! names the seed it answers. The validation suite (`validate/*.toml`) holds
//! small single-threaded deterministic workloads whose counters the kernel
//! and the model must agree on exactly, mark by mark (`ptlab validate`).
//!
//! Invariants (tested): every file of the two folders is listed here, every
//! TOML's `name` is its listed name, no name is in both lists, and every one
//! parses and checks.

use std::sync::LazyLock;

use toml::de::{DeTable, DeValue};

/// The seed documents whose questions the built-in workloads reproduce, by
/// name (the sources the study cites).
pub const SEEDS: &[&str] = &[
    "5-level-vs-4-level-page-tables",
    "latency-implications-of-virtual-memory",
    "pte-page-table-reclaim-slides",
    "riscv-64k-base-page-rfc",
    "split-pmd-locks",
    "invlpgb-series-v5",
];

/// `(name, seed, TOML)`: the seed is one of [`SEEDS`].
const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "pagefault",
        "5-level-vs-4-level-page-tables",
        include_str!("../builtin/pagefault.toml"),
    ),
    (
        "pagefault-file",
        "5-level-vs-4-level-page-tables",
        include_str!("../builtin/pagefault-file.toml"),
    ),
    (
        "ebizzy",
        "5-level-vs-4-level-page-tables",
        include_str!("../builtin/ebizzy.toml"),
    ),
    (
        "multi-fault",
        "pte-page-table-reclaim-slides",
        include_str!("../builtin/multi-fault.toml"),
    ),
    (
        "thp-fault-scaling",
        "split-pmd-locks",
        include_str!("../builtin/thp-fault-scaling.toml"),
    ),
    (
        "dontneed-reclaim",
        "pte-page-table-reclaim-slides",
        include_str!("../builtin/dontneed-reclaim.toml"),
    ),
    (
        "tlb-shootdown",
        "latency-implications-of-virtual-memory",
        include_str!("../builtin/tlb-shootdown.toml"),
    ),
    (
        "writeback",
        "latency-implications-of-virtual-memory",
        include_str!("../builtin/writeback.toml"),
    ),
    (
        "gups",
        "riscv-64k-base-page-rfc",
        include_str!("../builtin/gups.toml"),
    ),
    (
        "prefault",
        "latency-implications-of-virtual-memory",
        include_str!("../builtin/prefault.toml"),
    ),
    (
        "tlb-flush2",
        "invlpgb-series-v5",
        include_str!("../builtin/tlb-flush2.toml"),
    ),
];

/// The validation suite, in the order `ptlab validate` runs it. The 50 GiB
/// reclaim demo is the built-in `dontneed-reclaim` itself.
const VALIDATE: &[(&str, &str)] = &[
    ("anon-write", include_str!("../validate/anon-write.toml")),
    (
        "anon-read-zero-page",
        include_str!("../validate/anon-read-zero-page.toml"),
    ),
    (
        "anon-write-after-read",
        include_str!("../validate/anon-write-after-read.toml"),
    ),
    ("anon-random", include_str!("../validate/anon-random.toml")),
    ("thp-fault", include_str!("../validate/thp-fault.toml")),
    (
        "thp-huge-zero-page",
        include_str!("../validate/thp-huge-zero-page.toml"),
    ),
    (
        "thp-split-by-dontneed",
        include_str!("../validate/thp-split-by-dontneed.toml"),
    ),
    (
        "pt-reclaim-whole",
        include_str!("../validate/pt-reclaim-whole.toml"),
    ),
    (
        "pt-reclaim-partial",
        include_str!("../validate/pt-reclaim-partial.toml"),
    ),
    ("munmap-part", include_str!("../validate/munmap-part.toml")),
    (
        "mprotect-split",
        include_str!("../validate/mprotect-split.toml"),
    ),
    (
        "map-populate",
        include_str!("../validate/map-populate.toml"),
    ),
    ("mlock", include_str!("../validate/mlock.toml")),
    ("mmap-locked", include_str!("../validate/mmap-locked.toml")),
    (
        "populate-write",
        include_str!("../validate/populate-write.toml"),
    ),
    (
        "populate-read",
        include_str!("../validate/populate-read.toml"),
    ),
    (
        "file-private",
        include_str!("../validate/file-private.toml"),
    ),
    ("file-shared", include_str!("../validate/file-shared.toml")),
    (
        "file-readaround-window",
        include_str!("../validate/file-readaround-window.toml"),
    ),
    (
        "file-readaround-middle",
        include_str!("../validate/file-readaround-middle.toml"),
    ),
    (
        "file-faultaround-major",
        include_str!("../validate/file-faultaround-major.toml"),
    ),
    (
        "file-faultaround-major-shared",
        include_str!("../validate/file-faultaround-major-shared.toml"),
    ),
    (
        "file-thp-hugepage-read",
        include_str!("../validate/file-thp-hugepage-read.toml"),
    ),
    (
        "file-thp-private-write",
        include_str!("../validate/file-thp-private-write.toml"),
    ),
    (
        "file-thp-private-write-read",
        include_str!("../validate/file-thp-private-write-read.toml"),
    ),
    ("shmem", include_str!("../validate/shmem.toml")),
    ("madv-free", include_str!("../validate/madv-free.toml")),
    (
        "vma-merge-pt-reclaim",
        include_str!("../validate/vma-merge-pt-reclaim.toml"),
    ),
    (
        "vma-merge-thp",
        include_str!("../validate/vma-merge-thp.toml"),
    ),
    (
        "vma-merge-anon-vma-conflict",
        include_str!("../validate/vma-merge-anon-vma-conflict.toml"),
    ),
    (
        "vma-merge-anon-vma-shared",
        include_str!("../validate/vma-merge-anon-vma-shared.toml"),
    ),
    (
        "vma-merge-file-fault-around",
        include_str!("../validate/vma-merge-file-fault-around.toml"),
    ),
    (
        "thp-split-by-vma-split",
        include_str!("../validate/thp-split-by-vma-split.toml"),
    ),
    (
        "thp-split-by-mlock",
        include_str!("../validate/thp-split-by-mlock.toml"),
    ),
    (
        "mprotect-locked-populate-file",
        include_str!("../validate/mprotect-locked-populate-file.toml"),
    ),
    (
        "mprotect-locked-populate-anon",
        include_str!("../validate/mprotect-locked-populate-anon.toml"),
    ),
    (
        "mremap-grow-shrink",
        include_str!("../validate/mremap-grow-shrink.toml"),
    ),
    ("mremap-move", include_str!("../validate/mremap-move.toml")),
    (
        "mremap-move-thp",
        include_str!("../validate/mremap-move-thp.toml"),
    ),
    (
        "mremap-move-grow-thp",
        include_str!("../validate/mremap-move-grow-thp.toml"),
    ),
    (
        "mremap-move-dontneed-reclaim",
        include_str!("../validate/mremap-move-dontneed-reclaim.toml"),
    ),
    (
        "dontneed-reclaim",
        include_str!("../builtin/dontneed-reclaim.toml"),
    ),
    // fork (issue 17)
    (
        "fork-cow-halves",
        include_str!("../validate/fork-cow-halves.toml"),
    ),
    ("fork-twice", include_str!("../validate/fork-twice.toml")),
    ("fork-thp", include_str!("../validate/fork-thp.toml")),
    (
        "fork-child-unmaps",
        include_str!("../validate/fork-child-unmaps.toml"),
    ),
    (
        "fork-refault",
        include_str!("../validate/fork-refault.toml"),
    ),
    // a child running beside its parent (issue 30)
    (
        "fork-running-parent-writes",
        include_str!("../validate/fork-running-parent-writes.toml"),
    ),
    (
        "fork-running-parent-unmaps",
        include_str!("../validate/fork-running-parent-unmaps.toml"),
    ),
    (
        "fork-running-child-exits",
        include_str!("../validate/fork-running-child-exits.toml"),
    ),
    (
        "fork-running-child-sleeps",
        include_str!("../validate/fork-running-child-sleeps.toml"),
    ),
    (
        "node-of-untouched-anon",
        include_str!("../validate/node-of-untouched-anon.toml"),
    ),
    (
        "node-of-touched-anon",
        include_str!("../validate/node-of-touched-anon.toml"),
    ),
    ("node-of-thp", include_str!("../validate/node-of-thp.toml")),
    (
        "node-of-file",
        include_str!("../validate/node-of-file.toml"),
    ), // reclaim on request and THP folio splitting (issue 30)
    (
        "reclaim-pageout-anon",
        include_str!("../validate/reclaim-pageout-anon.toml"),
    ),
    (
        "reclaim-lazyfree-discard",
        include_str!("../validate/reclaim-lazyfree-discard.toml"),
    ),
    (
        "reclaim-lazyfree-thp",
        include_str!("../validate/reclaim-lazyfree-thp.toml"),
    ),
    (
        "thp-split-by-pageout",
        include_str!("../validate/thp-split-by-pageout.toml"),
    ),
    (
        "thp-split-by-pageout-full",
        include_str!("../validate/thp-split-by-pageout-full.toml"),
    ),
    (
        "thp-split-by-cold",
        include_str!("../validate/thp-split-by-cold.toml"),
    ),
    (
        "thp-split-by-free",
        include_str!("../validate/thp-split-by-free.toml"),
    ),
    (
        "thp-split-after-pmd-split",
        include_str!("../validate/thp-split-after-pmd-split.toml"),
    ),
    (
        "thp-fork-pageout",
        include_str!("../validate/thp-fork-pageout.toml"),
    ),
    (
        "swap-fork-read",
        include_str!("../validate/swap-fork-read.toml"),
    ),
    (
        "swap-fork-write",
        include_str!("../validate/swap-fork-write.toml"),
    ),
    ("swap-free", include_str!("../validate/swap-free.toml")),
    (
        "swap-lazyfree-rewritten",
        include_str!("../validate/swap-lazyfree-rewritten.toml"),
    ),
    (
        "swap-major-read",
        include_str!("../validate/swap-major-read.toml"),
    ),
    (
        "swap-major-write",
        include_str!("../validate/swap-major-write.toml"),
    ),
    ("swap-munmap", include_str!("../validate/swap-munmap.toml")),
    (
        "swap-pageout-reread",
        include_str!("../validate/swap-pageout-reread.toml"),
    ),
    (
        "swap-pageout-rewrite",
        include_str!("../validate/swap-pageout-rewrite.toml"),
    ),
    (
        "swap-readahead-random",
        include_str!("../validate/swap-readahead-random.toml"),
    ),
    (
        "swap-readahead-reverse",
        include_str!("../validate/swap-readahead-reverse.toml"),
    ),
    (
        "swap-readahead-seq",
        include_str!("../validate/swap-readahead-seq.toml"),
    ),
    (
        "swap-shmem-fork",
        include_str!("../validate/swap-shmem-fork.toml"),
    ),
    (
        "swap-shmem-pageout",
        include_str!("../validate/swap-shmem-pageout.toml"),
    ),
    (
        "swap-thp-pageout",
        include_str!("../validate/swap-thp-pageout.toml"),
    ),
    (
        "swap-shmem-thp-block",
        include_str!("../validate/swap-shmem-thp-block.toml"),
    ),
    (
        "swap-shmem-thp-file",
        include_str!("../validate/swap-shmem-thp-file.toml"),
    ),
    (
        "swap-shmem-thp-file-all",
        include_str!("../validate/swap-shmem-thp-file-all.toml"),
    ),
    (
        "swap-shmem-thp-sync",
        include_str!("../validate/swap-shmem-thp-sync.toml"),
    ),
    (
        "swap-thp-block-read",
        include_str!("../validate/swap-thp-block-read.toml"),
    ),
    (
        "swap-thp-block-write",
        include_str!("../validate/swap-thp-block-write.toml"),
    ),
    (
        "swap-thp-sync-read",
        include_str!("../validate/swap-thp-sync-read.toml"),
    ),
    (
        "swap-thp-sync-repageout",
        include_str!("../validate/swap-thp-sync-repageout.toml"),
    ),
    (
        "swap-thp-partial",
        include_str!("../validate/swap-thp-partial.toml"),
    ),
    (
        "thp-deferred-split-dontneed",
        include_str!("../validate/thp-deferred-split-dontneed.toml"),
    ),
    (
        "thp-deferred-split-munmap",
        include_str!("../validate/thp-deferred-split-munmap.toml"),
    ),
    (
        "khugepaged-collapse",
        include_str!("../validate/khugepaged-collapse.toml"),
    ),
    (
        "khugepaged-max-ptes-shared",
        include_str!("../validate/khugepaged-max-ptes-shared.toml"),
    ),
    (
        "collapse-base-pages",
        include_str!("../validate/collapse-base-pages.toml"),
    ),
    (
        "collapse-fork-shared",
        include_str!("../validate/collapse-fork-shared.toml"),
    ),
    (
        "collapse-then-split",
        include_str!("../validate/collapse-then-split.toml"),
    ),
    (
        "reclaim-file-clean",
        include_str!("../validate/reclaim-file-clean.toml"),
    ),
    (
        "reclaim-file-dirty",
        include_str!("../validate/reclaim-file-dirty.toml"),
    ),
    (
        "reclaim-shmem",
        include_str!("../validate/reclaim-shmem.toml"),
    ),
    (
        "fork-msync-wrprotect",
        include_str!("../validate/fork-msync-wrprotect.toml"),
    ),
    (
        "fork-pageout-file",
        include_str!("../validate/fork-pageout-file.toml"),
    ),
    (
        "fork-pageout-shmem",
        include_str!("../validate/fork-pageout-shmem.toml"),
    ),
    // the workload verbs of issue 30: fork advice, MLOCK_ONFAULT, file offsets
    (
        "fork-dontfork",
        include_str!("../validate/fork-dontfork.toml"),
    ),
    (
        "fork-dontfork-thp",
        include_str!("../validate/fork-dontfork-thp.toml"),
    ),
    (
        "fork-wipeonfork",
        include_str!("../validate/fork-wipeonfork.toml"),
    ),
    (
        "fork-wipeonfork-thp",
        include_str!("../validate/fork-wipeonfork-thp.toml"),
    ),
    (
        "mlock-onfault",
        include_str!("../validate/mlock-onfault.toml"),
    ),
    (
        "mlock-onfault-fork",
        include_str!("../validate/mlock-onfault-fork.toml"),
    ),
    (
        "file-offset-readaround",
        include_str!("../validate/file-offset-readaround.toml"),
    ),
    (
        "file-offset-thp",
        include_str!("../validate/file-offset-thp.toml"),
    ),
    (
        "file-offset-private-fork",
        include_str!("../validate/file-offset-private-fork.toml"),
    ),
    (
        "shmem-remove-fork",
        include_str!("../validate/shmem-remove-fork.toml"),
    ),
    (
        "shmem-remove-mprotect",
        include_str!("../validate/shmem-remove-mprotect.toml"),
    ),
    (
        "file-remove-shared",
        include_str!("../validate/file-remove-shared.toml"),
    ),
    (
        "mremap-dontunmap",
        include_str!("../validate/mremap-dontunmap.toml"),
    ),
    (
        "mremap-dontunmap-thp-fork",
        include_str!("../validate/mremap-dontunmap-thp-fork.toml"),
    ),
    (
        "fork-thp-child-munmap-part",
        include_str!("../validate/fork-thp-child-munmap-part.toml"),
    ),
    (
        "fork-thp-child-mprotect-part",
        include_str!("../validate/fork-thp-child-mprotect-part.toml"),
    ),
    (
        "fork-thp-child-dontneed-part",
        include_str!("../validate/fork-thp-child-dontneed-part.toml"),
    ),
    (
        "fork-child-remove-file",
        include_str!("../validate/fork-child-remove-file.toml"),
    ),
    (
        "fork-child-remove-shmem-thp",
        include_str!("../validate/fork-child-remove-shmem-thp.toml"),
    ),
    (
        "file-thp-pageout",
        include_str!("../validate/file-thp-pageout.toml"),
    ),
    (
        "file-thp-cold-fork",
        include_str!("../validate/file-thp-cold-fork.toml"),
    ),
    (
        "file-thp-pageout-dirty",
        include_str!("../validate/file-thp-pageout-dirty.toml"),
    ),
    (
        "file-thp-pte-pageout",
        include_str!("../validate/file-thp-pte-pageout.toml"),
    ),
    (
        "file-thp-pte-split",
        include_str!("../validate/file-thp-pte-split.toml"),
    ),
    (
        "file-thp-pte-cold",
        include_str!("../validate/file-thp-pte-cold.toml"),
    ),
    (
        "file-thp-pte-fork",
        include_str!("../validate/file-thp-pte-fork.toml"),
    ),
    (
        "file-thp-pte-mprotect",
        include_str!("../validate/file-thp-pte-mprotect.toml"),
    ),
    (
        "file-folio-pte-pageout",
        include_str!("../validate/file-folio-pte-pageout.toml"),
    ),
    (
        "file-thp-eof-faultaround",
        include_str!("../validate/file-thp-eof-faultaround.toml"),
    ),
    (
        "mremap-fixed-replace",
        include_str!("../validate/mremap-fixed-replace.toml"),
    ),
    (
        "mremap-fixed-replace-thp",
        include_str!("../validate/mremap-fixed-replace-thp.toml"),
    ),
    (
        "mremap-locked-grow",
        include_str!("../validate/mremap-locked-grow.toml"),
    ),
    (
        "populate-cold-mlock",
        include_str!("../validate/populate-cold-mlock.toml"),
    ),
    (
        "populate-cold-grow",
        include_str!("../validate/populate-cold-grow.toml"),
    ),
    (
        "populate-read-marks",
        include_str!("../validate/populate-read-marks.toml"),
    ),
    (
        "populate-write-lazyfree",
        include_str!("../validate/populate-write-lazyfree.toml"),
    ),
    (
        "populate-mlock-lazyfree",
        include_str!("../validate/populate-mlock-lazyfree.toml"),
    ),
    (
        "mremap-onfault-grow",
        include_str!("../validate/mremap-onfault-grow.toml"),
    ),
    (
        "mremap-file-shared",
        include_str!("../validate/mremap-file-shared.toml"),
    ),
    (
        "mremap-file-private",
        include_str!("../validate/mremap-file-private.toml"),
    ),
    (
        "mremap-shmem-move",
        include_str!("../validate/mremap-shmem-move.toml"),
    ),
    (
        "mremap-shmem-thp-move",
        include_str!("../validate/mremap-shmem-thp-move.toml"),
    ),
    (
        "shmem-dirty-pte-zap",
        include_str!("../validate/shmem-dirty-pte-zap.toml"),
    ),
    (
        "shmem-huge-always",
        include_str!("../validate/shmem-huge-always.toml"),
    ),
    (
        "shmem-huge-policies",
        include_str!("../validate/shmem-huge-policies.toml"),
    ),
    (
        "shmem-huge-never",
        include_str!("../validate/shmem-huge-never.toml"),
    ),
    (
        "shmem-huge-pmd-split",
        include_str!("../validate/shmem-huge-pmd-split.toml"),
    ),
    (
        "shmem-huge-remove",
        include_str!("../validate/shmem-huge-remove.toml"),
    ),
    (
        "shmem-huge-remove-range",
        include_str!("../validate/shmem-huge-remove-range.toml"),
    ),
    (
        "shmem-huge-fork",
        include_str!("../validate/shmem-huge-fork.toml"),
    ),
    (
        "shmem-collapse",
        include_str!("../validate/shmem-collapse.toml"),
    ),
    (
        "shmem-collapse-mapped",
        include_str!("../validate/shmem-collapse-mapped.toml"),
    ),
    (
        "shmem-huge-pageout-clean",
        include_str!("../validate/shmem-huge-pageout-clean.toml"),
    ),
    (
        "shmem-huge-pageout-dirty",
        include_str!("../validate/shmem-huge-pageout-dirty.toml"),
    ),
    (
        "shmem-huge-pageout-partial",
        include_str!("../validate/shmem-huge-pageout-partial.toml"),
    ),
    (
        "shmem-huge-pte-pageout-split",
        include_str!("../validate/shmem-huge-pte-pageout-split.toml"),
    ),
    (
        "shmem-huge-pte-mlock",
        include_str!("../validate/shmem-huge-pte-mlock.toml"),
    ),
    (
        "shmem-huge-pte-munmap",
        include_str!("../validate/shmem-huge-pte-munmap.toml"),
    ),
    (
        "shmem-huge-pte-whole",
        include_str!("../validate/shmem-huge-pte-whole.toml"),
    ),
    (
        "shmem-huge-pte-fork",
        include_str!("../validate/shmem-huge-pte-fork.toml"),
    ),
    (
        "shmem-huge-cold",
        include_str!("../validate/shmem-huge-cold.toml"),
    ),
    (
        "shmem-huge-pageout-fork",
        include_str!("../validate/shmem-huge-pageout-fork.toml"),
    ),
];

/// The `description` of a TOML text, without checking anything else.
fn description_of(text: &str) -> String {
    DeTable::parse(text)
        .ok()
        .and_then(
            |t| match t.get_ref().get("description").map(|v| v.get_ref()) {
                Some(DeValue::String(s)) => Some(s.to_string()),
                _ => None,
            },
        )
        .unwrap_or_default()
}

/// Descriptions read once from the TOML texts (the texts are the one source).
static DESCRIPTIONS: LazyLock<Vec<String>> =
    LazyLock::new(|| BUILTINS.iter().map(|b| description_of(b.2)).collect());

/// The built-in workloads: `(name, description, seed)`, where `seed` is the
/// name of the seed document it reproduces (one of [`SEEDS`]).
pub fn list() -> Vec<(&'static str, &'static str, &'static str)> {
    BUILTINS
        .iter()
        .zip(DESCRIPTIONS.iter())
        .map(|(b, d)| (b.0, d.as_str(), b.1))
        .collect()
}

/// The TOML text of the built-in workload `name`.
pub fn get(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|b| b.0 == name).map(|b| b.2)
}

/// Every name [`get`] or [`get_validate`] knows: the built-ins, then the
/// validation suite's own (for "did you mean").
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = BUILTINS.iter().map(|b| b.0).collect();
    names.extend(VALIDATE.iter().map(|v| v.0).filter(|n| get(n).is_none()));
    names
}

/// The validation suite: `(name, TOML)`, small single-threaded deterministic
/// workloads with marks everywhere, in the order to run them.
pub fn validate_suite() -> Vec<(&'static str, &'static str)> {
    VALIDATE.to_vec()
}

/// The TOML text of the validation-suite workload `name`.
pub fn get_validate(name: &str) -> Option<&'static str> {
    VALIDATE.iter().find(|v| v.0 == name).map(|v| v.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn stems(dir: &str) -> BTreeSet<String> {
        let path = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_dir(path)
            .expect("folder exists")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn every_file_is_listed() {
        let builtins: BTreeSet<String> = BUILTINS.iter().map(|b| b.0.to_string()).collect();
        assert_eq!(builtins, stems("builtin"));
        let suite: BTreeSet<String> = VALIDATE
            .iter()
            .filter(|v| get(v.0).is_none())
            .map(|v| v.0.to_string())
            .collect();
        assert_eq!(suite, stems("validate"));
        assert!(VALIDATE.len() >= 15);
    }

    #[test]
    fn names_match_and_descriptions_are_there() {
        for (name, text) in BUILTINS
            .iter()
            .map(|b| (b.0, b.2))
            .chain(VALIDATE.iter().copied())
        {
            let w = crate::parse(text, name, 48).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(w.name, name);
            assert!(!w.description.is_empty(), "{name} has no description");
        }
        for (name, description, seed) in list() {
            assert!(!description.is_empty(), "{name}");
            assert!(SEEDS.contains(&seed), "{name}: no seed {seed}");
        }
    }

    #[test]
    fn names_are_every_lookup_once() {
        let names = names();
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "no name twice");
        for n in &names {
            assert!(get(n).or_else(|| get_validate(n)).is_some(), "{n}");
        }
        assert_eq!(names.len(), BUILTINS.len() + stems("validate").len());
    }

    #[test]
    fn a_misspelt_name_gets_a_suggestion() {
        let e = crate::load("pagefalt", 48).unwrap_err().to_string();
        assert!(e.ends_with(", did you mean \"pagefault\"?"), "{e}");
        let e = crate::load("anon-wrte", 48).unwrap_err().to_string();
        assert!(e.ends_with(", did you mean \"anon-write\"?"), "{e}");
        let e = crate::load("no-such-thing-at-all", 48)
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("nor a readable file"), "{e}");
    }

    #[test]
    fn a_suite_name_is_not_a_different_builtin() {
        for (name, text) in VALIDATE {
            if let Some(b) = get(name) {
                assert_eq!(b, *text, "{name} differs from the built-in of that name");
            }
        }
    }
}
