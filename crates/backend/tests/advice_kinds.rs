//! Every madvise kind of the one vocabulary (crates/advice) goes from a
//! workload's text through the checker to the model and the kernel without
//! any list of kinds here: a kind added to the vocabulary is run by this test
//! as it stands (docs/design.md, "How to add a madvise kind").

use backend::kernel::{self, KernelOptions};
use backend::model::{self, ModelConfig, ModelOptions, Thp};
use workload::plan::{Advice, Op};

/// The mappings tried for each kind; Linux refuses some kinds on some.
const MAPPINGS: [&str; 3] = [
    r#"kind = "anon""#,
    r#"kind = "shmem""#,
    r#"kind = "file", shared = true"#,
];

fn text(mapping: &str, advice: Advice) -> String {
    format!(
        r#"name = "advice-{name}"
[[thread]]
op = [
  {{ mmap = "a", size = "2MiB", {mapping} }},
  {{ touch = "a", access = "write" }},
  {{ madvise = "a", advice = "{name}", len = "1MiB" }},
  {{ mark = "advised" }},
  {{ touch = "a", access = "read" }},
]
"#,
        name = advice.name()
    )
}

#[test]
fn every_kind_runs_on_both_backends_or_is_refused_where_linux_refuses_it() {
    let cfg = ModelConfig::new(&ModelOptions {
        thp: Some(Thp::Never),
        ..ModelOptions::default()
    })
    .unwrap();
    for &advice in Advice::ALL {
        let mut ran = 0;
        for mapping in MAPPINGS {
            let w = match workload::parse(&text(mapping, advice), "k.toml", 48) {
                Ok(w) => w,
                Err(e) => {
                    // Refused before anything runs, with the place and the kind.
                    let msg = e.to_string();
                    assert!(msg.starts_with("k.toml:"), "{msg}");
                    assert!(msg.contains(advice.name()), "{msg}");
                    continue;
                }
            };
            let mut found = None;
            w.for_each_op(|_, op| {
                if let Op::Madvise { advice, .. } = op {
                    found = Some(*advice);
                }
            });
            assert_eq!(found, Some(advice));
            let m = model::run(&w, &cfg).unwrap_or_else(|e| panic!("{advice:?} {mapping}: {e}"));
            assert!(m.marks.iter().any(|k| k.name == "advised"));
            #[cfg(target_os = "linux")]
            {
                let k = kernel::run(&w, &KernelOptions::default())
                    .unwrap_or_else(|e| panic!("{advice:?} {mapping} on the kernel: {e}"));
                assert!(k.marks.iter().any(|k| k.name == "advised"));
            }
            ran += 1;
        }
        assert!(ran > 0, "{advice:?} is accepted on no mapping");
    }
}
