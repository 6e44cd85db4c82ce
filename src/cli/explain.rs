//! `onnx-bcast explain`: a code's documentation, or the list of codes (as text or as the README's table).

use std::io::{self, Write};

use onnx_bcast::diagnostic::Code;

use super::args::{ExplainArgs, ListFormat};
use super::Status;

pub fn command(args: &ExplainArgs) -> io::Result<Status> {
    let text = match (args.list, args.format, args.code.as_deref()) {
        (true, ListFormat::Text, _) => onnx_bcast::explain::list(),
        (true, ListFormat::Markdown, _) => onnx_bcast::explain::markdown(),
        (false, _, code) => {
            let code = code.and_then(Code::from_name).expect("clap accepts only codes");
            onnx_bcast::explain::text(code)
        }
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Status::Clean)
}
