//! `ptlab inspect` against a live process whose tables are known: a child
//! (this test binary again, in the role `child_role`) maps memory sparsely,
//! densely and with THP, then waits; the parent inspects it, has it unmap
//! and release memory, and inspects it again.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const ROLE: &str = "PTLAB_INSPECT_CHILD";
const M2: usize = 2 << 20;

fn ptlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn inspect_json(pid: u32) -> Value {
    let out = ptlab(&["inspect", &pid.to_string(), "--json"]);
    assert!(
        out.status.success(),
        "inspect {pid}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

// ----- the child -----

/// `len` bytes of anonymous memory aligned to 2 MiB (the edges of a larger
/// mapping are unmapped), with THP advice `advice`.
fn map_aligned(len: usize, advice: libc::c_int) -> *mut u8 {
    // SAFETY: a fresh anonymous private mapping; checked before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + M2,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let start = p as usize;
    let aligned = start.next_multiple_of(M2);
    // SAFETY: both ranges lie inside the mapping just made and hold nothing.
    unsafe {
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + len + M2 - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        libc::madvise(aligned as *mut libc::c_void, len, advice);
    }
    aligned as *mut u8
}

fn touch(p: *mut u8, len: usize, step: usize) {
    for off in (0..len).step_by(step) {
        // SAFETY: `off < len` inside a writable mapping of `len` bytes.
        unsafe { p.add(off).write_volatile(1) };
    }
}

/// The child's side: not a test of its own (it returns at once unless the
/// parent started this binary with `PTLAB_INSPECT_CHILD` set).
#[test]
fn child_role() {
    if std::env::var_os(ROLE).is_none() {
        return;
    }
    let sparse = map_aligned(64 << 20, libc::MADV_NOHUGEPAGE);
    touch(sparse, 64 << 20, M2);
    let dense = map_aligned(8 << 20, libc::MADV_NOHUGEPAGE);
    touch(dense, 8 << 20, 4096);
    let thp = map_aligned(4 << 20, libc::MADV_HUGEPAGE);
    touch(thp, 4 << 20, 4096);
    let zero = map_aligned(M2, libc::MADV_NOHUGEPAGE);
    // SAFETY: inside the mapping; a read of an untouched page maps the zero page.
    let _ = unsafe { zero.read_volatile() };
    let mut out = std::io::stdout().lock();
    let stdin = std::io::stdin();
    let mut line = String::new();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    stdin.lock().read_line(&mut line).unwrap();
    // SAFETY: ranges inside the mappings made above, no longer used.
    unsafe {
        // The upper half of the sparse range but its last page (never
        // touched): 15 PTE tables go with it; the last one loses its only
        // entry but stays, as the VMA of that last page still overlaps it
        // (Linux: mm/memory.c, free_pgtables frees only spans without a VMA).
        libc::munmap(sparse.add(32 << 20).cast(), (32 << 20) - 4096);
        // One whole 2 MiB block of the dense range and half of the next.
        libc::madvise(dense.add(2 * M2).cast(), M2 + M2 / 2, libc::MADV_DONTNEED);
    }
    writeln!(out, "DONE").unwrap();
    out.flush().unwrap();
    line.clear();
    stdin.lock().read_line(&mut line).unwrap();
}

// ----- the parent -----

/// The child process; killed if the test fails before it ends.
struct Kid {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Kid {
    fn spawn() -> Kid {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
            .env(ROLE, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the test binary runs as the child");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        // A watchdog: a child that never answers is killed, so the reads
        // below see end-of-file and the test fails instead of hanging.
        let pid = child.id() as libc::pid_t;
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(300));
            // SAFETY: kill has no memory preconditions; at worst the PID has
            // already exited (the test is over by then).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        Kid {
            child,
            stdin,
            stdout,
        }
    }

    fn wait_for(&mut self, word: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the child ended before saying {word}");
            // libtest prints "test child_role ... " before the child writes.
            if line.trim_end().ends_with(word) {
                return;
            }
        }
    }

    fn go(&mut self) {
        writeln!(self.stdin, "go").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bucket(v: &Value, min: u64) -> u64 {
    v["pte_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["min"] == min)
        .map(|b| b["tables"].as_u64().unwrap())
        .unwrap()
}

fn thp_never() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map_or(true, |s| s.contains("[never]"))
}

#[test]
fn vmpte_is_predicted_exactly_then_explained_after_freeing() {
    let mut kid = Kid::spawn();
    kid.wait_for("READY");
    let pid = kid.child.id();
    let before = inspect_json(pid);
    let v = &before["vmpte"];
    assert_eq!(
        before["source"], "pagemap_scan",
        "this test needs Linux 6.7+"
    );
    assert_eq!(v["kernel_kb"], v["predicted_kb"], "{v:#}");
    assert_eq!(v["verdict"], "exact");
    // 32 sparse PTE tables with one entry each, 4 full ones of the dense range.
    assert!(bucket(&before, 1) >= 32, "{:#}", before["pte_histogram"]);
    assert!(bucket(&before, 512) >= 4, "{:#}", before["pte_histogram"]);
    assert!(before["mapped"]["zero_pages"].as_u64().unwrap() >= 1);
    if thp_never() {
        eprintln!("THP part skipped: this host's transparent_hugepage is never");
    } else {
        assert!(
            before["mapped"]["huge_anon"].as_u64().unwrap() >= 2,
            "{:#}",
            before["mapped"]
        );
        assert!(before["deposited_tables"].as_u64().unwrap() >= 2);
    }

    // The fallback reader (pagemap entries, huge pages placed from smaps)
    // predicts the same here: the THP range's blocks are its only fully
    // present ones in a VMA with AnonHugePages.
    let out = ptlab(&["inspect", &pid.to_string(), "--json", "--pagemap-entries"]);
    let slow: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(slow["source"], "pagemap");
    assert_eq!(
        slow["vmpte"]["predicted_kb"], before["vmpte"]["predicted_kb"],
        "{:#}",
        slow["vmpte"]
    );
    assert_eq!(
        slow["mapped"]["zero_pages"],
        Value::Null,
        "no zero-page flag without PAGEMAP_SCAN"
    );

    kid.go();
    kid.wait_for("DONE");
    let after = inspect_json(pid);
    let v = &after["vmpte"];
    let kernel = v["kernel_kb"].as_i64().unwrap();
    let predicted = v["predicted_kb"].as_i64().unwrap();
    let diff = v["difference_kb"].as_i64().unwrap();
    let tables = v["difference_tables"].as_i64().unwrap();
    assert_eq!(kernel, predicted + diff);
    assert!(
        diff >= 0,
        "the kernel never holds less than the pages need: {v:#}"
    );
    assert_eq!(diff, tables * 4, "the difference is whole 4 kB table pages");
    assert!(
        tables >= 1,
        "the PTE table under the last sparse page is kept: {v:#}"
    );
    // And at most the one the DONTNEED emptied, if PT_RECLAIM is off.
    assert!(tables <= 2, "nothing else was freed: {v:#}");
    assert!(
        v["places_total"].as_i64().unwrap() >= tables,
        "every kept table has a place: {v:#}"
    );
    assert_eq!(
        bucket(&after, 1),
        bucket(&before, 1) - 16,
        "the unmapped half took its 16 one-entry tables"
    );
    // The what-if's "kernel now" row holds exactly the kept tables more
    // than the "eager reclaim" row.
    let rows = after["what_if"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["scenario"] == name).unwrap();
    assert_eq!(
        row("kernel now")["table_bytes"].as_i64().unwrap()
            - row("eager reclaim")["table_bytes"].as_i64().unwrap(),
        diff * 1024
    );
    eprintln!(
        "after freeing: kernel {kernel} kB, predicted {predicted} kB: {}",
        v["explanation"]
    );
    kid.go();
}

#[test]
fn a_gone_pid_is_bad_input_naming_it() {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    let out = ptlab(&["inspect", &pid.to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("process {pid}")) && err.contains("no such process"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_pid_that_is_not_a_number_is_bad_input() {
    let out = ptlab(&["inspect", "self"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("PID \"self\""), "{err}");
}

#[test]
fn a_process_of_another_user_is_refused_with_the_file_named() {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptlab"));
    cmd.env("PTLAB_COSTS", "xeon-kvm-2026");
    cmd.args(["inspect", "1"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // As root, become nobody to be refused; PID 1 is root's.
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("process 1") && err.contains("/proc/1/"),
        "{err}"
    );
    assert!(err.contains("permission denied"), "{err}");
}
