//! The workload format's protections as Linux's PROT_* bits: what the kernel
//! backend passes to the system calls, and what a trace records and a replay
//! reads. Linux's ABI numbers, the same on every architecture ptlab runs on
//! (checked against libc's constants in the tests). The madvise kinds carry
//! their MADV_* numbers themselves (`Advice::number`, crates/advice).

use workload::plan::Prot;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_numbers_are_linuxs() {
        assert_eq!(i32::from(PROT_READ), libc::PROT_READ);
        assert_eq!(i32::from(PROT_WRITE), libc::PROT_WRITE);
        assert_eq!(i32::from(PROT_EXEC), libc::PROT_EXEC);
    }

    #[test]
    fn every_workload_advice_is_the_models() {
        // One type: what the workload parser gives is what the model takes.
        fn model(a: mm::Advice) -> u8 {
            a.number()
        }
        for a in workload::plan::Advice::ALL {
            assert_eq!(model(*a), a.number());
        }
    }
}
