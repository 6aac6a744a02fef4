//! The `chunkbench` binary: the command line of the `chunkbench` library ([`chunkbench::main_from`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(chunkbench::main_from(std::env::args_os()))
}
