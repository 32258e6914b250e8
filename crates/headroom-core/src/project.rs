//! A project (a named training command in a folder, kept in `config.toml`: headroom-store's
//! `project`), and the check that runs its Python once before it is used.

pub use headroom_store::project::*;

use crate::CoreError;

/// Checks that the project's folder (and its Python, when set) exist, and that its Python is a
/// Python 3, with what to do when not.
pub fn check_usable(p: &Project) -> Result<(), CoreError> {
    p.check_files()?;
    if let Some(py) = &p.python {
        check_python(&p.name, py)?;
    }
    Ok(())
}

/// What a Python prints for [`check_python`].
const PYTHON_PROBE: &str = "import sys; print('headroom-python', *sys.version_info[:2])";

/// Whether the program at `py` is a Python 3 (it runs a one-line probe, up to 20 s): a project
/// whose `--python` is `/bin/ls` would otherwise run `ls` with the training's arguments.
fn check_python(name: &str, py: &std::path::Path) -> Result<(), CoreError> {
    let mut cmd = std::process::Command::new(py);
    cmd.args(["-c", PYTHON_PROBE]);
    let said = crate::child::run_within(&mut cmd, std::time::Duration::from_secs(20))
        .ok()
        .filter(crate::child::Finished::success)
        .and_then(|f| {
            f.stdout
                .lines()
                .find_map(|l| l.strip_prefix("headroom-python "))
                .map(str::to_owned)
        });
    match said {
        Some(v) if v.starts_with("3 ") => Ok(()),
        Some(v) => Err(CoreError::InvalidInput(format!(
            "project {name:?}: {} is Python {}, and Headroom's observer needs Python 3",
            py.display(),
            v.replace(' ', ".")
        ))),
        None => Err(CoreError::InvalidInput(format!(
            "project {name:?}: {} is not a Python interpreter (it did not run `python -c`); \
             give the interpreter's full path (`headroom doctor` lists those found)",
            py.display()
        ))),
    }
}
