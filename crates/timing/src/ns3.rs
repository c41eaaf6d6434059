//! [`Ns3`]: one duration or instant under the three evaluations of a cost
//! file (point, low, high), added and compared component by component.

use std::ops::{Add, AddAssign, Mul, Sub};

/// Nanoseconds under the point, low and high figures of a cost file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ns3 {
    pub ns: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Ns3 {
    pub const ZERO: Ns3 = Ns3 {
        ns: 0.0,
        lo: 0.0,
        hi: 0.0,
    };

    /// The same figure under every evaluation (a sleep, a wait given).
    pub const fn same(ns: f64) -> Ns3 {
        Ns3 { ns, lo: ns, hi: ns }
    }

    /// The later of two instants, per evaluation (figures are finite: the
    /// cost file's validation refuses NaN, so a plain comparison does).
    #[inline(always)]
    pub fn max(self, o: Ns3) -> Ns3 {
        let m = |a: f64, b: f64| if b > a { b } else { a };
        Ns3 {
            ns: m(self.ns, o.ns),
            lo: m(self.lo, o.lo),
            hi: m(self.hi, o.hi),
        }
    }

    /// `self - o`, floored at zero per evaluation (a wait).
    #[inline(always)]
    pub fn saturating_sub(self, o: Ns3) -> Ns3 {
        (self - o).max(Ns3::ZERO)
    }
}

impl Add for Ns3 {
    type Output = Ns3;
    #[inline(always)]
    fn add(self, o: Ns3) -> Ns3 {
        Ns3 {
            ns: self.ns + o.ns,
            lo: self.lo + o.lo,
            hi: self.hi + o.hi,
        }
    }
}

impl AddAssign for Ns3 {
    #[inline(always)]
    fn add_assign(&mut self, o: Ns3) {
        self.ns += o.ns;
        self.lo += o.lo;
        self.hi += o.hi;
    }
}

impl Sub for Ns3 {
    type Output = Ns3;
    #[inline(always)]
    fn sub(self, o: Ns3) -> Ns3 {
        Ns3 {
            ns: self.ns - o.ns,
            lo: self.lo - o.lo,
            hi: self.hi - o.hi,
        }
    }
}

impl Mul<f64> for Ns3 {
    type Output = Ns3;
    #[inline(always)]
    fn mul(self, k: f64) -> Ns3 {
        Ns3 {
            ns: self.ns * k,
            lo: self.lo * k,
            hi: self.hi * k,
        }
    }
}

/// A figure's point and the bounds predictions carry: its interval, or,
/// for a figure its file marks unstable, the wider one its rounds' spread
/// gives (`costs::Cost::pricing_bounds`).
impl From<&costs::Cost> for Ns3 {
    fn from(c: &costs::Cost) -> Ns3 {
        let (lo, hi) = c.pricing_bounds();
        Ns3 { ns: c.ns, lo, hi }
    }
}
