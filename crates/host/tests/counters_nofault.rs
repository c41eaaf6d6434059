//! Reading counters must not add page faults (the kernel backend reads them
//! between measured operations). One test in its own binary, so no other test
//! thread faults in the same process meanwhile.

#![cfg(target_os = "linux")]

use host::CounterReader;

#[test]
fn reading_counters_adds_no_faults_and_sees_real_ones() {
    let mut reader = CounterReader::open();
    // The first read maps the reader's own code pages; from then on reads are
    // fault-free.
    let _ = reader.read();
    let mut last = reader.read();
    for _ in 0..200 {
        let now = reader.read();
        assert_eq!(now.minor_faults, last.minor_faults, "a read faulted");
        assert_eq!(now.major_faults, last.major_faults);
        assert_eq!(now.vmpte_kb, last.vmpte_kb);
        assert_eq!(now.rss_anon_kb, last.rss_anon_kb);
        last = now;
    }

    // And the reader does see faults that happen: write 64 fresh pages.
    let pages = 64usize;
    let len = pages * 4096;
    // SAFETY: a fresh private anonymous mapping the kernel places.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: the range lies in the mapping above; no huge pages, so each
    // 4 KiB write faults once.
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    let before = reader.read();
    for i in 0..pages {
        // SAFETY: inside the mapping.
        unsafe { (p as *mut u8).add(i * 4096).write_volatile(1) };
    }
    let after = reader.read();
    // SAFETY: the mapping created above.
    unsafe { libc::munmap(p, len) };
    assert_eq!(after.minor_faults - before.minor_faults, pages as u64);
    assert_eq!(
        after.rss_anon_kb.unwrap() - before.rss_anon_kb.unwrap(),
        (len / 1024) as u64
    );
}
