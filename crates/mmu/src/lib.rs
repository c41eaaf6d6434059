//! mmu
