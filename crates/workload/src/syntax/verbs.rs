//! The keys of the verbs that take more than a range: `mmap`, `mremap`,
//! `touch` and `node_of`.

use super::*;

/// The region name an op's verb names: a non-empty string whose only
/// placeholder is `{tid}`.
pub(super) fn region_name(
    table: &Table<'_, '_>,
    verb: &str,
    v: &Spanned<DeValue<'_>>,
) -> Result<RegionName> {
    let expected = "a region name (a non-empty string; {tid} is the only placeholder)";
    let DeValue::String(s) = v.get_ref() else {
        return Err(table.bad(verb, v, expected));
    };
    let rest = s.replace(RegionName::PLACEHOLDER, "");
    if s.is_empty() || rest.contains('{') || rest.contains('}') {
        return Err(table.bad(verb, v, expected));
    }
    Ok(RegionName(s.to_string()))
}

pub(super) fn mmap(table: &Table<'_, '_>, region: RegionName) -> Result<MmapSyn> {
    let Some(size) = table.size("size", false)? else {
        return Err(table.missing("size", "mmap needs the size of the mapping"));
    };
    let kind = table.choice("kind", KINDS, MapKind::Anon)?;
    let shared = match (kind, table.get("shared")) {
        (MapKind::Shmem, Some(v)) if v.get_ref().as_bool() == Some(false) => {
            return Err(table.bad(
                "shared",
                v,
                "true or no \"shared\" key (shmem is always shared)",
            ));
        }
        (MapKind::Shmem, _) => {
            table.boolean("shared", true)?;
            true
        }
        _ => table.boolean("shared", false)?,
    };
    let file = match (kind, table.get("file")) {
        (MapKind::File, _) | (_, None) => table.choice("file", FILE_STATES, FileState::Cached)?,
        (_, Some(v)) => {
            return Err(table.bad(
                "file",
                v,
                "no \"file\" key: it applies only to kind = \"file\"",
            ))
        }
    };
    let file_offset = match (kind, table.get("file_offset")) {
        (MapKind::File, _) | (_, None) => table.size("file_offset", true)?.map_or(0, |o| o.v),
        (_, Some(v)) => {
            return Err(table.bad(
                "file_offset",
                v,
                "no \"file_offset\" key: it applies only to kind = \"file\"",
            ))
        }
    };
    let shmem_huge = match (kind, table.get("shmem_huge")) {
        (_, None) => None,
        (MapKind::Shmem, Some(_)) => table.choice_opt("shmem_huge", SHMEM_HUGE)?.map(|(h, _)| h),
        (_, Some(v)) => {
            return Err(table.bad(
                "shmem_huge",
                v,
                "no \"shmem_huge\" key: it applies only to kind = \"shmem\"",
            ))
        }
    };
    if file_offset
        .checked_add(size.v)
        .is_none_or(|end| end > i64::MAX as u64)
    {
        let v = table
            .get("file_offset")
            .expect("a non-zero offset was written");
        return Err(table.bad(
            "file_offset",
            v,
            "an offset that, with the size, stays below 2^63 bytes (mmap's off_t)",
        ));
    }
    Ok(MmapSyn {
        region,
        size,
        file_offset,
        shmem_huge,
        kind,
        shared,
        prot: table.choice("prot", PROTS, Prot::Rw)?,
        populate: table.boolean("populate", false)?,
        locked: table.boolean("locked", false)?,
        noreserve: table.boolean("noreserve", false)?,
        file,
        addr: table.size("addr", false)?,
    })
}

pub(super) fn mremap(table: &Table<'_, '_>, region: RegionName) -> Result<MremapSyn> {
    let Some(size) = table.size("size", false)? else {
        return Err(table.missing("size", "mremap needs the new size of the mapping"));
    };
    let maymove = table.boolean("maymove", false)?;
    let to = match table.get("to") {
        None => None,
        Some(v) => {
            let name = region_name(table, "to", v)?;
            if !maymove {
                return Err(table.bad_found(
                    "to",
                    v,
                    "maymove = true beside it (a move to a fixed address needs MREMAP_MAYMOVE; Linux: EINVAL)",
                    format!("{} without maymove = true", describe(v.get_ref())),
                ));
            }
            Some(Sp {
                v: name,
                at: v.span().start,
            })
        }
    };
    let dontunmap = match table.get("dontunmap") {
        Some(v) if table.boolean("dontunmap", false)? => {
            if to.is_none() {
                return Err(table.bad_found(
                    "dontunmap",
                    v,
                    "to = REGION beside it (MREMAP_DONTUNMAP moves the mapping; the model needs the destination)",
                    "dontunmap = true without to".to_string(),
                ));
            }
            Some(v.span().start)
        }
        _ => None,
    };
    Ok(MremapSyn {
        region,
        size,
        maymove,
        to,
        dontunmap,
    })
}

/// `node_of`: the keys of a sequential read touch (`offset`, `len`,
/// `stride`), one lookup per stride step.
pub(super) fn node_of(table: &Table<'_, '_>, region: RegionName) -> Result<TouchSyn> {
    Ok(TouchSyn {
        region,
        range: table.range()?,
        access: Access::Read,
        pattern: Pattern::Seq,
        stride: table.size("stride", false)?.map_or(FORMAT_PAGE, |s| s.v),
        count: None,
        seed: 1,
        split: None,
        latency: false,
    })
}

pub(super) fn touch(table: &Table<'_, '_>, region: RegionName) -> Result<TouchSyn> {
    let pattern = table.choice("pattern", PATTERNS, Pattern::Seq)?;
    let count = table.integer("count", 1)?;
    if pattern == Pattern::Random && count.is_none() {
        return Err(table.missing(
            "count",
            "a random touch needs the number of accesses (count = N)",
        ));
    }
    let split = match table.choice_opt("part", PARTS)? {
        Some((true, at)) => Some(at),
        _ => None,
    };
    Ok(TouchSyn {
        region,
        range: table.range()?,
        access: table.choice("access", ACCESSES, Access::Write)?,
        pattern,
        stride: table.size("stride", false)?.map_or(FORMAT_PAGE, |s| s.v),
        count,
        seed: table.integer("seed", 0)?.map_or(1, |s| s.v),
        split,
        latency: table.boolean("latency", false)?,
    })
}
