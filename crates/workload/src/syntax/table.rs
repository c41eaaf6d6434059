//! One TOML table of the format read key by key: typed values (sizes,
//! booleans, choices) with the place and what was expected when they are wrong.

use super::*;

/// The keys of one TOML table in the order they are written, with what to
/// say about where they are.
pub(super) struct Table<'a, 'i> {
    pub(super) src: Source<'a>,
    pub(super) at: usize,
    pub(super) context: String,
    pub(super) entries: Vec<Entry<'a, 'i>>,
}

impl<'a, 'i> Table<'a, 'i> {
    pub(super) fn new(src: Source<'a>, table: &'a DeTable<'i>, at: usize, context: String) -> Self {
        let mut entries: Vec<Entry<'a, 'i>> = table
            .iter()
            .map(|(k, v)| (k.get_ref().as_ref(), k.span().start, v))
            .collect();
        entries.sort_by_key(|e| e.1);
        Table {
            src,
            at,
            context,
            entries,
        }
    }

    /// Fails on the first key (in text order) not in `allowed`; `hint` says
    /// what to add after the "did you mean" (or instead of it).
    pub(super) fn only_keys(&self, allowed: &[&str], hint: impl Fn(&str) -> String) -> Result<()> {
        for &(key, at, _) in &self.entries {
            if !allowed.contains(&key) {
                let mut h = did_you_mean(key, allowed);
                if h.is_empty() {
                    h = hint(key);
                }
                return Err(WorkloadError::UnknownKey {
                    at: self.src.loc(at),
                    key: key.to_string(),
                    context: self.context.clone(),
                    hint: h,
                });
            }
        }
        Ok(())
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Spanned<DeValue<'i>>> {
        self.entries.iter().find(|e| e.0 == key).map(|e| e.2)
    }

    pub(super) fn bad(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        expected: impl Into<String>,
    ) -> WorkloadError {
        self.bad_found(key, v, expected, describe(v.get_ref()))
    }

    pub(super) fn bad_found(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        expected: impl Into<String>,
        found: String,
    ) -> WorkloadError {
        WorkloadError::BadValue {
            at: self.src.loc(v.span().start),
            key: key.to_string(),
            context: self.context.clone(),
            expected: expected.into(),
            found,
        }
    }

    pub(super) fn missing(&self, key: &str, why: &str) -> WorkloadError {
        WorkloadError::MissingKey {
            at: self.src.loc(self.at),
            key: key.to_string(),
            context: self.context.clone(),
            why: why.to_string(),
        }
    }

    pub(super) fn string(&self, key: &str) -> Result<Option<Sp<String>>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::String(s) if !s.is_empty() => Ok(Some(Sp {
                v: s.to_string(),
                at: v.span().start,
            })),
            _ => Err(self.bad(key, v, "a non-empty string")),
        }
    }

    pub(super) fn boolean(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .get_ref()
                .as_bool()
                .ok_or_else(|| self.bad(key, v, "true or false")),
        }
    }

    /// A TOML integer of at least `min`.
    pub(super) fn integer(&self, key: &str, min: u64) -> Result<Option<Sp<u64>>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .filter(|n| *n >= min),
            _ => None,
        };
        let expected = if min == 0 {
            "a whole number (0 or more)".to_string()
        } else {
            format!("a whole number of at least {min}")
        };
        n.map(|n| {
            Some(Sp {
                v: n,
                at: v.span().start,
            })
        })
        .ok_or_else(|| self.bad(key, v, expected))
    }

    /// A size: integer bytes or a string with a binary unit, a multiple of
    /// 4 KiB, not zero unless `zero_ok`.
    pub(super) fn size(&self, key: &str, zero_ok: bool) -> Result<Option<Sp<u64>>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let bytes = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix()).ok(),
            DeValue::String(s) => match units::parse_size(s) {
                Ok(n) => Some(n),
                Err(units::UnitError::Overflow) => {
                    return Err(self.bad(key, v, "a size that fits in 64 bits"));
                }
                Err(units::UnitError::Syntax) => None,
            },
            _ => None,
        };
        let Some(bytes) = bytes else {
            return Err(self.bad(key, v, SIZE_EXPECTED));
        };
        if bytes == 0 && !zero_ok {
            return Err(self.bad(key, v, "a size greater than zero"));
        }
        if !bytes.is_multiple_of(FORMAT_PAGE) {
            let found = match v.get_ref() {
                DeValue::String(_) => format!("{} ({bytes} bytes)", describe(v.get_ref())),
                other => describe(other),
            };
            return Err(self.bad_found(key, v, "a multiple of 4 KiB (4096 bytes)", found));
        }
        Ok(Some(Sp {
            v: bytes,
            at: v.span().start,
        }))
    }

    pub(super) fn choice<T: Copy>(
        &self,
        key: &str,
        options: &[(&str, T)],
        default: T,
    ) -> Result<T> {
        Ok(self
            .choice_opt(key, options)?
            .map_or(default, |(choice, _)| choice))
    }

    pub(super) fn choice_opt<T: Copy>(
        &self,
        key: &str,
        options: &[(&str, T)],
    ) -> Result<Option<(T, usize)>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        if let DeValue::String(s) = v.get_ref() {
            if let Some((_, t)) = options.iter().find(|(n, _)| *n == s.as_ref()) {
                return Ok(Some((*t, v.span().start)));
            }
            let found = format!("{}{}", describe(v.get_ref()), did_you_mean(s, &names));
            return Err(self.bad_found(key, v, format!("one of {}", quoted_list(&names)), found));
        }
        Err(self.bad(key, v, format!("one of {}", quoted_list(&names))))
    }

    pub(super) fn range(&self) -> Result<RangeSyn> {
        Ok(RangeSyn {
            offset: self.size("offset", true)?,
            len: self.size("len", false)?,
        })
    }
}
