//! Projects: the user's own training, named once — a folder, the Python that trains, and the
//! command with `{batch}` and `{device}` where those values go. Stored as `[projects.NAME]` in the
//! configuration; `headroom project add/rm` edit only that table, leaving the rest of the file
//! (the user's comments and keys) as it was.

use std::collections::BTreeMap;
use std::path::Path;

use crate::CoreError;

/// The placeholders a project's command may hold, each replaced by one whole value.
pub const PLACEHOLDERS: [&str; 2] = ["batch", "device"];

pub use crate::config::Project;

impl Project {
    /// Checks the name, the folder (absolute) and the command (not empty, only known
    /// placeholders). Whether the folder and the Python exist is checked when they are used.
    pub fn validate(&self) -> Result<(), CoreError> {
        check_name(&self.name)?;
        if !self.dir.is_absolute() {
            return Err(bad(format!(
                "project {:?}: its folder {} is not an absolute path; give the full path (--dir \"$PWD\")",
                self.name,
                self.dir.display()
            )));
        }
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return Err(bad(format!(
                "project {:?} has no command; give it after --, e.g. -- python train.py --batch-size {{batch}}",
                self.name
            )));
        }
        if let Some(p) = &self.python {
            if !p.is_absolute() {
                return Err(bad(format!(
                    "project {:?}: its Python {} is not an absolute path; give the full path to the interpreter",
                    self.name,
                    p.display()
                )));
            }
        }
        for arg in &self.command {
            for name in placeholders(arg) {
                if !PLACEHOLDERS.contains(&name.as_str()) {
                    return Err(bad(format!(
                        "project {:?}: its command has {{{name}}}, which Headroom does not fill in; \
                         the placeholders are {{batch}} and {{device}}",
                        self.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether the command has `{name}` somewhere.
    pub fn has(&self, name: &str) -> bool {
        let mark = format!("{{{name}}}");
        self.command.iter().any(|a| a.contains(&mark))
    }

    /// The command as it is run: the project's Python for a leading `python`/`python3`, the
    /// placeholders left for the sweep to fill in.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = self.command.clone();
        if let (Some(py), Some(first)) = (&self.python, argv.first_mut()) {
            if matches!(first.as_str(), "python" | "python3") {
                *first = py.display().to_string();
            }
        }
        argv
    }

    /// Checks that the folder (and the Python, when set) exist, with what to do when not
    /// (headroom-core's `project::check_usable` also runs the Python once).
    pub fn check_files(&self) -> Result<(), CoreError> {
        if self.dir.exists() && !self.dir.is_dir() {
            return Err(bad(format!(
                "project {:?}: {} is a file, not a folder; give the folder the command runs in \
                 (`headroom project add {} --dir FOLDER --replace -- …`)",
                self.name,
                self.dir.display(),
                self.name
            )));
        }
        if !self.dir.is_dir() {
            return Err(bad(format!(
                "project {:?}: its folder {} does not exist (moved or on an unmounted disk?); \
                 fix it with `headroom project add {} --dir NEW --replace -- …`",
                self.name,
                self.dir.display(),
                self.name
            )));
        }
        if let Some(p) = self.python.as_ref().filter(|p| !p.is_file()) {
            return Err(bad(format!(
                "project {:?}: its Python {} does not exist; `headroom doctor` lists the \
                 interpreters found, and `headroom project add {} --python PATH --replace -- …` sets another",
                self.name,
                p.display(),
                self.name
            )));
        }
        Ok(())
    }
}

/// `command` with `{batch}` and `{device}` replaced by the values given (a placeholder without
/// a value stays as it is).
pub fn fill(command: &[String], batch: Option<u32>, device: Option<&str>) -> Vec<String> {
    let mut combo = Vec::new();
    if let Some(b) = batch {
        combo.push(("batch".to_owned(), b.to_string()));
    }
    if let Some(d) = device {
        combo.push(("device".to_owned(), d.to_owned()));
    }
    headroom_model::scriptsweep::replace_all(command, &combo)
}

/// `{name}` tokens in `arg` (a name: a letter or `_`, then letters, digits, `_`).
fn placeholders(arg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let name = &rest[..close];
        let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            out.push(name.to_owned());
            rest = &rest[close + 1..];
        }
    }
    out
}

fn bad(message: String) -> CoreError {
    CoreError::InvalidInput(message)
}

/// A project's name: 1–64 of letters, digits, `-`, `_`, `.`, not starting with `-` or `.`.
pub fn check_name(name: &str) -> Result<(), CoreError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "project name {name:?} is not usable; use letters, digits, '-', '_' and '.' (at most 64), e.g. resnet-cifar"
        )))
    }
}

/// The projects in the configuration at `path` (none when the file does not exist).
pub fn load_from(path: &Path) -> Result<BTreeMap<String, Project>, CoreError> {
    Ok(crate::config::load_from(path)?.projects)
}

/// The projects of the configuration in effect.
pub fn load() -> Result<BTreeMap<String, Project>, CoreError> {
    load_from(&crate::config::config_path()?)
}

/// One project by name, with what to do when there is none.
pub fn get(name: &str) -> Result<Project, CoreError> {
    find(&load()?, name)
}

/// `name` in `projects`, or an error listing the ones there are.
pub fn find(projects: &BTreeMap<String, Project>, name: &str) -> Result<Project, CoreError> {
    projects.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = projects.keys().map(String::as_str).collect();
        let there = if known.is_empty() {
            String::new()
        } else {
            format!(" (there are: {})", known.join(", "))
        };
        // Suggest adding it only under a name `project add` takes.
        match check_name(name) {
            Ok(()) => bad(format!(
                "no project named {name:?}{there}; `headroom project add {name} --dir DIR -- python train.py --batch-size {{batch}}` adds it"
            )),
            Err(why) => bad(format!("no project named {name:?}{there}; {why}")),
        }
    })
}

/// Adds `p` to the configuration at `path` (or, with `replace`, replaces the one of that name),
/// editing only its `[projects.NAME]` table; the file is written atomically.
pub fn add_to(path: &Path, p: &Project, replace: bool) -> Result<(), CoreError> {
    p.validate()?;
    // The check and the write under one lock: two adds of one name cannot both pass it.
    let _edits = crate::paths::lock_edits(path)?;
    let existing = load_from(path)?;
    if existing.contains_key(&p.name) && !replace {
        return Err(bad(format!(
            "a project named {:?} exists already ({} in {}); pick another name or add --replace",
            p.name,
            existing[&p.name].command.join(" "),
            existing[&p.name].dir.display()
        )));
    }
    edit(path, |doc| {
        let projects = doc
            .entry("projects")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_mut()
            .ok_or_else(|| {
                bad("the configuration's `projects` is not a table; fix the file".into())
            })?;
        let mut t = toml_edit::Table::new();
        t["dir"] = toml_edit::value(p.dir.display().to_string());
        if let Some(py) = &p.python {
            t["python"] = toml_edit::value(py.display().to_string());
        }
        let mut cmd = toml_edit::Array::new();
        for a in &p.command {
            cmd.push(a.as_str());
        }
        t["command"] = toml_edit::value(cmd);
        projects.insert(&p.name, toml_edit::Item::Table(t));
        Ok(())
    })
}

/// Removes project `name` from the configuration at `path`; `false` when there was none.
pub fn remove_from(path: &Path, name: &str) -> Result<bool, CoreError> {
    let _edits = crate::paths::lock_edits(path)?;
    if !load_from(path)?.contains_key(name) {
        return Ok(false);
    }
    edit(path, |doc| {
        if let Some(t) = doc.get_mut("projects").and_then(|p| p.as_table_like_mut()) {
            t.remove(name);
        }
        Ok(())
    })?;
    Ok(true)
}

/// [`add_to`] on the configuration in effect.
pub fn add(p: &Project, replace: bool) -> Result<(), CoreError> {
    add_to(&crate::config::config_path()?, p, replace)
}

/// [`remove_from`] on the configuration in effect.
pub fn remove(name: &str) -> Result<bool, CoreError> {
    remove_from(&crate::config::config_path()?, name)
}

/// [`crate::config::edit_at`] for a project change.
fn edit(
    path: &Path,
    f: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), CoreError>,
) -> Result<(), CoreError> {
    crate::config::edit_at(path, "adding projects", f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn project(name: &str, dir: &Path) -> Project {
        Project {
            name: name.into(),
            dir: dir.to_owned(),
            python: None,
            command: ["python", "train.py", "--batch-size", "{batch}"]
                .map(String::from)
                .to_vec(),
        }
    }

    #[test]
    fn add_keeps_the_users_file_and_reads_back_rm_removes_only_the_project() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("config.toml");
        std::fs::write(
            &path,
            "# my settings\n[contention]\napps_share = 0.4 # tuned\n",
        )
        .expect("write");
        let mut p = project("resnet", tmp.path());
        p.python = Some(PathBuf::from("/opt/venv/bin/python"));
        add_to(&path, &p, false).expect("add");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("# my settings") && text.contains("# tuned"),
            "{text}"
        );
        let all = load_from(&path).expect("load");
        assert_eq!(all["resnet"], p);
        assert_eq!(
            all["resnet"].argv()[0],
            "/opt/venv/bin/python",
            "the project's Python runs `python`"
        );
        let again = add_to(&path, &p, false).expect_err("twice");
        assert!(again.to_string().contains("--replace"), "{again}");
        let mut q = p.clone();
        q.command.push("--device={device}".into());
        add_to(&path, &q, true).expect("replace");
        assert!(load_from(&path).expect("load")["resnet"].has("device"));
        assert!(remove_from(&path, "resnet").expect("rm"));
        assert!(!remove_from(&path, "resnet").expect("rm again"));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains("apps_share = 0.4 # tuned"), "{text}");
        assert!(load_from(&path).expect("load").is_empty());
    }

    #[test]
    fn bad_names_folders_commands_and_placeholders_are_refused_with_what_to_do() {
        let tmp = tempfile::tempdir().expect("tmp");
        for name in ["", "-x", "a b", "x/y", ".hidden"] {
            assert!(project(name, tmp.path()).validate().is_err(), "{name:?}");
        }
        let e = project("p", Path::new("rel/dir"))
            .validate()
            .expect_err("relative");
        assert!(e.to_string().contains("absolute"), "{e}");
        let mut p = project("p", tmp.path());
        p.command = vec!["python".into(), "t.py".into(), "--lr={lr}".into()];
        let e = p.validate().expect_err("unknown placeholder");
        assert!(
            e.to_string().contains("{lr}") && e.to_string().contains("{batch}"),
            "{e}"
        );
        // Braces that are not a placeholder pass: a JSON argument, a format string.
        p.command = vec!["python".into(), "-c".into(), "print({'a': 1}, '{}')".into()];
        p.validate().expect("not placeholders");
        p.command.clear();
        assert!(p.validate().is_err());
        let gone = project("p", &tmp.path().join("gone"));
        let e = gone.check_files().expect_err("missing folder");
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = find(&BTreeMap::new(), "nope").expect_err("none");
        assert!(e.to_string().contains("headroom project add nope"), "{e}");
    }

    #[test]
    fn a_broken_projects_table_is_refused_at_load_with_the_place() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("config.toml");
        std::fs::write(
            &path,
            "[projects.x]\ndir = \"/tmp\"\ncommand = []\nwat = 1\n",
        )
        .expect("write");
        let e = load_from(&path).expect_err("unknown key");
        assert!(e.to_string().contains("wat"), "{e}");
        std::fs::write(&path, "[projects.x]\ndir = \"/tmp\"\ncommand = []\n").expect("write");
        let e = load_from(&path).expect_err("empty command");
        assert!(e.to_string().contains("no command"), "{e}");
    }
}
