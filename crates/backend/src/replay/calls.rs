//! The trace's address-space records as the machine's system calls.

use super::driver::Driver;
use super::ReplayError;
use machine::{MapKind, MmapArgs, Prot};
use timing::SyscallKind;
use trace::{MapEvent, Record, RegionKind};

impl Driver<'_> {
    pub(super) fn map(&mut self, m: &MapEvent, addr: u64, len: u64) -> Result<(), ReplayError> {
        let kind = match m.kind {
            RegionKind::File => MapKind::File {
                cached: true,
                offset: 0,
            },
            RegionKind::Shmem => MapKind::Shmem,
            _ => MapKind::Anon,
        };
        let args = MmapArgs {
            addr,
            len,
            kind,
            shared: m.flags.has(trace::MapFlags::SHARED) || m.kind == RegionKind::Shmem,
            prot: prot(m.prot),
            populate: m.flags.has(trace::MapFlags::POPULATE) || self.prefault,
            locked: m.flags.has(trace::MapFlags::LOCKED),
            noreserve: m.flags.has(trace::MapFlags::NORESERVE),
            replace: false,
        };
        self.priced_call(SyscallKind::Mmap, 0, "mmap", |c| c.mmap(args))
    }

    /// The whole pages of `[offset, offset + len)` of region `id`: a range
    /// that reaches the region's end reaches its last (partial) page.
    pub(super) fn pages(&self, id: u32, offset: u64, len: u64) -> Option<(u64, u64)> {
        let size = self.size[id as usize];
        let start = offset.next_multiple_of(self.page);
        let end = if offset + len >= size {
            size.next_multiple_of(self.page)
        } else {
            (offset + len) / self.page * self.page
        };
        (end > start).then(|| (self.addr[id as usize] + start, end - start))
    }

    pub(super) fn step(&mut self, r: &Record) -> Result<(), ReplayError> {
        if !matches!(
            r,
            Record::Access { .. }
                | Record::Fetch { .. }
                | Record::Fault { .. }
                | Record::Hits { .. }
                | Record::Thread { .. }
                | Record::Mark { .. }
        ) {
            self.forget();
        }
        match r {
            Record::Access { id, offset, write } => self.access(*id, *offset, *write),
            Record::Fault { id, offset, write } => self.fault(*id, *offset, *write),
            Record::Fetch { id, offset } => self.fetch(*id, *offset),
            Record::Hits { count } => {
                self.hits(*count);
                Ok(())
            }
            Record::Thread { tid } => {
                self.tid = *tid as usize;
                Ok(())
            }
            Record::Mark { name } => self.mark(name),
            _ => self.call(r),
        }
    }

    /// An address-space record: the machine's system call.
    fn call(&mut self, r: &Record) -> Result<(), ReplayError> {
        match r {
            Record::Map(m) => {
                self.size[m.id as usize] = m.size;
                let a = self.addr[m.id as usize];
                self.map(m, a, m.size.next_multiple_of(self.page))
            }
            Record::Unmap { id, offset, len } => {
                let whole = *offset == 0 && *len >= self.size[*id as usize];
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                if whole {
                    self.size[*id as usize] = 0;
                }
                self.priced_call(SyscallKind::Munmap, len, "munmap", |c| c.munmap(a, len))
            }
            Record::Protect {
                id,
                offset,
                len,
                prot: p,
            } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                let p = prot(*p);
                self.priced_call(SyscallKind::Mprotect, len, "mprotect", |c| {
                    c.mprotect(a, len, p)
                })
            }
            Record::Advise {
                id,
                offset,
                len,
                advice,
            } => {
                let Some(adv) = machine::Advice::from_number(*advice) else {
                    *self.skipped.entry(*advice).or_default() += 1;
                    return Ok(());
                };
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Madvise, len, "madvise", |c| {
                    c.madvise(a, len, adv)
                })
            }
            Record::Lock { id, offset, len } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Other, len, "mlock", |c| c.mlock(a, len))
            }
            Record::Unlock { id, offset, len } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Other, len, "munlock", |c| c.munlock(a, len))
            }
            Record::Resize { id, size } => self.resize(*id, *size),
            Record::Move {
                id,
                new_id,
                size,
                native,
            } => self.moved(*id, *new_id, *size, *native),
            // The rest are not system calls (`step`).
            _ => Ok(()),
        }
    }

    /// A region grows or shrinks in place (brk, mremap without a move).
    fn resize(&mut self, id: u32, size: u64) -> Result<(), ReplayError> {
        let i = id as usize;
        let page = self.page;
        let (base, old) = (self.addr[i], self.size[i].next_multiple_of(page));
        self.size[i] = size;
        let size = &size.next_multiple_of(page);
        if *size > old {
            // The heap grows: the new tail is a fresh anonymous
            // mapping right after the old end (Linux: brk extends
            // the VMA).
            let m = MapEvent {
                id,
                size: *size - old,
                native: 0,
                kind: RegionKind::Anon,
                prot: trace::Prot(trace::Prot::READ | trace::Prot::WRITE),
                flags: trace::MapFlags::default(),
                name: String::new(),
            };
            self.map(&m, base + old, *size - old)
        } else if *size < old {
            let (a, len) = (base + size, old - size);
            self.priced_call(SyscallKind::Munmap, len, "munmap (shrink)", |c| {
                c.munmap(a, len)
            })
        } else {
            Ok(())
        }
    }

    /// mremap that moved region `id`: a new mapping of `size` bytes for
    /// `new_id`, then the old one unmapped.
    fn moved(&mut self, id: u32, new_id: u32, size: u64, native: u64) -> Result<(), ReplayError> {
        let m = MapEvent {
            id: new_id,
            size,
            native,
            kind: RegionKind::Anon,
            prot: trace::Prot(trace::Prot::READ | trace::Prot::WRITE),
            flags: trace::MapFlags::default(),
            name: String::new(),
        };
        self.size[new_id as usize] = size;
        let a = self.addr[new_id as usize];
        self.map(&m, a, size.next_multiple_of(self.page))?;
        let (old, old_size) = (
            self.addr[id as usize],
            self.size[id as usize].next_multiple_of(self.page),
        );
        self.size[id as usize] = 0;
        self.priced_call(SyscallKind::Munmap, old_size, "munmap (move)", |c| {
            c.munmap(old, old_size)
        })
    }
}

fn prot(p: trace::Prot) -> Prot {
    Prot {
        read: p.readable(),
        write: p.writable(),
        exec: p.executable(),
    }
}
