//! Every name in a model is untrusted (issue 25): the crafted models `fixtures/crafted/names_*.pb` (written by
//! `fixtures/crafted/generate.py`) put one class of hostile text each (every C0 and C1 control, ESC sequences, CR
//! and LF with GitHub workflow commands after them, a name starting with `::`, line and paragraph separators,
//! bidirectional overrides and isolates, invisible format characters, `%`/`,`/`:`, the marks `escape` uses, shape
//! brackets, backslashes spelling escapes) into every kind of name: values, nodes, op types and domains, a
//! model-local function, a dim_param, the bodies of an If. Also here: two names that collide unless escaping is
//! one-to-one, megabyte-long names (written by `generate.py --big`, not committed), string fields that are not
//! UTF-8, files whose own names are hostile, and a hostile `--bind` symbol.
//!
//! Each goes through every command and format: `check` (text, verbose, strict, JSON, GitHub, SARIF), `shapes`
//! (text, JSON, dot), `expand`, `fold` and `infer` (text and JSON). Whatever the model:
//!
//! - nothing a terminal or a CI runner would act on reaches stdout or stderr: no control character but the
//!   newline ending each line, no line or paragraph separator, bidirectional or invisible format character, no
//!   mark of `escape`; JSON output is valid JSON, whose escapes are the only form of ESC, BEL or NUL;
//! - every finding (and every line of `expand`, `fold`, `infer`, `shapes`) is one line: the text's line count is
//!   what the JSON of the same run counts, and every stderr line starts with `onnx-bcast: `;
//! - no line is a GitHub Actions workflow command, except in `--format github`, where a parser of workflow
//!   commands (as the runner reads them: a line whose first non-blank characters are `::`) finds exactly one
//!   `error` or `warning` annotation per finding and nothing else, each for the model's file;
//! - JSON keeps every name whole, and one-line formats shorten a name past 80 characters.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CLASSES: &[&str] = &[
    "c0",
    "c1",
    "esc",
    "github",
    "command",
    "separators",
    "bidi",
    "invisible",
    "percent",
    "marks",
    "brackets",
    "backslash",
    "colon",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn crafted(name: &str) -> PathBuf {
    root().join("fixtures/crafted").join(format!("{name}.pb"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    what: String,
}

fn run(args: &[&str]) -> Run {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_onnx-bcast"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap_or_else(|e| panic!("cannot run onnx-bcast {args:?}: {e}"));
    let what = format!("onnx-bcast {}", args.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(" "));
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: output is not UTF-8: {e}"));
    let (stdout, stderr) = (text(out.stdout), text(out.stderr));
    let code = out.status.code().unwrap_or_else(|| panic!("{what}: killed by a signal"));
    assert!(matches!(code, 0..=2), "{what}: exit {code}\n{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("internal error"), "{what}: {stderr}");
    Run { code, stdout, stderr, what }
}

/// A character a terminal or a log viewer would act on, or show as something else than it is.
fn dangerous(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{00ad}' | '\u{feff}')
        || ('\u{200b}'..='\u{200f}').contains(&c)
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2060}'..='\u{2069}').contains(&c)
        || ('\u{fdd0}'..='\u{fdef}').contains(&c)
}

/// A line the GitHub Actions runner reads as a workflow command: its first non-blank characters are `::` (the
/// runner trims leading whitespace as .NET's `TrimStart` does: every Unicode white space).
fn is_command(line: &str) -> bool {
    line.trim_start_matches(char::is_whitespace).starts_with("::")
}

/// A workflow command as the runner parses it: `::NAME PROPERTIES::DATA`, properties `key=value` separated by `,`,
/// with the documented escapes undone (`%25`, `%0D`, `%0A`; in properties also `%3A`, `%2C`).
struct Command {
    name: String,
    properties: BTreeMap<String, String>,
    data: String,
}

fn parse_command(line: &str) -> Option<Command> {
    let line = line.trim_start_matches(char::is_whitespace).strip_prefix("::")?;
    let end = line.find("::")?;
    let (info, data) = (&line[..end], &line[end + 2..]);
    let (name, properties) = info.split_once(' ').unwrap_or((info, ""));
    let unescape = |s: &str| {
        s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")
    };
    let properties = properties
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), unescape(v)))
        .collect();
    let data = data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%");
    Some(Command { name: name.to_string(), properties, data })
}

/// The rules every human-readable output keeps (`github`: workflow commands are the format's own lines).
fn human(r: &Run, github: bool) -> Result<(), String> {
    for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        if let Some(c) = text.chars().find(|&c| dangerous(c)) {
            return Err(format!("{}: {stream} holds {c:?}:\n{text}", r.what));
        }
        for line in text.lines().filter(|l| is_command(l)) {
            if !(github && stream == "stdout") {
                return Err(format!("{}: {stream} line is a workflow command: {line}", r.what));
            }
        }
    }
    for line in r.stderr.lines() {
        if !line.starts_with("onnx-bcast: ") {
            return Err(format!("{}: a stderr line of the model's choosing: {line:?}", r.what));
        }
    }
    Ok(())
}

/// The rules of JSON output: valid JSON (one value per line, or one document), no raw ESC, BEL or NUL.
fn json(r: &Run, one_document: bool) -> Result<Vec<serde_json::Value>, String> {
    if let Some(b) = r.stdout.bytes().find(|b| matches!(b, 0 | 7 | 0x1b)) {
        return Err(format!("{}: JSON output holds the byte {b:#x}", r.what));
    }
    if one_document {
        return serde_json::from_str(&r.stdout).map(|v| vec![v]).map_err(|e| format!("{}: not JSON: {e}", r.what));
    }
    r.stdout.lines().map(|l| serde_json::from_str(l).map_err(|e| format!("{}: not JSON ({e}): {l}", r.what))).collect()
}

fn count(v: &serde_json::Value, key: &str) -> usize {
    v[key].as_array().map_or(0, Vec::len)
}

/// A line that defines a short name used by the line before it (`    h₁ = floor((height - 1) / 2) + 1`): the
/// shortener's, never a name's (a name cannot hold a line break, so it cannot start a line of its own).
fn is_legend(line: &str) -> bool {
    line.strip_prefix("    ").is_some_and(|rest| {
        let mut chars = rest.chars();
        chars.next() == Some('h') && chars.next().is_some_and(|c| ('₀'..='₉').contains(&c)) && rest.contains(" = ")
    })
}

/// The lines of an output that say something of their own: every line but the definitions of short names.
fn said(stdout: &str) -> usize {
    stdout.lines().filter(|l| !is_legend(l)).count()
}

/// One model through every command and format; the failures, if any.
fn every_command(model: &Path, out: &Path) -> Vec<String> {
    let m = model.to_str().unwrap();
    let o = out.join("out.onnx");
    let o = o.to_str().unwrap();
    let mut failures = Vec::new();
    let mut keep = |result: Result<(), String>| {
        if let Err(e) = result {
            failures.push(e);
        }
    };

    // check: the text has one line per finding the JSON lists, one per undecided site, and the total line.
    let check_json = run(&["check", "--no-config", "--format", "json", m]);
    let (findings, undecided) = match json(&check_json, false) {
        Ok(values) => values.first().map_or((0, 0), |v| {
            let sites = v["sites"].as_array().cloned().unwrap_or_default();
            (count(v, "findings"), sites.iter().filter(|s| s["verdict"] == "unknown").count())
        }),
        Err(e) => {
            keep(Err(e));
            (0, 0)
        }
    };
    let check = run(&["check", "--no-config", m]);
    keep(human(&check, false));
    let errors = check.stdout.lines().filter(|l| l.contains(": error: ")).count();
    // Each undecided site is named in a note of its own (no finding without --strict).
    if said(&check.stdout) != findings + undecided + errors + 1 {
        keep(Err(format!("{}: {} lines for {findings} findings:\n{}", check.what, said(&check.stdout), check.stdout)));
    }
    for args in [vec!["check", "--no-config", "--verbose", m], vec!["check", "--no-config", "--strict", m]] {
        keep(human(&run(&args), false));
    }
    keep(json(&run(&["check", "--no-config", "--format", "sarif", m]), true).map(|_| ()));

    // GitHub: one annotation per finding, for this file, and no other command.
    let github = run(&["check", "--no-config", "--format", "github", m]);
    keep(human(&github, true));
    let commands: Vec<Command> = github.stdout.lines().filter_map(parse_command).collect();
    let annotations = commands.iter().filter(|c| c.name == "error" || c.name == "warning").count();
    let others: Vec<&str> =
        commands.iter().map(|c| c.name.as_str()).filter(|n| *n != "error" && *n != "warning").collect();
    if annotations != findings.max(usize::from(check.code == 2)) || !others.is_empty() {
        keep(Err(format!(
            "{}: {annotations} annotations for {findings} findings, other commands {others:?}:\n{}",
            github.what, github.stdout
        )));
    }
    if let Some(c) = commands.iter().find(|c| c.properties.get("file").map(String::as_str) != Some(m)) {
        keep(Err(format!(
            "{}: an annotation for {:?}, not the model: {}",
            github.what,
            c.properties.get("file"),
            c.data
        )));
    }

    // shapes: a line per graph and value, as the JSON lists them.
    let shapes_json = run(&["shapes", "--format", "json", m]);
    let shape_lines = json(&shapes_json, false).map(|v| {
        v.first().map_or(0, |s| {
            let graphs = s["graphs"].as_array().cloned().unwrap_or_default();
            graphs.len()
                + graphs.iter().map(|g| count(g, "values")).sum::<usize>()
                + usize::from(s["opaque_ops"].as_object().is_some_and(|o| !o.is_empty()))
        })
    });
    let shapes = run(&["shapes", m]);
    keep(human(&shapes, false));
    match shape_lines {
        Ok(n) if shapes.code == 0 && said(&shapes.stdout) != n => keep(Err(format!(
            "{}: {} lines for {n} graphs, values and opaque ops:\n{}",
            shapes.what,
            said(&shapes.stdout),
            shapes.stdout
        ))),
        Err(e) => keep(Err(e)),
        _ => {}
    }
    keep(human(&run(&["shapes", "--format", "dot", m]), false));

    // expand, fold, infer: a line per item the JSON lists, and the total.
    for (command, keys) in
        [("expand", &["actions", "left"][..]), ("fold", &["folded", "kept"][..]), ("infer", &["mismatches"][..])]
    {
        let text = run(&[command, "--dry-run", m, o]);
        keep(human(&text, false));
        let as_json = run(&[command, "--dry-run", "--format", "json", m, o]);
        match json(&as_json, false) {
            Ok(values) if text.code != 2 && !text.stdout.is_empty() => {
                let items: usize = values.first().map_or(0, |v| keys.iter().map(|k| count(v, k)).sum());
                if said(&text.stdout) != items + 1 {
                    keep(Err(format!(
                        "{}: {} lines for {items} items:\n{}",
                        text.what,
                        said(&text.stdout),
                        text.stdout
                    )));
                }
            }
            Ok(_) => {}
            Err(e) => keep(Err(e)),
        }
    }
    failures
}

#[test]
fn hostile_names_never_reach_a_terminal_or_a_ci_log() {
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for class in CLASSES {
        for name in [format!("names_{class}"), format!("names_{class}_broken")] {
            failures.extend(every_command(&crafted(&name), out.path()));
        }
    }
    failures.extend(every_command(&crafted("names_collide"), out.path()));
    assert!(failures.is_empty(), "{} failures:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// The names are there, escaped in text and whole in JSON; a name holding shape brackets is never shortened as a
/// shape.
#[test]
fn names_are_shown_escaped_and_kept_whole_in_json() {
    let model = crafted("names_esc");
    let m = model.to_str().unwrap();
    let s = "\u{1b}[31mred\u{1b}[0m\u{1b}]0;title\u{7}\u{1b}[2J\u{1b}c";
    let check = run(&["check", "--no-config", "--format", "json", m]);
    // The message as JSON writes it: the name whole, its controls in JSON's own escapes.
    let json_text = serde_json::to_string(&format!("value '{s}sum{s}'")).unwrap();
    assert!(check.stdout.contains(json_text.trim_matches('"')), "{}", check.stdout);
    let text = run(&["check", "--no-config", m]);
    assert!(text.stdout.contains("value '\\u{1b}[31mred\\u{1b}[0m"), "{}", text.stdout);

    let brackets = crafted("names_brackets");
    let text = run(&["check", "--no-config", brackets.to_str().unwrap()]);
    assert!(text.stdout.contains("feat[batch_size_dimension, 3]Xfeat[batch_size_dimension, 3]"), "{}", text.stdout);
}

/// Two names that differ only in what a careless escaping would write for them stay apart.
#[test]
fn names_that_collide_after_careless_escaping_stay_apart() {
    let model = crafted("names_collide");
    let text = run(&["check", "--no-config", model.to_str().unwrap()]);
    assert!(text.stdout.contains("main › a\\u{1b}b (Add)"), "{}", text.stdout);
    assert!(text.stdout.contains("main › a\\\\u{1b}b (Add)"), "{}", text.stdout);
}

/// Names of a megabyte: every line stays short in one-line formats (names cut to 80 characters with a hash of the
/// whole), JSON has them whole.
#[test]
fn megabyte_names_are_shortened_in_lines_and_whole_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let python = common::venv_python();
    let gen = std::process::Command::new(python)
        .arg(root().join("fixtures/crafted/generate.py"))
        .arg("--big")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
    let model = dir.path().join("names_1mb.pb");
    let failures = every_command(&model, dir.path());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let m = model.to_str().unwrap();
    let o = dir.path().join("o.onnx");
    for args in [
        vec!["check", "--no-config", m],
        vec!["check", "--no-config", "--verbose", m],
        vec!["check", "--no-config", "--format", "github", m],
        vec!["shapes", m],
        vec!["expand", "--dry-run", m, o.to_str().unwrap()],
        vec!["fold", "--dry-run", m, o.to_str().unwrap()],
    ] {
        let r = run(&args);
        let longest = r.stdout.lines().chain(r.stderr.lines()).map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(longest < 1000, "{}: a line of {longest} characters", r.what);
    }
    let check = run(&["check", "--no-config", "--format", "json", m]);
    assert!(check.stdout.contains(&"n".repeat(1_000_000)), "the JSON names the node whole");
    let shapes = run(&["shapes", "--format", "json", m]);
    assert!(shapes.stdout.contains(&"A".repeat(1_000_000)), "the JSON names the value whole");
}

/// A string field that is not UTF-8 is one error naming the file, in every command; none of its bytes is shown.
#[test]
fn string_fields_that_are_not_utf8_are_one_clear_error() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("o.onnx");
    for field in ["node_name", "value_name", "op_type", "dim_param"] {
        let model = crafted(&format!("names_invalid_utf8_{field}"));
        let m = model.to_str().unwrap();
        for args in [
            vec!["check", "--no-config", m],
            vec!["check", "--no-config", "--format", "github", m],
            vec!["shapes", m],
            vec!["expand", m, o.to_str().unwrap()],
            vec!["fold", m, o.to_str().unwrap()],
            vec!["infer", m, o.to_str().unwrap()],
        ] {
            let r = run(&args);
            assert_eq!(r.code, 2, "{}", r.what);
            human(&r, args.contains(&"github")).unwrap();
            let said = format!("{}{}", r.stdout, r.stderr);
            assert!(said.contains(m) && said.contains("UTF-8"), "{}: {said}", r.what);
            assert!(!o.exists(), "{}: wrote its output", r.what);
        }
    }
}

/// A node named with 4 GiB of zero bytes (valid UTF-8), in a sparse file of a few real bytes: every command refuses
/// it with one error naming the file, the field's place and its length, from the name's header alone. The runs are
/// held to a 4 GiB address space: a run that mapped the file, or read the name into memory, could not.
#[test]
fn a_name_of_4_gib_is_one_clear_error_from_its_length_alone() {
    use prost::encoding::encode_varint;
    const NAME: u64 = 1 << 32;
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("long_name.onnx");
    // node { input: "a" input: "b" output: "y" op_type: "Add" name: <NAME zero bytes> }, in graph 7 of a model.
    let mut node = b"\x0a\x01a\x0a\x01b\x12\x01y\x22\x03Add\x1a".to_vec();
    encode_varint(NAME, &mut node);
    let node_len = node.len() as u64 + NAME;
    let mut graph = vec![0x0a];
    encode_varint(node_len, &mut graph);
    let mut head = b"\x08\x08\x42\x02\x10\x0d\x3a".to_vec();
    encode_varint(graph.len() as u64 + node_len, &mut head);
    head.extend(graph);
    head.extend(node);
    let file = std::fs::File::create(&model).unwrap();
    std::io::Write::write_all(&mut &file, &head).unwrap();
    // The name's bytes are a hole: the file takes a few blocks of disk.
    file.set_len(head.len() as u64 + NAME).unwrap();
    drop(file);
    let (m, o) = (model.to_str().unwrap(), dir.path().join("o.onnx"));
    for args in [
        vec!["check", "--no-config", m],
        vec!["check", "--no-config", "--format", "json", m],
        vec!["shapes", m],
        vec!["expand", m, o.to_str().unwrap()],
        vec!["fold", m, o.to_str().unwrap()],
        vec!["infer", m, o.to_str().unwrap()],
    ] {
        let r = common::cli::run_raw(&root(), &args, Some(4 << 20), std::time::Duration::from_secs(30));
        let said = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, Some(2), "{args:?}: {said}");
        assert!(r.stderr.lines().count() <= 1 && !said.contains("internal error"), "{args:?}: {said}");
        // On stderr, or on stdout among `check`'s lines.
        let errors: Vec<&str> = said.lines().filter(|l| l.contains(": error: ")).collect();
        let [line] = errors[..] else { panic!("{args:?}: one error line: {said}") };
        for part in [m, "graph.node[0].name", "4294967296 bytes"] {
            assert!(line.contains(part), "{args:?}: the error names {part}: {line}");
        }
        assert!(!o.exists(), "{args:?}: wrote its output");
    }
}

/// Files whose own names are hostile, found in a folder: the paths are escaped like names.
#[test]
fn hostile_file_names_are_escaped_like_model_names() {
    let dir = tempfile::tempdir().unwrap();
    let bad = root().join("fixtures/multidirectional_add_bad.onnx");
    let names = ["evil\n::error file=x::pwned.onnx", "\u{1b}[31mred.onnx", "\u{202e}xnno.onnx", "::warning::w.onnx"];
    for name in names {
        std::fs::copy(&bad, dir.path().join(name)).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    for format in ["text", "github", "json", "sarif"] {
        let r = run(&["check", "--no-config", "--format", format, d]);
        assert_eq!(r.code, 1, "{}", r.what);
        match format {
            "json" => drop(json(&r, false).unwrap()),
            "sarif" => drop(json(&r, true).unwrap()),
            _ => human(&r, format == "github").unwrap(),
        }
        if format == "github" {
            let annotations = r.stdout.lines().filter_map(parse_command).count();
            assert_eq!(annotations, names.len(), "{}", r.stdout);
        }
        if format == "text" {
            assert_eq!(r.stdout.lines().count(), names.len() + 1, "{}", r.stdout);
        }
    }
}

/// A `--bind` naming a symbol the model does not have: the error lists the model's own (hostile) symbols escaped,
/// on one line.
#[test]
fn a_binding_error_lists_hostile_symbols_escaped() {
    for class in CLASSES {
        let model = crafted(&format!("names_{class}"));
        for command in ["check", "infer"] {
            let mut args = vec![command, "--bind", "nope=3", model.to_str().unwrap()];
            let out = tempfile::tempdir().unwrap();
            let o = out.path().join("o.onnx");
            if command == "infer" {
                args.push(o.to_str().unwrap());
            }
            let r = run(&args);
            assert_eq!(r.code, 2, "{}", r.what);
            human(&r, false).unwrap();
            // check reports the model it could not check among its results (stdout), infer on stderr.
            let said = format!("{}{}", r.stdout, r.stderr);
            let lines: Vec<&str> =
                said.lines().filter(|l| l.contains("no input of the model has a dim named")).collect();
            assert_eq!(lines.len(), 1, "{}: {said}", r.what);
            assert!(lines[0].contains("'nope'") && lines[0].contains("its inputs name"), "{}", lines[0]);
        }
    }
}
