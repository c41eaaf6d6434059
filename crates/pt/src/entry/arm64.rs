//! TODO(codec helper)
use super::{DecodeError, Entry};
use crate::geometry::Geometry;

pub fn encode(_geom: &Geometry, _level: usize, _entry: &Entry, _j: u64) -> u64 {
    todo!()
}
pub fn decode(_geom: &Geometry, _level: usize, _raw: u64) -> Result<Entry, DecodeError> {
    todo!()
}
pub fn mark_accessed(_level: usize, _raw: u64, _write: bool) -> u64 {
    todo!()
}
