//! [`Prefetch`]: a [`TraceReader`] on a thread of its own, a bounded
//! number of decompressed chunks ahead of the consumer.

use super::{RawChunk, TraceError, TraceReader};
use std::io::Read;
use std::path::Path;

/// One chunk's records, decompressed, owned (what [`Prefetch`] hands over).
pub struct OwnedChunk {
    /// Byte offset of the chunk in the file.
    pub at: u64,
    /// Records its header announces.
    pub count: u32,
    pub bytes: Vec<u8>,
}

impl OwnedChunk {
    /// The chunk as [`RawChunk`], naming `path` in its errors.
    pub fn view<'a>(&'a self, path: &'a Path) -> RawChunk<'a> {
        RawChunk {
            at: self.at,
            count: self.count,
            bytes: &self.bytes,
            path,
        }
    }
}

/// Reads and decompresses a trace's chunks on a thread of its own, at most
/// `depth` chunks ahead of the consumer (a bounded channel), so a replay
/// overlaps its work with the reading and the zstd decompression. The
/// chunks come in the file's order, the reader's first error after the
/// chunks before it. Memory: at most `depth + 2` chunks' buffers.
pub struct Prefetch {
    rx: Option<std::sync::mpsc::Receiver<Result<OwnedChunk, TraceError>>>,
    /// Buffers handed back for reuse.
    back: Option<std::sync::mpsc::Sender<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prefetch {
    /// Starts reading `reader` (its header already read) on a new thread.
    pub fn new<R: Read + Send + 'static>(mut reader: TraceReader<R>, depth: usize) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(depth.max(1));
        let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let thread = std::thread::Builder::new()
            .name("ptlab-trace-read".into())
            .spawn(move || loop {
                let mut buf = spare.try_recv().unwrap_or_default();
                let sent = match reader.next_chunk_into(&mut buf) {
                    Ok(Some((at, count))) => tx.send(Ok(OwnedChunk {
                        at,
                        count,
                        bytes: buf,
                    })),
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                // The consumer is gone (it stopped early): so is the reader.
                if sent.is_err() {
                    return;
                }
            })
            .expect("a thread can be started");
        Prefetch {
            rx: Some(rx),
            back: Some(back),
            thread: Some(thread),
        }
    }

    /// The next chunk; `None` after the last.
    ///
    /// # Errors
    /// What the reader raised, in its place in the file.
    pub fn next_chunk(&mut self) -> Result<Option<OwnedChunk>, TraceError> {
        match self.rx.as_ref().map(|rx| rx.recv()) {
            Some(Ok(Ok(c))) => Ok(Some(c)),
            Some(Ok(Err(e))) => Err(e),
            _ => Ok(None),
        }
    }

    /// Hands a chunk's buffer back for the reader to fill again.
    pub fn recycle(&self, chunk: OwnedChunk) {
        if let Some(b) = &self.back {
            let _ = b.send(chunk.bytes);
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Closing the channel stops the reader at its next chunk.
        self.rx = None;
        self.back = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
