//! The typed values of a configuration's keys, each parsed from the one
//! spelling users write (and printed back in it). The model's options are
//! the model backend's own types ([`backend::model::ModelOptions`]), so
//! that the backend takes them as parsed here.

pub use backend::model::{
    Gup, HostPage, Locking, MthpPolicy, MthpSize, Named, PvFlush, Reclaim, Thp, MTHP_SIZES,
};

backend::named_option! {
    /// Which backend runs the workload.
    BackendKind { Model = "model", Kernel = "kernel" }
}

impl serde::Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_spellings_round_trip() {
        for (n, v) in BackendKind::NAMES {
            assert_eq!(BackendKind::parse(n), Some(*v));
            assert_eq!(v.to_string(), *n);
        }
        assert_eq!(BackendKind::parse("Model"), None, "spellings are exact");
        assert_eq!(BackendKind::expected(), "model, kernel");
    }
}
