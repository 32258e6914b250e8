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

/// The name the chosen project is kept under in Headroom's folder ([`crate::kept`]).
const CHOSEN: &str = "chosen-project";

/// Keeps `name` as the project the Overview is judged from (none: every run), so a new tray — after
/// a login, a Quit — judges from it and hands it over from the contention notice, and a new
/// popover opens on it. A file that cannot be written is said on stderr, never an error.
pub fn remember_chosen(name: Option<&str>) {
    crate::kept::keep(CHOSEN, &name);
}

/// The project last chosen ([`remember_chosen`]), while it is still a project.
pub fn chosen() -> Option<String> {
    chosen_of(
        crate::kept::kept::<Option<String>>(CHOSEN).flatten(),
        &load().ok()?,
    )
}

/// `kept`, while `projects` still has it.
fn chosen_of(
    kept: Option<String>,
    projects: &std::collections::BTreeMap<String, Project>,
) -> Option<String> {
    kept.filter(|n| projects.contains_key(n))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The choice is kept as the kept module keeps a panel's last result, read back, and
    /// forgotten once the project is removed.
    #[test]
    fn the_chosen_project_is_kept_while_it_is_a_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("config.toml");
        let p = Project {
            name: "mlp".into(),
            dir: dir.path().to_owned(),
            python: None,
            command: vec!["python".into(), "train.py".into()],
        };
        add_to(&config, &p, false).expect("add");
        crate::kept::keep_in(dir.path(), CHOSEN, &Some("mlp")).expect("keep");
        let kept = crate::kept::kept_in::<Option<String>>(dir.path(), CHOSEN).flatten();
        assert_eq!(
            chosen_of(kept.clone(), &load_from(&config).expect("load")),
            Some("mlp".into())
        );
        remove_from(&config, "mlp").expect("remove");
        assert_eq!(chosen_of(kept, &load_from(&config).expect("load")), None);
        // Every run (none chosen) is kept as such.
        crate::kept::keep_in(dir.path(), CHOSEN, &None::<&str>).expect("keep");
        assert_eq!(
            crate::kept::kept_in::<Option<String>>(dir.path(), CHOSEN),
            Some(None)
        );
    }
}
