//! What a panel showed last, kept in Headroom's folder (`popover/NAME.json`) when its job ends:
//! the popover's process ends once closed and idle, and a popover made in a new process (or by a
//! new tray) shows the last sweep's points and chart from here instead of an empty panel. A file
//! that cannot be written or read back is said on stderr and shown as no last result: never an
//! error in the panel.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The folder the panels' last results are kept in.
fn dir() -> Option<PathBuf> {
    headroom_store::paths::data_dir()
        .ok()
        .map(|d| d.join("popover"))
}

/// Keeps `value` as `name` (replacing the one before, atomically).
pub fn keep<T: Serialize>(name: &str, value: &T) {
    if let Some(d) = dir() {
        if let Err(e) = keep_in(&d, name, value) {
            eprintln!("headroom: the last {name} is not kept for the next popover: {e}");
        }
    }
}

/// The value kept as `name`, if there is one that reads.
pub fn kept<T: DeserializeOwned>(name: &str) -> Option<T> {
    kept_in(&dir()?, name)
}

/// [`keep`] in `dir`. A file that already holds `value` is left as it is
/// ([`headroom_store::paths::write_atomically`]): the popover keeps its chosen project at
/// every open, and a choice that did not change writes nothing.
pub fn keep_in<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), String> {
    headroom_store::paths::ensure_dir(dir).map_err(|e| e.to_string())?;
    let bytes = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    headroom_store::paths::write_atomically(&dir.join(format!("{name}.json")), &bytes, 0o600)
        .map_err(|e| e.to_string())
}

/// [`kept`] in `dir`.
pub fn kept_in<T: DeserializeOwned>(dir: &Path, name: &str) -> Option<T> {
    let path = dir.join(format!("{name}.json"));
    let bytes = std::fs::read(&path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!(
                "headroom: {} does not read ({e}); no last {name} shown",
                path.display()
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_result_reads_back_and_a_damaged_one_is_none() {
        let dir = tempfile::tempdir().expect("dir");
        let at = dir.path().join("popover");
        assert_eq!(kept_in::<Vec<u32>>(&at, "sweep"), None, "nothing kept yet");
        keep_in(&at, "sweep", &vec![1_u32, 2, 3]).expect("kept");
        assert_eq!(kept_in::<Vec<u32>>(&at, "sweep"), Some(vec![1, 2, 3]));
        keep_in(&at, "sweep", &vec![4_u32]).expect("replaced");
        assert_eq!(kept_in::<Vec<u32>>(&at, "sweep"), Some(vec![4]));
        std::fs::write(at.join("sweep.json"), b"{ half").expect("damage");
        assert_eq!(kept_in::<Vec<u32>>(&at, "sweep"), None);
        // A folder that cannot be made: an error to say, not a panic.
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, b"x").expect("file");
        assert!(keep_in(&blocked.join("popover"), "sweep", &1_u32).is_err());
    }

    #[test]
    fn the_same_value_kept_again_writes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("dir");
        let at = dir.path().join("popover");
        let file = at.join("chosen-project.json");
        keep_in(&at, "chosen-project", &Some("mlp")).expect("kept");
        let inode = std::fs::metadata(&file).expect("kept file").ino();
        // A write replaces the file through a rename: the same value keeps its inode.
        keep_in(&at, "chosen-project", &Some("mlp")).expect("kept again");
        assert_eq!(
            std::fs::metadata(&file).expect("file").ino(),
            inode,
            "rewritten"
        );
        keep_in(&at, "chosen-project", &Some("lm")).expect("changed");
        assert_ne!(
            std::fs::metadata(&file).expect("file").ino(),
            inode,
            "not written"
        );
        assert_eq!(
            kept_in::<Option<String>>(&at, "chosen-project"),
            Some(Some("lm".into()))
        );
    }
}
