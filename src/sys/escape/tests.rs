//! What escaping shows of model-controlled text, and what it leaves as it is.

use super::*;

#[test]
fn plain_pushed_in_place_is_the_plain_text_of_any_marked_text() {
    let odd = format!("a{OPEN}b{CLOSE}c{QUOTE}d");
    let marked = format!("x {} and {} then {}", name("v_1"), name(&odd), name(""));
    for text in
        [marked.as_str(), "no names", "", &format!("open {OPEN}runs{QUOTE}{CLOSE} on"), &format!("{OPEN}x{QUOTE}")]
    {
        let mut out = String::from("kept ");
        push_plain(&mut out, text);
        assert_eq!(out, format!("kept {}", plain(text)), "{text:?}");
    }
    let mut out = String::new();
    push_plain(&mut out, &marked);
    assert_eq!(out, format!("x v_1 and {odd} then "));
}

#[test]
fn controls_separators_and_bidirectional_overrides_are_escaped() {
    assert_eq!(text("a\u{1b}[31mred\u{7}\0"), "a\\u{1b}[31mred\\u{7}\\0");
    assert_eq!(text("one\ntwo\r\u{2028}\u{2029}\u{85}"), "one\\ntwo\\r\\u{2028}\\u{2029}\\u{85}");
    assert_eq!(text("abc\u{202e}fed\u{2066}\u{200f}"), "abc\\u{202e}fed\\u{2066}\\u{200f}");
    assert_eq!(text("zero\u{200b}width\u{feff}"), "zero\\u{200b}width\\u{feff}");
    assert_eq!(text("tab\tdel\u{7f}"), "tab\\tdel\\u{7f}");
    // Ordinary names, in any script, stay as they are.
    for name in ["input_ids", "onnx::Add_12", "/model/layers.0/Add", "größe", "入力", "e\u{301}", "x y"] {
        assert_eq!(text(name), name);
    }
}

#[test]
fn escaping_is_one_to_one() {
    // A name that spells an escape differs from the name that holds the character.
    assert_ne!(text("a\u{1b}b"), text("a\\u{1b}b"));
    assert_eq!(text("a\\u{1b}b"), "a\\\\u{1b}b");
    assert_ne!(text("\\n"), text("\n"));
}

#[test]
fn nothing_shown_starts_a_workflow_command() {
    assert_eq!(text("::error file=x::pwned"), "\\u{3a}:error file=x::pwned");
    assert_eq!(text("  ::warning::x"), "  \\u{3a}:warning::x");
    assert_eq!(text("onnx::Add_12"), "onnx::Add_12");
    assert_eq!(short("::error::x"), "\\u{3a}:error::x");
    // A lone colon would make `::` with the `: ` after a name at the start of a line.
    assert_eq!(text(":"), "\\u{3a}");
    assert_eq!(text(" :0"), " \\u{3a}0");
}

#[test]
fn long_names_are_shortened_and_stay_unique() {
    let a = format!("{}a", "n".repeat(1 << 20));
    let b = format!("{}b", "n".repeat(1 << 20));
    let (sa, sb) = (short(&a), short(&b));
    assert!(sa.chars().count() <= NAME_CHARS, "{sa}");
    assert_ne!(sa, sb);
    assert!(sa.starts_with(&"n".repeat(KEPT_CHARS)) && sa.contains("…#"), "{sa}");
    let exact = "x".repeat(NAME_CHARS);
    assert_eq!(short(&exact), exact);
    // An escape is never cut in half.
    let escapes = "\u{202e}".repeat(40);
    let shown = short(&escapes);
    let kept = shown.split('…').next().unwrap();
    assert!(kept.ends_with('}'), "{shown}");
}

#[test]
fn marked_names_come_back_whole_and_are_shown_escaped_and_short() {
    let evil = "x\n::error::pwned\u{FDD1}\u{FDD0}";
    let message = Message::from(format!("value '{}' is {} [2, 3]", name(evil), name("ok")));
    assert_eq!(message.plain(), format!("value '{evil}' is ok [2, 3]"));
    assert_eq!(message.one_line(), "value 'x\\n::error::pwned\\u{fdd1}\\u{fdd0}' is ok [2, 3]");
    assert_eq!(message, format!("value '{evil}' is ok [2, 3]").as_str());
    let long = "L".repeat(500);
    let shown = Message::from(format!("input '{}' is not defined", name(&long))).one_line();
    assert!(shown.chars().count() < 120, "{shown}");
    // A long word between names (a dim_param in a shape) is shortened too; short words stay.
    let shape = format!("X [{}, 3] -> Expand to [2, 3]", "N".repeat(100_000));
    let shown = one_line(&shape);
    assert!(shown.starts_with("X [NNN") && shown.ends_with(", 3] -> Expand to [2, 3]") && shown.len() < 150, "{shown}");
    assert_eq!(segments("no names"), [Segment::Text("no names")]);
}

/// The one-pass way of a plain line gives what showing it part by part gives, and declines every line that
/// needs an escape, a shortened name or a name's own marks (or is not ASCII: shown the long way).
#[test]
fn a_line_shown_as_written_is_its_parts_shown_one_by_one() {
    let by_parts = |marked: &str| -> String {
        let parts = segments(marked).into_iter().map(|s| match s {
            Segment::Text(t) => text(t).into_owned(),
            Segment::Name(n) => short(&n).into_owned(),
        });
        parts.collect()
    };
    let long = "n".repeat(NAME_CHARS + 1);
    let lines = [
        (format!("{} [64] -> Expand to [8, 64]", name("small_0")), true),
        (format!("{} [1, N] and {} [N]", name("a/b:c"), name("")), true),
        ("no names at all".to_string(), true),
        (format!("{} [2]", name(&"n".repeat(NAME_CHARS))), true),
        (format!("{} [2]", name("x\\y")), false),
        (format!("{} [2]", name("größe")), false),
        (format!("{} [2]", name(": cmd")), false),
        (format!(" :: {} [2]", name("x")), false),
        (format!("{} [2]", name(&long)), false),
        (format!("{} [2]", name("a\u{FDD1}b")), false),
        (format!("{}\n", name("x")), false),
        ("\u{FDD0}open to the end".to_string(), false),
        ("\u{FDD1}closed".to_string(), false),
    ];
    for (line, plain) in &lines {
        match shown_as_written(line) {
            Some(shown) => assert!(*plain && shown == by_parts(line), "{line:?}: {shown:?}"),
            None => assert!(!plain, "{line:?} declined"),
        }
    }
}

#[test]
fn a_run_of_printable_ascii_ends_at_the_first_byte_shown_otherwise() {
    // Every byte value, at every place of the word-at-a-time scan and of the bytes after the last word, among
    // plain bytes and after a byte that is not (the scan must stop at the first of them).
    for b in 0..=255u8 {
        let plain = (b' '..=b'~').contains(&b) && b != b'\\';
        for len in 1..20 {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b;
                let expected = if plain { len } else { at };
                assert_eq!(printable_run(&bytes), expected, "{b:#x} at {at} of {len}");
                if at + 1 < len {
                    bytes[at + 1] = 0x1f;
                    assert_eq!(printable_run(&bytes), if plain { at + 1 } else { at }, "{b:#x} at {at}, then 0x1f");
                }
            }
        }
    }
    assert_eq!(printable_run(b""), 0);
}

#[test]
fn a_line_shown_as_written_in_place_leaves_a_declined_line_as_it_was() {
    let mut out = "kept: ".to_string();
    assert!(!push_shown_as_written(&mut out, &format!("{} [2]", name("x\\y"))));
    assert_eq!(out, "kept: ");
    assert!(push_shown_as_written(&mut out, &format!("{} [2]", name("x"))));
    assert_eq!(out, "kept: x [2]");
}

#[test]
fn github_escapes_percent_and_line_breaks_on_top() {
    assert_eq!(github_data("100% a\nb\r"), "100%25 a%0Ab%0D");
    assert_eq!(github_property("a:b,c%"), "a%3Ab%2Cc%25");
}
