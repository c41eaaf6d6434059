//! The typed values of a configuration's keys, each parsed from the one
//! spelling users write (and printed back in it).

use std::fmt;

/// An enumerated value: its spellings, parsed and printed through one table.
pub trait Named: Copy + PartialEq + Sized + 'static {
    /// Every value with its spelling, in the order errors list them.
    const NAMES: &'static [(&'static str, Self)];

    /// The value spelt `s`, if any.
    fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    /// The spelling of `self`.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .expect("every value has a name")
    }

    /// "a, b, c": the spellings, for errors.
    fn expected() -> String {
        Self::NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

macro_rules! named {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl Named for $name {
            const NAMES: &'static [(&'static str, Self)] = &[$(($text, $name::$variant)),+];
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named! {
    /// Which backend runs the workload.
    BackendKind { Model = "model", Kernel = "kernel" }
}

named! {
    /// The page-table locking scheme (shared/spec/cli.md, "Model options").
    Locking { Global = "global", SplitPte = "split-pte", SplitPmd = "split-pmd" }
}

named! {
    /// Reclaim of empty PTE tables.
    Reclaim { Off = "off", On = "on", Eager = "eager" }
}

named! {
    /// Transparent huge pages (PMD-sized).
    Thp { Always = "always", Madvise = "madvise", Never = "never" }
}

named! {
    /// The policy of one multi-size THP size.
    MthpPolicy { Always = "always", Madvise = "madvise", Never = "never", Inherit = "inherit" }
}

/// Sizes multi-size THP may have (anonymous large folios mapped by PTEs).
pub const MTHP_SIZES: &[&str] = &[
    "16k", "32k", "64k", "128k", "256k", "512k", "1024k", "2048k",
];

impl serde::Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for (n, v) in Locking::NAMES {
            assert_eq!(Locking::parse(n), Some(*v));
            assert_eq!(v.to_string(), *n);
        }
        assert_eq!(Thp::parse("Always"), None, "spellings are exact");
        assert_eq!(MthpPolicy::expected(), "always, madvise, never, inherit");
    }
}
