//! Where something is in a model, in words: `GRAPH › NODE (OP)`. A graph's path (`main`, `main/If_0/then_branch`)
//! joins its steps with `/`, and node names often hold `/` too (PyTorch's `/model/embeddings/Add_1`), so a `/`
//! between the two (`main//model/embeddings/Add_1`) would leave the reader to guess where the graph ends. Every
//! human-readable output names a place through [`at`]. (On a terminal that is not UTF-8, text output shows `›` as
//! `>`.)

/// What stands between a graph's path and a node's name.
pub const GRAPH_NODE: &str = " › ";

/// The main graph's path: the start of every other graph's path, and what a finding about the model as a whole
/// names.
pub const MAIN_GRAPH: &str = "main";

/// A graph path longer than this (subgraphs nested thirty deep) is shown by its start and its end.
pub const LONGEST_GRAPH_PATH: usize = 120;

/// A graph's path as a person reads it: whole, or past [`LONGEST_GRAPH_PATH`] characters its first and last steps
/// around `…` (`main/if0/then_branch/…/if29/then_branch`). JSON keeps it whole.
pub fn graph(path: &str) -> std::borrow::Cow<'_, str> {
    let chars = path.chars().count();
    if chars <= LONGEST_GRAPH_PATH {
        return path.into();
    }
    let head: String = path.chars().take(40).collect();
    let tail: String = path.chars().skip(chars - (LONGEST_GRAPH_PATH - 41)).collect();
    format!("{head}…{tail}").into()
}

/// `GRAPH › NODE (OP)`, `GRAPH › NODE`, or `GRAPH` alone. An unnamed node is labelled `#INDEX (OP)` already: its op
/// is not repeated.
/// Every part is escaped and a long node or op name shortened ([`crate::sys::escape::short`]): the parts are the
/// model's.
pub fn at(graph: &str, node: Option<&str>, op: Option<&str>) -> String {
    let mut at = String::with_capacity(graph.len() + GRAPH_NODE.len() + node.map_or(0, str::len) + 32);
    if !push_plain_at(&mut at, graph, node, op) {
        at = escaped_at(graph, node, op);
    }
    at
}

/// [`at`] appended to `out` when every part is shown as it is written (printable ASCII, not too long to show
/// whole, not starting like a command), which is what [`at`] then makes of them: put together without a copy of each
/// part. `false`, and `out` as it was, for other parts. `expand` writes a large model's line per site this way.
pub fn push_plain_at(out: &mut String, graph: &str, node: Option<&str>, op: Option<&str>) -> bool {
    if !shown_as_written(graph, node, op) {
        return false;
    }
    push_shown(out, graph, node, op);
    true
}

/// Whether [`at`] shows every part as it is written: printable ASCII, not too long to show whole, not starting like
/// a command. Then [`at`] is the parts put together as they are.
pub fn shown_as_written(graph: &str, node: Option<&str>, op: Option<&str>) -> bool {
    // What `text` shows as it is and is not ASCII takes the way of `escaped_at`, which gives the same.
    let short_enough = |part: Option<&str>| part.is_none_or(part_shown_as_written);
    // A path of at most LONGEST_GRAPH_PATH bytes has at most as many characters: `graph` keeps it whole.
    graph.len() <= LONGEST_GRAPH_PATH
        && crate::sys::escape::plain_ascii(graph)
        && short_enough(node)
        && short_enough(op)
}

/// Whether [`at`] shows a node's label or an op as it is written (what [`shown_as_written`] asks of each).
#[inline]
pub fn part_shown_as_written(part: &str) -> bool {
    part.len() <= crate::sys::escape::NAME_CHARS && crate::sys::escape::plain_ascii(part)
}

/// [`at`] for parts that are escaped or shortened.
fn escaped_at(graph: &str, node: Option<&str>, op: Option<&str>) -> String {
    use crate::sys::escape::short;
    let graph = crate::sys::escape::text(graph);
    let graph = self::graph(&graph);
    let (node, op) = (node.map(short), op.map(short));
    let (node, op) = (node.as_deref(), op.as_deref());
    let mut at = String::with_capacity(graph.len() + GRAPH_NODE.len() + node.map_or(0, str::len) + 32);
    push_shown(&mut at, &graph, node, op);
    at
}

/// `GRAPH › NODE (OP)` of parts already as shown, appended to `out`; the op is left out where the node's label is
/// an unnamed node's `#INDEX (OP)`, which already ends with it. Put together by hand: this runs once per line of
/// output, 100,000 times for a large model's `expand`.
fn push_shown(out: &mut String, graph: &str, node: Option<&str>, op: Option<&str>) {
    out.push_str(graph);
    let Some(node) = node else { return };
    out.push_str(GRAPH_NODE);
    out.push_str(node);
    if let Some(op) = op.filter(|&op| !labelled_with(node, op)) {
        out.push_str(" (");
        out.push_str(op);
        out.push(')');
    }
}

/// Whether `node` is an unnamed node's label `#INDEX (OP)` of this op, which [`at`] does not follow with the op.
pub fn labelled_with(node: &str, op: &str) -> bool {
    node.starts_with('#') && node.strip_suffix(')').and_then(|n| n.strip_suffix(op)).is_some_and(|n| n.ends_with(" ("))
}

/// A node's label inside its body: its name, or `#INDEX (OP)` for a node without one, so that two unnamed nodes
/// are told apart.
pub fn node_label(node: &crate::onnx::pb::NodeProto, index: usize) -> String {
    node_label_of(node, index).into_owned()
}

/// [`node_label`] borrowed from the node where it is the node's name.
pub fn node_label_of(node: &crate::onnx::pb::NodeProto, index: usize) -> std::borrow::Cow<'_, str> {
    match node.name() {
        "" => std::borrow::Cow::Owned(format!("#{index} ({})", node.op_type())),
        name => std::borrow::Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_whose_name_starts_with_a_slash_is_told_apart_from_its_graph() {
        assert_eq!(at("main", Some("/m/embeddings/Add_1"), Some("Add")), "main › /m/embeddings/Add_1 (Add)");
        assert_eq!(at("main/If_0/then_branch", Some("add"), None), "main/If_0/then_branch › add");
        assert_eq!(at("main", Some("#12 (Add)"), Some("Add")), "main › #12 (Add)");
        assert_eq!(at("main", None, Some("Add")), "main");
    }

    #[test]
    fn a_location_put_together_in_place_is_the_one_shown_part_by_part() {
        let long = "n".repeat(crate::sys::escape::NAME_CHARS + 1);
        let deep = "g/".repeat(LONGEST_GRAPH_PATH);
        let places: [(&str, Option<&str>, Option<&str>, bool); 11] = [
            ("main", Some("node_0"), Some("Sub"), true),
            ("main", Some("#12 (Add)"), Some("Add"), true),
            ("main", Some("#12 (Add)"), Some("Mul"), true),
            ("main", Some("#12 Add)"), Some("Add"), true),
            ("main/If_0/then_branch", Some("größe"), None, false),
            ("main", None, Some("Add"), true),
            ("main", Some("a\nb"), Some("Add"), false),
            ("main", Some(": cmd"), Some("Add"), false),
            ("main", Some(&long), Some("Add"), false),
            ("main", Some("x"), Some(&long), false),
            (&deep, Some("x"), Some("Add"), false),
        ];
        for (graph, node, op, plain) in places {
            let mut out = "before ".to_string();
            assert_eq!(push_plain_at(&mut out, graph, node, op), plain, "{graph} {node:?} {op:?}");
            let expected = escaped_at(graph, node, op);
            match plain {
                true => assert_eq!(out, format!("before {expected}")),
                false => assert_eq!(out, "before "),
            }
            assert_eq!(at(graph, node, op), expected);
        }
    }

    #[test]
    fn a_path_nested_thirty_deep_keeps_its_start_and_end() {
        let path = format!("main/{}", (0..30).map(|i| format!("if{i}/then_branch")).collect::<Vec<_>>().join("/"));
        let shown = graph(&path);
        assert_eq!(shown.chars().count(), LONGEST_GRAPH_PATH);
        assert!(shown.starts_with("main/if0/then_branch/") && shown.ends_with("/if29/then_branch"), "{shown}");
        assert_eq!(graph("main/if0/then_branch"), "main/if0/then_branch");
    }
}
