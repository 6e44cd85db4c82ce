//! The library's layers (ARCHITECTURE.md): each module of `src/` may use only modules of its own layer or of a
//! lower one, and the modules of one layer do not import each other in a cycle. The imports are read from the
//! source text (`crate::…` paths and `use crate::{…}` groups, outside comments and `#[cfg(test)]` items), so a new
//! upward import, a new cycle or a module missing from [`LAYERS`] fails this test.
//!
//! Also here: nothing outside the attribute module reads `NodeProto.attribute` (attributes are read through
//! `attr::Attrs`, which follows a model-local function's `ref_attr_name` to the call site); sites are told apart by
//! their kind, not their op name; and no file is over 600 lines, no function over 80.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top. A module is a folder (or, for the codes table and the binary, a file) directly under `src/`.
const LAYERS: &[(&str, &[&str])] = &[
    ("system calls, panics, stop requests, shown text", &["sys"]),
    ("sizes and the codes table", &["sizes", "diagnostic"]),
    ("the ONNX model and its bytes: schema, loading, attributes, tensors, external data, splicing, saving", &["onnx"]),
    ("rules with the op table and the decision over ranges of sizes", &["rules"]),
    ("inference", &["infer"]),
    ("analysis", &["analysis"]),
    ("check | rewrite (expand, fold, annotate)", &["check", "rewrite"]),
    ("rendering", &["render"]),
    ("the command line and its config; the binary", &["cli", "main"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to; `None` for `lib.rs`.
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).expect("under src/");
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").map(str::to_string).unwrap_or(first);
    (name != "lib").then_some(name)
}

/// `text` without comments, string literals' contents and `#[cfg(test)]` items.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if text[i..].starts_with("//") {
            i += text[i..].find('\n').unwrap_or(text.len() - i);
        } else if text[i..].starts_with("/*") {
            i += text[i..].find("*/").map_or(text.len() - i, |e| e + 2);
        } else if let Some(len) = char_literal(&text[i..]) {
            i += len;
        } else if text[i..].starts_with("r#\"") {
            i += 3 + text[i + 3..].find("\"#").map_or(text.len() - i - 3, |e| e + 2);
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if text[i..].starts_with("#[cfg(test)]") {
            i = end_of_item(bytes, i + "#[cfg(test)]".len());
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a char literal (`'"'`, `'\\''`) at the start of `s`; `None` for a lifetime or anything else.
fn char_literal(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let (_, c) = chars.next()?;
    if c == '\\' {
        chars.next()?;
    }
    let (k, close) = chars.next()?;
    (close == '\'').then_some(k + 1)
}

/// The position after the item starting at `i`: after its first `;` at depth 0, or its closing brace.
fn end_of_item(bytes: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The top-level modules named by `crate::` paths in `code`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            let mut depth = 0;
            let mut start = true;
            for (k, c) in group[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_alphanumeric() || c == '_') => {
                        out.insert(ident(&group[k..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.into_iter().filter(|m| !m.is_empty() && m != "self").collect()
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (k, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// Module → the modules it imports, for every file of `src/` (lib.rs excluded: it declares every module).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&file) else { continue };
        let code = code_only(&std::fs::read_to_string(&file).expect("readable"));
        let entry = edges.entry(module.clone()).or_default();
        entry.extend(imports(&code).into_iter().filter(|m| *m != module));
    }
    edges
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

#[test]
fn every_module_has_a_layer() {
    let unplaced: Vec<String> = graph().into_keys().filter(|m| layer_of(m).is_none()).collect();
    assert!(unplaced.is_empty(), "modules missing from LAYERS in tests/it/layers.rs: {unplaced:?}");
    let declared: Vec<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    let edges = graph();
    let stale: Vec<&&str> = declared.iter().filter(|m| !edges.contains_key(**m)).collect();
    assert!(stale.is_empty(), "LAYERS names modules that src/ does not have: {stale:?}");
}

#[test]
fn no_module_imports_a_higher_layer() {
    let mut upward = Vec::new();
    for (from, tos) in graph() {
        let Some(here) = layer_of(&from) else { continue };
        for to in tos {
            match layer_of(&to) {
                Some(there) if there > here => {
                    upward.push(format!("{from} ({}) -> {to} ({})", LAYERS[here].0, LAYERS[there].0))
                }
                _ => {}
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn no_import_cycles() {
    let edges = graph();
    // Depth-first search for a back edge; the path to it is the cycle.
    fn visit<'a>(
        m: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, bool>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(true) => return None,
            Some(false) => {
                let from = path.iter().position(|p| *p == m).expect("on the path");
                let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(m, false);
        path.push(m);
        for next in edges.get(m).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(m, true);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

/// The module path of a file of `src/` (`src/onnx/wire.rs` is `[onnx, wire]`, `src/onnx/mod.rs` is `[onnx]`).
fn module_path_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src/");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

/// The file that holds module `path`, or the nearest enclosing module's file.
fn file_of_module(path: &[String], files: &BTreeSet<PathBuf>) -> Option<PathBuf> {
    for len in (1..=path.len()).rev() {
        let dir = path[..len].iter().fold(src(), |d, p| d.join(p));
        for candidate in [dir.with_extension("rs"), dir.join("mod.rs")] {
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// The module paths one file's code names: `crate::…`, `super::…` and `self::…` paths, groups expanded.
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let start = ["crate::", "super::", "self::"].iter().find(|p| boundary && rest.starts_with(**p));
        let Some(start) = start else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        // The module the path starts from: the crate, this module, or a parent per `super`.
        let mut base: Vec<String> = match *start {
            "crate::" => Vec::new(),
            _ => here.to_vec(),
        };
        let mut j = i + start.len();
        if *start == "super::" {
            base.pop();
            while code[j..].starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
        }
        collect_paths(&code[j..], &base, &mut out);
        i = j;
    }
    out
}

/// The paths `text` (after a `…::`) names below `base`: one path, or each item of a `{…}` group.
fn collect_paths(text: &str, base: &[String], out: &mut Vec<Vec<String>>) {
    if let Some(group) = text.strip_prefix('{') {
        let end = matching_brace(group);
        let mut depth = 0;
        let mut item_start = 0;
        for (k, c) in group[..end].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    collect_paths(group[item_start..k].trim_start(), base, out);
                    item_start = k + 1;
                }
                _ => {}
            }
        }
        collect_paths(group[item_start..end].trim_start(), base, out);
        return;
    }
    let mut path = base.to_vec();
    let mut rest = text;
    loop {
        let name = ident(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        if name != "self" {
            path.push(name);
        }
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with('{') => return collect_paths(r, &path, out),
            Some(r) => rest = r,
            None => break,
        }
    }
    out.push(path);
}

/// File → the files its code imports, for every file of `src/` but `lib.rs`. A folder's `mod.rs` handing its own
/// files' names on (`pub use walk::Walker;`) is its face, not an import, and is left out.
fn file_graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut list = Vec::new();
    rust_files(&src(), &mut list);
    let files: BTreeSet<PathBuf> = list.iter().filter(|f| !f.ends_with("lib.rs")).cloned().collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let is_mod = file.ends_with("mod.rs");
        let here = module_path_of(file);
        let code = code_only(&std::fs::read_to_string(file).expect("readable"));
        let mut to = BTreeSet::new();
        for path in named_paths(&code, &here) {
            let Some(target) = file_of_module(&path, &files) else { continue };
            let own_part = is_mod && target.starts_with(file.parent().expect("a folder"));
            if target != *file && !own_part {
                to.insert(target);
            }
        }
        edges.insert(file.clone(), to);
    }
    edges
}

#[test]
fn no_import_cycle_between_files() {
    let edges = file_graph();
    let mut state: BTreeMap<&PathBuf, bool> = BTreeMap::new();
    fn visit<'a>(
        f: &'a PathBuf,
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        state: &mut BTreeMap<&'a PathBuf, bool>,
        path: &mut Vec<&'a PathBuf>,
    ) -> Option<String> {
        match state.get(f) {
            Some(true) => return None,
            Some(false) => {
                let from = path.iter().position(|p| *p == f).expect("on the path");
                let names: Vec<String> = path[from..].iter().chain([&f]).map(|p| p.display().to_string()).collect();
                return Some(names.join(" -> "));
            }
            None => {}
        }
        state.insert(f, false);
        path.push(f);
        for next in edges.get(f).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(f, true);
        None
    }
    for f in edges.keys() {
        if let Some(cycle) = visit(f, &edges, &mut state, &mut Vec::new()) {
            panic!("import cycle between files: {cycle}");
        }
    }
}

/// The commands' modules of one layer, each a file or folder of `src/`: none may import another.
const SIBLING_COMMANDS: &[&[&str]] = &[
    &["check", "rewrite"],
    &["rewrite/expand", "rewrite/fold", "rewrite/annotate"],
    &["render/expand.rs", "render/fold.rs", "render/infer.rs"],
    &["cli/check.rs", "cli/shapes.rs", "cli/expand.rs", "cli/fold.rs", "cli/infer.rs", "cli/explain.rs"],
];

#[test]
fn no_command_imports_a_sibling_command() {
    let member = |file: &Path, group: &[&str]| group.iter().position(|m| file.starts_with(src().join(m)));
    let mut found = Vec::new();
    for (from, tos) in file_graph() {
        for group in SIBLING_COMMANDS {
            let Some(a) = member(&from, group) else { continue };
            for to in &tos {
                if member(to, group).is_some_and(|b| b != a) {
                    found.push(format!("{} -> {}", from.display(), to.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "a command imports a sibling command:\n{}", found.join("\n"));
}

#[test]
fn the_file_scanner_resolves_groups_and_relative_paths() {
    let here = vec!["analysis".to_string(), "walk".to_string()];
    let paths = named_paths("use super::walker::{fresh_symbol, Walker};\nuse crate::onnx::{model::Model, pb};", &here);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["analysis::walker::fresh_symbol", "analysis::walker::Walker", "onnx::model::Model", "onnx::pb"]);
}

#[test]
fn the_scanner_sees_imports_and_skips_comments_and_tests() {
    let code = code_only(
        "use crate::{a::B, c};\n// crate::d\nfn f<'a>() { crate::e::g('\"'); \"crate::h\"; }\n#[cfg(test)]\nmod t { use crate::i; }\n",
    );
    let got: Vec<String> = imports(&code).into_iter().collect();
    assert_eq!(got, ["a", "c", "e"]);
    assert_eq!(imports("use crate::onnx::pb::NodeProto;").into_iter().collect::<Vec<_>>(), ["onnx"]);
}

/// `NodeProto.attribute` read anywhere but `src/attr.rs` and the schema that declares it (`src/onnx/pb/`), outside
/// `#[cfg(test)]` items.
fn attribute_reads() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found = Vec::new();
    let schema = src().join("onnx").join("pb");
    for file in files {
        if file.ends_with("attr.rs") || file.starts_with(&schema) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).expect("readable"));
        for (k, _) in code.match_indices(".attribute") {
            let after = code[k + ".attribute".len()..].chars().next();
            if !after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                let line = code[..k].lines().count();
                found.push(format!("{}: near line {line} of the code", file.display()));
            }
        }
    }
    found
}

#[test]
fn attributes_are_read_only_through_attrs() {
    let reads = attribute_reads();
    assert!(reads.is_empty(), "read NodeProto.attribute through onnx_bcast::onnx::attr instead:\n{}", reads.join("\n"));
}

/// System-specific code (`libc::`, `std::os::…`) lives in `src/platform.rs` only, outside `#[cfg(test)]` items, so
/// that every other module builds on any system and `platform` is the one place that says what differs.
#[test]
fn system_specific_code_is_only_in_platform() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("platform.rs")) {
        let code = code_only(&std::fs::read_to_string(file).expect("readable"));
        for pattern in ["libc::", "std::os::", "os::unix", "os::windows", "os::fd"] {
            if let Some(k) = code.find(pattern) {
                found.push(format!(
                    "{}: `{pattern}` near line {} of the code",
                    file.display(),
                    code[..k].lines().count()
                ));
            }
        }
    }
    assert!(found.is_empty(), "move system-specific code into src/platform.rs:\n{}", found.join("\n"));
}

/// A broadcasting site is told apart by its typed kind (`Site::kind`, from the op table), never by comparing its op
/// name: `site.op == "Gemm"` in one place and a `SiteKind::Gemm` in another drift apart.
#[test]
fn sites_are_told_apart_by_kind_not_by_op_name() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found = Vec::new();
    for file in files {
        let code = code_only(&std::fs::read_to_string(&file).expect("readable"));
        for pattern in ["site.op ==", "site.op.as_str()", "first.op =="] {
            if code.contains(pattern) {
                found.push(format!("{}: {pattern}", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "compare Site::kind instead:\n{}", found.join("\n"));
}

/// The style's limits: no source file over 600 lines, no function over 80 (tests included; a function's length
/// runs from its `fn` line to the closing brace at its indentation).
#[test]
fn modules_and_functions_are_short() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut over = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > 600 {
            over.push(format!("{}: {} lines", file.display(), lines.len()));
        }
        for (start, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            let indent = &line[..line.len() - code.len()];
            let words: Vec<&str> = code.split_whitespace().take_while(|w| !w.starts_with("fn")).collect();
            let is_fn = code.split_whitespace().any(|w| w == "fn")
                && words.iter().all(|w| ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe"].contains(w))
                && !code.trim_end().ends_with(';');
            if !is_fn {
                continue;
            }
            let close = format!("{indent}}}");
            let end = (start + 1..lines.len()).find(|&k| lines[k].trim_end() == close).unwrap_or(lines.len() - 1);
            if end - start + 1 > 80 {
                over.push(format!("{}:{}: {} lines: {}", file.display(), start + 1, end - start + 1, code));
            }
        }
    }
    assert!(over.is_empty(), "over the limits:\n{}", over.join("\n"));
}
