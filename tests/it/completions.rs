//! Shell completions, tried in a real bash: the script `onnx-bcast completions bash` prints is sourced and its
//! completion function called the way bash's programmable completion calls it (COMP_WORDS, COMP_CWORD and the
//! arguments `command word previous-word`), and the candidates it leaves in COMPREPLY are compared.

use std::path::Path;
use std::process::Command;

fn script(shell: &str, dir: &Path) -> std::path::PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_onnx-bcast")).args(["completions", shell]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(format!("onnx-bcast.{shell}"));
    std::fs::write(&path, out.stdout).unwrap();
    path
}

/// The candidates bash completes for the command line `words` with the cursor at the end of its last word.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    // `complete -p` names the function the script registered, so the test does not guess it.
    let driver = format!(
        "source '{}' || exit 3\n\
         fn=$(complete -p onnx-bcast | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')\n\
         [ -n \"$fn\" ] || exit 4\n\
         COMP_WORDS=({})\nCOMP_CWORD={cword}\nCOMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\n\
         \"$fn\" onnx-bcast '{}' '{prev}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[cword],
    );
    let out = Command::new("bash").args(["--norc", "--noprofile", "-c", &driver]).output().expect("bash runs");
    assert!(out.status.success(), "bash failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn bash_completes_options_and_codes_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let bash = script("bash", dir.path());
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "che"]), ["check"]);
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "check", "--de"]), ["--deny"]);
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "check", "--deny", "broadcast-v"]), ["broadcast-violation"]);
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "check", "--warn", "undecided"]), ["undecided-broadcast"]);
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "explain", "broadcast-v"]), ["broadcast-violation"]);
    assert_eq!(bash_complete(&bash, &["onnx-bcast", "check", "--format", "sa"]), ["sarif"]);
}

/// The line zsh shows after TAB at the end of `line`, driven through a pseudo-terminal (zsh/zpty) in an interactive
/// `zsh -f` with compinit and the script on fpath.
fn zsh_complete(script_dir: &Path, line: &str) -> String {
    const DRIVER: &str = r#"
zmodload zsh/zpty
zpty z 'PS1="> " TERM=dumb zsh -f -i'
zpty -w z "PATH=$1:\$PATH; fpath=($2 \$fpath); autoload -U compinit; compinit -u -D"
sleep 1
zpty -w -n z "$3"$'\t'
sleep 2
zpty -w z $'\C-u'
sleep 1
out=""
while zpty -r -t z chunk; do out+="$chunk"; done
print -r -- "$out"
zpty -d z
"#;
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_onnx-bcast")).parent().unwrap();
    let out = Command::new("zsh")
        .args(["-f", "-c", DRIVER, "zsh"])
        .arg(bin_dir)
        .arg(script_dir)
        .arg(line)
        .output()
        .expect("zsh runs (the tests need zsh: apt-get install zsh)");
    assert!(out.status.success(), "zsh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn zsh_completes_codes_after_deny_and_explain() {
    let dir = tempfile::tempdir().unwrap();
    let zsh = script("zsh", dir.path());
    std::fs::rename(&zsh, dir.path().join("_onnx-bcast")).unwrap();
    for (line, completed) in [
        ("onnx-bcast check --deny broadcast-v", "onnx-bcast check --deny broadcast-violation "),
        ("onnx-bcast explain broadcast-v", "onnx-bcast explain broadcast-violation "),
    ] {
        let screen = zsh_complete(dir.path(), line);
        assert!(
            screen.contains(completed),
            "zsh did not complete {line:?} to {completed:?}; the terminal showed:\n{screen}"
        );
    }
}
