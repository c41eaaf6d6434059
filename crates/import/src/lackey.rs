//! valgrind's lackey with `--trace-mem=yes`: one access per line,
//! `I  addr,size` (an instruction fetched at addr), ` L addr,size`
//! (load), ` S addr,size` (store), ` M addr,size` (modify: a load then a
//! store); addresses in hexadecimal. Lines of valgrind's own (`==PID==`)
//! and empty lines are passed over.

use crate::{Access, ImportError};
use std::io::{BufRead, Read};
use std::path::Path;

/// Reads the text of `input` (decompressed; `path` names it in errors),
/// calling `f` per access (an `I` line a fetch); returns the `I` lines
/// (instructions).
///
/// # Errors
/// A read fails; a line that is none of the above (file:line).
pub fn read(
    input: &mut dyn Read,
    path: &Path,
    f: &mut dyn FnMut(Access),
) -> Result<u64, ImportError> {
    let mut r = std::io::BufReader::with_capacity(1 << 20, input);
    let mut line = Vec::new();
    let mut n = 0u64;
    let mut instructions = 0u64;
    loop {
        line.clear();
        let got = r
            .read_until(b'\n', &mut line)
            .map_err(|source| ImportError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if got == 0 {
            break;
        }
        n += 1;
        let bad = |what: String| ImportError::Text {
            path: path.to_path_buf(),
            line: n,
            what,
        };
        let l = line.strip_suffix(b"\n").unwrap_or(&line);
        if l.is_empty() || l.starts_with(b"==") || l.starts_with(b"--") {
            continue;
        }
        let (kind, rest) = match l {
            [b'I', b' ', rest @ ..] => (b'I', rest),
            [b' ', k @ (b'L' | b'S' | b'M'), b' ', rest @ ..] => (*k, rest),
            _ => {
                return Err(bad(format!(
                    "not a lackey line (\"I  addr,size\", \" L addr,size\", \" S\", \" M\"): {:?}",
                    String::from_utf8_lossy(l)
                )))
            }
        };
        let rest = std::str::from_utf8(rest).map_err(|_| bad("not UTF-8".into()))?;
        let (addr, size) = rest
            .trim()
            .split_once(',')
            .ok_or_else(|| bad(format!("expected addr,size, found {rest:?}")))?;
        let addr =
            u64::from_str_radix(addr, 16).map_err(|e| bad(format!("address {addr:?}: {e}")))?;
        size.parse::<u32>()
            .map_err(|e| bad(format!("size {size:?}: {e}")))?;
        match kind {
            b'I' => {
                instructions += 1;
                f(Access::fetch(addr));
            }
            b'L' => f(Access::load(addr)),
            b'S' => f(Access::store(addr)),
            _ => {
                f(Access::load(addr));
                f(Access::store(addr));
            }
        }
    }
    Ok(instructions)
}
