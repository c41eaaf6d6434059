//! An input file as a stream of decompressed bytes, decompressed on a
//! thread of its own: the importer's parser runs beside the decompressor
//! instead of after it, so an import takes about as long as decompressing.
//!
//! The compression is told by the file's first bytes, not its name (a
//! ChampSim trace is often renamed, or stored uncompressed): xz
//! (`FD 37 7A 58 5A 00`), gzip (`1F 8B`), bzip2 (`BZh`); anything else is
//! read as it is. Concatenated streams (`cat a.xz b.xz`, pigz, pbzip2) are
//! read through.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Bytes of one block handed from the decompressor to the parser.
const BLOCK: usize = 1 << 20;
/// Blocks the decompressor may be ahead of the parser.
const AHEAD: usize = 4;

/// How a file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Xz,
    Gzip,
    Bzip2,
    /// Not compressed (no known magic).
    None,
}

impl Compression {
    /// The compression whose magic `head` (the file's first bytes) starts with.
    pub fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if head.starts_with(&[0x1F, 0x8B]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::None => "uncompressed",
        }
    }
}

/// Why the decompressor stopped: the input does not decompress at
/// `offset` (bytes of the compressed file its decoder had taken), or the
/// file could not be read.
#[derive(Debug)]
pub struct Failure {
    pub offset: u64,
    pub error: std::io::Error,
}

enum Msg {
    Data(Vec<u8>),
    Failed(Failure),
}

/// The decompressed bytes of a file, as a [`Read`].
pub struct Input {
    pub compression: Compression,
    rx: Receiver<Msg>,
    back: SyncSender<Vec<u8>>,
    block: Vec<u8>,
    pos: usize,
    failed: Option<Failure>,
    thread: Option<JoinHandle<()>>,
    /// Blocks the reader had to wait for (none was ready): counted for
    /// whoever wants to know whether the reader is ahead of the
    /// decompressor ([`Input::waits`]).
    waits: Arc<AtomicU64>,
}

impl Input {
    /// Opens `path` and starts decompressing it on a new thread.
    ///
    /// # Errors
    /// The file cannot be opened or its first bytes read.
    pub fn open(path: &Path) -> std::io::Result<Input> {
        let file = std::fs::File::open(path)?;
        let mut r = BufReader::with_capacity(BLOCK, file);
        let compression = Compression::detect(r.fill_buf()?);
        let (tx, rx) = mpsc::sync_channel(AHEAD);
        let (back, spare) = mpsc::sync_channel(AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("import-decompress".into())
            .spawn(move || decompress(r, compression, &tx, &spare))?;
        Ok(Input {
            compression,
            rx,
            back,
            block: Vec::new(),
            pos: 0,
            failed: None,
            thread: Some(thread),
            waits: Arc::default(),
        })
    }

    /// The count of blocks the reader waited for, as it goes: it grows
    /// while the reader is faster than the decompressor.
    pub fn waits(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.waits)
    }

    /// Why decompression failed, once a read has returned the error.
    pub fn failure(&self) -> Option<&Failure> {
        self.failed.as_ref()
    }
}

/// The blocks as they come from the decompressor: a parser reads records
/// straight from them ([`BufRead::fill_buf`]), with no copy.
impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.pos == self.block.len() {
            if self.failed.is_some() {
                return Err(std::io::Error::other("decompression failed"));
            }
            let spent = std::mem::take(&mut self.block);
            if spent.capacity() > 0 {
                // The decompressor may have stopped: a lost spare is harmless.
                let _ = self.back.try_send(spent);
            }
            self.pos = 0;
            let next = match self.rx.try_recv() {
                Ok(m) => Ok(m),
                Err(mpsc::TryRecvError::Empty) => {
                    self.waits.fetch_add(1, Ordering::Relaxed);
                    self.rx.recv()
                }
                Err(mpsc::TryRecvError::Disconnected) => Err(mpsc::RecvError),
            };
            match next {
                Ok(Msg::Data(b)) => self.block = b,
                Ok(Msg::Failed(f)) => {
                    let e = std::io::Error::new(f.error.kind(), f.error.to_string());
                    self.failed = Some(f);
                    return Err(e);
                }
                // The decompressor is done: the end of the input.
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.block[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.block.len());
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let b = self.fill_buf()?;
        let n = buf.len().min(b.len());
        buf[..n].copy_from_slice(&b[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        // Unblocks a decompressor waiting to send, then waits for it.
        let (_, rx) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A [`BufRead`] that counts the bytes its reader takes: the offset in
/// the compressed file a decoder error is reported at.
struct Counted<R> {
    inner: R,
    taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.taken
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.consume(n);
    }
}

/// The decompressor's thread: fills blocks and sends them until the end
/// or an error (sent too), or until the reader is gone.
fn decompress(
    r: BufReader<std::fs::File>,
    compression: Compression,
    tx: &SyncSender<Msg>,
    spare: &Receiver<Vec<u8>>,
) {
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Counted {
        inner: r,
        taken: std::sync::Arc::clone(&taken),
    };
    let mut z: Box<dyn Read> = match compression {
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(counted)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(counted)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(counted)),
        Compression::None => Box::new(counted),
    };
    loop {
        let mut b = spare.try_recv().unwrap_or_default();
        b.resize(BLOCK, 0);
        let mut have = 0;
        while have < BLOCK {
            match z.read(&mut b[have..]) {
                Ok(0) => break,
                Ok(n) => have += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    b.truncate(have);
                    if have > 0 && tx.send(Msg::Data(b)).is_err() {
                        return;
                    }
                    let offset = taken.load(std::sync::atomic::Ordering::Relaxed);
                    let _ = tx.send(Msg::Failed(Failure { offset, error }));
                    return;
                }
            }
        }
        b.truncate(have);
        if have == 0 || tx.send(Msg::Data(b)).is_err() {
            return;
        }
        if have < BLOCK {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn roundtrip(bytes: &[u8], compress: impl Fn(&[u8]) -> Vec<u8>, want: Compression) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("input");
        std::fs::write(&p, compress(bytes)).unwrap();
        let mut input = Input::open(&p).unwrap();
        assert_eq!(input.compression, want);
        let mut got = Vec::new();
        input.read_to_end(&mut got).unwrap();
        assert!(got == bytes, "{} bytes back of {}", got.len(), bytes.len());
    }

    /// Bytes that compress poorly, several blocks long.
    fn bytes() -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..3 * BLOCK + 12345)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn every_compression_is_told_by_its_magic_and_read_through() {
        let b = bytes();
        roundtrip(
            &b,
            |b| {
                let mut z = xz2::write::XzEncoder::new(Vec::new(), 0);
                z.write_all(b).unwrap();
                z.finish().unwrap()
            },
            Compression::Xz,
        );
        roundtrip(
            &b,
            |b| {
                let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(b).unwrap();
                z.finish().unwrap()
            },
            Compression::Gzip,
        );
        roundtrip(
            &b,
            |b| {
                let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                z.write_all(b).unwrap();
                z.finish().unwrap()
            },
            Compression::Bzip2,
        );
        roundtrip(&b, <[u8]>::to_vec, Compression::None);
        roundtrip(b"", <[u8]>::to_vec, Compression::None);
    }

    #[test]
    fn two_concatenated_streams_read_as_one() {
        let gz = |b: &[u8]| {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(b).unwrap();
            z.finish().unwrap()
        };
        roundtrip(
            b"first part, second part",
            |b| [gz(&b[..12]), gz(&b[12..])].concat(),
            Compression::Gzip,
        );
    }

    #[test]
    fn a_corrupt_stream_fails_with_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.xz");
        let mut z = xz2::write::XzEncoder::new(Vec::new(), 0);
        z.write_all(&bytes()).unwrap();
        let mut c = z.finish().unwrap();
        let mid = c.len() / 2;
        c[mid] ^= 0xFF;
        std::fs::write(&p, &c).unwrap();
        let mut input = Input::open(&p).unwrap();
        let mut got = Vec::new();
        assert!(input.read_to_end(&mut got).is_err());
        let f = input.failure().expect("the failure is kept");
        assert!(f.offset > 0 && f.offset <= c.len() as u64, "{}", f.offset);
    }
}
