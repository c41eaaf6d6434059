//! The plugin's stream as ptlab reads it (the writer's side is described
//! at the top of `plugin/ptlab_plugin.rs`): blocks of little-endian u64
//! words, each block one thread's.

#[cfg(not(target_endian = "little"))]
compile_error!("the plugin's stream is read as little-endian words in place");

use std::io::Read;

pub const TAG_SHIFT: u32 = 61;
pub const LOAD: u64 = 0;
pub const STORE: u64 = 1;
pub const HITS: u64 = 2;
pub const SYSCALL: u64 = 3;
pub const MAPS: u64 = 4;
pub const END: u64 = 5;
pub const ADDR_MASK: u64 = (1 << TAG_SHIFT) - 1;
const BLOCK: u64 = 0xB10C;
/// A block never holds more words than this (the plugin writes 64 Ki).
const MAX_BLOCK_WORDS: u64 = 1 << 24;

/// Reads blocks, one at a time, into a buffer it reuses.
pub struct Blocks<R: Read> {
    input: R,
    words: Vec<u64>,
    /// Bytes read so far, for errors.
    pub offset: u64,
}

impl<R: Read> Blocks<R> {
    pub fn new(input: R) -> Self {
        Blocks {
            input,
            words: Vec::new(),
            offset: 0,
        }
    }

    /// The next block: (vCPU index, words); `None` at the end of the input.
    ///
    /// # Errors
    /// A read error, or a stream that is not the plugin's (with its byte
    /// offset).
    pub fn next_block(&mut self) -> std::io::Result<Option<(u32, &[u64])>> {
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
        if head >> 48 != BLOCK || n > MAX_BLOCK_WORDS {
            return Err(self.bad(&format!("not a block header: {head:#018x}")));
        }
        self.offset += 8;
        self.words.resize(n as usize, 0);
        // SAFETY: the bytes of a slice of plain integers, for its length;
        // every bit pattern is a valid u64. The stream is little-endian and
        // so is every host QEMU's x86-64 user mode runs this plugin on.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                self.words.as_mut_ptr().cast::<u8>(),
                self.words.len() * 8,
            )
        };
        if self.input.read_exact(bytes).is_err() {
            return Err(self.bad("the stream ends inside a block"));
        }
        self.offset += n * 8;
        Ok(Some(((head >> 32 & 0xffff) as u32, &self.words)))
    }

    fn bad(&self, what: &str) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the plugin's stream, byte {}: {what}", self.offset),
        )
    }
}

/// The bytes of a padded text that starts at `words[0]` (its length in
/// bits 0..`len_bits` of `first`); returns the text and the words it took.
pub fn text(words: &[u64], len: usize) -> Option<(Vec<u8>, usize)> {
    let n = len.div_ceil(8);
    let ws = words.get(..n)?;
    let mut b: Vec<u8> = ws.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.truncate(len);
    Some((b, n))
}
