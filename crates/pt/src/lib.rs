//! pt
