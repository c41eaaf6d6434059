//! The engine's host-side accelerations, in one list.
//!
//! The model reads as the hardware and the OS: tables of real words in
//! physical memory, walked level by level and decoded by the architecture's
//! codec. The items below make the host run it faster and change no result:
//! each shortcuts a plain path that still exists, says why it gives what
//! that path gives, and names the differential test that holds it to it.
//! The MMU's accelerations are listed in the `mmu` crate's documentation.
//!
//! | acceleration | shortcuts | exact because | held by |
//! | --- | --- | --- | --- |
//! | contiguous arena ([`crate::mem`]'s `flat`): the first arena chunks in one zeroed allocation; a word is `base + pa` | the per-chunk pointer load of `PhysMem::read` | the contiguous part holds the same chunks in address order; chunks past it, and addresses outside the arena, take the plain path | `mem::tests::the_contiguous_arena_reads_as_the_chunked_one` (a memory with no contiguous part, same operations, every word compared) |
//! | table-entry word test ([`TableFields`], per level in the geometry's [`crate::layout::Layout`]) | [`crate::entry::table_pa`] / [`crate::entry::decode`] of a table entry, in `PageTable::translate`, the walk memo and the MMU's walk | the codec computes the mask, value and address fields from the same rules its decode applies | `tests/codec.rs`: `table_fields_agree_with_table_pa`, `table_pa_agrees_with_decode` |
//! | leaf word test ([`LeafFields`]; the x86 decode's short path) | the codec's checked decode of a common leaf | the test rules out every reserved bit, misalignment and out-of-range address; anything else takes the checked decode | `tests/codec.rs`: `leaf_fields_read_what_decode_reads`; `entry::x86::tests::short_path_agrees_with_the_checked_decode` |
//! | templated leaves ([`crate::entry::leaf_with_address`]): a leaf's attributes encoded once for many pages | one `encode` per leaf | every codec keeps the output address in fields of its own | `tests/ops.rs`: `templated_leaves_are_the_words_write_entry_writes` |
//! | walk memo ([`WalkMemo`], `table/memo.rs`): the level-1 table of each recently walked region | the upper levels of the walk that [`crate::PageTable::prefetch_walk`] does | used only while no table above the leaves has been freed ([`crate::mem::PhysMem::upper_table_frees`] unchanged) and for the root it was filled for | `table::memo::tests::the_memo_names_the_word_the_walk_reads_last` (against [`crate::PageTable::last_walk_word`]) |
//! | walk prefetch ([`crate::mem::PhysMem::prefetch`], [`crate::PageTable::prefetch_walk`]) | nothing: a hint to the host's caches | a prefetch reads nothing the program sees and changes no word | the memo test above (the word it names is the one the walk reads) |
//! | staged walk prefetch ([`PrefetchStage`], [`crate::PageTable::prefetch_walk_stage`], [`crate::mem::PhysMem::prefetch_bias`]): a driver far enough ahead fetches the leaf table's bias word, then some accesses later the leaf word, whose bias load then hits | nothing: hints to the host's caches | a prefetch reads nothing the program sees and changes no word | `table::memo::tests::the_memo_names_the_word_the_walk_reads_last` (the memo's level-1 entry against the walk's; every stage run on every address changes nothing) |
//! | arena advice ([`set_arena_advisor`]): the embedding program may ask the host for huge pages under the contiguous arena | nothing: host memory placement | the advisor may neither write nor free the memory | none needed: no model state passes through it |
//! | large pool blocks (`mem/compact.rs`): promoted compact tables take their pages from 1 GiB zeroed reservations shown to the advisor, so the host can back dense tables with huge pages | nothing: host memory placement (2 MiB blocks before, never 2 MiB aligned) | pages are handed out zeroed either way; a table's words are read through its bias as before | `tests/compact.rs` (compact tables against full pages, operation by operation; the pool's page accounting) |
//!
//! The walk's per-level constants (`FastLevel` in [`crate::layout`]) are
//! not in the list: they are the geometry's own numbers computed once, not a
//! second path.

pub use crate::entry::LeafFields;
pub use crate::layout::TableFields;
pub use crate::mem::{set_arena_advisor, ArenaAdvisor};
pub use crate::table::{PrefetchStage, WalkMemo};
