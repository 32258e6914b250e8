//! `headroom config show|path`: the configuration in effect, every key with its value.

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the configuration in effect (defaults filled in) as TOML.
    Show,
    /// Print where the configuration file is (it need not exist).
    Path,
}

pub fn run(c: &ConfigCommand) -> anyhow::Result<ExitCode> {
    match c {
        ConfigCommand::Show => print!("{}", headroom_core::config::load()?.to_toml()),
        ConfigCommand::Path => println!("{}", headroom_core::config::config_path()?.display()),
    }
    Ok(ExitCode::SUCCESS)
}
