//! mm
