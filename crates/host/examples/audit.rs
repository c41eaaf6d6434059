//! Prints this host's audit as JSON (what `ptlab audit --json` will show).

fn main() {
    let audit = host::audit();
    println!(
        "{}",
        serde_json::to_string_pretty(&audit).expect("audit serializes")
    );
}
