//! Records to bytes and back, inside one chunk. A chunk starts with a fresh
//! [`State`], so each chunk decodes on its own.
//!
//! Tags (one byte each, then LEB128 fields):
//!
//! | tag  | record | fields |
//! |------|--------|--------|
//! | 0x01 | Map | id, size, native, kind (byte), prot (byte), flags (byte), name (len, UTF-8) |
//! | 0x02 | Unmap | id, offset, len |
//! | 0x03 | Protect | id, offset, len, prot (byte) |
//! | 0x04 | Advise | id, offset, len, advice (byte) |
//! | 0x05 | Lock | id, offset, len |
//! | 0x06 | Unlock | id, offset, len |
//! | 0x07 | Resize | id, size |
//! | 0x08 | Move | id, new id, size, native |
//! | 0x10 / 0x11 | Access read / write, another region than the last access | id, offset |
//! | 0x12 / 0x13 | Access read / write, the last access's region | zigzag(offset - last offset) |
//! | 0x14 | Fetch, another region than the last fetch | id, offset |
//! | 0x15 | Fetch, the last fetch's region | zigzag(offset - last fetch's offset) |
//! | 0x18 | Hits | count |
//! | 0x20 | Fault | id, offset, write (byte) |
//! | 0x30 | Thread | tid |
//! | 0x31 | Mark | name (len, UTF-8) |

use crate::record::{MapEvent, MapFlags, Prot, Record, RegionKind};
use crate::varint;

/// Longest name a record may carry.
pub const MAX_NAME: usize = 4096;

const MAP: u8 = 0x01;
const UNMAP: u8 = 0x02;
const PROTECT: u8 = 0x03;
const ADVISE: u8 = 0x04;
const LOCK: u8 = 0x05;
const UNLOCK: u8 = 0x06;
const RESIZE: u8 = 0x07;
const MOVE: u8 = 0x08;
// The access tags are public for a writer that encodes accesses itself
// ([`crate::TraceWriter::push_chunk`]): an importer.
/// An access (read) in another region than the last access: id, offset.
pub const READ_AT: u8 = 0x10;
/// An access (write) in another region than the last access: id, offset.
pub const WRITE_AT: u8 = 0x11;
/// A read in the last access's region: zigzag(offset - last offset).
pub const READ_NEAR: u8 = 0x12;
/// A write in the last access's region: zigzag(offset - last offset).
pub const WRITE_NEAR: u8 = 0x13;
/// A fetch in another region than the last fetch: id, offset.
pub const FETCH_AT: u8 = 0x14;
/// A fetch in the last fetch's region: zigzag(offset - last fetch's offset).
pub const FETCH_NEAR: u8 = 0x15;
const HITS: u8 = 0x18;
const FAULT: u8 = 0x20;
const THREAD: u8 = 0x30;
const MARK: u8 = 0x31;

/// What delta-encoded accesses are relative to. Reset at every chunk.
#[derive(Debug, Clone, Copy, Default)]
pub struct State {
    last_id: Option<u32>,
    last_offset: u64,
    /// The last fetch's region and offset: instruction fetches are
    /// relative to each other, not to the data accesses between them.
    fetch_id: Option<u32>,
    fetch_offset: u64,
}

impl State {
    /// The last access's region and offset, if the chunk has one.
    pub fn last_access(&self) -> Option<(u32, u64)> {
        self.last_id.map(|id| (id, self.last_offset))
    }

    pub(crate) fn set_last_offset(&mut self, offset: u64) {
        self.last_offset = offset;
    }
}

/// Appends an access (what [`encode`] does for `Record::Access`, without
/// the record: a tracer's hot path).
#[inline]
pub fn encode_access(id: u32, offset: u64, write: bool, st: &mut State, buf: &mut Vec<u8>) {
    if st.last_id == Some(id) {
        buf.push(if write { WRITE_NEAR } else { READ_NEAR });
        let d = offset.wrapping_sub(st.last_offset) as i64;
        varint::put(buf, varint::zigzag(d));
    } else {
        buf.push(if write { WRITE_AT } else { READ_AT });
        varint::put(buf, id.into());
        varint::put(buf, offset);
    }
    st.last_id = Some(id);
    st.last_offset = offset;
}

/// Appends an instruction fetch (`Record::Fetch`).
#[inline]
pub fn encode_fetch(id: u32, offset: u64, st: &mut State, buf: &mut Vec<u8>) {
    if st.fetch_id == Some(id) {
        buf.push(FETCH_NEAR);
        let d = offset.wrapping_sub(st.fetch_offset) as i64;
        varint::put(buf, varint::zigzag(d));
    } else {
        buf.push(FETCH_AT);
        varint::put(buf, id.into());
        varint::put(buf, offset);
    }
    st.fetch_id = Some(id);
    st.fetch_offset = offset;
}

/// Appends `r` to `buf`.
pub fn encode(r: &Record, st: &mut State, buf: &mut Vec<u8>) {
    let range = |buf: &mut Vec<u8>, tag: u8, id: u32, offset: u64, len: u64| {
        buf.push(tag);
        varint::put(buf, id.into());
        varint::put(buf, offset);
        varint::put(buf, len);
    };
    match r {
        Record::Access { id, offset, write } => encode_access(*id, *offset, *write, st, buf),
        Record::Fetch { id, offset } => encode_fetch(*id, *offset, st, buf),
        Record::Hits { count } => {
            buf.push(HITS);
            varint::put(buf, *count);
        }
        Record::Map(m) => {
            buf.push(MAP);
            varint::put(buf, m.id.into());
            varint::put(buf, m.size);
            varint::put(buf, m.native);
            buf.push(m.kind.code());
            buf.push(m.prot.0);
            buf.push(m.flags.0);
            put_str(buf, &m.name);
        }
        Record::Unmap { id, offset, len } => range(buf, UNMAP, *id, *offset, *len),
        Record::Protect {
            id,
            offset,
            len,
            prot,
        } => {
            range(buf, PROTECT, *id, *offset, *len);
            buf.push(prot.0);
        }
        Record::Advise {
            id,
            offset,
            len,
            advice,
        } => {
            range(buf, ADVISE, *id, *offset, *len);
            buf.push(*advice);
        }
        Record::Lock { id, offset, len } => range(buf, LOCK, *id, *offset, *len),
        Record::Unlock { id, offset, len } => range(buf, UNLOCK, *id, *offset, *len),
        Record::Resize { id, size } => {
            buf.push(RESIZE);
            varint::put(buf, (*id).into());
            varint::put(buf, *size);
        }
        Record::Move {
            id,
            new_id,
            size,
            native,
        } => {
            buf.push(MOVE);
            varint::put(buf, (*id).into());
            varint::put(buf, (*new_id).into());
            varint::put(buf, *size);
            varint::put(buf, *native);
        }
        Record::Fault { id, offset, write } => {
            buf.push(FAULT);
            varint::put(buf, (*id).into());
            varint::put(buf, *offset);
            buf.push(u8::from(*write));
        }
        Record::Thread { tid } => {
            buf.push(THREAD);
            varint::put(buf, (*tid).into());
        }
        Record::Mark { name } => {
            buf.push(MARK);
            put_str(buf, name);
        }
    }
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    let s = &s.as_bytes()[..s.len().min(MAX_NAME)];
    varint::put(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

/// Why a chunk's bytes did not decode: what, and at which byte of the
/// chunk's uncompressed contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub at: usize,
    pub what: String,
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError {
            at: self.pos,
            what: what.into(),
        }
    }

    #[inline]
    fn num(&mut self, field: &str) -> Result<u64, DecodeError> {
        let start = self.pos;
        varint::get(self.buf, &mut self.pos).ok_or_else(|| DecodeError {
            at: start,
            what: format!("{field}: a number is cut or too long"),
        })
    }

    fn id(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let v = self.num("region id")?;
        u32::try_from(v).map_err(|_| DecodeError {
            at: start,
            what: format!("region id {v} does not fit 32 bits"),
        })
    }

    #[inline]
    fn byte(&mut self, field: &str) -> Result<u8, DecodeError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err(format!("{field}: the chunk ends inside a record")))?;
        self.pos += 1;
        Ok(b)
    }

    fn string(&mut self) -> Result<String, DecodeError> {
        let len = self.num("name length")? as usize;
        if len > MAX_NAME {
            return Err(self.err(format!("a name of {len} bytes (at most {MAX_NAME})")));
        }
        let end = self.pos + len;
        let bytes = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.err("a name runs past the chunk's end"))?;
        let s = std::str::from_utf8(bytes)
            .map_err(|_| self.err("a name is not UTF-8"))?
            .to_string();
        self.pos = end;
        Ok(s)
    }
}

/// Decodes every record of one chunk's contents into `out` (cleared
/// first).
///
/// # Errors
/// [`DecodeError`] at the first byte that is not a well-formed record.
pub fn decode_all(buf: &[u8], out: &mut Vec<Record>) -> Result<(), DecodeError> {
    out.clear();
    let mut d = Decoder::new(buf);
    while let Some(r) = d.next_record() {
        out.push(r?);
    }
    Ok(())
}

/// `Hits` records passed over by [`Decoder::next_non_access_or_hits`]: how
/// many, and the accesses they count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub records: u64,
    pub count: u64,
}

/// Decodes the records of one chunk's contents one at a time, with no list
/// built (a replay's hot loop).
pub struct Decoder<'a> {
    c: Cursor<'a>,
    st: State,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder {
            c: Cursor { buf, pos: 0 },
            st: State::default(),
        }
    }

    /// The next record, `None` at the chunk's end.
    #[inline]
    pub fn next_record(&mut self) -> Option<Result<Record, DecodeError>> {
        (self.c.pos < self.c.buf.len()).then(|| self.decode_one())
    }

    /// The next record that is not an access, counting the accesses passed
    /// over in `accesses` without decoding them (a pass that needs only the
    /// regions). An access's fields are not checked here: a replay decodes
    /// and checks them.
    #[inline]
    pub fn next_non_access(&mut self, accesses: &mut u64) -> Option<Result<Record, DecodeError>> {
        self.next_event::<false>(accesses, &mut Tally::default())
    }

    /// [`Decoder::next_non_access`] that also passes over `Hits` records,
    /// adding them to `hits` (a pass that needs only the regions and the
    /// totals).
    #[inline]
    pub fn next_non_access_or_hits(
        &mut self,
        accesses: &mut u64,
        hits: &mut Tally,
    ) -> Option<Result<Record, DecodeError>> {
        self.next_event::<true>(accesses, hits)
    }

    #[inline(always)]
    fn next_event<const SKIP_HITS: bool>(
        &mut self,
        accesses: &mut u64,
        hits: &mut Tally,
    ) -> Option<Result<Record, DecodeError>> {
        let buf = self.c.buf;
        loop {
            // A sequential scan's accesses are two bytes each (a relative
            // tag, a one-byte delta): four of them at a time, read as one
            // word (tags 0x12 or 0x13 at the even bytes, delta bytes below
            // 0x80 at the odd ones).
            while let Some(w) = buf.get(self.c.pos..self.c.pos + 8) {
                let w = crate::le::u64(w, 0);
                const TAGS: u64 = 0x00fe_00fe_00fe_00fe;
                const NEAR: u64 = 0x0012_0012_0012_0012;
                const CONT: u64 = 0x8000_8000_8000_8000;
                if w & TAGS != NEAR || w & CONT != 0 {
                    break;
                }
                self.c.pos += 8;
                *accesses += 4;
            }
            let tag = *buf.get(self.c.pos)?;
            let fields = match tag {
                READ_NEAR | WRITE_NEAR => 1,
                READ_AT | WRITE_AT => 2,
                HITS if SKIP_HITS => {
                    let mut p = self.c.pos + 1;
                    match varint::get(buf, &mut p) {
                        Some(n) => {
                            hits.records += 1;
                            hits.count += n;
                            self.c.pos = p;
                            continue;
                        }
                        None => return Some(self.decode_one()),
                    }
                }
                _ => return Some(self.decode_one()),
            };
            // Skip the tag and the LEB128 fields: a field ends at its first
            // byte below 0x80. With 8 bytes after the tag, the ends are the
            // clear top bits of one word, found without a branch per byte.
            if let Some(w) = buf.get(self.c.pos + 1..self.c.pos + 9) {
                let w = crate::le::u64(w, 0);
                let ends = !w & 0x8080_8080_8080_8080;
                // The second field's end: drop the first end's bit.
                let ends = if fields == 2 {
                    ends & ends.wrapping_sub(1)
                } else {
                    ends
                };
                if ends != 0 {
                    self.c.pos += 1 + (ends.trailing_zeros() as usize >> 3) + 1;
                    *accesses += 1;
                    continue;
                }
            }
            let mut pos = self.c.pos + 1;
            for _ in 0..fields {
                while *buf.get(pos)? >= 0x80 {
                    pos += 1;
                }
                pos += 1;
            }
            self.c.pos = pos;
            *accesses += 1;
        }
    }

    #[inline]
    fn decode_one(&mut self) -> Result<Record, DecodeError> {
        let (c, st) = (&mut self.c, &mut self.st);
        let tag_at = c.pos;
        let tag = c.byte("tag")?;
        let r = match tag {
            READ_NEAR | WRITE_NEAR => {
                let Some(id) = st.last_id else {
                    return Err(DecodeError {
                        at: tag_at,
                        what: "a relative access with no access before it in the chunk".into(),
                    });
                };
                let d = varint::unzigzag(c.num("offset delta")?);
                let offset = st.last_offset.wrapping_add(d as u64);
                st.last_offset = offset;
                Record::Access {
                    id,
                    offset,
                    write: tag == WRITE_NEAR,
                }
            }
            READ_AT | WRITE_AT => {
                let id = c.id()?;
                let offset = c.num("offset")?;
                st.last_id = Some(id);
                st.last_offset = offset;
                Record::Access {
                    id,
                    offset,
                    write: tag == WRITE_AT,
                }
            }
            FETCH_NEAR | FETCH_AT => decode_fetch(c, st, tag, tag_at)?,
            HITS => Record::Hits {
                count: c.num("count")?,
            },
            MAP => {
                let id = c.id()?;
                let size = c.num("size")?;
                let native = c.num("native address")?;
                let kind_at = c.pos;
                let kind = RegionKind::from_code(c.byte("kind")?).ok_or(DecodeError {
                    at: kind_at,
                    what: "unknown region kind".into(),
                })?;
                let prot = Prot(c.byte("prot")?);
                let flags = MapFlags(c.byte("flags")?);
                let name = c.string()?;
                Record::Map(MapEvent {
                    id,
                    size,
                    native,
                    kind,
                    prot,
                    flags,
                    name,
                })
            }
            UNMAP | PROTECT | ADVISE | LOCK | UNLOCK => {
                let id = c.id()?;
                let offset = c.num("offset")?;
                let len = c.num("length")?;
                match tag {
                    UNMAP => Record::Unmap { id, offset, len },
                    LOCK => Record::Lock { id, offset, len },
                    UNLOCK => Record::Unlock { id, offset, len },
                    PROTECT => Record::Protect {
                        id,
                        offset,
                        len,
                        prot: Prot(c.byte("prot")?),
                    },
                    _ => Record::Advise {
                        id,
                        offset,
                        len,
                        advice: c.byte("advice")?,
                    },
                }
            }
            RESIZE => Record::Resize {
                id: c.id()?,
                size: c.num("size")?,
            },
            MOVE => Record::Move {
                id: c.id()?,
                new_id: c.id()?,
                size: c.num("size")?,
                native: c.num("native address")?,
            },
            FAULT => Record::Fault {
                id: c.id()?,
                offset: c.num("offset")?,
                write: c.byte("write")? != 0,
            },
            THREAD => {
                let at = c.pos;
                let v = c.num("thread")?;
                Record::Thread {
                    tid: u32::try_from(v).map_err(|_| DecodeError {
                        at,
                        what: format!("thread {v} does not fit 32 bits"),
                    })?,
                }
            }
            MARK => Record::Mark { name: c.string()? },
            t => {
                return Err(DecodeError {
                    at: tag_at,
                    what: format!("unknown record tag {t:#04x}"),
                })
            }
        };
        Ok(r)
    }
}

/// A `Fetch` record after its tag (at `tag_at`), relative to the chunk's
/// previous fetch (`FETCH_NEAR`) or naming its region (`FETCH_AT`).
fn decode_fetch(
    c: &mut Cursor<'_>,
    st: &mut State,
    tag: u8,
    tag_at: usize,
) -> Result<Record, DecodeError> {
    let (id, offset) = if tag == FETCH_NEAR {
        let Some(id) = st.fetch_id else {
            return Err(DecodeError {
                at: tag_at,
                what: "a relative fetch with no fetch before it in the chunk".into(),
            });
        };
        let d = varint::unzigzag(c.num("offset delta")?);
        (id, st.fetch_offset.wrapping_add(d as u64))
    } else {
        (c.id()?, c.num("offset")?)
    };
    st.fetch_id = Some(id);
    st.fetch_offset = offset;
    Ok(Record::Fetch { id, offset })
}

/// Encodes `records` as one chunk's contents (for tests and tools).
pub fn encode_all(records: &[Record]) -> Vec<u8> {
    let mut st = State::default();
    let mut buf = Vec::new();
    for r in records {
        encode(r, &mut st, &mut buf);
    }
    buf
}

/// Runs of accesses inside one range of offsets, for a replay's hot loop:
/// a replay that knows the next accesses of a thread can only hit its
/// first-level TLB while they stay in one page (see `backend::replay`)
/// consumes them here as a count, without building a [`Record`] each.
impl Decoder<'_> {
    /// The region and offset of the chunk's last access, which the next
    /// relative access (0x12, 0x13) is relative to; `None` before the
    /// chunk's first access.
    #[inline]
    pub fn last_access(&self) -> Option<(u32, u64)> {
        self.st.last_id.map(|id| (id, self.st.last_offset))
    }

    /// The access at the front, decoded and consumed, without building a
    /// [`Record`]; `None` (nothing consumed) when the next record is not an
    /// access or does not decode ([`Decoder::next_record`] then returns it
    /// or reports its error). The replay's loop takes accesses here.
    #[inline]
    pub fn next_access(&mut self) -> Option<(u32, u64, bool)> {
        let buf = self.c.buf;
        let pos = self.c.pos;
        match *buf.get(pos)? {
            t @ (READ_NEAR | WRITE_NEAR) => {
                let id = self.st.last_id?;
                let (d, len) = match buf.get(pos + 1) {
                    Some(&b) if b < 0x80 => (u64::from(b), 2),
                    _ => {
                        let mut p = pos + 1;
                        let d = varint::get(buf, &mut p)?;
                        (d, p - pos)
                    }
                };
                let offset = self.st.last_offset.wrapping_add(varint::unzigzag(d) as u64);
                self.st.last_offset = offset;
                self.c.pos = pos + len;
                Some((id, offset, t == WRITE_NEAR))
            }
            t @ (READ_AT | WRITE_AT) => {
                let mut p = pos + 1;
                let id = u32::try_from(varint::get(buf, &mut p)?).ok()?;
                let offset = varint::get(buf, &mut p)?;
                self.st.last_id = Some(id);
                self.st.last_offset = offset;
                self.c.pos = p;
                Some((id, offset, t == WRITE_AT))
            }
            _ => None,
        }
    }

    /// The count of the `Hits` record at the front, consumed; `None`
    /// (nothing consumed) when the next record is not one or does not
    /// decode.
    #[inline]
    pub fn next_hits(&mut self) -> Option<u64> {
        if *self.c.buf.get(self.c.pos)? != HITS {
            return None;
        }
        let mut p = self.c.pos + 1;
        let n = varint::get(self.c.buf, &mut p)?;
        self.c.pos = p;
        Some(n)
    }

    /// Consumes the longest run of relative accesses of kind `write` at
    /// the front whose offsets (in the region of [`Decoder::last_access`])
    /// lie in `[lo, hi)`, and returns how many it consumed. It stops before
    /// the first record that is anything else: another kind, another tag,
    /// an offset outside the range, or bytes that do not decode (which
    /// [`Decoder::next_record`] then reports with their position).
    #[inline]
    pub fn run_within(&mut self, write: bool, lo: u64, hi: u64) -> u64 {
        if self.st.last_id.is_none() {
            return 0;
        }
        let want = if write { WRITE_NEAR } else { READ_NEAR };
        let buf = self.c.buf;
        let mut pos = self.c.pos;
        let mut offset = self.st.last_offset;
        let span = hi.wrapping_sub(lo);
        let mut n = 0u64;
        loop {
            // The common case, a delta of one byte (|delta| < 64), read
            // from a slice pattern the compiler checks once.
            let (delta, len) = match buf.get(pos..) {
                Some([t, b, ..]) if *t == want && *b < 0x80 => (u64::from(*b), 2),
                Some([t, ..]) if *t == want => {
                    let mut p = pos + 1;
                    match varint::get(buf, &mut p) {
                        Some(d) => (d, p - pos),
                        None => break,
                    }
                }
                _ => break,
            };
            let next = offset.wrapping_add(varint::unzigzag(delta) as u64);
            if next.wrapping_sub(lo) >= span {
                break;
            }
            offset = next;
            pos += len;
            n += 1;
        }
        self.c.pos = pos;
        self.st.last_offset = offset;
        n
    }
}
