//! Replays every input the fuzzers (fuzz/, `cargo +nightly fuzz`) ever crashed or hung on, on stable with plain
//! `cargo test`, so a fixed crash stays fixed. The inputs live in `tests/fuzz_regressions/`, one file each, named
//! `TARGET-WHAT` (see the README there). Each goes through the very functions the fuzz targets run
//! (tests/oracle, which the targets include):
//!
//! - model-shaped inputs (from `decode_check`, `expand_roundtrip`, `file_source`, `infer_roundtrip`,
//!   `fold_roundtrip` and `bind_rewrite`): the raw bytes, through all of `oracle::models::{file_source,
//!   decode_check, expand_roundtrip}` and `oracle::rewrites::{infer_roundtrip, fold_roundtrip, bind_rewrite}`,
//!   whichever target found them. (`expression_algebra` takes structured input: a crash it finds becomes a case
//!   of tests/it/sym_props.rs.)
//! - `*.shapes` (from `broadcast_algebra`): the text form of `oracle::rules::Input` (a shape per line, `axis: K`),
//!   through `oracle::rules::broadcast_algebra`.
//!
//! Every input gets a time budget too: a fuzzer timeout that came back would otherwise only make the suite slow.

use crate::oracle;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use oracle::rules::Input;

/// Generous for a debug build: the fuzzers' timeout was 30 s on an optimized one.
const BUDGET: Duration = Duration::from_secs(60);

/// The fuzz targets, as regression files are named.
const TARGETS: [&str; 8] = [
    "decode_check",
    "expand_roundtrip",
    "file_source",
    "broadcast_algebra",
    "infer_roundtrip",
    "fold_roundtrip",
    "bind_rewrite",
    "expression_algebra",
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions")
}

fn inputs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/fuzz_regressions exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// What the fuzz targets do with one input.
fn replay(name: &str, data: &[u8]) {
    if name.ends_with(".shapes") {
        let text = std::str::from_utf8(data).expect("a .shapes file is text");
        let input = Input::parse(text).unwrap_or_else(|e| panic!("not a .shapes file: {e}"));
        oracle::rules::broadcast_algebra(&input);
    } else {
        let scratch = tempfile::NamedTempFile::new().expect("a temporary file");
        oracle::models::file_source(data, scratch.path());
        oracle::models::decode_check(data);
        oracle::models::expand_roundtrip(data);
        oracle::rewrites::infer_roundtrip(data);
        oracle::rewrites::fold_roundtrip(data);
        oracle::rewrites::bind_rewrite(data);
    }
}

#[test]
fn every_fuzz_regression_input_replays_cleanly() {
    let files = inputs();
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(path).unwrap();
        let start = Instant::now();
        let result = std::panic::catch_unwind(|| replay(&name, &data));
        if let Err(panic) = result {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            failures.push(format!("{name}: panicked: {message}"));
        } else if start.elapsed() > BUDGET {
            failures.push(format!("{name}: took {:?} (budget {BUDGET:?})", start.elapsed()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fuzz regressions fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The regression files stay small (they are committed) and are named after the target that found them.
#[test]
fn regression_files_are_small_and_named() {
    for path in inputs() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 64 * 1024, "{name}: {size} bytes; minimize it (cargo fuzz tmin) below 64 KiB");
        assert!(
            TARGETS.iter().any(|t| name.starts_with(&format!("{t}-"))),
            "{name}: name it TARGET-WHAT after the fuzz target that found it"
        );
    }
}

/// A `.shapes` file reads back as the input it was printed from (the form `cargo fuzz fmt broadcast_algebra`
/// prints), and replays: symbols, expressions, symbolic broadcasts, unknown dims and ranks, a scalar, an axis.
#[test]
fn shapes_files_read_back_and_replay() {
    let text = "2,N,?\nN+2,M-1,K\nN|M,1\n\n*\naxis: -1\n";
    let input = Input::parse(text).expect("a .shapes text");
    assert_eq!(format!("{input:?}"), text);
    replay("broadcast_algebra-example.shapes", text.as_bytes());
    let ranked = "3,N\nN,1\naxis: 0\n";
    replay("broadcast_algebra-ranked.shapes", ranked.as_bytes());
    assert!(Input::parse("2,Q\n").is_err(), "only N, M and K are symbols");
}

/// The properties the fuzz targets `infer_roundtrip`, `fold_roundtrip` and `bind_rewrite` check hold on every
/// small model the repository ships (the shipped fixtures, the fold fixtures, the crafted battery's hostile names
/// and odd fields), so that a target starts from a corpus it passes and its oracle is itself tested.
#[test]
fn the_rewrite_oracles_hold_on_the_fixtures() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut models: Vec<PathBuf> = Vec::new();
    for (dir, prefix) in [("", ""), ("fold", ""), ("crafted", "names_"), ("crafted", "sparse"), ("crafted", "declared")]
    {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_file() && name.starts_with(prefix) && (name.ends_with(".onnx") || name.ends_with(".pb")) {
                models.push(path);
            }
        }
    }
    models.sort();
    assert!(models.len() > 80, "{} models", models.len());
    for path in &models {
        let data = std::fs::read(path).unwrap();
        oracle::rewrites::infer_roundtrip(&data);
        oracle::rewrites::fold_roundtrip(&data);
        for pick in [0u8, 1, 5, 7] {
            oracle::rewrites::bind_rewrite(&[&[pick][..], &data].concat());
        }
    }
}

/// The property the fuzz target `expression_algebra` checks, on the step of the crafted chains iterated, on
/// divisions by expressions, and on the parser's hardest inputs.
#[test]
fn the_expression_oracle_holds_on_the_chain_step() {
    use oracle::sym::{Case, E};
    let b = Box::new;
    let mut s = E::Sym(0);
    // Three steps: within the oracle's largest tree (the tree triples with each step).
    for _ in 0..3 {
        let m = b(E::Max(b(E::Sub(b(s.clone()), b(E::Const(1)))), b(E::Const(2))));
        s = E::Add(b(E::Min(b(s), b(E::FloorDiv(m.clone(), 2)))), m);
    }
    let division = E::DivPoly(b(E::Mul(b(E::Sym(1)), b(E::Sym(2)))), b(E::Add(b(E::Sym(2)), b(E::Const(1)))));
    let modulo = E::Mod(b(E::Sub(b(E::Sym(0)), b(E::Const(7)))), b(E::Sym(1)));
    let text = format!("{}a/(b+1){}", "floor(".repeat(40), ")".repeat(40));
    assert!(oracle::sym::tree_size(&s, oracle::sym::MAX_TREE) <= oracle::sym::MAX_TREE);
    oracle::sym::expression_algebra(&Case { exprs: vec![s, division, modulo], text });
}
