//! From TOML text to a syntax tree: every key known, every value of the right
//! type and unit, every position kept for later messages.
//!
//! What this layer checks (each error says file, line, column, key, what was
//! expected, and suggests a near key or value when there is one):
//! - TOML syntax; unknown keys at every level (top, `[[thread]]`, op);
//! - each op has exactly one verb, and only that verb's keys;
//! - types and units of values: sizes (bytes or binary units), durations,
//!   choices (`kind`, `prot`, `advice`, ...), booleans, counts;
//! - sizes, offsets, lengths, strides and addresses are multiples of 4 KiB;
//!   sizes, lengths and strides are not zero; counts are at least 1;
//! - a random touch has a `count`; `file` only with `kind = "file"`;
//!   shmem is not `shared = false`; the only placeholder in a region name
//!   is `{tid}`; no mark is named `end` (the implicit last mark);
//! - repeats nest at most [`MAX_REPEAT_DEPTH`] deep; at most [`MAX_THREADS`]
//!   threads in all.
//!
//! What needs the program order of the threads (regions mapped before use,
//! ranges inside regions, ...) is `check`'s job.

use std::fmt;
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{one_line, Location, WorkloadError};
use crate::plan::{Access, Advice, FileState, MapKind, Pattern, Prot, ShmemHuge, FORMAT_PAGE};
use crate::suggest::{closest, did_you_mean};
use crate::units::{self, DURATION_EXPECTED, SIZE_EXPECTED};

mod table;
mod verbs;
use table::Table;
use verbs::{mmap, mremap, node_of, region_name, touch};

type Result<T> = std::result::Result<T, WorkloadError>;

/// Most threads a workload may have, over all blocks.
pub const MAX_THREADS: usize = 1024;
/// Deepest nesting of `repeat` ops (a repeat inside a repeat is depth 2).
pub const MAX_REPEAT_DEPTH: usize = 8;

/// A value and the byte offset in the text where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sp<T> {
    pub v: T,
    pub at: usize,
}

/// A parsed workload file, before threads are expanded.
#[derive(Debug)]
pub(crate) struct Doc {
    pub name: Option<String>,
    pub description: String,
    pub requires: Vec<crate::plan::Need>,
    pub blocks: Vec<Block>,
}

/// One `[[thread]]` block.
#[derive(Debug)]
pub(crate) struct Block {
    /// Where the block is written (its `[[thread]]` header or inline table).
    pub at: usize,
    pub count: usize,
    pub ops: Vec<OpSyn>,
}

/// Where an op sits: its block and its index at each repeat level (0-based);
/// displays 1-based as `op 3.1 of thread block 2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpPath {
    pub block: usize,
    pub index: Vec<usize>,
}

impl fmt::Display for OpPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op ")?;
        for (i, n) in self.index.iter().enumerate() {
            if i > 0 {
                write!(f, ".")?;
            }
            write!(f, "{}", n + 1)?;
        }
        write!(f, " of thread block {}", self.block + 1)
    }
}

/// One op as written.
#[derive(Debug)]
pub(crate) struct OpSyn {
    /// Unique over the whole document, dense from 0 (indexes per-op tables).
    pub id: usize,
    pub path: OpPath,
    /// Where the verb's value is written.
    pub at: usize,
    pub verb: VerbSyn,
}

/// A region name as written; `{tid}` is replaced per thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RegionName(pub String);

impl RegionName {
    pub const PLACEHOLDER: &'static str = "{tid}";

    /// The name thread `tid` uses.
    pub fn expand(&self, tid: usize) -> String {
        self.0.replace(Self::PLACEHOLDER, &tid.to_string())
    }

    pub fn has_placeholder(&self) -> bool {
        self.0.contains(Self::PLACEHOLDER)
    }
}

/// `offset` and `len` as written; `None` means the default (the rest of the
/// mapping from `offset`, and offset 0).
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeSyn {
    pub offset: Option<Sp<u64>>,
    pub len: Option<Sp<u64>>,
}

#[derive(Debug)]
pub(crate) struct MmapSyn {
    pub region: RegionName,
    pub size: Sp<u64>,
    pub kind: MapKind,
    pub shared: bool,
    pub prot: Prot,
    pub populate: bool,
    pub locked: bool,
    pub noreserve: bool,
    pub file: FileState,
    pub file_offset: u64,
    pub shmem_huge: Option<ShmemHuge>,
    pub addr: Option<Sp<u64>>,
}

/// `mremap`: a whole region resized in place, or moved (and resized) to
/// the address of the region `to` names.
#[derive(Debug)]
pub(crate) struct MremapSyn {
    pub region: RegionName,
    pub size: Sp<u64>,
    pub maymove: bool,
    pub to: Option<Sp<RegionName>>,
    /// Where `dontunmap = true` is written, if it is.
    pub dontunmap: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct TouchSyn {
    pub region: RegionName,
    pub range: RangeSyn,
    pub access: Access,
    pub pattern: Pattern,
    pub stride: u64,
    pub count: Option<Sp<u64>>,
    pub seed: u64,
    /// Where `part = "split"` is written, if it is.
    pub split: Option<usize>,
    pub latency: bool,
}

#[derive(Debug)]
pub(crate) enum VerbSyn {
    Mmap(MmapSyn),
    Munmap(RegionName, RangeSyn),
    Mprotect(RegionName, RangeSyn, Prot),
    Madvise(RegionName, RangeSyn, Advice),
    /// With `onfault = true`: mlock2(MLOCK_ONFAULT).
    Mlock(RegionName, RangeSyn, bool),
    Munlock(RegionName, RangeSyn),
    Touch(TouchSyn),
    /// `node_of`: one get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) per stride
    /// step, kept as a sequential read touch of the same keys (the lookups
    /// go where its accesses would).
    NodeOf(TouchSyn),
    Sync(RegionName, RangeSyn),
    Sleep(Duration),
    Barrier,
    Mark(String),
    Repeat(u64, Vec<OpSyn>),
    /// A child process named by the string, running the ops (see `fork`
    /// in docs/format.md); the flag is `wait` (false: the parent's thread
    /// goes on while the child runs, until a `waitpid` of it).
    Fork(String, Vec<OpSyn>, bool),
    /// `waitpid = NAME`: waits for (and reaps) the child a `wait = false`
    /// fork named NAME started.
    Waitpid(String),
    Mremap(MremapSyn),
    /// `deferred_split = true`: the THP deferred split shrinker runs.
    DeferredSplit,
    /// `khugepaged`: khugepaged passes over the range.
    Khugepaged(RegionName, RangeSyn),
}

impl VerbSyn {
    /// The verb as written.
    pub fn name(&self) -> &'static str {
        match self {
            VerbSyn::Mmap(_) => "mmap",
            VerbSyn::Munmap(..) => "munmap",
            VerbSyn::Mprotect(..) => "mprotect",
            VerbSyn::Madvise(..) => "madvise",
            VerbSyn::Mlock(..) => "mlock",
            VerbSyn::Munlock(..) => "munlock",
            VerbSyn::Touch(_) => "touch",
            VerbSyn::NodeOf(_) => "node_of",
            VerbSyn::Sync(..) => "sync",
            VerbSyn::Sleep(_) => "sleep",
            VerbSyn::Barrier => "barrier",
            VerbSyn::Mark(_) => "mark",
            VerbSyn::Repeat(..) => "repeat",
            VerbSyn::Fork(..) => "fork",
            VerbSyn::Waitpid(_) => "waitpid",
            VerbSyn::Mremap(_) => "mremap",
            VerbSyn::DeferredSplit => "deferred_split",
            VerbSyn::Khugepaged(..) => "khugepaged",
        }
    }

    /// The region the op names, if it names one.
    pub fn region(&self) -> Option<&RegionName> {
        match self {
            VerbSyn::Mmap(m) => Some(&m.region),
            VerbSyn::Touch(t) | VerbSyn::NodeOf(t) => Some(&t.region),
            VerbSyn::Mremap(m) => Some(&m.region),
            VerbSyn::Munmap(r, _)
            | VerbSyn::Mprotect(r, _, _)
            | VerbSyn::Madvise(r, _, _)
            | VerbSyn::Mlock(r, _, _)
            | VerbSyn::Munlock(r, _)
            | VerbSyn::Sync(r, _)
            | VerbSyn::Khugepaged(r, _) => Some(r),
            VerbSyn::DeferredSplit
            | VerbSyn::Sleep(_)
            | VerbSyn::Barrier
            | VerbSyn::Mark(_)
            | VerbSyn::Repeat(..)
            | VerbSyn::Fork(..)
            | VerbSyn::Waitpid(_) => None,
        }
    }
}

const RANGE_KEYS: &[&str] = &["offset", "len"];

/// Every verb with the other keys it takes.
pub(crate) const VERBS: &[(&str, &[&str])] = &[
    (
        "mmap",
        &[
            "size",
            "kind",
            "shared",
            "prot",
            "populate",
            "locked",
            "noreserve",
            "file",
            "file_offset",
            "shmem_huge",
            "addr",
        ],
    ),
    ("munmap", RANGE_KEYS),
    ("mprotect", &["prot", "offset", "len"]),
    ("madvise", &["advice", "offset", "len"]),
    ("mlock", &["onfault", "offset", "len"]),
    ("munlock", RANGE_KEYS),
    (
        "touch",
        &[
            "access", "pattern", "stride", "count", "seed", "part", "latency", "offset", "len",
        ],
    ),
    ("sync", RANGE_KEYS),
    ("sleep", &[]),
    ("barrier", &[]),
    ("mark", &[]),
    ("repeat", &["op"]),
    ("fork", &["op", "wait"]),
    ("waitpid", &[]),
    ("mremap", &["size", "maymove", "to", "dontunmap"]),
    ("node_of", &["stride", "offset", "len"]),
    ("deferred_split", &[]),
    ("khugepaged", RANGE_KEYS),
];

fn verb_names() -> Vec<&'static str> {
    VERBS.iter().map(|(v, _)| *v).collect()
}

const KINDS: &[(&str, MapKind)] = &[
    ("anon", MapKind::Anon),
    ("file", MapKind::File),
    ("shmem", MapKind::Shmem),
];
const PROTS: &[(&str, Prot)] = &[
    ("rw", Prot::Rw),
    ("r", Prot::R),
    ("rx", Prot::Rx),
    ("rwx", Prot::Rwx),
    ("none", Prot::None),
];
const SHMEM_HUGE: &[(&str, ShmemHuge)] = &[
    ("never", ShmemHuge::Never),
    ("always", ShmemHuge::Always),
    ("within_size", ShmemHuge::WithinSize),
    ("advise", ShmemHuge::Advise),
];

const FILE_STATES: &[(&str, FileState)] =
    &[("cached", FileState::Cached), ("cold", FileState::Cold)];
const ADVICES: &[(&str, Advice)] = Advice::NAMED;
const ACCESSES: &[(&str, Access)] = &[("read", Access::Read), ("write", Access::Write)];
const PATTERNS: &[(&str, Pattern)] = &[
    ("seq", Pattern::Seq),
    ("reverse", Pattern::Reverse),
    ("random", Pattern::Random),
];
const PARTS: &[(&str, bool)] = &[("all", false), ("split", true)];

/// How the format writes `value` of a choice table.
fn name_of<T: PartialEq>(options: &[(&'static str, T)], value: T) -> &'static str {
    options
        .iter()
        .find(|(_, v)| *v == value)
        .map_or("?", |(name, _)| name)
}

/// How the format writes a protection (`"rw"`).
pub(crate) fn prot_name(p: Prot) -> &'static str {
    name_of(PROTS, p)
}

/// `"a", "b", "c"` for messages.
fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a value was written, short and on one line, for `found ...`.
fn describe(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => {
            const MAX: usize = 40;
            if s.chars().count() > MAX {
                let cut: String = s.chars().take(MAX).collect();
                format!("{cut:?}...")
            } else {
                format!("{:?}", s.as_ref())
            }
        }
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(x) => format!("the float {x}"),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => format!("the date-time {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

/// The text being parsed and its file name, to turn offsets into locations.
#[derive(Clone, Copy)]
pub(crate) struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn loc(&self, offset: usize) -> Location {
        Location::at(self.file, self.text, offset)
    }

    /// `line:column` of `offset`, to point at a second place in a message.
    pub fn line_col(&self, offset: usize) -> String {
        let l = self.loc(offset);
        format!("{}:{}", l.line, l.column)
    }
}

/// Refuses a key the op's verb does not take, naming the verb it belongs
/// to.
fn only_verb_keys(table: &Table<'_, '_>, verb: &str) -> Result<()> {
    let keys = VERBS
        .iter()
        .find(|(v, _)| *v == verb)
        .map(|(_, k)| *k)
        .expect("verb comes from VERBS");
    let mut allowed = vec![verb];
    allowed.extend_from_slice(keys);
    table.only_keys(&allowed, |key| {
            let owner = VERBS.iter().find(|(_, k)| k.contains(&key));
            let takes = if keys.is_empty() {
                format!("{verb} takes no other key")
            } else {
                format!("{verb} takes {}", keys.join(", "))
            };
            if verb == "mremap" && RANGE_KEYS.contains(&key) {
                return format!(
                    "; mremap resizes or moves a whole region (part of one is not supported), and {takes}"
                );
            }
            match owner {
                Some((other, _)) => format!("; it belongs to {other}, and {takes}"),
                None => format!("; {takes}"),
            }
        })
}

type Entry<'a, 'i> = (&'a str, usize, &'a Spanned<DeValue<'i>>);

/// Turns TOML text into a [`Doc`], checking everything that does not need
/// program order.
pub(crate) struct Parser<'a> {
    src: Source<'a>,
    next_id: usize,
}

impl<'a> Parser<'a> {
    /// Parses `text`, naming `file` in errors.
    ///
    /// # Errors
    ///
    /// The first problem in text order, as a [`WorkloadError`].
    pub fn parse(file: &'a str, text: &'a str) -> Result<Doc> {
        let src = Source { file, text };
        let root = DeTable::parse(text).map_err(|e| WorkloadError::Syntax {
            at: src.loc(e.span().map_or(0, |s| s.start)),
            message: one_line(e.message()),
        })?;
        let mut p = Parser { src, next_id: 0 };
        p.doc(root.get_ref())
    }

    fn doc(&mut self, root: &DeTable<'_>) -> Result<Doc> {
        let top = Table::new(self.src, root, 0, "at the top level".to_string());
        top.only_keys(&["name", "description", "requires", "thread"], |_| {
            "; the top level takes name, description, requires and [[thread]] blocks".to_string()
        })?;
        let name = top.string("name")?.map(|s| s.v);
        let description = match top.get("description") {
            None => String::new(),
            Some(v) => match v.get_ref() {
                DeValue::String(s) => s.to_string(),
                _ => return Err(top.bad("description", v, "a string")),
            },
        };
        let requires = Self::requires(&top)?;
        let Some(threads) = top.get("thread") else {
            return Err(top.missing("thread", "a workload needs at least one [[thread]] block"));
        };
        let blocks_expected = "an array of tables ([[thread]] blocks)";
        let DeValue::Array(items) = threads.get_ref() else {
            return Err(top.bad("thread", threads, blocks_expected));
        };
        if items.is_empty() {
            return Err(top.bad_found("thread", threads, blocks_expected, "an empty array".into()));
        }
        let mut blocks = Vec::new();
        let mut total_threads = 0usize;
        for (b, item) in items.iter().enumerate() {
            let DeValue::Table(t) = item.get_ref() else {
                return Err(top.bad("thread", item, "a table ([[thread]] block)"));
            };
            let block = self.block(b, t, item.span().start)?;
            total_threads += block.count;
            if total_threads > MAX_THREADS {
                return Err(WorkloadError::Structure {
                    at: self.src.loc(item.span().start),
                    problem: format!(
                        "thread block {} brings the workload to {total_threads} threads; at most {MAX_THREADS} are allowed",
                        b + 1
                    ),
                });
            }
            blocks.push(block);
        }
        Ok(Doc {
            name,
            description,
            requires,
            blocks,
        })
    }

    /// `requires = ["swap"]`: each need once, none asking for swap beside
    /// one asking for none.
    fn requires(top: &Table<'_, '_>) -> Result<Vec<crate::plan::Need>> {
        use crate::plan::Need;
        let Some(v) = top.get("requires") else {
            return Ok(Vec::new());
        };
        let names = Need::NAMES
            .iter()
            .map(|(n, _)| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let expected = format!("an array of needs ({names})");
        let DeValue::Array(items) = v.get_ref() else {
            return Err(top.bad("requires", v, &expected));
        };
        let mut out: Vec<Need> = Vec::new();
        for item in items.iter() {
            let need = match item.get_ref() {
                DeValue::String(s) => Need::parse(s),
                _ => None,
            };
            match need {
                Some(n) if out.contains(&n) => {
                    return Err(top.bad_found(
                        "requires",
                        item,
                        "each need once",
                        format!("\"{}\" again", n.name()),
                    ))
                }
                Some(n)
                    if out
                        .iter()
                        .any(|o| o.wants_swap().is_some() && o.wants_swap() != n.wants_swap()) =>
                {
                    return Err(top.bad_found(
                        "requires",
                        item,
                        "needs of swap or of no swap, not both",
                        format!("\"{}\" too", n.name()),
                    ))
                }
                Some(n) => out.push(n),
                None => return Err(top.bad("requires", item, &names)),
            }
        }
        Ok(out)
    }

    fn block(&mut self, b: usize, t: &DeTable<'_>, at: usize) -> Result<Block> {
        let table = Table::new(self.src, t, at, format!("in thread block {}", b + 1));
        table.only_keys(&["count", "op"], |_| {
            "; a [[thread]] block takes count and op".to_string()
        })?;
        let count = match table.integer("count", 1)? {
            None => 1,
            Some(c) if c.v <= MAX_THREADS as u64 => c.v as usize,
            Some(_) => {
                let v = table.get("count").expect("count was just read");
                return Err(table.bad(
                    "count",
                    v,
                    format!("a whole number from 1 to {MAX_THREADS}"),
                ));
            }
        };
        let path = OpPath {
            block: b,
            index: Vec::new(),
        };
        let ops = self.ops(&table, &path)?;
        Ok(Block { at, count, ops })
    }

    /// The `op` array of a block or a repeat.
    fn ops(&mut self, owner: &Table<'_, '_>, parent: &OpPath) -> Result<Vec<OpSyn>> {
        let expected = "an array of ops, such as [ { mmap = \"buf\", size = \"4MiB\" } ]";
        let Some(v) = owner.get("op") else {
            return Err(owner.missing("op", &format!("expected {expected}")));
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(owner.bad("op", v, expected));
        };
        if items.is_empty() {
            return Err(owner.bad_found("op", v, "at least one op", "an empty array".into()));
        }
        let mut ops = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mut path = parent.clone();
            path.index.push(i);
            let DeValue::Table(t) = item.get_ref() else {
                return Err(WorkloadError::BadValue {
                    at: self.src.loc(item.span().start),
                    key: "op".to_string(),
                    context: format!("in {path}"),
                    expected: "an inline table with one verb, such as { touch = \"buf\" }".into(),
                    found: describe(item.get_ref()),
                });
            };
            ops.push(self.op(path, t, item.span().start)?);
        }
        Ok(ops)
    }

    fn op(&mut self, path: OpPath, t: &DeTable<'_>, at: usize) -> Result<OpSyn> {
        let table = Table::new(self.src, t, at, format!("in {path}"));
        let (verb, _, value) = self.one_verb(&table)?;
        only_verb_keys(&table, verb)?;
        let value_at = value.span().start;
        let region = || region_name(&table, verb, value);
        let verb_syn = match verb {
            "mmap" => VerbSyn::Mmap(mmap(&table, region()?)?),
            "munmap" => VerbSyn::Munmap(region()?, table.range()?),
            "mprotect" => {
                let Some((prot, _)) = table.choice_opt("prot", PROTS)? else {
                    return Err(table.missing("prot", "mprotect needs the new protection"));
                };
                VerbSyn::Mprotect(region()?, table.range()?, prot)
            }
            "madvise" => {
                let Some((advice, _)) = table.choice_opt("advice", ADVICES)? else {
                    return Err(table.missing("advice", "madvise needs an advice"));
                };
                VerbSyn::Madvise(region()?, table.range()?, advice)
            }
            "mlock" => VerbSyn::Mlock(region()?, table.range()?, table.boolean("onfault", false)?),
            "munlock" => VerbSyn::Munlock(region()?, table.range()?),
            "touch" => VerbSyn::Touch(touch(&table, region()?)?),
            "node_of" => VerbSyn::NodeOf(node_of(&table, region()?)?),
            "mremap" => VerbSyn::Mremap(mremap(&table, region()?)?),
            "sync" => VerbSyn::Sync(region()?, table.range()?),
            "khugepaged" => VerbSyn::Khugepaged(region()?, table.range()?),
            "deferred_split" => match value.get_ref() {
                DeValue::Boolean(true) => VerbSyn::DeferredSplit,
                _ => return Err(table.bad(verb, value, "true (deferred_split = true)")),
            },
            "sleep" => {
                let d = match value.get_ref() {
                    DeValue::String(s) => units::parse_duration(s).ok(),
                    _ => None,
                };
                VerbSyn::Sleep(d.ok_or_else(|| table.bad(verb, value, DURATION_EXPECTED))?)
            }
            "barrier" => match value.get_ref() {
                DeValue::Boolean(true) => VerbSyn::Barrier,
                _ => return Err(table.bad(verb, value, "true (barrier = true)")),
            },
            "mark" => match value.get_ref() {
                DeValue::String(s) if !s.is_empty() && s.as_ref() != crate::END_MARK => {
                    VerbSyn::Mark(s.to_string())
                }
                _ => {
                    return Err(table.bad(
                        verb,
                        value,
                        "a non-empty label other than \"end\" (the implicit last mark)",
                    ))
                }
            },
            "repeat" => {
                let times = table.integer(verb, 1)?.expect("the verb is present").v;
                if path.index.len() > MAX_REPEAT_DEPTH {
                    return Err(WorkloadError::Structure {
                        at: self.src.loc(value_at),
                        problem: format!(
                            "repeat nested more than {MAX_REPEAT_DEPTH} deep in {path}"
                        ),
                    });
                }
                let ops = self.ops(&table, &path)?;
                VerbSyn::Repeat(times, ops)
            }
            "fork" => {
                let name = match value.get_ref() {
                    DeValue::String(s) if valid_fork_name(s) => s.to_string(),
                    _ => {
                        return Err(table.bad(
                            verb,
                            value,
                            "a child name of letters, digits, '-' and '_' (its marks are reported as NAME.LABEL)",
                        ))
                    }
                };
                let ops = self.ops(&table, &path)?;
                VerbSyn::Fork(name, ops, table.boolean("wait", true)?)
            }
            "waitpid" => match value.get_ref() {
                DeValue::String(s) if valid_fork_name(s) => VerbSyn::Waitpid(s.to_string()),
                _ => {
                    return Err(table.bad(
                        verb,
                        value,
                        "the name of a child started by a fork with wait = false",
                    ))
                }
            },
            _ => unreachable!("every verb of VERBS is handled"),
        };
        let id = self.next_id;
        self.next_id += 1;
        Ok(OpSyn {
            id,
            path,
            at: value_at,
            verb: verb_syn,
        })
    }

    /// The op's one verb entry: none or two are errors.
    fn one_verb<'t, 'i>(&self, table: &Table<'t, 'i>) -> Result<Entry<'t, 'i>> {
        let verbs = verb_names();
        let present: Vec<&Entry<'_, '_>> = table
            .entries
            .iter()
            .filter(|e| verbs.contains(&e.0))
            .collect();
        match present.as_slice() {
            [one] => Ok(**one),
            [] => Err(self.no_verb(table, &verbs)),
            [first, second, ..] => Err(WorkloadError::Verb {
                at: self.src.loc(second.1),
                problem: format!("two verbs ({:?} and {:?})", first.0, second.0),
                context: table.context.clone(),
                hint: "; an op takes exactly one verb, give each its own op".to_string(),
            }),
        }
    }

    /// The error for an op without a verb: an unknown key close to a verb
    /// is taken for a misspelt verb.
    fn no_verb(&self, table: &Table<'_, '_>, verbs: &[&str]) -> WorkloadError {
        let any_key = |k: &str| VERBS.iter().any(|(_, keys)| keys.contains(&k));
        let one_of = format!("; expected exactly one of {}", verbs.join(", "));
        for &(key, at, _) in &table.entries {
            if any_key(key) {
                continue;
            }
            let hint = match closest(key, verbs) {
                Some(v) => format!(", did you mean {v:?}?"),
                None => one_of.clone(),
            };
            return WorkloadError::Verb {
                at: self.src.loc(at),
                problem: format!("unknown verb {key:?}"),
                context: table.context.clone(),
                hint,
            };
        }
        WorkloadError::Verb {
            at: self.src.loc(table.at),
            problem: "no verb".to_string(),
            context: table.context.clone(),
            hint: one_of,
        }
    }
}

/// A fork's child name: non-empty, of letters, digits, '-' and '_' (so
/// that `NAME.LABEL` reads back unambiguously).
fn valid_fork_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
