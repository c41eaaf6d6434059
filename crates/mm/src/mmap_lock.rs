//! The mmap lock's implementation: a reader-writer lock whose readers are
//! split over per-thread slots, the shape of Linux's `percpu_rw_semaphore`
//! (include/linux/percpu-rwsem.h). A reader takes only its own slot's read
//! lock, on its own cache line, so threads faulting at once do not bounce
//! one lock word between them; a writer takes every slot's write lock.
//!
//! Linux's mmap lock is one rwsem, but since 6.4 its faults do not take it
//! at all (per-VMA locks, `lock_vma_under_rcu`); what the model keeps is the
//! semantics that matter to it: faults exclude mmap/munmap/mprotect, and
//! each acquisition is counted (see [`crate::locking`]).
//!
//! ## Invariants
//! - The data is reached only through a guard. A read guard holds one
//!   slot's read lock; a write guard holds every slot's write lock, taken
//!   in slot order (so two writers cannot deadlock). A writer therefore
//!   excludes every reader and every other writer, as one `RwLock` would.
//! - Poisoning is ignored, as the rest of the model does: every update is
//!   complete before a guard drops.

use crate::percpu;
use pt::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::TryLockError;

/// Reader slots. Under loom one slot, which keeps the model small.
#[cfg(not(loom))]
const SLOTS: usize = percpu::SLOTS;
#[cfg(loom)]
const SLOTS: usize = 1;

#[repr(align(128))]
struct Slot(RwLock<()>);

/// A reader-writer lock over `T` with per-thread reader slots.
pub(crate) struct SlotRwLock<T> {
    slots: Box<[Slot]>,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is reached only through the guards, which give shared
// access under a slot's read lock and exclusive access under every slot's
// write lock (module invariants): the same contract as `RwLock<T>`, which
// is `Sync` for `T: Send + Sync`.
unsafe impl<T: Send + Sync> Sync for SlotRwLock<T> {}

/// Shared access; holds this thread's slot.
pub(crate) struct ReadGuard<'a, T> {
    data: &'a T,
    _slot: RwLockReadGuard<'a, ()>,
}

/// Exclusive access; holds every slot.
pub(crate) struct WriteGuard<'a, T> {
    data: &'a mut T,
    _slots: Vec<RwLockWriteGuard<'a, ()>>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data
    }
}

impl<T> SlotRwLock<T> {
    pub(crate) fn new(value: T) -> SlotRwLock<T> {
        SlotRwLock {
            slots: (0..SLOTS).map(|_| Slot(RwLock::new(()))).collect(),
            data: UnsafeCell::new(value),
        }
    }

    /// Read-locks this thread's slot. The flag says whether it had to wait
    /// (a try-lock failed first).
    #[inline]
    pub(crate) fn read(&self) -> (ReadGuard<'_, T>, bool) {
        let slot = &self.slots[if SLOTS == 1 { 0 } else { percpu::slot() }].0;
        let (g, waited) = match slot.try_read() {
            Ok(g) => (g, false),
            Err(TryLockError::Poisoned(p)) => (p.into_inner(), false),
            Err(TryLockError::WouldBlock) => (slot.read().unwrap_or_else(|p| p.into_inner()), true),
        };
        // SAFETY: a slot's read lock is held, so no write guard exists (it
        // would hold that slot's write lock); only shared references are
        // made while any read lock is held.
        let data = unsafe { &*self.data.get() };
        (ReadGuard { data, _slot: g }, waited)
    }

    /// Whether a writer holds the lock (every writer holds slot 0; readers
    /// never block a try-read there). For assertions and tests.
    pub(crate) fn is_write_locked(&self) -> bool {
        matches!(self.slots[0].0.try_read(), Err(TryLockError::WouldBlock))
    }

    /// Write-locks every slot, in order. The flag says whether any had to
    /// be waited for.
    pub(crate) fn write(&self) -> (WriteGuard<'_, T>, bool) {
        let mut waited = false;
        let slots = self
            .slots
            .iter()
            .map(|s| match s.0.try_write() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    waited = true;
                    s.0.write().unwrap_or_else(|p| p.into_inner())
                }
            })
            .collect();
        // SAFETY: every slot's write lock is held: no read guard and no
        // other write guard exists until these guards drop with the
        // returned one.
        let data = unsafe { &mut *self.data.get() };
        (
            WriteGuard {
                data,
                _slots: slots,
            },
            waited,
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    #[test]
    fn writers_exclude_readers_and_each_other() {
        // The writer keeps the two halves equal; a reader that ever sees
        // them differ saw a write in progress.
        let l = SlotRwLock::new((0u64, 0u64));
        let torn = AtomicBool::new(false);
        let reads = AtomicU64::new(0);
        std::thread::scope(|sc| {
            for _ in 0..2 {
                sc.spawn(|| {
                    for i in 0..2000u64 {
                        let (mut g, _) = l.write();
                        g.0 += 1;
                        std::hint::black_box(i);
                        g.1 += 1;
                    }
                });
            }
            for _ in 0..3 {
                sc.spawn(|| {
                    for _ in 0..2000 {
                        let (g, _) = l.read();
                        if g.0 != g.1 {
                            torn.store(true, Ordering::Relaxed);
                        }
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert!(!torn.load(Ordering::Relaxed));
        assert_eq!(reads.load(Ordering::Relaxed), 6000);
        assert_eq!(*l.read().0, (4000, 4000));
    }

    #[test]
    fn a_reader_waits_for_a_writer_and_says_so() {
        let l = SlotRwLock::new(0u32);
        let (mut w, waited) = l.write();
        assert!(!waited);
        std::thread::scope(|sc| {
            let h = sc.spawn(|| {
                let (g, waited) = l.read();
                (*g, waited)
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            *w = 7;
            drop(w);
            assert_eq!(h.join().unwrap(), (7, true));
        });
    }
}
