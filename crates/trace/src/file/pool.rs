//! Chunks compressed on threads of their own and given back in the order
//! they were handed over: for a writer whose records come faster than one
//! core compresses them (an importer writing a whole trace at once after
//! its input is read), [`super::TraceWriter::with_threads`].
//!
//! Each chunk is one zstd frame made by one compressor at the writer's
//! level, whichever thread makes it: the file is byte for byte the one a
//! writer without threads makes.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A chunk compressed: its records' bytes (the buffer, to reuse), its
/// frame, and how many records it holds.
pub(super) struct Done {
    pub raw: Vec<u8>,
    pub frame: std::io::Result<Vec<u8>>,
    pub records: u32,
}

struct Job {
    raw: Vec<u8>,
    records: u32,
    done: SyncSender<Done>,
}

pub(super) struct Pool {
    jobs: SyncSender<Job>,
    /// The chunks handed over and not yet taken back, oldest first.
    pending: VecDeque<Receiver<Done>>,
    workers: Vec<JoinHandle<()>>,
    /// Chunks in flight before [`Pool::submit`] waits for the oldest.
    depth: usize,
}

impl Pool {
    /// `threads` compressors at zstd `level`, frames with their checksum.
    ///
    /// # Errors
    /// A compressor cannot be made or a thread started.
    pub fn new(threads: usize, level: i32) -> std::io::Result<Pool> {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::sync_channel::<Job>(threads);
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let mut c = zstd::bulk::Compressor::new(level)?;
            c.include_checksum(true)?;
            let rx = Arc::clone(&rx);
            workers.push(
                std::thread::Builder::new()
                    .name("trace-compress".into())
                    .spawn(move || loop {
                        // One worker waits on the queue at a time; the
                        // others wait for the lock.
                        let job = match rx.lock() {
                            Ok(q) => match q.recv() {
                                Ok(j) => j,
                                Err(_) => return,
                            },
                            Err(_) => return,
                        };
                        let frame = c.compress(&job.raw);
                        // The writer may be gone (an error): nothing to do.
                        let _ = job.done.send(Done {
                            raw: job.raw,
                            frame,
                            records: job.records,
                        });
                    })?,
            );
        }
        Ok(Pool {
            jobs: tx,
            pending: VecDeque::new(),
            workers,
            depth: 2 * threads,
        })
    }

    /// Hands over a chunk of `records` records; returns the oldest chunk
    /// once more than the pool's depth are in flight (to write now).
    pub fn submit(&mut self, raw: Vec<u8>, records: u32) -> Option<Done> {
        let (done, back) = mpsc::sync_channel(1);
        let job = Job { raw, records, done };
        match self.jobs.send(job) {
            Ok(()) => self.pending.push_back(back),
            // The workers are gone (one panicked): the chunk fails, in its turn.
            Err(mpsc::SendError(job)) => stopped(job, &mut self.pending),
        }
        if self.pending.len() > self.depth {
            self.next()
        } else {
            None
        }
    }

    /// The oldest chunk in flight, waiting for it; `None` if none is.
    pub fn next(&mut self) -> Option<Done> {
        let rx = self.pending.pop_front()?;
        Some(rx.recv().unwrap_or_else(|_| Done {
            raw: Vec::new(),
            frame: Err(std::io::Error::other("a compressing thread stopped")),
            records: 0,
        }))
    }
}

/// Where a job goes when no worker takes it: an error, queued in order
/// like any other result.
#[cold]
fn stopped(job: Job, pending: &mut VecDeque<Receiver<Done>>) {
    let (done, back) = mpsc::sync_channel(1);
    let frame = Err(std::io::Error::other("the compressing threads stopped"));
    let _ = done.send(Done {
        raw: job.raw,
        frame,
        records: job.records,
    });
    pending.push_back(back);
}

impl Drop for Pool {
    fn drop(&mut self) {
        // The workers see their queue close once its sender is gone.
        let (closed, _) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.jobs, closed));
        self.pending.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
