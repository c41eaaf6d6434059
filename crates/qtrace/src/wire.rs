//! The plugin's stream as ptlab reads it (the writer's side is described
//! at the top of `plugin/ptlab_plugin.rs`): blocks, each one thread's, of a
//! little-endian u64 header and that many bytes of records. Accesses and
//! hits are in the trace format's own encoding (`trace::codec`), the rest
//! in the plugin's.

use std::io::Read;

/// An access, the trace format's relative tags: LEB128 zigzag delta from
/// the block's previous access (from 0 for its first).
pub const LOAD: u8 = 0x12;
pub const STORE: u8 = 0x13;
/// The trace format's hits tag: LEB128 count.
pub const HITS: u8 = 0x18;
/// u16 number, u16 path length, 7 u64 (arguments, return value), the path.
pub const SYSCALL: u8 = 0xE3;
/// u32 length, the host's maps text.
pub const MAPS: u8 = 0xE4;
/// u64 accesses lost.
pub const END: u8 = 0xE5;
/// u16 length, the path execve was called with.
pub const EXEC: u8 = 0xE6;
/// u64 the pid of a child process the program forked.
pub const FORK: u8 = 0xE7;
const BLOCK: u64 = 0xB10C;
/// A block never holds more bytes than this (the plugin writes 256 KiB).
const MAX_BLOCK_BYTES: u64 = 1 << 26;

/// Reads blocks, one at a time, into a buffer it reuses.
pub struct Blocks<R: Read> {
    input: R,
    bytes: Vec<u8>,
    /// Bytes read so far, for errors.
    pub offset: u64,
}

impl<R: Read> Blocks<R> {
    pub fn new(input: R) -> Self {
        Blocks {
            input,
            bytes: Vec::new(),
            offset: 0,
        }
    }

    /// The next block: (vCPU index, its bytes); `None` at the end of the
    /// input.
    ///
    /// # Errors
    /// A read error, or a stream that is not the plugin's (with its byte
    /// offset).
    pub fn next_block(&mut self) -> std::io::Result<Option<(u32, &[u8])>> {
        let mut head = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match self.input.read(&mut head[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(self.bad("the stream ends inside a block header")),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let head = u64::from_le_bytes(head);
        let n = head & 0xffff_ffff;
        if head >> 48 != BLOCK || n > MAX_BLOCK_BYTES {
            return Err(self.bad(&format!("not a block header: {head:#018x}")));
        }
        self.offset += 8;
        self.bytes.resize(n as usize, 0);
        if self.input.read_exact(&mut self.bytes).is_err() {
            return Err(self.bad("the stream ends inside a block"));
        }
        self.offset += n;
        Ok(Some(((head >> 32 & 0xffff) as u32, &self.bytes)))
    }

    fn bad(&self, what: &str) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the plugin's stream, byte {}: {what}", self.offset),
        )
    }
}

/// The plugin's encoding, for tests and tools that make a stream without
/// QEMU: appends to a block's bytes what the plugin would.
#[derive(Debug, Default)]
pub struct Encoder {
    pub bytes: Vec<u8>,
    prev: u64,
}

impl Encoder {
    pub fn access(&mut self, addr: u64, store: bool) -> &mut Self {
        let d = addr.wrapping_sub(self.prev) as i64;
        self.prev = addr;
        self.bytes.push(if store { STORE } else { LOAD });
        trace::varint::put(&mut self.bytes, trace::varint::zigzag(d));
        self
    }

    pub fn hits(&mut self, n: u64) -> &mut Self {
        self.bytes.push(HITS);
        trace::varint::put(&mut self.bytes, n);
        self
    }

    pub fn syscall(&mut self, nr: u16, a: [u64; 6], ret: u64, path: &[u8]) -> &mut Self {
        self.bytes.push(SYSCALL);
        self.bytes.extend_from_slice(&nr.to_le_bytes());
        self.bytes
            .extend_from_slice(&(path.len() as u16).to_le_bytes());
        for v in a.iter().chain(std::iter::once(&ret)) {
            self.bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.bytes.extend_from_slice(path);
        self
    }

    pub fn maps(&mut self, text: &[u8]) -> &mut Self {
        self.bytes.push(MAPS);
        self.bytes
            .extend_from_slice(&(text.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(text);
        self
    }

    pub fn exec(&mut self, path: &[u8]) -> &mut Self {
        self.bytes.push(EXEC);
        self.bytes
            .extend_from_slice(&(path.len() as u16).to_le_bytes());
        self.bytes.extend_from_slice(path);
        self
    }

    pub fn fork(&mut self, pid: u64) -> &mut Self {
        self.bytes.push(FORK);
        self.bytes.extend_from_slice(&pid.to_le_bytes());
        self
    }

    pub fn end(&mut self, lost: u64) -> &mut Self {
        self.bytes.push(END);
        self.bytes.extend_from_slice(&lost.to_le_bytes());
        self
    }

    /// The block as the plugin frames it.
    pub fn framed(&self, vcpu: u32) -> Vec<u8> {
        let head = BLOCK << 48 | u64::from(vcpu) << 32 | self.bytes.len() as u64;
        let mut b = head.to_le_bytes().to_vec();
        b.extend_from_slice(&self.bytes);
        b
    }
}
