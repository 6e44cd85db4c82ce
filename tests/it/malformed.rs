//! `onnx-bcast check` on inputs that are not valid models: the corpus in `fixtures/malformed/` (written by
//! `fixtures/malformed/generate.py`, which says how each file is built) plus a folder, a missing path and an
//! unreadable file made at test time.
//!
//! Whatever the input, the binary never panics: exit 0, 1 or 2, never 101 or a signal, and no "panicked" or
//! "internal error" (a caught panic) on stderr. Beyond that, `CASES` below says what each input must give:
//!
//! - `Refused`: the file cannot be checked. Exit 2, exactly one error line, which names the file and says what
//!   is wrong (it contains the listed phrases): in text mode on stdout (`PATH: error: …`, then the total line) with
//!   nothing on stderr, and in `--format json` mode on stderr, with only the `{"model": PATH, "error": MSG}` object
//!   on stdout.
//! - `Checked`: the file decodes. The exit code, the findings that must (and must not) be reported, and the
//!   summary, in both output formats; stderr stays empty.
//!
//! Every test runs the binary from the crate root with relative paths, as a user would.

use crate::common;
use crate::common::cli::{run_raw, RawRun};

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// What one input must give.
enum Expect {
    /// Exit 2 and one stderr line naming the file. Each entry is a phrase the line must contain (ASCII case
    /// ignored); `a|b` accepts either wording.
    Refused(&'static [&'static str]),
    /// The model decodes and is checked.
    Checked {
        /// Acceptable exit codes (one, except where the right code is a matter of policy, said in the reason).
        exit: &'static [i32],
        /// Findings that must be reported: the code and phrases its message must contain.
        findings: &'static [(&'static str, &'static [&'static str])],
        /// Codes that must not be reported (a wrong diagnosis is as bad as a missing one).
        absent: &'static [&'static str],
        /// Text the summary line must contain, when the sites matter.
        summary: Option<&'static str>,
    },
}

use Expect::{Checked, Refused};

struct Case {
    file: &'static str,
    expect: Expect,
    reason: &'static str,
}

const TRUNCATED: &str = "buffer underflow|truncated|end of file|unexpected end";

/// One row per file in `fixtures/malformed/`.
const CASES: &[Case] = &[
    // --- truncations of one valid model ---
    Case {
        file: "truncated_1_byte.onnx",
        expect: Refused(&["varint|truncated|end of file"]),
        reason: "only the tag of ir_version is left: its value is missing",
    },
    Case {
        file: "truncated_mid_header.onnx",
        expect: Refused(&["producer_name", TRUNCATED]),
        reason: "cut inside the producer_name string: its length claims more than the file holds",
    },
    Case {
        file: "truncated_mid_tensor.onnx",
        expect: Refused(&["graph", TRUNCATED]),
        reason: "cut inside the initializer's raw_data, three messages deep",
    },
    Case {
        file: "truncated_last_byte.onnx",
        expect: Refused(&["opset_import", TRUNCATED]),
        reason: "the last byte dropped (an interrupted download): the final opset_import is one byte short",
    },
    // --- random bytes ---
    Case {
        file: "random_seed1_64.onnx",
        expect: Refused(&["not a valid ONNX model|not an ONNX model"]),
        reason: "64 random bytes: not ONNX at all",
    },
    Case {
        file: "random_seed2_1000.onnx",
        expect: Refused(&["not a valid ONNX model|not an ONNX model"]),
        reason: "1000 random bytes: not ONNX at all",
    },
    Case {
        file: "random_seed3_4096.onnx",
        expect: Refused(&["not a valid ONNX model|not an ONNX model"]),
        reason: "4096 random bytes: not ONNX at all",
    },
    // --- wire types, tags, lengths, varints ---
    Case {
        file: "wiretype_ir_version_as_bytes.onnx",
        expect: Refused(&["ir_version", "wire type"]),
        reason: "ir_version (a varint) sent length-delimited; the message must name the field",
    },
    Case {
        file: "wiretype_graph_as_varint.onnx",
        expect: Refused(&["graph", "wire type"]),
        reason: "the graph (a message) sent as a varint",
    },
    Case {
        file: "wiretype_node_name_as_fixed32.onnx",
        expect: Refused(&["name", "wire type"]),
        reason: "a node's name (a string) sent as fixed32, two messages down",
    },
    Case {
        file: "wiretype_7_invalid.onnx",
        expect: Refused(&["wire type"]),
        reason: "wire type 7 does not exist in protobuf",
    },
    Case {
        file: "field_number_0.onnx",
        expect: Refused(&["tag|field number"]),
        reason: "field number 0 is never valid",
    },
    Case {
        file: "length_beyond_eof.onnx",
        expect: Refused(&["graph", TRUNCATED]),
        reason: "the graph claims 1,000,000 bytes where a few dozen follow",
    },
    Case {
        file: "varint_overlong.onnx",
        expect: Refused(&["varint"]),
        reason: "a varint of eleven 0xff bytes, longer than any 64-bit varint",
    },
    Case {
        file: "invalid_utf8_node_name.onnx",
        expect: Refused(&["UTF-8|UTF8"]),
        reason: "a node name that is not UTF-8 (the string type requires it)",
    },
    Case {
        file: "nested_if_200.onnx",
        expect: Refused(&["recursion limit|nested|nesting|too deep"]),
        reason:
            "If nested 200 levels (600 message levels): a message bomb the decoder must refuse without a stack overflow",
    },
    // --- not a model ---
    Case { file: "empty.onnx", expect: Refused(&["empty"]), reason: "zero bytes: not a model" },
    Case {
        file: "no_graph.onnx",
        expect: Refused(&["no graph"]),
        reason: "a well-formed ModelProto without a graph: nothing to check",
    },
    // --- decodes, but the graph is broken ---
    Case {
        file: "graph_cycle.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("graph-cycle", &["n1", "n2"])],
            // y2 is defined (by n2, inside the cycle): calling it undefined misleads.
            absent: &["undefined-value"],
            summary: None,
        },
        reason: "n1 reads n2's output and n2 reads n1's: no order runs the graph",
    },
    Case {
        file: "undefined_input.onnx",
        expect: Checked { exit: &[1], findings: &[("undefined-value", &["'missing'"])], absent: &[], summary: None },
        reason: "the Add reads a value nothing defines",
    },
    Case {
        file: "duplicate_value.onnx",
        expect: Checked { exit: &[1], findings: &[("duplicate-value", &["'C'"])], absent: &[], summary: None },
        reason: "two nodes produce C",
    },
    Case {
        file: "duplicate_shadows_input.onnx",
        expect: Checked { exit: &[1], findings: &[("duplicate-value", &["'A'"])], absent: &[], summary: None },
        reason: "a node produces A, which is also a graph input",
    },
    Case {
        file: "no_opset_import.onnx",
        expect: Checked { exit: &[1], findings: &[("missing-opset", &["opset"])], absent: &[], summary: None },
        reason: "Add with no opset import: its definition is unknown",
    },
    Case {
        file: "recursive_function.onnx",
        expect: Checked { exit: &[1], findings: &[("recursive-function", &["Rec"])], absent: &[], summary: None },
        reason: "a model-local function that calls itself",
    },
    Case {
        file: "function_chain_100.onnx",
        expect: Checked {
            // The chain is deeper than the analysis follows: whether that is a warning or an error is policy,
            // but it is not recursion.
            exit: &[0, 1],
            findings: &[],
            absent: &["recursive-function"],
            summary: None,
        },
        reason: "F0 calls F1 ... calls F99, none recursive: deep, not recursive, and no stack overflow",
    },
    // --- decodes, odd numbers ---
    Case {
        file: "negative_dim.onnx",
        expect: Checked {
            exit: &[0],
            findings: &[("negative-dim", &["'A'"])],
            absent: &[],
            summary: Some("1 site: 0 same, 1 broadcast, 0 violations"),
        },
        reason: "dim_value -1 on a graph input: a warning, read as unknown; the Add itself is fine",
    },
    Case {
        file: "dim_near_2_63.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "[2^63-1, 3] + [1, 3] is a valid broadcast; size arithmetic on it overflows",
    },
    Case {
        file: "expand_huge_target.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "Expand to a constant [2^63-1, 2^63-1]: the element count overflows u64",
    },
    Case {
        file: "rank_5000.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "an input of rank 5000 (all 1s) added to B[3]",
    },
    Case {
        file: "raw_data_short.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["shape", "12 bytes"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "Expand's int64 shape initializer has 12 raw bytes for 2 elements: its value cannot be read",
    },
    Case {
        file: "if_without_branches.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("0 sites") },
        reason: "an If with neither branch attribute",
    },
    Case {
        file: "legacy_axis_i64_min.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("broadcast-violation", &["axis"])],
            absent: &[],
            summary: Some("1 violation"),
        },
        reason: "opset 6 Add, broadcast=1, axis = -2^63: out of range, and axis arithmetic must not overflow",
    },
    Case {
        file: "nested_if_30.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "If nested 30 levels, under the decoder's limit: the Add at the bottom is found and checked",
    },
    // --- hostile tensors and nodes ---
    Case {
        file: "initializer_elements_overflow_u64.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["'B'", "overflow"]), ("broadcast-violation", &["4294967296"])],
            absent: &[],
            summary: Some("1 violation"),
        },
        reason: "an initializer of dims [2^32, 2^32, 3]: its element count overflows u64",
    },
    Case {
        file: "missing_initializer_read.onnx",
        expect: Checked {
            exit: &[0],
            findings: &[("conditional-broadcast", &["the unknown dim 1 of the target shape ∈ {1, 3}"])],
            absent: &["undefined-value"],
            summary: Some("1 conditional"),
        },
        reason: "Expand reads `shape`, a graph input whose initializer is missing (IR 3 style): a run-time target, \
                 whose unknown size meets A's 3",
    },
    Case {
        file: "raw_data_long.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["'shape'", "24 bytes"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "Expand's int64 shape initializer has 24 raw bytes for 2 elements: its value cannot be read",
    },
    Case {
        file: "int64_data_count_mismatch.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["'shape'", "3 elements"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "Expand's shape initializer holds 3 int64_data values for dims [2]",
    },
    Case {
        file: "wiretype_tensor_dims_as_fixed64.onnx",
        expect: Refused(&["dims", "wire type"]),
        reason: "an initializer's dims (repeated int64) sent as fixed64, three messages down",
    },
    Case {
        file: "packed_dims_length_2_62.onnx",
        expect: Refused(&["dims", TRUNCATED]),
        reason: "packed dims claiming 2^62 bytes where a few follow: refused without reserving room for them",
    },
    Case {
        file: "negative_dim_initializer.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["'B'", "negative"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "an initializer of dims [-1, 3]: no size, and never a size near 2^64",
    },
    Case {
        file: "node_10000_inputs.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "a Sum with 10,000 inputs: one site, checked in linear time",
    },
    Case {
        file: "string_data_invalid_utf8.onnx",
        expect: Checked { exit: &[0], findings: &[], absent: &[], summary: Some("1 site: 0 same, 1 broadcast") },
        reason: "a STRING initializer with invalid UTF-8 in string_data, which is bytes: a valid model",
    },
    Case {
        file: "external_data_escapes.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("external-data", &["'shape'", "refused"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "external data at ../../../../../../etc/passwd: refused, never opened",
    },
    Case {
        file: "duplicate_graph_input.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("duplicate-value", &["'A'", "more than once"])],
            absent: &[],
            summary: None,
        },
        reason: "the graph input A is listed twice, with different shapes",
    },
    Case {
        file: "duplicate_initializer.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("duplicate-value", &["'B'", "more than once"])],
            absent: &[],
            summary: None,
        },
        reason: "the initializer B is given twice, with different dims",
    },
    Case {
        file: "external_data_location_dot.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("external-data", &["'shape'", "not a regular file"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "external data at '.', the model's folder: not a file, never opened",
    },
    Case {
        file: "external_data_length_8g.onnx",
        expect: Checked {
            exit: &[1],
            findings: &[("tensor-data-mismatch", &["'shape'", "8589934592", "16"])],
            absent: &[],
            summary: Some("1 site"),
        },
        reason: "a 16-byte tensor whose external data claims 8 GiB: judged from the metadata, nothing read",
    },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The path of a corpus file as given on the command line (relative to the crate root).
fn corpus_path(file: &str) -> String {
    format!("fixtures/malformed/{file}")
}

/// Runs the binary from the crate root. A hang is a failure, not a stuck test run.
fn run(args: &[&str]) -> RawRun {
    run_raw(&root(), args, None, Duration::from_secs(60))
}

/// The checks every input gets: a normal exit with a documented code and no sign of a panic. Returns the code.
fn no_crash(what: &str, args: &[&str], r: &RawRun) -> Result<i32, String> {
    let Some(code) = r.code else {
        return Err(format!("{what}: onnx-bcast {args:?} was killed by a signal or timed out\nstderr: {}", r.stderr));
    };
    if !matches!(code, 0..=2) {
        return Err(format!("{what}: onnx-bcast {args:?} exited {code}\nstderr: {}", r.stderr));
    }
    for sign in ["panicked", "internal error", "RUST_BACKTRACE", "stack overflow"] {
        if r.stderr.contains(sign) {
            return Err(format!("{what}: stderr shows a panic ({sign:?}):\n{}", r.stderr));
        }
    }
    Ok(code)
}

/// `needle` is `a|b|...`: does `text` contain one of the alternatives (ASCII case ignored)?
fn mentions(text: &str, needle: &str) -> bool {
    let text = text.to_ascii_lowercase();
    needle.split('|').any(|alt| text.contains(&alt.to_ascii_lowercase()))
}

/// An error line: one line, naming the path, short enough to read, saying what is wrong.
fn check_error_line(what: &str, path: &str, line: &str, phrases: &[&str]) -> Result<(), String> {
    if !line.contains(path) {
        return Err(format!("{what}: the error does not name the file {path}: {line}"));
    }
    // The message after the path must be a sentence, not a dump: 300 characters is plenty to say what is wrong.
    let rest = line.len() - path.len();
    if rest > 300 {
        return Err(format!(
            "{what}: the error line is {} characters long: {}…",
            line.len(),
            &line[..line.len().min(400)]
        ));
    }
    for phrase in phrases {
        if !mentions(line, phrase) {
            return Err(format!("{what}: the error does not say {phrase:?}: {line}"));
        }
    }
    Ok(())
}

/// A refused input, in both output formats.
fn check_refused(what: &str, path: &str, phrases: &[&str]) -> Result<(), String> {
    let args = ["check", path];
    let r = run(&args);
    let code = no_crash(what, &args, &r)?;
    if code != 2 {
        return Err(format!("{what}: exit {code}, expected 2\nstdout: {}\nstderr: {}", r.stdout, r.stderr));
    }
    let lines: Vec<&str> = r.stdout.lines().collect();
    if lines.len() != 2
        || !lines[0].starts_with(&format!("{path}: error: "))
        || !lines[1].starts_with("checked 1 model")
    {
        return Err(format!("{what}: expected the error line and the total line on stdout, got:\n{}", r.stdout));
    }
    check_error_line(what, path, lines[0], phrases)?;
    if !r.stderr.is_empty() {
        return Err(format!("{what}: text mode printed to stderr:\n{}", r.stderr));
    }

    let args = ["check", "--format", "json", path];
    let r = run(&args);
    let code = no_crash(&format!("{what} (json)"), &args, &r)?;
    if code != 2 {
        return Err(format!("{what} (json): exit {code}, expected 2"));
    }
    if r.stderr.lines().count() != 1 {
        return Err(format!("{what} (json): expected exactly one stderr line, got:\n{}", r.stderr));
    }
    let out: Vec<&str> = r.stdout.lines().collect();
    if out.len() != 1 {
        return Err(format!("{what} (json): expected one stdout line (the error object), got:\n{}", r.stdout));
    }
    let v: Value = serde_json::from_str(out[0]).map_err(|e| format!("{what} (json): not JSON ({e}): {}", out[0]))?;
    let keys: BTreeSet<&str> = v.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    if keys != BTreeSet::from(["error", "model"]) {
        return Err(format!("{what} (json): expected {{\"model\", \"error\"}}, got {v}"));
    }
    if v["model"] != path {
        return Err(format!("{what} (json): \"model\" is {}, expected {path:?}", v["model"]));
    }
    let message = v["error"].as_str().unwrap_or_default();
    for phrase in phrases {
        if !mentions(message, phrase) {
            return Err(format!("{what} (json): \"error\" does not say {phrase:?}: {message}"));
        }
    }
    Ok(())
}

/// A decodable input, in both output formats.
fn check_checked(
    what: &str,
    path: &str,
    exit: &[i32],
    findings: &[(&str, &[&str])],
    absent: &[&str],
    summary: Option<&str>,
) -> Result<(), String> {
    let args = ["check", path];
    let r = run(&args);
    let code = no_crash(what, &args, &r)?;
    let dump = || format!("\nstdout:\n{}stderr:\n{}", r.stdout, r.stderr);
    if !exit.contains(&code) {
        return Err(format!("{what}: exit {code}, expected one of {exit:?}{}", dump()));
    }
    if !r.stderr.is_empty() {
        return Err(format!("{what}: a checked model wrote to stderr{}", dump()));
    }
    let lines: Vec<&str> = r.stdout.lines().collect();
    let prefix = format!("{path}: ");
    // Every line names the model, but the run's total line last.
    let (lines, total) = match lines.split_last() {
        Some((total, lines)) if total.starts_with("checked 1 model, ") => (lines.to_vec(), *total),
        _ => return Err(format!("{what}: no total line at the end{}", dump())),
    };
    if let Some(bad) = lines.iter().find(|l| !l.starts_with(&prefix)) {
        return Err(format!("{what}: a line does not start with the path: {bad}{}", dump()));
    }
    let last = total;
    if !(last.contains(" site: ") || last.contains(" sites: ")) {
        return Err(format!("{what}: no summary line at the end{}", dump()));
    }
    if let Some(s) = summary {
        if !last.contains(s) {
            return Err(format!("{what}: the summary does not say {s:?}: {last}"));
        }
    }
    for (code, phrases) in findings {
        let tag = format!("[{code}]");
        let Some(line) = lines.iter().find(|l| l.contains(&tag)) else {
            return Err(format!("{what}: no {code} finding{}", dump()));
        };
        for phrase in *phrases {
            if !mentions(line, phrase) {
                return Err(format!("{what}: the {code} finding does not mention {phrase:?}: {line}"));
            }
        }
    }
    for code in absent {
        if let Some(line) = lines.iter().find(|l| l.contains(&format!("[{code}]"))) {
            return Err(format!("{what}: wrongly reports {code}: {line}"));
        }
    }

    let args = ["check", "--format", "json", path];
    let r = run(&args);
    let json_code = no_crash(&format!("{what} (json)"), &args, &r)?;
    if json_code != code {
        return Err(format!("{what} (json): exit {json_code}, but {code} in text mode"));
    }
    if !r.stderr.is_empty() {
        return Err(format!("{what} (json): a checked model wrote to stderr:\n{}", r.stderr));
    }
    let out: Vec<&str> = r.stdout.lines().collect();
    if out.len() != 1 {
        return Err(format!("{what} (json): expected one stdout line, got {}", out.len()));
    }
    let v: Value = serde_json::from_str(out[0]).map_err(|e| format!("{what} (json): not JSON ({e})"))?;
    if v["model"] != path || !v["summary"].is_object() || !v["sites"].is_array() {
        return Err(format!("{what} (json): not a report of {path}: {}", out[0]));
    }
    let codes: BTreeSet<&str> =
        v["findings"].as_array().into_iter().flatten().filter_map(|f| f["code"].as_str()).collect();
    for (code, _) in findings {
        if !codes.contains(code) {
            return Err(format!("{what} (json): no {code} finding in {codes:?}"));
        }
    }
    for code in absent {
        if codes.contains(code) {
            return Err(format!("{what} (json): wrongly reports {code}"));
        }
    }
    Ok(())
}

fn check_case(case: &Case) -> Result<(), String> {
    let path = corpus_path(case.file);
    let what = format!("{} ({})", case.file, case.reason);
    match &case.expect {
        Refused(phrases) => check_refused(&what, &path, phrases),
        Checked { exit, findings, absent, summary } => check_checked(&what, &path, exit, findings, absent, *summary),
    }
}

/// Every corpus file against its row; all failures are collected, so one run lists every wrong case.
#[test]
fn every_malformed_input_gives_its_expected_outcome() {
    let failures: Vec<String> = CASES.iter().filter_map(|c| check_case(c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} malformed inputs behave wrongly:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}

/// The table and the directory list the same files, and the corpus is big enough to mean something.
#[test]
fn table_matches_corpus_directory() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("fixtures/malformed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".onnx"))
        .collect();
    let listed: BTreeSet<String> = CASES.iter().map(|c| c.file.to_string()).collect();
    assert_eq!(listed.len(), CASES.len(), "a file has two rows");
    assert_eq!(on_disk, listed, "fixtures/malformed/*.onnx and the CASES table disagree");
    assert!(CASES.len() >= 40);
    assert!(CASES.iter().all(|c| !c.reason.is_empty()));
}

/// The committed corpus is exactly what the committed generator writes.
#[test]
fn corpus_is_what_the_generator_writes() {
    let python = common::venv_python();
    let out = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(&python)
        .arg(root().join("fixtures/malformed/generate.py"))
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        run.status.success(),
        "fixtures/malformed/generate.py failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let mut generated = 0;
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let committed = std::fs::read(root().join("fixtures/malformed").join(&name))
            .unwrap_or_else(|e| panic!("the generator writes {name}, which is not committed ({e})"));
        assert!(std::fs::read(entry.path()).unwrap() == committed, "{name} differs from what the generator writes");
        generated += 1;
    }
    assert_eq!(generated, CASES.len(), "the generator writes a different number of files than the table lists");
}

/// All corpus files in one run: every model gets its own error line or report, in argument order, the run goes
/// on past failures, and the exit code is the worst one (2).
#[test]
fn whole_corpus_in_one_run() {
    let paths: Vec<String> = CASES.iter().map(|c| corpus_path(c.file)).collect();
    for json in [false, true] {
        let mut args = vec!["check", "--verbose"];
        if json {
            args.extend(["--format", "json"]);
        }
        args.extend(paths.iter().map(String::as_str));
        let r = run(&args);
        let code = no_crash("the whole corpus", &args, &r).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(code, 2, "json={json}: the worst exit code is 2\nstderr:\n{}", r.stderr);
        let refused: Vec<&str> = CASES.iter().filter(|c| matches!(c.expect, Refused(_))).map(|c| c.file).collect();
        // Text: the error lines are on stdout, among the others; JSON: on stderr too.
        let errors: Vec<&str> = if json {
            r.stderr.lines().collect()
        } else {
            r.stdout.lines().filter(|l| l.contains(": error: ")).collect()
        };
        assert_eq!(errors.len(), refused.len(), "json={json}: one stderr line per refused file:\n{}", r.stderr);
        for (line, file) in errors.iter().zip(&refused) {
            assert!(line.contains(&corpus_path(file)), "json={json}: stderr out of order: {line} should name {file}");
        }
        // stdout: the models in argument order (text: by the summary lines; json: one object per model).
        let reported: Vec<String> = if json {
            r.stdout
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()["model"].as_str().unwrap().to_string())
                .collect()
        } else {
            let summary = |l: &&str| l.contains(" site: ") || l.contains(" sites: ") || l.contains(": error: ");
            r.stdout
                .lines()
                .filter(|l| !l.starts_with("checked ") && summary(l))
                .map(|l| l.split(": ").next().unwrap().to_string())
                .collect()
        };
        let expected: Vec<String> = CASES.iter().map(|c| corpus_path(c.file)).collect();
        assert_eq!(reported, expected, "json={json}: models reported out of argument order");
    }
}

/// A folder given to `check` stands for every model below it (tests/it/cli.rs covers folders in depth): each malformed
/// one is refused on its own, in path order, and the rest are still checked.
#[test]
fn folder_as_model() {
    let args = ["check", "--format", "json", "fixtures/malformed"];
    let r = run(&args);
    assert_eq!(no_crash("a folder", &args, &r).unwrap_or_else(|e| panic!("{e}")), 2);
    let reported: Vec<Value> = r.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut expected: Vec<String> = CASES.iter().map(|c| corpus_path(c.file)).collect();
    expected.sort();
    let models: Vec<&str> = reported.iter().map(|v| v["model"].as_str().unwrap()).collect();
    assert_eq!(models, expected, "one object per model below the folder, in path order");
    for (v, case) in reported
        .iter()
        .zip(CASES.iter().map(|c| (corpus_path(c.file), c)).collect::<std::collections::BTreeMap<_, _>>().values())
    {
        let refused = v.get("error").is_some();
        assert_eq!(refused, !matches!(case.expect, Checked { .. }), "{}: {v}", case.file);
    }
}

/// A path that does not exist.
#[test]
fn missing_path() {
    check_refused(
        "a missing path",
        "fixtures/malformed/does-not-exist.onnx",
        &["No such file|not found|does not exist"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// A file that cannot be read. `chmod 000` stops everyone but root (or a process with CAP_DAC_OVERRIDE), and
/// the tests may run as root: when the file can still be opened after the chmod, a path *under* a regular file
/// (`model.onnx/x`, ENOTDIR) provokes a different I/O error instead, so an I/O failure is always covered.
#[test]
fn unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.onnx");
    std::fs::copy(root().join("fixtures/multidirectional_add_ok.onnx"), &file).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let chmod_works = std::fs::File::open(&file).is_err();
    let (path, phrases): (PathBuf, &[&str]) = if chmod_works {
        (file.clone(), &["cannot read", "Permission denied"])
    } else {
        (file.join("x"), &["cannot read", "Not a directory"])
    };
    let result = check_refused("an unreadable file", path.to_str().unwrap(), phrases);
    // Restore the mode so the temporary directory can be removed by any user.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    result.unwrap_or_else(|e| panic!("{e}"));
}
