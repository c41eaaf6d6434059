//! The madvise kinds, defined once.
//!
//! Each kind is one line of [`kinds!`] below: its name in Rust, Linux's
//! `MADV_*` constant and number (the same on every architecture ptlab runs
//! on; the tests hold them to libc's), and how the workload format writes it.
//! The workload parser, the OS model (`mm`), the kernel backend and the trace
//! replay all use this one type, so adding a kind is: a line here (and its
//! arms in the rule methods below, which the compiler asks for), what the
//! model does with it in `crates/mm/src/space/madvise.rs`, and its line in
//! `docs/format.md` (docs/design.md, "How to add a madvise kind").

/// Defines [`Advice`] and its tables from one list.
macro_rules! kinds {
    ($( $(#[$doc:meta])* $kind:ident = $linux:ident = $number:literal, $name:literal; )*) => {
        /// A madvise advice (Linux mm/madvise.c).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Advice {
            $( $(#[$doc])* $kind, )*
        }

        impl Advice {
            /// Every kind, in the order of the list.
            pub const ALL: &'static [Advice] = &[$(Advice::$kind),*];

            /// Every kind with the name the workload format gives it.
            pub const NAMED: &'static [(&'static str, Advice)] = &[$(($name, Advice::$kind)),*];

            /// Linux's MADV_* number.
            pub const fn number(self) -> u8 {
                match self { $(Advice::$kind => $number),* }
            }

            /// Linux's constant, `"MADV_DONTNEED"`, for messages.
            pub const fn linux_name(self) -> &'static str {
                match self { $(Advice::$kind => stringify!($linux)),* }
            }

            /// How the workload format writes it (`"dontneed"`).
            pub const fn name(self) -> &'static str {
                match self { $(Advice::$kind => $name),* }
            }

            /// The kind with Linux's MADV_* number `n`, if ptlab has it.
            pub const fn from_number(n: u8) -> Option<Advice> {
                match n { $($number => Some(Advice::$kind),)* _ => None }
            }

            /// The kind the workload format calls `name`.
            pub fn from_name(name: &str) -> Option<Advice> {
                match name { $($name => Some(Advice::$kind),)* _ => None }
            }
        }

        #[cfg(all(test, target_os = "linux"))]
        mod linux_numbers {
            #[test]
            fn every_number_is_linuxs() {
                $( assert_eq!(i32::from(super::Advice::$kind.number()), libc::$linux, stringify!($linux)); )*
            }
        }
    };
}

kinds! {
    /// MADV_DONTNEED: drops the range's pages now; the next access faults.
    DontNeed = MADV_DONTNEED = 4, "dontneed";
    /// MADV_FREE: private anonymous pages become lazily free (reclaim may
    /// discard them until they are written again).
    Free = MADV_FREE = 8, "free";
    /// MADV_HUGEPAGE: the range may have transparent huge pages.
    HugePage = MADV_HUGEPAGE = 14, "hugepage";
    /// MADV_NOHUGEPAGE: the range gets no transparent huge pages.
    NoHugePage = MADV_NOHUGEPAGE = 15, "nohugepage";
    /// MADV_POPULATE_READ (Linux 5.14): faults the range in for read.
    PopulateRead = MADV_POPULATE_READ = 22, "populate_read";
    /// MADV_POPULATE_WRITE (Linux 5.14): faults the range in for write.
    PopulateWrite = MADV_POPULATE_WRITE = 23, "populate_write";
    /// MADV_WILLNEED: reads a file range ahead into the page cache.
    WillNeed = MADV_WILLNEED = 3, "willneed";
    /// MADV_PAGEOUT (Linux 5.4): reclaims the range's pages now.
    PageOut = MADV_PAGEOUT = 21, "pageout";
    /// MADV_COLD (Linux 5.4): deactivates the pages (no counter sees that);
    /// a large folio the range covers only in part is split.
    Cold = MADV_COLD = 20, "cold";
    /// MADV_DONTFORK: a fork's child does not get the range (VM_DONTCOPY).
    DontFork = MADV_DONTFORK = 10, "dontfork";
    /// MADV_DOFORK: undoes MADV_DONTFORK.
    DoFork = MADV_DOFORK = 11, "dofork";
    /// MADV_WIPEONFORK (Linux 4.14): a fork's child gets the range empty
    /// (VM_WIPEONFORK; private anonymous memory only).
    WipeOnFork = MADV_WIPEONFORK = 18, "wipeonfork";
    /// MADV_KEEPONFORK: undoes MADV_WIPEONFORK.
    KeepOnFork = MADV_KEEPONFORK = 19, "keeponfork";
    /// MADV_REMOVE: punches a hole in the shared file or shmem object
    /// under the range (its pages go from every process and from the
    /// file).
    Remove = MADV_REMOVE = 9, "remove";
    /// MADV_COLLAPSE (Linux 6.1): collapses each whole 2 MiB range into a
    /// THP now, ignoring the THP mode and khugepaged's limits.
    Collapse = MADV_COLLAPSE = 25, "collapse";
}

/// Which mappings Linux accepts an advice on (else EINVAL, or EACCES where
/// [`Advice::needs`] says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Any mapping.
    Any,
    /// Private anonymous memory only.
    PrivateAnon,
    /// A shared mapping of a file or shmem object (Linux: EINVAL without a
    /// file, EACCES on a private mapping of one).
    SharedObject,
    /// Linux takes any mapping, the model only private anonymous memory
    /// (the workload checker refuses the others as not modelled).
    ModelledAnon,
    /// Private anonymous memory and shmem (MADV_COLLAPSE): Linux 6.18
    /// answers EINVAL on a regular file unless built with
    /// `CONFIG_READ_ONLY_THP_FOR_FS` (and then only for a file no one has
    /// open for writing); the kernel the model follows is built without it
    /// (measured: EINVAL on shared and private, read-only and writable
    /// mappings of an ext4 file, its page cache PMD-mapped or not).
    AnonShmem,
}

/// The protection an advice needs over its range (else EFAULT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedsProt {
    Nothing,
    Read,
    Write,
}

impl Advice {
    /// Whether Linux refuses it on locked memory (EINVAL; Linux:
    /// mm/madvise.c, madvise_dontneed_free_valid_vma, can_madv_lru_vma).
    pub const fn refuses_locked(self) -> bool {
        match self {
            // Linux: madvise_remove refuses VM_LOCKED too.
            Advice::DontNeed | Advice::Free | Advice::PageOut | Advice::Cold | Advice::Remove => {
                true
            }
            Advice::HugePage
            | Advice::NoHugePage
            | Advice::PopulateRead
            | Advice::PopulateWrite
            | Advice::WillNeed
            | Advice::DontFork
            | Advice::DoFork
            | Advice::WipeOnFork
            | Advice::KeepOnFork
            | Advice::Collapse => false,
        }
    }

    /// Which mappings it applies to.
    pub const fn needs(self) -> Needs {
        match self {
            // Linux: madvise_vma_behavior refuses MADV_WIPEONFORK on a
            // file or shared VMA.
            Advice::Free | Advice::WipeOnFork => Needs::PrivateAnon,
            Advice::Remove => Needs::SharedObject,
            // Linux: thp_vma_allowable_order refuses a regular file's VMA
            // without CONFIG_READ_ONLY_THP_FOR_FS (file_thp_enabled).
            Advice::Collapse => Needs::AnonShmem,
            Advice::DontNeed
            | Advice::HugePage
            | Advice::NoHugePage
            | Advice::PopulateRead
            | Advice::PopulateWrite
            | Advice::WillNeed
            | Advice::PageOut
            | Advice::Cold
            | Advice::DontFork
            | Advice::DoFork
            | Advice::KeepOnFork => Needs::Any,
        }
    }

    /// The protection its range must have (Linux: mm/madvise.c,
    /// madvise_populate, which faults the range in as an access would).
    pub const fn needs_prot(self) -> NeedsProt {
        match self {
            Advice::PopulateRead => NeedsProt::Read,
            Advice::PopulateWrite => NeedsProt::Write,
            _ => NeedsProt::Nothing,
        }
    }

    /// Whether it changes VMA flags (and so may split VMAs) rather than
    /// acting on pages: Linux takes the mmap lock for write for these
    /// (mm/madvise.c, madvise_update_vma).
    pub const fn sets_vma_flags(self) -> bool {
        matches!(
            self,
            Advice::HugePage
                | Advice::NoHugePage
                | Advice::DontFork
                | Advice::DoFork
                | Advice::WipeOnFork
                | Advice::KeepOnFork
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Advice;

    #[test]
    fn names_and_numbers_are_one_to_one_and_come_back() {
        for (i, a) in Advice::ALL.iter().enumerate() {
            assert_eq!(Advice::from_number(a.number()), Some(*a));
            assert_eq!(Advice::from_name(a.name()), Some(*a));
            assert_eq!(Advice::NAMED[i], (a.name(), *a));
            assert!(a.linux_name().starts_with("MADV_"), "{a:?}");
            for b in &Advice::ALL[i + 1..] {
                assert_ne!(a.number(), b.number(), "{a:?} and {b:?}");
                assert_ne!(a.name(), b.name(), "{a:?} and {b:?}");
            }
        }
        // MADV_NORMAL and a number far from any kind are not kinds.
        assert_eq!(Advice::from_number(0), None);
        assert_eq!(Advice::from_number(200), None);
        assert_eq!(Advice::from_name("DontNeed"), None);
    }
}
