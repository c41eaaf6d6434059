//! The workload format's protections and advice as Linux's numbers
//! (PROT_* bits, MADV_* values), and back: what the kernel backend passes to
//! the system calls, and what a trace records and a replay reads. Linux's
//! ABI numbers, the same on every architecture ptlab runs on (checked
//! against libc's constants in the tests).

use mm::Advice as MmAdvice;
use workload::plan::{Advice, Prot};

/// PROT_READ, PROT_WRITE, PROT_EXEC.
pub const PROT_READ: u8 = 1;
pub const PROT_WRITE: u8 = 2;
pub const PROT_EXEC: u8 = 4;

/// `p` as PROT_* bits.
pub fn prot_bits(p: Prot) -> u8 {
    match p {
        Prot::None => 0,
        Prot::R => PROT_READ,
        Prot::Rw => PROT_READ | PROT_WRITE,
        Prot::Rx => PROT_READ | PROT_EXEC,
        Prot::Rwx => PROT_READ | PROT_WRITE | PROT_EXEC,
    }
}

/// `a` as Linux's MADV_* number.
pub fn advice_number(a: Advice) -> u8 {
    match a {
        Advice::WillNeed => 3,
        Advice::DontNeed => 4,
        Advice::Free => 8,
        Advice::HugePage => 14,
        Advice::NoHugePage => 15,
        // Since Linux 5.4.
        // Since Linux 5.4.
        Advice::Cold => 20,
        Advice::PageOut => 21,
        // Since Linux 5.14.
        Advice::PopulateRead => 22,
        Advice::PopulateWrite => 23,
    }
}

/// The OS model's advice for Linux's MADV_* number `n`, if it has it.
pub fn model_advice(n: u8) -> Option<MmAdvice> {
    Some(match n {
        3 => MmAdvice::WillNeed,
        4 => MmAdvice::DontNeed,
        8 => MmAdvice::Free,
        14 => MmAdvice::HugePage,
        15 => MmAdvice::NoHugePage,
        20 => MmAdvice::Cold,
        21 => MmAdvice::PageOut,
        22 => MmAdvice::PopulateRead,
        23 => MmAdvice::PopulateWrite,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADVICE: [Advice; 9] = [
        Advice::DontNeed,
        Advice::Free,
        Advice::HugePage,
        Advice::NoHugePage,
        Advice::PopulateRead,
        Advice::PopulateWrite,
        Advice::WillNeed,
        Advice::PageOut,
        Advice::Cold,
    ];

    #[cfg(target_os = "linux")]
    #[test]
    fn the_numbers_are_linuxs() {
        let libc_advice = [
            libc::MADV_DONTNEED,
            libc::MADV_FREE,
            libc::MADV_HUGEPAGE,
            libc::MADV_NOHUGEPAGE,
            libc::MADV_POPULATE_READ,
            libc::MADV_POPULATE_WRITE,
            libc::MADV_WILLNEED,
            libc::MADV_PAGEOUT,
            libc::MADV_COLD,
        ];
        for (a, n) in ADVICE.iter().zip(libc_advice) {
            assert_eq!(i32::from(advice_number(*a)), n, "{a:?}");
        }
        assert_eq!(i32::from(PROT_READ), libc::PROT_READ);
        assert_eq!(i32::from(PROT_WRITE), libc::PROT_WRITE);
        assert_eq!(i32::from(PROT_EXEC), libc::PROT_EXEC);
    }

    #[test]
    fn every_advice_comes_back_as_the_models() {
        for a in ADVICE {
            let m = model_advice(advice_number(a)).unwrap();
            assert_eq!(format!("{m:?}"), format!("{a:?}"));
        }
        assert_eq!(model_advice(0), None);
    }
}
