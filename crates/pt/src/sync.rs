//! The synchronization primitives the engine uses, swapped for loom's under
//! `cfg(loom)` so that the lock protocols built on top (in `mm`) can be model
//! checked with the real code.

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub use loom::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

/// A spinlock, the kind of lock Linux's page-table locks and per-CPU page
/// lists are (`spinlock_t`): taking it is one compare-and-swap, releasing
/// it one store. Holders keep it for a few hundred instructions at most.
///
/// Invariant: `value` is reached only through a [`SpinGuard`], and a guard
/// exists only while `locked` is true and was set by that guard's
/// `try_lock`.
pub struct SpinLock<T = ()> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one guard at a time (the
// type invariant), which is what `Mutex<T>` needs of `T` to be shared.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the value; nothing refers to it then.
unsafe impl<T: Send> Send for SpinLock<T> {}

/// Access to a [`SpinLock`]'s value; dropping it releases the lock.
#[must_use = "the lock is released when the guard drops"]
pub struct SpinGuard<'a, T = ()> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The lock if it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SpinGuard { lock: self })
    }

    /// Takes the lock, spinning (then yielding the CPU) while it is held.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            // Wait with plain loads (no cache-line ping-pong), then retry.
            while self.locked.load(Ordering::Relaxed) {
                wait(&mut spins);
            }
            if let Some(g) = self.try_lock() {
                return g;
            }
        }
    }

    /// Whether some guard holds the lock (for assertions).
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

/// One step of waiting for a held lock. More threads than CPUs is normal
/// here (the stress tests run 8 on 2): after a short spin, give the CPU to
/// the holder.
#[inline]
fn wait(spins: &mut u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        *spins += 1;
        if *spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock (type invariant of SpinLock).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, so no other reference exists.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinLock")
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Increments under the lock from several threads add up exactly, and
    /// a held lock refuses `try_lock`.
    #[test]
    fn excludes_and_counts_exactly() {
        let l = SpinLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        *l.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*l.lock(), 80_000);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        assert!(l.try_lock().is_some());
    }
}
