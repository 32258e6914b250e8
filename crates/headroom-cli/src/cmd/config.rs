//! `headroom config show|path`: the configuration in effect, every key with its value.

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the configuration in effect (defaults filled in) as TOML.
    Show,
    /// Print where the configuration file is (it need not exist).
    Path,
    /// Set one key (`decide.amp_gain 0.15`, `contention.llm_servers ollama,llama-server`): the
    /// value is read as the key's type, checked, and written with the rest of the file as it was.
    Set {
        /// SECTION.KEY, as `headroom config show` prints them.
        key: String,
        value: String,
    },
}

pub fn run(c: &ConfigCommand) -> anyhow::Result<ExitCode> {
    match c {
        ConfigCommand::Show => print!("{}", headroom_store::config::load()?.to_toml()),
        ConfigCommand::Path => println!("{}", headroom_store::config::config_path()?.display()),
        ConfigCommand::Set { key, value } => {
            let path = headroom_store::config::config_path()?;
            let written = headroom_store::config::set_at(&path, key, value)?;
            println!("{key} = {written} in {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
